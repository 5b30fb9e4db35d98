"""Each guard of the grading sandbox, tried for real on this machine.

A small Python program runs through `sandbox.spawn` with a tight policy and
reports what it could do; the test says what it should have been able to do.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from gpulab.grading import sandbox
from gpulab.grading.sandbox import bubblewrap

GUARDS = sandbox.available()
needs_bwrap = pytest.mark.skipif(
    not GUARDS.bubblewrap, reason=f"no bubblewrap sandbox here: {GUARDS.bubblewrap_problem}"
)
MiB = 2**20


def run(code: str, policy: sandbox.Policy, timeout: float = 60) -> tuple[int, dict]:
    """Run `code` sandboxed; (exit status, the JSON it printed last, or {})."""
    job = sandbox.spawn(
        [sys.executable, "-c", code],
        env=dict(os.environ),
        cwd="/",
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        policy=policy,
    )
    try:
        out, _ = job.process.communicate(timeout=timeout)
    finally:
        job.close()
    lines = out.decode(errors="replace").strip().splitlines()
    try:
        return job.process.returncode, json.loads(lines[-1]) if lines else {}
    except ValueError:
        return job.process.returncode, {}


@pytest.fixture
def policy(tmp_path: Path) -> sandbox.Policy:
    secret = tmp_path / "course" / "solutions"
    secret.mkdir(parents=True)
    (secret / "answer.txt").write_text("42")
    public = tmp_path / "course" / "lessons"
    public.mkdir()
    (public / "notes.txt").write_text("hello")
    return sandbox.Policy(
        cpu_s=3,
        memory_bytes=512 * MiB,
        processes=16,
        file_bytes=4 * MiB,
        scratch_bytes=16 * MiB,
        private=(str(secret),),
        show=(str(public),),
        cgroup=GUARDS.cgroup,
    )


@needs_bwrap
def test_only_shown_folders_are_there_and_read_only(policy, tmp_path):
    code = f"""
import json, os
course = {str(tmp_path / "course")!r}
seen = {{"answer": os.path.exists(course + "/solutions/answer.txt"),
        "notes": open(course + "/lessons/notes.txt").read()}}
try:
    open(course + "/lessons/notes.txt", "w").write("changed")
    seen["write"] = "ok"
except OSError as exc:
    seen["write"] = exc.strerror
try:
    open("/etc/gpulab-was-here", "w")
    seen["etc"] = "ok"
except OSError as exc:
    seen["etc"] = exc.strerror
print(json.dumps(seen))
"""
    status, seen = run(code, policy)
    assert status == 0, seen
    assert seen["answer"] is False
    assert seen["notes"] == "hello"
    assert seen["write"] == "Read-only file system" and seen["etc"] == "Read-only file system"
    assert (tmp_path / "course" / "lessons" / "notes.txt").read_text() == "hello"


@needs_bwrap
def test_no_network_but_loopback(policy):
    code = """
import json, socket
try:
    socket.create_connection(("1.1.1.1", 53), timeout=3)
    how = "connected"
except OSError as exc:
    how = exc.strerror or str(exc)
devices = [line.split(":")[0].strip() for line in open("/proc/net/dev").readlines()[2:]]
print(json.dumps({"how": how, "devices": devices}))
"""
    status, seen = run(code, policy)
    assert status == 0
    assert seen["how"] != "connected"
    assert seen["devices"] == ["lo"]


@needs_bwrap
def test_other_processes_are_out_of_sight(policy):
    code = """
import json, os
print(json.dumps(sorted(int(p) for p in os.listdir("/proc") if p.isdigit())))
"""
    job = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        seen = _pids(policy, code)
        assert job.pid not in seen and os.getpid() not in seen
        assert seen == [1]  # a PID namespace of its own, the job its PID 1
    finally:
        job.kill()
        job.wait()


def _pids(policy: sandbox.Policy, code: str) -> list[int]:
    job = sandbox.spawn(
        [sys.executable, "-c", code],
        env=dict(os.environ),
        cwd="/",
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        policy=policy,
    )
    try:
        out, _ = job.process.communicate(timeout=60)
    finally:
        job.close()
    return list(json.loads(out))


def test_cpu_time_is_capped(policy):
    status, _ = run("while True: pass", policy, timeout=60)
    assert status in (
        -signal.SIGXCPU,
        -signal.SIGKILL,
        128 + signal.SIGXCPU,
        128 + signal.SIGKILL,
    ), status


def test_memory_is_capped(policy):
    code = """
