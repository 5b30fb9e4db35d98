"""The kernel's keyrings and the system calls a job never needs (the red team's H2).

A grader started from a login shell (pam_keyinit) has a session keyring; before
`gpulab.grading.sandbox.seccomp`, every job inherited it and possessed it. Learner code
then read the instructor's key, planted keys that outlived the run, and passed data to a
later learner's job. Here a grader does as pam_keyinit does (joins a fresh session keyring
and puts a key in it), then runs jobs through `sandbox.spawn` exactly as a grading run
does: as root (CI), and as an ordinary user (`nobody`, through setpriv, with the
machine's own Python), where the job's uid is the grader's own.

Each attack is a small program run in the sandbox; it reports what it could do, and the
tests assert that nothing worked. The filter's bytes are also decoded and run, for both
processors, against every system call number.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from gpulab.grading import sandbox
from gpulab.grading.sandbox import seccomp as sandbox_seccomp
from gpulab.grading.sandbox.seccomp import (
    ARCHES,
    REFUSED,
    REFUSED_CPU,
    Arch,
    program,
    refused_calls,
)

ROOT = Path(__file__).resolve().parents[2]
GUARDS = sandbox.available()
NOBODY = 65534
SYSTEM_PYTHON = Path("/usr/bin/python3")
HERE = sandbox_seccomp.arch()
SECRET = "TOPSECRET-of-the-grader"

needs_sandbox = pytest.mark.skipif(
    not GUARDS.bubblewrap or HERE is None,
    reason=f"no bubblewrap sandbox here: {GUARDS.bubblewrap_problem}",
)


def _nobody_skip() -> str | None:
    if os.geteuid() != 0:
        return "the grader already runs as an ordinary user here: see the other case"
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

# The grader: as pam_keyinit does for a login, join a session keyring of this process's own
# and put the instructor's key in it; run each job of argv[1] (a JSON list of programs) in
# turn through `spawn`; then report what each printed, and what the keyring holds after.
GRADER = r"""
import ctypes, json, os, subprocess, sys
from gpulab.grading import sandbox
from gpulab.grading.sandbox import seccomp as sandbox_seccomp
numbers = sandbox_seccomp.arch().numbers
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
def call(name, *args):
    done = libc.syscall(ctypes.c_long(numbers[name]), *args)
    if done < 0:
        raise OSError(ctypes.get_errno(), name)
    return done
