"""The sandbox against a hostile learner, with the grader as root and as an ordinary user.

Each attack is a small program run through `sandbox.spawn` exactly as the grading
run starts learner code; it reports what it could do, and the test asserts that
every way out failed. The cases come from the red team's review (V1 root in the
sandbox, V3 the bulk zip, V4 socket files and groups, V5 other copies of the
course, V7 unbounded tmpfs and process counts, V14 the worker decoy) and from what
bubblewrap's own setup leaves visible. The per-user quotas (V10, the inotify quota),
CPU share and memory are in test_attacks_resources.py.

With the grader as root (CI runs as root) the tests call `spawn` here; as an
ordinary user they run the same call in a process of `nobody` (setpriv), with
the machine's own Python, so nothing under a root-only folder is needed.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import sysconfig
import tempfile
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from gpulab.grading import sandbox
from gpulab.grading.sandbox import bubblewrap
from gpulab.grading.sandbox import proof as sandbox_proof

ROOT = Path(__file__).resolve().parents[2]
GUARDS = sandbox.available()
MiB = 2**20
NOBODY = 65534
SYSTEM_PYTHON = Path("/usr/bin/python3")

pytestmark = pytest.mark.skipif(
    not GUARDS.bubblewrap, reason=f"no bubblewrap sandbox here: {GUARDS.bubblewrap_problem}"
)


def _nobody_skip() -> str | None:
    if os.geteuid() != 0:
        return "the grader already runs as an ordinary user here: see the root case"
    if not SYSTEM_PYTHON.exists() or shutil.which("setpriv") is None:
        return "no system Python or setpriv to run a grader as nobody"
    return None


GRADERS = [
    pytest.param("self", id="grader-as-this-user"),
    pytest.param(
        "nobody",
        id="grader-as-nobody",
        marks=pytest.mark.skipif(_nobody_skip() is not None, reason=_nobody_skip() or ""),
    ),
]


class Scene:
    """A machine with secrets on it: a course with solutions, another copy of the course, a
    class's bulk zip, a grading output, a socket file; all readable by the grader."""

    def __init__(self, base: Path) -> None:
        self.base = base
        course = base / "course"
        (course / "lessons").mkdir(parents=True)
        (course / "lessons" / "notes.md").write_text("public")
        (course / "solutions").mkdir()
        (course / "solutions" / "answer.txt").write_text("SECRET-ANSWER")
        (base / "old-copy" / "solutions").mkdir(parents=True)
        (base / "old-copy" / "solutions" / "answer.txt").write_text("SECRET-COPY")
        (base / "class.zip").write_bytes(b"PK\x05\x06" + b"\0" * 18)
        (base / "out").mkdir()
        (base / "out" / "gradebook.sqlite").write_text("SECRET-GRADES")
        self.socket_path = base / "daemon.sock"
        self.server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.server.bind(str(self.socket_path))
        self.server.listen(1)
        for path in [base, *base.rglob("*")]:
            path.chmod(0o755 if path.is_dir() else 0o644)
        self.policy = sandbox.Policy(
            cpu_s=20,
            memory_bytes=1024 * MiB,
            processes=16,
            scratch_bytes=8 * MiB,
            show=(str(course / "lessons"),),
            private=(str(course / "solutions"), str(base / "class.zip"), str(base / "out")),
            cgroup="",
        )

    @property
    def secrets(self) -> list[str]:
        return [
            str(self.base / p)
            for p in (
                "course/solutions/answer.txt",
                "old-copy/solutions/answer.txt",
                "class.zip",
                "out/gradebook.sqlite",
                "daemon.sock",
            )
        ]

    def close(self) -> None:
        self.server.close()


@pytest.fixture
def scene() -> Iterator[Scene]:
    base = Path(tempfile.mkdtemp(prefix="gpulab-attack-"))
    base.chmod(0o755)
    made = Scene(base)
    try:
        yield made
    finally:
        made.close()
        shutil.rmtree(base, ignore_errors=True)


