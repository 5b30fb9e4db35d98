"""A job's share of the machine: CPU, memory and the kernel's per-user quotas (H3, H5, H6).

The red team's H3: a learner's 62 processes, each in a session of its own,
defeated the autogroup scheduler's one share per session; honest neighbours
ran 20 to 26 times slower and a right answer was graded ``timeout`` and kept.
H5: with no cgroup, 3 GiB held in memfds under an "address space 2048 MiB"
limit. H6: as an ordinary user, one job took the grader uid's whole inotify
quota. Each attack runs through `sandbox.spawn` as a grading run starts learner
code, with no cgroup (the guards that must hold without one), as root (CI) and
as an ordinary user (`nobody`, through setpriv, with the machine's own Python);
the fair share is tried with the run's cgroup too where there is one, and a
whole class is graded beside a spinning learner and one who hoards memfds.
Numbers are small: 40 spinners prove what 62 did, 1 GiB what 3 GiB did.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import subprocess
import sys
import textwrap
import time
import uuid
from pathlib import Path

import pytest

from gpulab.grading import sandbox
from gpulab.grading.classrun.grade import grade_class
from gpulab.grading.classrun.grade_model import GradeOptions
from gpulab.grading.gradebook import Gradebook
from gpulab.grading.sandbox.bubblewrap import PENDING_SIGNALS
from gpulab.grading.sandbox.policy import unguaranteed
from helpers.adversarial_class import SOLUTION, _prefixed

ROOT = Path(__file__).resolve().parents[2]
GUARDS = sandbox.available()
MiB = 2**20
NOBODY = 65534
SYSTEM_PYTHON = Path("/usr/bin/python3")

pytestmark = pytest.mark.skipif(
    not GUARDS.bubblewrap or not GUARDS.seccomp,
    reason=f"no bubblewrap sandbox with a filter here: {GUARDS.bubblewrap_problem}",
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
POLICY = sandbox.Policy(
    cpu_s=60, memory_bytes=1024 * MiB, processes=48, scratch_bytes=8 * MiB, cgroup=""
)

# The grader: starts each job of the plan through `spawn` at once (a GPU job's if asked; on
# the plan's CPUs if it names some),
# runs the plan's own code beside them as the grader (`during`: what the grader itself can
# still do), then reports what each job printed last, and what `during` found.
GRADER = r"""
import ctypes, json, os, subprocess, sys
from gpulab.grading import sandbox
plan = json.loads(sys.argv[1])
policy = sandbox.Policy.from_json(plan["policy"])
if plan.get("cpus"):
    os.sched_setaffinity(0, plan["cpus"])  # the jobs inherit it
jobs = [sandbox.spawn([sys.executable, "-c", job["code"], *job.get("args", [])],
                      env=dict(os.environ), cwd="/", stdin=subprocess.DEVNULL,
                      stdout=subprocess.PIPE, stderr=subprocess.PIPE, policy=policy,
                      gpu=job.get("gpu", False))
        for job in plan["jobs"]]
during = {}
if plan.get("during"):
    first = jobs[0].process.stdout.readline()  # the first job says when it holds what it took
    exec(plan["during"])
    during["first"] = json.loads(first)
said = []
for job in jobs:
    out, err = job.process.communicate(timeout=120)
    job.close()
    lines = out.decode(errors="replace").strip().splitlines()
    said.append(json.loads(lines[-1]) if lines else {"err": err.decode(errors="replace")[-2000:]})
