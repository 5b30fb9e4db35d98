"""A job's time, as its time limits count it: its own, not the machine's.

A grading run gives each job a time limit (the exercise's, or ``--timeout``), and
each call into the learner's code one of its own. Counted on the wall clock, a
limit also counts the time the job spent waiting for a CPU that other processes
held: on a busy machine an honest notebook ran out of time and was graded
``timeout``, and the grade was kept (the red team's H3). Here a job's time is
its own, and a `JobClock` keeps it:

- its **CPU time**: that of every process of the job, from the process the
  clock was given (the checks process, or the sandbox's launcher) down,
  processes that ended included (a parent's count of its waited-for children);
- its **own wall time**: the time it has run for, less the time its critical
  path waited for a CPU while ready to run (the kernel's run delay,
  ``/proc/<pid>/task/<tid>/schedstat``). The critical path is the trusted
  processes (in the clock's own PID namespace: the checks process, the
  launcher, bubblewrap) and the learner's worker, PID 1 of the sandbox's PID
  namespace, but not the other processes the learner's code starts: a job whose
  own processes crowd each other out is not kept waiting by the machine.

A job is out of time (`TimeoutError`) when either reaches its limit: an
endless loop by its CPU time, a wait that never ends (``input()``, a sleep, a
deadlock) by its own wall time. A job that has run for `PATIENCE` times its
limit on the wall clock without either was kept from the CPU for most of that
time: no verdict can be given on it (`Starved`). A grading run leaves it
ungraded (``not-run``), so the next run grades it again, never as ``timeout``.

Where the kernel does not report run delays (no ``schedstat``), the own wall time
is the wall time: the limits are then the wall clock's, and `waits_known` says so.
Like the sandbox, this module imports the standard library only.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "PATIENCE",
    "POLL_S",
    "JobClock",
    "Starved",
    "Usage",
    "starved",
    "usage",
    "waits_known",
]

PATIENCE = 4.0
"""How many times its limit a job may take on the wall clock, kept from the CPU, before it is
left without a verdict."""
POLL_S = 0.5
"""How often a waiting caller asks its clock (each time a look at every process's /proc)."""

_TICK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


class Starved(Exception):
    """The job was kept waiting for a CPU past `PATIENCE` times its limit: no verdict. Its
    message says how long it waited, of how long, and how much CPU it had."""


_STARVED: list[str] = []  # every Starved this process raised, in order


def starved() -> int:
    """How many times a clock of this process found its job starved: a check that failed
    while this grew has no verdict, whatever it made of the error
    (`gpulab.grading.checks.pytest_plugin`)."""
    return len(_STARVED)


@dataclass(frozen=True)
class Usage:
    """A process tree's CPU time, and the time its critical path waited for a CPU."""

    cpu_s: float = 0.0
    waited_s: float = 0.0

    def __sub__(self, other: Usage) -> Usage:
        return Usage(self.cpu_s - other.cpu_s, self.waited_s - other.waited_s)


def waits_known() -> bool:
    """Whether this kernel reports how long a process waited for a CPU (CONFIG_SCHED_INFO)."""
    return Path(f"/proc/{os.getpid()}/schedstat").is_file()


def usage(root: int) -> Usage:
    """The CPU time of `root` and every process below it, and the time the critical path among
    them (see the module's docstring) waited for a CPU. Zero for a process that is gone."""
    parents: dict[int, int] = {}
    cpu: dict[int, float] = {}
    try:
        entries = list(os.scandir("/proc"))
    except OSError:
        return Usage()
    for entry in entries:
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/stat", "rb") as handle:
                stat = handle.read()
        except OSError:
            continue
        # after the command's ")": state ppid ... utime(11) stime(12) cutime(13) cstime(14)
        fields = stat.rpartition(b")")[2].split()
        if len(fields) < 15:
            continue
        pid = int(entry.name)
        parents[pid] = int(fields[1])
        cpu[pid] = sum(int(value) for value in fields[11:15]) / _TICK
    if root not in cpu:
        return Usage()
    children: dict[int, list[int]] = {}
    for pid, parent in parents.items():
        children.setdefault(parent, []).append(pid)
    tree, todo = [], [root]
    while todo:
        pid = todo.pop()
        tree.append(pid)
        todo.extend(children.get(pid, ()))
    depth = len(_nspid(os.getpid()))
    waited = 0.0
    for pid in tree:
        nspid = _nspid(pid)
        if len(nspid) == depth or (len(nspid) == depth + 1 and nspid[-1] == "1"):
            waited += _run_delay(pid)
    return Usage(sum(cpu[pid] for pid in tree), waited)


def _nspid(pid: int) -> list[str]:
    """The process's pid in each PID namespace from this one's root down to its own."""
    try:
        with open(f"/proc/{pid}/status", encoding="ascii", errors="replace") as handle:
            for line in handle:
                if line.startswith("NSpid:"):
                    return line.split()[1:]
    except OSError:
        pass
    return []


def _run_delay(pid: int) -> float:
    """Seconds the process's threads have waited, ready to run, for a CPU."""
    total = 0
    try:
        threads = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return 0.0
    for thread in threads:
        try:
            with open(f"/proc/{pid}/task/{thread}/schedstat", "rb") as handle:
                total += int(handle.read().split()[1])
        except (OSError, IndexError, ValueError):
            continue
    return total / 1e9


class JobClock:
    """The time a job has had against its `limit`, from now; `check` says when it is over.

    `root` is the process whose tree is the job. A clock made as the root starts (`fresh`)
    counts everything it used; otherwise it counts from its first `check`, and what the tree
    did before (at most one `POLL_S`) is counted as its own wall time, not its CPU time.
    """

    def __init__(self, root: int, limit: float, *, fresh: bool = False) -> None:
        self.root = root
        self.limit = limit
        self.started = time.monotonic()
        self._base: Usage | None = Usage() if fresh else None

    def used(self) -> tuple[float, Usage]:
        """(wall time since the clock started, the tree's usage since then)."""
        now = usage(self.root)
        if self._base is None:
            self._base = now
        return time.monotonic() - self.started, now - self._base

    def check(self) -> None:
        """Return while the job has time left; raise `TimeoutError` when it has used its time
        (CPU or own wall time), `Starved` when it was kept from the CPU too long."""
        wall, used = self.used()
        if used.cpu_s >= self.limit or wall - used.waited_s >= self.limit:
            raise TimeoutError(
                f"{self.limit:g} s used: {used.cpu_s:.1f} s of CPU, "
                f"{wall - used.waited_s:.1f} s of its own"
            )
        if wall >= PATIENCE * self.limit:
            _STARVED.append(
                f"in {wall:.0f} s it waited {used.waited_s:.0f} s for a CPU and had "
                f"{used.cpu_s:.1f} s of CPU time (its limit: {self.limit:g} s)"
            )
            raise Starved(_STARVED[-1])