def attack(code: str, scene: Scene, grader: str, *args: str) -> dict:
    """Run `code` in a sandbox as the grading run would; the JSON it printed last. `args` reach
    it as sys.argv[1:] through the environment, so that they are not on its command line."""
    program = (
        "import json, os, sys; sys.argv[1:] = json.loads(os.environ['ATTACK_ARGS'])\n"
        + textwrap.dedent(code)
    )
    if grader == "self":
        job = sandbox.spawn(
            [sys.executable, "-c", program],
            env={**os.environ, "ATTACK_ARGS": json.dumps(args)},
            cwd="/",
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            policy=scene.policy,
        )
        try:
            out, err = job.process.communicate(timeout=120)
        finally:
            job.close()
        text = out.decode(errors="replace")
    else:
        harness = textwrap.dedent("""
            import os, subprocess, sys
            from gpulab.grading import sandbox
            from gpulab.grading.sandbox import proof as sandbox_proof
            job = sandbox.spawn([sys.executable, "-c", sys.argv[1]],
                                env=dict(os.environ), cwd="/", stdin=subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE)
            out, err = job.process.communicate(timeout=120)
            job.close()
            sys.stdout.write(out.decode(errors="replace"))
            sys.stderr.write(err.decode(errors="replace"))
        """)
        bwrap = Path(shutil.which("bwrap") or "/usr/bin/bwrap").parent
        env = {
            "PATH": f"{bwrap}:/usr/bin:/bin",
            "HOME": "/tmp",
            "PYTHONPATH": str(ROOT / "lab"),
            sandbox.ENV: scene.policy.to_json(),
            "ATTACK_ARGS": json.dumps(args),
        }
        done = subprocess.run(
            [
                "setpriv",
                f"--reuid={NOBODY}",
                f"--regid={NOBODY}",
                "--clear-groups",
                "--",
                "/usr/bin/env",
                str(SYSTEM_PYTHON),
                "-c",
                harness,
                program,
            ],
            env=env,
            capture_output=True,
            text=True,
            timeout=180,
        )
        text, err = done.stdout, done.stderr.encode()
    lines = text.strip().splitlines()
    assert lines, f"the attack printed nothing; stderr:\n{err[-2000:]!r}"
    return dict(json.loads(lines[-1]))


PRIVILEGE = """
import ctypes, json, os
libc = ctypes.CDLL(None, use_errno=True)
def tried(result):
    return "worked" if result == 0 else os.strerror(ctypes.get_errno())
status = {l.split(":")[0]: l.split(":")[1].strip() for l in open("/proc/self/status")}
print(json.dumps({
    "uid": os.getuid(), "gid": os.getgid(), "groups": os.getgroups(),
    "caps": [status[k] for k in ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb")],
    "no_new_privs": status.get("NoNewPrivs"),
    "umount": tried(libc.umount2(b"/tmp", 2)),
    "umount_root": tried(libc.umount2(b"/", 2)),
    "remount_rw": tried(libc.mount(None, b"/", None, 32 | 4096, None)),
    "mount_tmpfs": tried(libc.mount(b"x", b"/tmp", b"tmpfs", 0, None)),
    "new_userns": tried(libc.unshare(0x10000000)),
    "ptrace_pid1": tried(libc.ptrace(16, 1, None, None)),
    "setuid_root": tried(libc.setuid(0)),
    "chroot": tried(libc.chroot(b"/tmp")),
}))
"""