print(json.dumps({"jobs": said, "during": during}))
"""


def run(grader: str, jobs: list[dict[str, object]], *, policy: sandbox.Policy = POLICY,
        during: str = "", cpus: tuple[int, ...] = ()) -> dict[str, object]:  # fmt: skip
    """Run `jobs` at once in sandboxes, as `grader` would; what each printed last."""
    plan = json.dumps(
        {
            "policy": policy.to_json(),
            "jobs": jobs,
            "during": textwrap.dedent(during),
            "cpus": list(cpus),
        }
    )
    if grader == "self":
        command = [sys.executable, "-c", GRADER, plan]
        env = dict(os.environ)
    else:
        bwrap = Path(shutil.which("bwrap") or "/usr/bin/bwrap").parent
        command = [
            "setpriv",
            f"--reuid={NOBODY}",
            f"--regid={NOBODY}",
            "--clear-groups",
            "--",
            str(SYSTEM_PYTHON),
            "-c",
            GRADER,
            plan,
        ]
        env = {"PATH": f"{bwrap}:/usr/bin:/bin", "HOME": "/tmp", "PYTHONPATH": str(ROOT / "lab")}
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


# -- H3: a fair CPU share per job -----------------------------------------------------------

# The attacker: N children, each tries to make a session of its own (a scheduling group
# with a share of its own, where autogroup is on), then all spin from START to END (wall
# clock, seconds since the epoch); the CPU time they had.
SPINNERS = """
import json, os, sys, time
count, start, end = int(sys.argv[1]), float(sys.argv[2]), float(sys.argv[3])
sessions = []
for _ in range(count):
    read, write = os.pipe()
    if os.fork() == 0:
        try:
            os.setsid()
            said = "own session"
        except OSError as exc:
            said = exc.strerror
        os.write(write, said.encode())
        time.sleep(max(start - time.time(), 0))
        while time.time() < end:
            pass
        os._exit(0)
    os.close(write)
    sessions.append(os.read(read, 100).decode())
    os.close(read)
late = time.time() > start
for _ in range(count):
    os.wait()
times = os.times()
print(json.dumps({"sessions": sorted(set(sessions)), "late": late,
                  "cpu": times.children_user + times.children_system}))
"""
# The honest neighbour: one process that computes from START to END; the CPU time it had.
HONEST = """
import json, os, sys, time
start, end = float(sys.argv[1]), float(sys.argv[2])
time.sleep(max(start - time.time(), 0))
while time.time() < end:
    pass
times = os.times()
print(json.dumps({"cpu": times.user + times.system}))
"""


SHARES = [
    pytest.param("self", "", id="grader-as-this-user-no-cgroup"),
    pytest.param(
        "self",
        "cgroup",
        id="grader-as-this-user-cgroup",
        marks=pytest.mark.skipif(not GUARDS.cpu_cgroup, reason="no cpu cgroup to make here"),
    ),
    pytest.param(
        "nobody",
        "",
        id="grader-as-nobody",
        marks=pytest.mark.skipif(_nobody_skip() is not None, reason=_nobody_skip() or ""),
    ),
]


@pytest.mark.parametrize(("grader", "cgroup"), SHARES)
def test_a_job_of_many_sessions_does_not_slow_its_neighbour(grader: str, cgroup: str) -> None:
    """40 spinners that each try setsid beside one honest process, both on one CPU (so that
    the rest of the machine's load weighs on both alike): the honest job gets a share like
    the whole attacker's, not one 41st (autogroup: a job is one session, setsid refused; a
    cpu cgroup: an equal weight). Where neither holds, the run says so instead (see
    test_the_run_says_what_it_cannot_guarantee)."""
    if not cgroup and GUARDS.autogroup:
        pytest.skip(f"no fair share without a cgroup here: {GUARDS.autogroup}")
    spec = sandbox.run_cgroups(GUARDS.cgroup, f"test-{uuid.uuid4().hex[:8]}") if cgroup else ""
    start = time.time() + 3  # time to start both and fork the spinners
    window = [str(start), str(start + 3)]
    try:
        ran = run(
            grader,
            [{"code": SPINNERS, "args": ["40", *window]}, {"code": HONEST, "args": window}],
            policy=dataclasses.replace(POLICY, cgroup=spec),
            cpus=(min(os.sched_getaffinity(0)),),
        )
    finally:
        sandbox.remove_cgroups(spec)
    attacker, honest = ran["jobs"]  # type: ignore[misc]
    assert attacker["sessions"] == ["Operation not permitted"], attacker
    assert not attacker["late"], "the spinners were not all started in time: try a later start"
    assert honest["cpu"] >= attacker["cpu"] / 3, (honest, attacker)  # fair 1:1, unfair 1:40


# The class: two honest learners, one who starts 40 spinners in sessions of their own and
# one who would hold 1 GiB in memfds, graded together with a short time limit.
SPIN_IN_CELL = """
import os as _os
for _ in range(40):
    if _os.fork() == 0:
        try:
            _os.setsid()
        except OSError:
            pass
        while True:
            pass