import json
hog = []
try:
    for _ in range(64):
        hog.append(bytearray(64 * 2**20))
    print(json.dumps({"got": len(hog) * 64}))
except MemoryError:
    print(json.dumps({"got": len(hog) * 64, "stopped": True}))
"""
    status, seen = run(code, policy)
    assert seen.get("stopped") is True and seen["got"] < 512, (status, seen)


def test_file_size_is_capped(policy):
    code = """
import json, os
try:
    with open("big", "wb") as f:
        for _ in range(16):
            f.write(b"\\0" * 2**20)
    print(json.dumps({"size": os.path.getsize("big")}))
except OSError as exc:
    print(json.dumps({"error": exc.strerror, "size": os.path.getsize("big")}))
"""
    _, seen = run(code, policy)
    assert seen.get("error") == "File too large" and seen["size"] <= 4 * MiB, seen


@needs_bwrap
def test_scratch_space_is_a_small_private_tmpfs(policy):
    code = """
import json, os
written = 0
try:
    for n in range(64):
        with open(f"part-{n}", "wb") as f:
            f.write(b"\\0" * (3 * 2**20))
        written += 3
except OSError as exc:
    print(json.dumps({"error": exc.strerror, "written": written, "cwd": os.getcwd()}))
"""
    _, seen = run(code, policy)
    assert seen.get("error") == "No space left on device", seen
    assert seen["written"] <= 16 and seen["cwd"] == bubblewrap.SCRATCH


@pytest.mark.skipif(
    not GUARDS.cgroup and not GUARDS.bubblewrap,
    reason="no process limit can be set here: no cgroup "
    f"({GUARDS.cgroup_problem}) and no sandbox "
    f"({GUARDS.bubblewrap_problem})",
)
def test_a_fork_bomb_hits_the_process_limit(policy):
    code = """
import json, os, time
children = 0
try:
    for _ in range(500):
        if os.fork() == 0:
            time.sleep(30)
            os._exit(0)
        children += 1
except OSError as exc:
    print(json.dumps({"children": children, "error": exc.strerror}))
"""
    tag = uuid.uuid4().hex[:8]
    spec = sandbox.run_cgroups(GUARDS.cgroup, tag) if GUARDS.cgroup else ""
    try:
        _, seen = run(code, sandbox.Policy(**{**policy.__dict__, "cgroup": spec}), timeout=60)
    finally:
        sandbox.remove_cgroups(spec)
    assert seen.get("error") == "Resource temporarily unavailable", seen
    assert seen["children"] < 16, seen


@pytest.mark.parametrize("sandboxed", [True, False], ids=["sandboxed", "plain"])
def test_nvlink_multicast_stays_off_in_every_child(policy, sandboxed, monkeypatch):
    """Whatever environment the caller passes, the child runs with NVLink multicast off."""
    if sandboxed and not GUARDS.bubblewrap:
        pytest.skip(f"no bubblewrap sandbox here: {GUARDS.bubblewrap_problem}")
    monkeypatch.delenv(sandbox.ENV, raising=False)
    code = (
        "import json, os; print(json.dumps({k: os.environ.get(k) for k in "
        "('NCCL_NVLS_ENABLE', 'TORCH_SYMM_MEM_DISABLE_MULTICAST', 'NVSHMEM_DISABLE_NVLS')}))"
    )
    env = {**os.environ, "NCCL_NVLS_ENABLE": "1"}
    job = sandbox.spawn(
        [sys.executable, "-c", code],
        env=env,
        cwd="/",
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        policy=policy if sandboxed else None,
    )
    try:
        out, _ = job.process.communicate(timeout=60)
    finally:
        job.close()
    assert json.loads(out) == {
        "NCCL_NVLS_ENABLE": "0",
        "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1",
        "NVSHMEM_DISABLE_NVLS": "1",
    }