@pytest.mark.parametrize("grader", GRADERS)
def test_no_privilege_in_the_sandbox_whoever_grades(scene: Scene, grader: str) -> None:
    seen = attack(PRIVILEGE, scene, grader)
    assert seen["uid"] != 0 and seen["gid"] != 0, seen
    if grader == "self" and os.geteuid() == 0:  # a root grader drops to a job's own uid
        first, count = bubblewrap.JOB_UIDS
        assert first <= seen["uid"] < first + count and seen["gid"] == seen["uid"]
        assert seen["groups"] == []
    assert set(seen["caps"]) == {"0000000000000000"}, seen["caps"]
    assert seen["no_new_privs"] == "1"
    for way in (
        "umount",
        "umount_root",
        "remount_rw",
        "mount_tmpfs",
        "new_userns",
        "ptrace_pid1",
        "setuid_root",
        "chroot",
    ):
        assert seen[way] != "worked", (way, seen)


VIEW = """
import json, os, sys
secrets = sys.argv[1:-1]          # the last is a public file
found = [p for p in secrets if os.path.lexists(p)]
walked = []
for top in ("/",):
    for folder, dirs, files in os.walk(top):
        dirs[:] = [d for d in dirs if os.path.join(folder, d) not in ("/proc", "/sys", "/usr",
                                                                      "/dev")]
        for name in files:
            path = os.path.join(folder, name)
            if not os.path.isfile(path) or os.path.islink(path):
                continue
            try:
                with open(path, "rb") as handle:
                    data = handle.read(1 << 20)
            except OSError:
                continue
            if b"SECRET-" in data:
                walked.append(path)
import socket
for path in secrets:
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        s.connect(path)
        found.append("connected " + path)
    except OSError:
        pass
print(json.dumps({"found": found, "walked": walked, "root": sorted(os.listdir("/")),
                  "pid1": open("/proc/1/cmdline", "rb").read().decode(errors="replace"),
                  "mounts": open("/proc/self/mountinfo").read(),
                  "shown": open(sys.argv[-1]).read() if os.path.exists(sys.argv[-1]) else None}))
"""


@pytest.mark.parametrize("grader", GRADERS)
def test_the_view_is_an_allowlist(scene: Scene, grader: str) -> None:
    notes = str(scene.base / "course" / "lessons" / "notes.md")
    seen = attack(VIEW, scene, grader, *scene.secrets, notes)
    assert seen["found"] == [] and seen["walked"] == [], seen
    assert seen["shown"] == "public"  # the public course is there
    for absent in ("home", "run", "var", "srv", "mnt", "media", "opt", "boot", "root"):
        assert absent not in seen["root"] or _needed(f"/{absent}"), (absent, seen["root"])
    for private in (*scene.policy.private, str(scene.base / "old-copy")):
        assert private not in seen["pid1"] and private not in seen["mounts"], private


def _needed(folder: str) -> bool:
    """Whether the view must hold `folder` for Python itself (a Python installed under it)."""
    from gpulab.grading.sandbox.view import needed_folders

    return any(f == folder or f.startswith(folder + "/") for f in needed_folders((), ()))


WRITES = """
import json, os, sys
result = {}
for path in sys.argv[1:]:
    try:
        with open(os.path.join(path, "gpulab-was-here"), "w") as handle:
            handle.write("x")
        result[path] = "written"
    except OSError as exc:
        result[path] = exc.strerror
def fill(folder):
    written = 0
    try:
        for n in range(64):
            with open(f"{folder}/fill-{n}", "wb") as handle:
                handle.write(b"\\0" * 2**20)
            written += 1
    except OSError as exc:
        return [written, exc.strerror]
    return [written, "no limit"]
result["fill /tmp"] = fill("/tmp")
result["fill /dev/shm"] = fill("/dev/shm")
print(json.dumps(result))
"""