"""
MEMFDS_IN_CELL = """
import os as _os
_held = []
for _n in range(16):                    # 1 GiB in memfds, if nothing stops it
    _fd = _os.memfd_create("hold")
    _os.ftruncate(_fd, 64 << 20)
    _os.write(_fd, b"x" * (64 << 20))
    _held.append(_fd)
"""


@pytest.mark.parametrize(
    "cgroup",
    [
        pytest.param(False, id="no-cgroup"),
        pytest.param(
            True,
            id="cgroup",
            marks=pytest.mark.skipif(not GUARDS.cpu_cgroup, reason="no cpu cgroup to make here"),
        ),
    ],
)
def test_a_class_beside_a_spinner_and_a_hoarder_is_graded_right(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cgroup: bool
) -> None:
    """The honest learners are right (without a fair share they took 20 times longer, past
    the limit); the spinner runs out of its own time; the hoarder's first memfd is refused,
    which its feedback says; nothing is left running."""
    if not cgroup:
        if GUARDS.autogroup:
            pytest.skip(f"no fair share without a cgroup here: {GUARDS.autogroup}")
        monkeypatch.setattr(
            sandbox, "available", lambda: dataclasses.replace(GUARDS, cgroup="", cpu_cgroup=False)
        )
    folder, out = tmp_path / "class", tmp_path / "out"
    for name in ("good", "victim"):
        _prefixed(SOLUTION, "")(folder / name / "roofline.ipynb")
    _prefixed(SOLUTION, SPIN_IN_CELL)(folder / "spinner" / "roofline.ipynb")
    _prefixed(SOLUTION, MEMFDS_IN_CELL)(folder / "hoarder" / "roofline.ipynb")
    summary = grade_class(GradeOptions(folder, out, ("roofline",), workers=2, timeout=10))
    with Gradebook(out / "gradebook.sqlite") as book:
        grades = {g.slug: g.exercises[0] for g in book.learners(["roofline"])}
    worth = summary.maxima["roofline"]
    assert (grades["good"].kind, grades["good"].earned) == ("right", worth), grades["good"]
    assert (grades["victim"].kind, grades["victim"].earned) == ("right", worth)
    assert grades["spinner"].kind in ("right", "timeout"), grades["spinner"]  # its own time
    hoarder = grades["hoarder"]
    assert hoarder.kind == "wrong", hoarder
    said = " ".join(check.message for check in hoarder.checks)
    assert "PermissionError" in said and "Operation not permitted" in said, said
    assert any(line.startswith("seccomp:") and "memory outside" in line for line in hoarder.guards)
    if not cgroup:
        assert any("no memory limit per job" in line for line in summary.guards)
    assert not _tagged(summary.tag), "the spinner's processes outlived the run"


def _tagged(tag: str) -> list[int]:
    from helpers.run_attacks import tagged_processes

    return tagged_processes(tag)


# -- H5: memory outside any address space -----------------------------------------------------

HOARD = """
import ctypes, json, mmap, os
libc = ctypes.CDLL(None, use_errno=True)
said = {}
try:
    fd = os.memfd_create("hold")
    said["memfd"] = "made"
except OSError as exc:
    said["memfd"] = exc.strerror
segment = libc.shmget(0, 64 << 20, 0o1600)         # IPC_PRIVATE, IPC_CREAT | 0600
said["shmget"] = "made" if segment >= 0 else os.strerror(ctypes.get_errno())
held = 0
try:
    for n in range(16):                              # /dev/shm: a capped tmpfs
        with open(f"/dev/shm/hold-{n}", "wb") as handle:
            handle.write(b"x" * (8 << 20))
        held += 8
except OSError as exc:
    said["dev_shm"] = [held, exc.strerror]
