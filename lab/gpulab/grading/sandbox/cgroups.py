"""cgroups for a grading run: one per run, one per job inside it, removed when done.

Where the grader may make cgroups (v2 with a delegated subtree, or v1
controllers it can write), each job gets a process-count and a memory limit
in a cgroup of its own, inside a cgroup of the whole run, and, where the cpu
controller is offered too, an equal CPU weight: every job one share, however
many processes it starts. The weight shares what is contended and leaves idle
CPUs to whoever can use them (no ``cpu.max`` cap, which would idle them). A run
killed before it could clean up leaves its cgroup behind: its name ends with the
grader's pid, and the next run removes every ``gpulab-run-*`` cgroup whose
grader is gone and in which no process is left.

Without a cpu controller, the kernel's autogroup scheduler may still give each
job one share: it makes a scheduling group per session, and a job is one
session (`gpulab.grading.sandbox.seccomp` refuses ``setsid``). `autogroup_problem`
says why it does not where it does not.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
import uuid
from collections.abc import Sequence
from pathlib import Path

__all__ = [
    "autogroup_problem",
    "cgroup_home",
    "cpu_weighted",
    "empty_and_remove",
    "make_job_cgroups",
    "remove_cgroups",
    "remove_stale_cgroups",
    "run_cgroups",
]


def _own_cgroup_lines() -> list[tuple[str, str]]:
    """(controllers, path) from /proc/self/cgroup."""
    out = []
    with contextlib.suppress(OSError):
        for line in Path("/proc/self/cgroup").read_text().splitlines():
            parts = line.split(":", 2)
            if len(parts) == 3:
                out.append((parts[1], parts[2]))
    return out


def cgroup_home() -> tuple[str, str]:
    """Where this process may make job cgroups, as Policy.cgroup, and why not where it may not."""
    root = Path("/sys/fs/cgroup")
    lines = _own_cgroup_lines()
    if (root / "cgroup.controllers").is_file():  # unified hierarchy only
        path = next((p for c, p in lines if c == ""), None)
        if path is None:
            return "", "this process's cgroup is unknown"
        own = root / path.lstrip("/")
        # a v2 cgroup holding processes cannot give controllers to children: make job
        # cgroups beside ours, under our parent, when the parent offers the controllers
        parent = own.parent if own != root else own
        offered = _read(parent / "cgroup.subtree_control").split()
        if not {"pids", "memory"} <= set(offered):
            return "", f"{parent} does not hand pids and memory to its children"
        if _can_make(parent):
            return f"v2:{parent}", ""
        return "", f"{parent} is not writable by this user"
    found = []
    for controller in ("pids", "memory", "cpu"):
        path = next((p for c, p in lines if controller in c.split(",")), None)
        home = root / controller / (path or "/").lstrip("/")
        if path is None or not home.is_dir():
            if controller == "cpu":  # optional: a job's share then comes from autogroup
                continue
            return "", f"the {controller} controller is not mounted"
        if not _can_make(home):
            if controller == "cpu":
                continue
            return "", f"{home} is not writable by this user"
        found.append(f"{controller}={home}")
    return "v1:" + ",".join(found), ""


def cpu_weighted(spec: str) -> bool:
    """Whether jobs under `spec` (as Policy.cgroup: a home, or a run's cgroups) get a CPU weight
    of their own: a v1 cpu controller, or a v2 cgroup that hands cpu to its children."""
    version, _, where = spec.partition(":")
    if version == "v1":
        return any(item.startswith("cpu=") for item in where.split(","))
    if version == "v2":  # what the folder hands its children: a home its run, a run its jobs
        return "cpu" in _read(Path(where) / "cgroup.subtree_control").split()
    return False


def autogroup_problem() -> str:
    """Why the kernel's autogroup scheduler does not give each session of this process's
    children a share of the CPU of its own; "" where it does. It applies to processes in the
    root of the cpu controller's hierarchy only."""
    try:
        enabled = Path("/proc/sys/kernel/sched_autogroup_enabled").read_text().strip()
    except OSError:
        return "this kernel has no autogroup scheduler"
    if enabled != "1":
        return "the kernel's autogroup scheduler is off (kernel.sched_autogroup_enabled = 0)"
    lines = _own_cgroup_lines()
    root = Path("/sys/fs/cgroup")
    if (root / "cgroup.controllers").is_file():  # v2: a cpu group anywhere below the root?
        path = next((p for c, p in lines if c == ""), "/")
        if path != "/" and "cpu" in _read(root / "cgroup.subtree_control").split():
            return f"the grader is in a cgroup with a CPU weight ({path}), where it does not apply"
        return ""
    path = next((p for c, p in lines if "cpu" in c.split(",")), "/")
    if path != "/":
        return f"the grader is in a cpu cgroup ({path}), where it does not apply"
    return ""


def _read(path: Path) -> str:
    try:
        return path.read_text()
    except OSError:
        return ""


def _can_make(folder: Path) -> bool:
    probe = folder / f"gpulab-probe-{uuid.uuid4().hex[:8]}"
    try:
        probe.mkdir()
    except OSError:
        return False
    with contextlib.suppress(OSError):
        probe.rmdir()
    return True


CPU_WEIGHT = 100  # v2 cpu.weight: the default, the same for every job
CPU_SHARES = 1024  # v1 cpu.shares: the same


def make_job_cgroups(spec: str, processes: int, memory_bytes: int) -> list[Path]:
    """A job's cgroups under the run's `spec` (as Policy.cgroup), with its limits."""
    if not spec:
        return []
    version, _, where = spec.partition(":")
    name = f"gpulab-job-{uuid.uuid4().hex[:12]}"
    made: list[Path] = []
    try:
        if version == "v2":
            folder = Path(where) / name
            folder.mkdir()
            made.append(folder)
            (folder / "pids.max").write_text(str(processes))
            (folder / "memory.max").write_text(str(memory_bytes))
            with contextlib.suppress(OSError):
                (folder / "memory.swap.max").write_text("0")
            if (folder / "cpu.weight").is_file():  # the run hands cpu to its jobs
                (folder / "cpu.weight").write_text(str(CPU_WEIGHT))
        else:
            for item in where.split(","):
                controller, _, home = item.partition("=")
                folder = Path(home) / name
                folder.mkdir()
                made.append(folder)
                if controller == "pids":
                    (folder / "pids.max").write_text(str(processes))
                elif controller == "cpu":
                    (folder / "cpu.shares").write_text(str(CPU_SHARES))
                else:
                    (folder / "memory.limit_in_bytes").write_text(str(memory_bytes))
    except OSError as exc:
        for folder in made:
            with contextlib.suppress(OSError):
                folder.rmdir()
        raise OSError(f"cannot make the job's cgroup: {exc}") from None
    return made


def run_cgroups(home: str, tag: str) -> str:
    """A cgroup for a whole run under `home` (as Policy.cgroup); jobs' cgroups go inside it.

    When a checks process is killed before it could remove its job's cgroup, the
    run's `remove_cgroups` still finds and removes it.
    """
    if not home:
        return ""
    version, _, where = home.partition(":")
    name = f"gpulab-run-{tag}-{os.getpid()}"  # the pid: only a dead run's is stale
    if version == "v2":
        folder = Path(where) / name
        folder.mkdir(exist_ok=True)
        offered = _read(Path(where) / "cgroup.subtree_control").split()
        handed = "+pids +memory" + (" +cpu" if "cpu" in offered else "")
        (folder / "cgroup.subtree_control").write_text(handed)
        return f"v2:{folder}"
    parts = []
    for item in where.split(","):
        controller, _, parent = item.partition("=")
        folder = Path(parent) / name
        folder.mkdir(exist_ok=True)
        parts.append(f"{controller}={folder}")
    return "v1:" + ",".join(parts)


def remove_cgroups(spec: str) -> None:
    """Kill whatever is left in a run's cgroups, and remove them with their jobs' cgroups."""
    if not spec:
        return
    version, _, where = spec.partition(":")
    tops = (
        [Path(where)]
        if version == "v2"
        else [Path(item.partition("=")[2]) for item in where.split(",")]
    )
    for top in tops:
        jobs = sorted((p for p in top.glob("gpulab-job-*") if p.is_dir()), key=str)
        empty_and_remove([*jobs, top])


def empty_and_remove(folders: Sequence[Path]) -> None:
    """SIGKILL every process in each cgroup folder (a fork bomb's too), then remove it.

    On cgroup v2 (Linux 5.14 and newer) writing 1 to ``cgroup.kill`` kills the
    whole cgroup at once, children forked meanwhile included; elsewhere, and for
    what that leaves, each process listed is killed until none is."""
    for folder in folders:
        kill = folder / "cgroup.kill"
        if kill.is_file():
            with contextlib.suppress(OSError):
                kill.write_text("1")
        for _ in range(100):
            pids = _read(folder / "cgroup.procs").split()
            if not pids:
                break
            for pid in pids:
                with contextlib.suppress(ProcessLookupError, PermissionError, ValueError):
                    os.kill(int(pid), signal.SIGKILL)
            time.sleep(0.02)
        with contextlib.suppress(OSError):
            folder.rmdir()


def remove_stale_cgroups(home: str) -> list[str]:
    """Remove the cgroups of runs that ended without cleaning up (a killed grader): every
    ``gpulab-run-<tag>-<pid>`` under `home` whose grader `pid` is gone and in which no
    process is left. The ones removed."""
    if not home:
        return []
    version, _, where = home.partition(":")
    parents = (
        [Path(where)]
        if version == "v2"
        else [Path(item.partition("=")[2]) for item in where.split(",")]
    )
    removed = []
    for parent in parents:
        for run in sorted(parent.glob("gpulab-run-*-*")):
            owner = run.name.rsplit("-", 1)[1]
            if not owner.isdigit() or Path(f"/proc/{owner}").exists():
                continue  # its grader runs: empty between jobs, not stale
            jobs = [p for p in run.glob("gpulab-job-*") if p.is_dir()]
            if any(_read(folder / "cgroup.procs").split() for folder in [*jobs, run]):
                continue
            for folder in [*jobs, run]:
                with contextlib.suppress(OSError):
                    folder.rmdir()
            if not run.exists():
                removed.append(str(run))
    return removed