@pytest.mark.parametrize("grader", GRADERS)
def test_nothing_is_writable_but_two_small_tmpfs(scene: Scene, grader: str) -> None:
    lessons = str(scene.base / "course" / "lessons")
    # What Python runs from is shown by its parts (the venv's site-packages, not the venv's
    # own folder): a venv under /tmp has its folder made inside the job's scratch tmpfs.
    packages = sysconfig.get_paths()["purelib"]
    places = ["/", "/etc", "/usr", "/dev", lessons, packages]
    if not Path(sys.prefix).resolve().is_relative_to("/tmp"):
        places.append(sys.prefix)
    seen = attack(WRITES, scene, grader, *places)
    for place in places:
        assert seen[place] in (
            "Read-only file system",
            "Permission denied",
            "No such file or directory",
        ), (place, seen)
    for place in (lessons, packages, sys.prefix):  # nothing written inside reaches the host
        assert not Path(place, "gpulab-was-here").exists(), place
    written, why = seen["fill /tmp"]
    assert why == "No space left on device" and written <= 8, seen
    written, why = seen["fill /dev/shm"]
    assert why == "No space left on device" and written <= 16, seen


FORKS = """
import json, os, sys, time
children = 0
try:
    for _ in range(200):
        if os.fork() == 0:
            time.sleep(float(sys.argv[1]))
            os._exit(0)
        children += 1
except OSError as exc:
    print(json.dumps({"children": children, "error": exc.strerror}))
"""


@pytest.mark.parametrize("grader", GRADERS)
def test_the_process_limit_is_each_jobs_own(scene: Scene, grader: str) -> None:
    """No cgroup here: the limit is RLIMIT_NPROC inside the job's user namespace, so a job
    that fills its own does not take another's (the old limit grew with the machine's)."""
    neighbours = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        first = attack(FORKS, scene, grader, "2")
        second = attack(FORKS, scene, grader, "0.1")
    finally:
        neighbours.kill()
        neighbours.wait()
    for seen in (first, second):
        assert seen.get("error") == "Resource temporarily unavailable", seen
        assert 10 <= seen["children"] < scene.policy.processes, seen


DECOY = """
import json, os, subprocess, sys, time
decoy = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)",
                          "-m", "gpulab.grading.checks.worker"])
time.sleep(0.5)
print(json.dumps({"me": os.getpid(), "decoy": decoy.pid}), flush=True)
time.sleep(5)
"""


def test_the_worker_is_the_pid_the_sandbox_reports(scene: Scene) -> None:
    """A decoy whose command line names the worker changes nothing: the pid comes from
    bubblewrap (--info-fd), not from a search of command lines."""
    program = textwrap.dedent(DECOY)
    job = sandbox.spawn(
        [sys.executable, "-c", program],
        env=dict(os.environ),
        cwd="/",
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        policy=scene.policy,
    )
    try:
        assert job.process.stdout is not None
        inside = json.loads(job.process.stdout.readline())
        assert job.worker is not None and job.worker != job.pid
        status = Path(f"/proc/{job.worker}/status").read_text()
        nspid = next(line for line in status.splitlines() if line.startswith("NSpid"))
        assert nspid.split()[-1] == str(inside["me"]) == "1" != str(inside["decoy"])
        assert sandbox.pid_one(job.worker) == job.worker
    finally:
        job.close()


def test_the_guard_refuses_a_sandbox_that_does_not_hold(monkeypatch: pytest.MonkeyPatch) -> None:
    """`available` tries the ways out from inside; a sandbox that keeps root's privileges (as
    bubblewrap started by root did) is refused."""
    if os.geteuid() != 0:
        pytest.skip("only a root grader can make a sandbox that keeps privileges")
    monkeypatch.setattr(bubblewrap, "job_uid", lambda: None)  # the old launch: stay root
    monkeypatch.setattr(
        bubblewrap,
        "ISOLATION",
        tuple(a for a in bubblewrap.ISOLATION if a not in ("--cap-drop", "ALL")),
    )
    problem = sandbox_proof.prove(sandbox.Policy(), sandbox.spawn)
    assert problem.startswith("the sandbox does not hold here: from inside it, ")
    assert "it ran as root" in problem and "it kept capabilities" in problem
    assert sandbox_proof.prove(sandbox.Policy(), sandbox.spawn) != ""
    assert not sandbox.available.__wrapped__().bubblewrap