try:
    hog = bytearray(2048 << 20)                      # past the address space
    said["address_space"] = "allocated"
except MemoryError:
    said["address_space"] = "MemoryError"
print(json.dumps(said))
"""


@pytest.mark.parametrize("grader", GRADERS)
def test_a_cpu_job_holds_memory_only_where_a_limit_counts_it(grader: str) -> None:
    """No cgroup: memfd_create and shmget are refused (memory no address space counts), the
    tmpfs is capped, and the address space is limited."""
    (seen,) = run(grader, [{"code": HOARD}])["jobs"]  # type: ignore[misc]
    assert seen["memfd"] == seen["shmget"] == "Operation not permitted", seen
    held, why = seen["dev_shm"]
    assert why == "No space left on device" and held <= 16, seen
    assert seen["address_space"] == "MemoryError", seen


MEMFD_BOUND = """
import json, os
fd = os.memfd_create("hold")
said = {}
for how, do in (("write", lambda: os.pwrite(fd, b"x", (16 << 20) + 1)),
                ("ftruncate", lambda: os.ftruncate(fd, (16 << 20) + 1)),
                ("fallocate", lambda: os.posix_fallocate(fd, 0, (16 << 20) + 1))):
    try:
        do()
        said[how] = "grew"
    except OSError as exc:
        said[how] = exc.strerror
os.ftruncate(fd, 16 << 20)
said["at the limit"] = os.fstat(fd).st_size >> 20
print(json.dumps(said))
"""


@pytest.mark.parametrize("grader", GRADERS)
def test_a_gpu_jobs_memfd_is_bounded_by_the_file_size_limit(grader: str) -> None:
    """A GPU job keeps memfd_create (the CUDA driver needs it), and RLIMIT_FSIZE bounds each
    memfd as it bounds a file: a write, ftruncate or fallocate past it fails. That bounds a
    memfd, not a job: the run says a GPU job has no memory limit without a cgroup."""
    policy = dataclasses.replace(POLICY, file_bytes=16 * MiB)
    (seen,) = run(grader, [{"code": MEMFD_BOUND, "gpu": True}], policy=policy)["jobs"]  # type: ignore[misc]
    assert seen == {
        "write": "File too large",
        "ftruncate": "File too large",
        "fallocate": "File too large",
        "at the limit": 16,
    }, seen
    lines = GUARDS.describe(dataclasses.replace(policy, gpu=True))
    assert any(line.startswith("no memory limit per job") for line in lines), lines


# -- H6: per-user quotas ------------------------------------------------------------------------

QUOTAS = """
import ctypes, json, os, signal, sys, time
libc = ctypes.CDLL(None, use_errno=True)
said = {}
held = 0
while held < 1000:
    if libc.inotify_init1(0) < 0:
        said["inotify"] = [held, os.strerror(ctypes.get_errno())]
        break
    held += 1
said["fanotify"] = os.strerror(ctypes.get_errno()) if libc.fanotify_init(0, 0) < 0 else "made"
said["mq_open"] = (os.strerror(ctypes.get_errno())
                   if libc.syscall(int(sys.argv[1]), b"gpulab", 0o102, 0o600, None) < 0
                   else "made")
signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGRTMIN])
queued = 0
while queued < 5000:                            # queued signals (sigqueue: kill does not queue)
    if libc.sigqueue(os.getpid(), signal.SIGRTMIN, ctypes.c_long(0)) < 0:
        said["signals"] = [queued, os.strerror(ctypes.get_errno())]
        break
    queued += 1
print(json.dumps(said), flush=True)
time.sleep(float(sys.argv[2]))
print(json.dumps(said))
"""
# The grader, while the job holds what it could take: inotify instances of its own.
GRADER_INOTIFY = """
libc = ctypes.CDLL(None, use_errno=True)
made = [libc.inotify_init1(0) for _ in range(32)]
during["grader_inotify"] = sum(fd >= 0 for fd in made)
for fd in made:
    if fd >= 0:
        os.close(fd)