L = ctypes.c_long
SESSION = L(-3)
call("keyctl", L(1), None)  # KEYCTL_JOIN_SESSION_KEYRING, anonymous: as pam_keyinit
secret = b"TOPSECRET-of-the-grader"
call("add_key", b"user", b"gpulab-test:instructor-secret", secret, L(len(secret)), SESSION)
jobs = []
for code in json.loads(sys.argv[1]):
    job = sandbox.spawn([sys.executable, "-c", code], cwd="/", stdin=subprocess.DEVNULL,
                        env={**os.environ, "KEY_NUMBERS": json.dumps(numbers)},
                        stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    out, err = job.process.communicate(timeout=120)
    job.close()
    jobs.append({"out": out.decode(errors="replace"), "err": err.decode(errors="replace"),
                 "status": job.process.returncode})
buffer = ctypes.create_string_buffer(4096)
size = call("keyctl", L(11), SESSION, buffer, L(4096))  # KEYCTL_READ: the keyring's keys
after = []
for serial in memoryview(buffer.raw[: min(size, 4096)]).cast("i"):
    n = call("keyctl", L(6), L(serial), buffer, L(4096))  # KEYCTL_DESCRIBE
    after.append(buffer.raw[: n].rstrip(b"\0").decode())
print(json.dumps({"jobs": jobs, "after": after}))
"""

# Inside a job: the calls a job needs for the keyrings, and a wrapper that returns -errno.
PRELUDE = r"""
import ctypes, errno, json, os, sys
numbers = json.loads(os.environ["KEY_NUMBERS"])
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
L = ctypes.c_long
def call(name, *args):
    done = libc.syscall(L(numbers[name]), *args)
    return done if done >= 0 else -ctypes.get_errno()
RINGS = {"thread": -1, "process": -2, "session": -3, "user": -4, "user-session": -5}
def read(key):
    buffer = ctypes.create_string_buffer(4096)
    n = call("keyctl", L(11), L(key), buffer, L(4096))  # KEYCTL_READ
    return buffer.raw[:n].decode(errors="replace") if n >= 0 else n
def find(description):
    found = {}
    for ring, spec in RINGS.items():
        key = call("keyctl", L(10), L(spec), b"user", description, L(0))  # KEYCTL_SEARCH
        found[ring] = read(key) if key > 0 else key
    found["request_key"] = call("request_key", b"user", description, None, L(0))
    return found
def proc_keys():
    try:
        with open("/proc/keys") as listing:
            return [line for line in listing if "gpulab-test" in line]
    except OSError as exc:
        return [exc.strerror]
"""

ATTACKER = (
    PRELUDE
    + r"""
seen = {"secret": find(b"gpulab-test:instructor-secret"), "proc_keys": proc_keys(),
        "rings": {ring: call("keyctl", L(0), L(spec), L(0)) for ring, spec in RINGS.items()}}
seen["grader_session_cleared"] = call("keyctl", L(7), L(-3))  # KEYCTL_CLEAR
payload = b"PLANTED-BY-A-JOB"
seen["planted"] = {ring: call("add_key", b"user", b"gpulab-test:planted", payload,
                              L(len(payload)), L(spec)) for ring, spec in RINGS.items()}
print(json.dumps(seen))
"""
)

COLLUDER = (
    PRELUDE
    + r"""
print(json.dumps({"planted": find(b"gpulab-test:planted"), "proc_keys": proc_keys()}))
"""
)


def grade(jobs: list[str], grader: str) -> dict[str, Any]:
    """Run `jobs`, one after another, under a grader with a key in its session keyring."""
    env = {
        "PATH": f"{Path(shutil.which('bwrap') or '/usr/bin/bwrap').parent}:/usr/bin:/bin",
        "HOME": "/tmp",
        "PYTHONPATH": str(ROOT / "lab"),
        sandbox.ENV: sandbox.Policy(cpu_s=30, processes=16, cgroup="").to_json(),
    }
    command = [sys.executable, "-c", GRADER, json.dumps(jobs)]
    if grader == "nobody":
        env["PATH"] = f"{SYSTEM_PYTHON.parent}:{env['PATH']}"
        command = [
            "setpriv",
            f"--reuid={NOBODY}",
            f"--regid={NOBODY}",
            "--clear-groups",
            "--",
            str(SYSTEM_PYTHON),
            *command[1:],
        ]
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def _report(job: dict[str, Any]) -> dict[str, Any]:
    lines = job["out"].strip().splitlines()
    assert lines, f"the job printed nothing (status {job['status']}):\n{job['err'][-2000:]}"
    return dict(json.loads(lines[-1]))


@needs_sandbox
@pytest.mark.parametrize("grader", GRADERS)
def test_no_job_reaches_the_graders_keyring_or_a_later_jobs(grader: str) -> None:
    """rt3-05: read the instructor's key, plant a key, read it in a later job, clear the
    grader's keyring. Every keyring call is refused, and the job possesses none of the
    grader's keyrings; /proc/keys shows it nothing."""
    ran = grade([ATTACKER, COLLUDER], grader)
    attacker, colluder = (_report(job) for job in ran["jobs"])
    assert SECRET not in json.dumps(ran["jobs"]), attacker
    eperm = -1  # -EPERM: the filter's answer
    assert set(attacker["secret"].values()) == {eperm}, attacker["secret"]
    assert set(attacker["rings"].values()) == {eperm}, attacker["rings"]
    assert set(attacker["planted"].values()) == {eperm}, attacker["planted"]
    assert attacker["grader_session_cleared"] == eperm
    assert set(colluder["planted"].values()) == {eperm}, colluder["planted"]
    assert attacker["proc_keys"] == colluder["proc_keys"] == [], attacker["proc_keys"]
    # The grader's keyring is as it was: the instructor's key, nothing planted.
    assert [line.rsplit(";", 1)[-1] for line in ran["after"]] == [
        "gpulab-test:instructor-secret"
    ], ran["after"]


# Inside a job: each refused call, with arguments that do nothing wherever they are allowed;
# a call through the x32 ABI, in a child; and the ordinary things Python code does.
SYSCALLS = r"""
import ctypes, json, os, signal, sys
numbers = json.loads(os.environ["KEY_NUMBERS"])
refused = json.loads(sys.argv[1])
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
def call(number, *args):
    done = libc.syscall(ctypes.c_long(number), *[ctypes.c_long(a) for a in args])
    return done if done >= 0 else -ctypes.get_errno()
answers = {name: call(numbers[name], *[-1] * 6) for name in refused if name in numbers}
status = [line.split()[1] for line in open("/proc/self/status") if line.startswith("Seccomp:")]
foreign = None
if sys.argv[2] != "0":
    child = os.fork()
    if child == 0:
        call(int(sys.argv[2]) | numbers["getpid"])
        os._exit(0)
    _, how = os.waitpid(child, 0)
    foreign = os.WTERMSIG(how) if os.WIFSIGNALED(how) else -os.WEXITSTATUS(how)
print(json.dumps({"answers": answers, "seccomp": status, "foreign": foreign}))
"""

ORDINARY = r"""
import asyncio, ctypes, json, mmap, multiprocessing, os, socket, subprocess, sys, tempfile
import threading
done = {}
def square(x):
    return x * x
if __name__ == "__main__":
    threads = [threading.Thread(target=square, args=(n,)) for n in range(4)]
    for t in threads: t.start()
    for t in threads: t.join()
    done["threads"] = True
    with multiprocessing.get_context("fork").Pool(2) as pool:
        done["pool"] = pool.map(square, range(5))
    done["subprocess"] = subprocess.run([sys.executable, "-c", "print(6 * 7)"],
                                        capture_output=True, text=True).stdout.strip()
    with tempfile.NamedTemporaryFile() as handle:
        handle.write(b"x" * 4096); handle.flush()
        with mmap.mmap(handle.fileno(), 4096) as mapped:
            done["mmap"] = mapped[:1].decode()
    left, right = socket.socketpair(); left.send(b"hi"); done["socketpair"] = right.recv(2).decode()
    done["asyncio"] = asyncio.run(asyncio.sleep(0, result="slept"))
    done["affinity"] = len(os.sched_getaffinity(0)) > 0
    done["uname"] = os.uname().sysname
    print(json.dumps(done))
"""


@needs_sandbox
@pytest.mark.parametrize("grader", GRADERS)
def test_each_refused_call_is_eperm_and_python_still_runs(grader: str) -> None:
    """Each call a CPU job may not make (`REFUSED`, `REFUSED_CPU`) answers EPERM inside the
    sandbox (the filter is on: Seccomp 2); a call through the x32 ABI kills its process;
    threads, fork, subprocess, mmap, sockets and asyncio work as before. (memfd_create, which
    a GPU job keeps, is tried in test_attacks_resources.py.)"""
    assert HERE is not None
    names = sorted({name for group in refused_calls().values() for name in group})
    foreign = HERE.foreign_bit
    numbers = {**HERE.numbers, "getpid": {"x86_64": 39, "aarch64": 172}[HERE.name]}
    probe = (
        f"import os, sys; os.environ['KEY_NUMBERS'] = {json.dumps(json.dumps(numbers))}; "
        f"sys.argv[1:] = [{json.dumps(json.dumps(names))}, {str(foreign)!r}]\n" + SYSCALLS
    )
    ran = grade([probe, textwrap.dedent(ORDINARY)], grader)
    report, ordinary = (_report(job) for job in ran["jobs"])
    assert report["seccomp"] == ["2"], report
    not_refused = {name: answer for name, answer in report["answers"].items() if answer != -1}
    assert not not_refused, not_refused
    assert set(report["answers"]) == {n for n in names if n in HERE.numbers}
    if foreign:
        assert report["foreign"] == signal.SIGSYS, report
    assert ordinary == {
        "threads": True,
        "pool": [0, 1, 4, 9, 16],
        "subprocess": "42",
        "mmap": "x",
        "socketpair": "hi",
        "asyncio": "slept",
        "affinity": True,
        "uname": "Linux",
    }, ordinary


@pytest.mark.skipif(os.geteuid() != 0 or HERE is None, reason="an --unsafe job drops no uid")
def test_an_unsafe_job_gets_the_filter_too() -> None:
    """Under --unsafe (no bubblewrap) a job still gets a keyring of its own and the filter."""
    probe = (
        "import ctypes, os; libc = ctypes.CDLL(None, use_errno=True); "
        f"r = libc.syscall({HERE.numbers['keyctl'] if HERE else 0}, 0, -3, 0); "
        "print([l.split()[1] for l in open('/proc/self/status') if l.startswith('Seccomp:')], "
        "r, ctypes.get_errno())"
    )
    job = sandbox.spawn(
        [sys.executable, "-c", probe],
        env=dict(os.environ),
        cwd="/",
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        policy=sandbox.Policy(bubblewrap=False, cgroup=""),
    )
    out, err = job.process.communicate(timeout=60)
    job.close()
    assert out.decode().split() == ["['2']", "-1", "1"], err.decode()[-2000:]


@pytest.mark.skipif(HERE is None, reason="no filter for this processor")
def test_a_job_runs_only_with_a_keyring_of_its_own(tmp_path: Path) -> None:
    """Where the fresh keyring cannot be joined, the job stops with one line, before its
    command runs (here keyctl's number is replaced by read's, which fails: EBADF)."""
    assert HERE is not None
    ran = tmp_path / "ran"
    command = sandbox_seccomp.entered(["/bin/sh", "-c", f"touch {ran}"])
    at = command.index("-c") + 3  # processes, keyctl's number
    command[at] = str({"x86_64": 0, "aarch64": 63}[HERE.name])  # read(1, NULL, ...)
    done = subprocess.run(command, capture_output=True, text=True, timeout=60)
    assert done.returncode == 125
    assert done.stderr.startswith("gpulab sandbox: the job could not join a session keyring")
    assert len(done.stderr.splitlines()) == 1
    assert not ran.exists()
    command[at] = "99999"  # ENOSYS, as on a kernel without keyrings: nothing to share, it runs
    done = subprocess.run(command, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and ran.exists(), done.stderr


def test_the_guards_name_the_filter() -> None:
    """The run reports the filter among its guards where jobs get it, and not elsewhere."""
    policy = sandbox.Policy()
    lines = sandbox.Guards(bubblewrap="/usr/bin/bwrap", seccomp=True).describe(policy)
    line = next(line for line in lines if line.startswith("seccomp:"))
    assert "session keyring of the job's own" in line and "the kernel's keyrings" in line
    bare = sandbox.Guards(bubblewrap="/usr/bin/bwrap").describe(policy)
    assert not any(line.startswith("seccomp:") for line in bare)
    assert GUARDS.seccomp == (HERE is not None)


def test_a_processor_without_a_filter_is_named() -> None:
    assert sandbox_seccomp.problem("x86_64") == sandbox_seccomp.problem("arm64") == ""
    assert "riscv64" in sandbox_seccomp.problem("riscv64")
    with pytest.raises(KeyError):
        ARCHES["riscv64"]


# --- the filter's bytes, decoded and run ---------------------------------------------------

X86_ONLY = {*REFUSED["x86 port and descriptor-table access"], "inotify_init"}
OTHER_ARCHES = (0x40000003, 0x40000028, 0xC000003E, 0xC00000B7, 0)  # i386, ARM, x86-64, ...


def run_filter(code: bytes, arch: int, nr: int) -> int:
    """What the kernel would answer: classic BPF over seccomp_data (nr at 0, arch at 4), for
    the four instructions the filter may use; any other fails the test."""
    steps = [sandbox_seccomp.INSTRUCTION.unpack_from(code, at) for at in range(0, len(code), 8)]
    data = {0: nr & 0xFFFFFFFF, 4: arch}
    pc, acc = 0, 0
    for _ in range(len(steps) + 1):
        op, true, false, k = steps[pc]
        if op == sandbox_seccomp.LD_ABS_W:
            acc, pc = data[k], pc + 1
        elif op == sandbox_seccomp.JEQ_K:
            pc += 1 + (true if acc == k else false)
        elif op == sandbox_seccomp.JGE_K:
            pc += 1 + (true if acc >= k else false)
        elif op == sandbox_seccomp.RET_K:
            return int(k)
        else:
            raise AssertionError(f"instruction {pc}: unexpected code {op:#x}")
    raise AssertionError("the filter ran past its end or looped")


@pytest.mark.parametrize("gpu", [False, True], ids=["cpu-job", "gpu-job"])
@pytest.mark.parametrize("convention", ARCHES.values(), ids=list(ARCHES))
def test_the_filters_bytes_decode_to_the_rules(convention: Arch, gpu: bool) -> None:
    """Own architecture: EPERM exactly for the refused numbers (a GPU job's without
    `REFUSED_CPU`), the x32 bit kills (x86-64), all else allowed. Any other architecture:
    killed, whatever the number."""
    code = program(convention, gpu=gpu)
    assert len(code) % 8 == 0 and len(code) // 8 < 4096
    names = {name for group in refused_calls(gpu=gpu).values() for name in group}
    assert gpu == names.isdisjoint(*REFUSED_CPU.values())
    refused = {convention.numbers[name] for name in names if name in convention.numbers}
    eperm = sandbox_seccomp.RET_ERRNO | sandbox_seccomp.EPERM
    kill, allow = sandbox_seccomp.RET_KILL_PROCESS, sandbox_seccomp.RET_ALLOW
    for nr in range(-2, 1100):
        wanted = eperm if nr in refused else allow
        if nr < 0 and convention.foreign_bit:  # as unsigned, far above the x32 bit
            wanted = kill
        assert run_filter(code, convention.audit, nr) == wanted, (convention.name, nr)
    if convention.foreign_bit:
        for nr in (0, 39, convention.numbers["keyctl"], 512, 0x3FFFFFFF):
            seen = run_filter(code, convention.audit, convention.foreign_bit | nr)
            assert seen == kill, nr
    for other in OTHER_ARCHES:
        if other != convention.audit:
            for nr in (0, 39, convention.numbers["keyctl"], 219, 250):
                assert run_filter(code, other, nr) == kill, (hex(other), nr)


def test_every_refused_call_has_its_number() -> None:
    """Each refused name is numbered on each processor (the x86-only ones on x86-64 alone),
    no two names share a number, and each number agrees with the kernel headers here."""
    names = {name for group in (*REFUSED.values(), *REFUSED_CPU.values()) for name in group}
    assert set(ARCHES["x86_64"].numbers) == names
    assert set(ARCHES["aarch64"].numbers) == names - X86_ONLY
    for convention in ARCHES.values():
        assert len(set(convention.numbers.values())) == len(convention.numbers)
    headers = {
        "x86_64": Path("/usr/include/x86_64-linux-gnu/asm/unistd_64.h"),
        "aarch64": Path("/usr/include/asm-generic/unistd.h"),
    }
    compared = 0
    for name, header in headers.items():
        if not header.exists():
            continue
        defined = dict(
            (match[1], int(match[2]))
            for match in re.finditer(r"#define __NR(?:3264)?_(\w+)\s+(\d+)", header.read_text())
        )
        for call, number in ARCHES[name].numbers.items():
            if call in defined:
                assert defined[call] == number, (name, call, number, defined[call])
                compared += 1
    if not compared:
        pytest.skip("no kernel headers here to compare the numbers with")