"""


@pytest.mark.parametrize("grader", GRADERS)
def test_a_job_takes_no_per_user_quota_from_the_grader(grader: str) -> None:
    """inotify, fanotify and POSIX message queues are refused (a count per uid, which an
    ordinary grader's jobs share with it); queued signals stop at the job's own limit; the
    grader, meanwhile, makes its inotify instances as before (an ordinary grader lost 80 of
    91 to one job)."""
    mq_open = {"x86_64": 240, "aarch64": 180}[os.uname().machine]
    ran = run(
        grader,
        [{"code": QUOTAS, "args": [str(mq_open), "2"]}],
        during=GRADER_INOTIFY,
    )
    (seen,) = ran["jobs"]  # type: ignore[misc]
    assert seen["inotify"] == [0, "Operation not permitted"], seen
    assert seen["fanotify"] == seen["mq_open"] == "Operation not permitted", seen
    assert seen["signals"] == [PENDING_SIGNALS, "Resource temporarily unavailable"], seen
    assert ran["during"] == {"grader_inotify": 32, "first": seen}, ran["during"]


# -- what the run says it cannot guarantee -------------------------------------------------------


def test_the_run_says_what_it_cannot_guarantee() -> None:
    """Without a cgroup or autogroup, and as an ordinary user, the guards say, each in a line
    of its own that the summary prints apart, what no job is guaranteed here."""
    bare = sandbox.Guards(bubblewrap="/usr/bin/bwrap", seccomp=True, autogroup="off", waits=True)
    lines = bare.describe(POLICY)
    said = [line for line in lines if unguaranteed(line)]
    assert [line.split(" (")[0] for line in said] == [
        "no fair CPU share per job",
        "no memory limit per job",
        "no uid of the job's own",
    ], said
    assert "each process at most 1024 MiB of address space, at most 48 processes" in said[1]
    assert "memfd and SysV shared memory refused" in said[1]
    assert any(line.startswith("time limits: the job's own time") for line in lines)
    fair = dataclasses.replace(bare, autogroup="", drops_uid=True, cpu_cgroup=True)
    weighted = fair.describe(dataclasses.replace(POLICY, cgroup="v2:/sys/fs/cgroup/x"))
    assert not [line for line in weighted if unguaranteed(line)], weighted
    assert any(line.endswith("an equal CPU weight") for line in weighted)
    autogroup = [line for line in fair.describe(POLICY) if line.startswith("CPU:")]
    assert autogroup and "setsid refused" in autogroup[0]


# -- what the checks themselves may still do -------------------------------------------------

# A check that starts a helper (compute-sanitizer runs the learner's kernel in a child) and
# wants to end it with everything it started: a process group of its own works, a session
# (setsid, refused) does not.
GROUPS = """
import json, subprocess, sys
said = {}
for how, ask in (("group", {"process_group": 0}), ("session", {"start_new_session": True})):
    try:
        leader = "import os; print(os.getpgid(0) == os.getpid())"
        child = subprocess.run([sys.executable, "-c", leader], capture_output=True, text=True,
                               timeout=60, **ask)
        said[how] = child.stdout.strip()
    except OSError as exc:
        said[how] = exc.strerror
print(json.dumps(said))
"""


def test_a_check_ends_its_helpers_by_process_group_not_session() -> None:
    """In a GPU job (where compute-sanitizer runs), a child in a process group of its own
    starts; one in a session of its own is refused. The checks' code asks for groups only
    (a sanitizer run asked for a session, and every kernel's memcheck failed on the GPU)."""
    (seen,) = run("self", [{"code": GROUPS, "gpu": True}])["jobs"]  # type: ignore[misc]
    assert seen == {"group": "True", "session": "Operation not permitted"}, seen
    import ast

    asked = []
    for path in sorted((ROOT / "lab" / "gpulab" / "grading" / "checks").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (isinstance(node, ast.keyword) and node.arg == "start_new_session") or (
                isinstance(node, ast.Attribute) and node.attr == "setsid"
            ):
                asked.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert not asked, f"the sandbox refuses setsid, and these ask for a session: {asked}"
