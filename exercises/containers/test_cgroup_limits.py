"""Visible checks for the cgroup-limits exercise.

Each check calls one of your functions in the worker process and compares
the result with what this file reads itself: the hierarchies from
/proc/self/mountinfo, the worker's cgroup from /proc/<worker pid>/cgroup, and
the limit files from that cgroup up to the top of its hierarchy. So both sides
read the same limits, also when a grading run gives the worker a sandbox and a
cgroup of its own.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from gpulab.probes.system_parse import compact_cpu_list, parse_cpu_list

# cgroup v1 writes "no limit" as the largest page-aligned counter (2**63 - 4096 on x86-64).
UNLIMITED = 2**60


@dataclass(frozen=True)
class Mount:
    fs_type: str            # "cgroup" (v1) or "cgroup2"
    mount_point: Path
    root: str               # the cgroup path shown at the mount point (field 4 of mountinfo)
    options: frozenset[str]  # v1: the super options, which name the controllers


def read_mounts() -> list[Mount]:
    """The cgroup mounts, from /proc/self/mountinfo (not /proc/self/mounts, as learners use)."""
    mounts = []
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        fields = line.split()
        after = fields[fields.index("-") + 1:]
        if after[0] in ("cgroup", "cgroup2"):
            point = re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), fields[4])
            mounts.append(Mount(after[0], Path(point), fields[3],
                                frozenset(after[2].split(","))))
    return mounts


def read_version() -> str | None:
    types = {m.fs_type for m in read_mounts()}
    return {frozenset({"cgroup2"}): "v2", frozenset({"cgroup"}): "v1",
            frozenset({"cgroup", "cgroup2"}): "hybrid"}.get(frozenset(types))


def read_chain(controller: str, pid: int | str = "self") -> list[Path] | None:
    """The checker's own chain: a process's cgroup folder for `controller`, up to the top."""
    entries = [line.split(":", 2)
               for line in Path(f"/proc/{pid}/cgroup").read_text().splitlines()]
    mounts = read_mounts()
    mount = next((m for m in mounts if m.fs_type == "cgroup" and controller in m.options), None)
    if mount is not None:
        path = next((p for _, names, p in entries if controller in names.split(",")), None)
    else:
        def offers(m: Mount) -> bool:
            try:
                return controller in (m.mount_point / "cgroup.controllers").read_text().split()
            except OSError:
                return False
        mount = next((m for m in mounts if m.fs_type == "cgroup2" and offers(m)), None)
        path = next((p for number, _, p in entries if number == "0"), None)
    if mount is None or path is None:
        return None
    # The mount shows the hierarchy from `root` down: strip it from the path.
    root = mount.root.rstrip("/")
    if root and (path == root or path.startswith(root + "/")):
        path = path[len(root):]
    folder = mount.mount_point / path.lstrip("/")
    if not folder.is_dir():
        folder = mount.mount_point
    chain = [folder]
    while chain[-1] != mount.mount_point:
        chain.append(chain[-1].parent)
    return chain


@dataclass(frozen=True)
class Limit:
    value: float | int | None
    source: str   # where it was found, or why there is none, for messages


def read_limit(controller: str, read: Callable[[Path], float | int | None],
               pid: int | str = "self") -> Limit:
    """The smallest limit that `read` finds on a process's chain; None from `read`: no limit."""
    chain = read_chain(controller, pid)
    if chain is None:
        return Limit(None, f"no mounted hierarchy has the {controller} controller")
    best: tuple[float | int, Path] | None = None
    for folder in chain:
        value = read(folder)
        if isinstance(value, (int, float)) and (best is None or value < best[0]):
            best = (value, folder)
    if best is None:
        return Limit(None, f"no limit is set in {chain[0]} or its parents")
    where = "the process's own cgroup" if best[1] == chain[0] else "a parent cgroup"
    return Limit(best[0], f"set in {best[1]}, {where}")


def _text(path: Path) -> str | None:
    try:
        return path.read_text().strip()
    except FileNotFoundError:
        return None


def _memory(folder: Path) -> int | None:
    text = _text(folder / "memory.max") or _text(folder / "memory.limit_in_bytes")
    if text is None or text == "max" or int(text) >= UNLIMITED:
        return None
    return int(text)


def _cpu(folder: Path) -> float | None:
    text = _text(folder / "cpu.max")
    if text is not None:
        quota, period = text.split()
        return None if quota == "max" else int(quota) / int(period)
    quota_us, period_us = _text(folder / "cpu.cfs_quota_us"), _text(folder / "cpu.cfs_period_us")
    if quota_us is None or period_us is None or int(quota_us) < 0:
        return None
    return int(quota_us) / int(period_us)


def _pids(folder: Path) -> int | None:
    text = _text(folder / "pids.max")
    return None if text is None or text == "max" else int(text)


def read_cpuset(pid: int | str = "self") -> tuple[list[int] | None, str]:
    chain = read_chain("cpuset", pid) or []
    for folder in chain:
        for name in ("cpuset.cpus.effective", "cpuset.effective_cpus"):
            text = _text(folder / name)
            if text is not None:
                return parse_cpu_list(text), str(folder / name)
    return None, "no cpuset.cpus.effective or cpuset.effective_cpus on the cpuset chain"


def show(value: object) -> str:
    return "None (no limit)" if value is None else repr(value)


# ---- part 1: cgroup_version ------------------------------------------------------------------

@pytest.mark.points(1)
def test_cgroup_version(learner):
    """cgroup_version() says v1, v2 or hybrid as the mounts do."""
    got = learner.call("cgroup_version")
    want = read_version()
    types = sorted({f"{m.fs_type} at {m.mount_point}" for m in read_mounts()})
    assert got == want, (
        f"cgroup_version() returned {got!r}, but the cgroup mounts here are "
        f"{', '.join(types) or 'none'}, which is {want!r}: only cgroup2 is v2, only cgroup "
        "(v1) is v1, both together are hybrid")


# ---- part 2: cgroup_chain --------------------------------------------------------------------

def worker(learner) -> int:
    """The worker's pid, as the checker numbers it."""
    pid = learner.pid
    assert pid is not None, "the checker cannot find the worker process"
    return int(pid)


def judge_chain(controller: str, got: object, pid: int | str = "self") -> str | None:
    """Why `got` is not process `pid`'s chain for `controller`; None when it is."""
    chain = read_chain(controller, pid)
    want = None if chain is None else [str(folder) for folder in chain]
    if want is None:
        return None if got is None else (
            f"cgroup_chain({controller!r}) returned {got!r}, but no mounted hierarchy holds "
            f"the {controller} controller here: return None")
    if not isinstance(got, list) or not got or not all(isinstance(f, str) for f in got):
        return (f"cgroup_chain({controller!r}) returned {got!r}, but this process's "
                f"{controller} cgroup is {want[0]}: return a list of folders (strings), "
                "starting there")
    got = [str(Path(folder)) for folder in got]
    if got[0] != want[0]:
        line = "the 0:: line" if read_version() == "v2" else f"the line that names {controller}"
        return (f"cgroup_chain({controller!r}) starts at {got[0]}, but this process's "
                f"{controller} cgroup is {want[0]}: join the hierarchy's mount point with the "
                f"path on {line} of /proc/self/cgroup (or take the mount point if that folder "
                "does not exist)")
    if got != want:
        return (f"cgroup_chain({controller!r}) is {got}, but from {want[0]} up to the mount "
                f"point the folders are {want}: each parent in turn, the mount point last")
    return None


@pytest.mark.points(3)
def test_cgroup_chain(learner):
    """cgroup_chain() finds this process's memory, cpu, pids and cpuset cgroups, and parents."""
    pid = worker(learner)
    problems = [why for controller in ("memory", "cpu", "pids", "cpuset")
                if (why := judge_chain(controller, learner.call("cgroup_chain", controller),
                                       pid))]
    assert not problems, "; ".join(problems)


# ---- part 3: parse_cpu_max -------------------------------------------------------------------

@pytest.mark.points(1)
def test_parse_cpu_max_examples(learner):
    """parse_cpu_max() reads the lesson's two examples."""
    for text, want in [("150000 100000\n", 1.5), ("max 100000\n", None)]:
        got = learner.call("parse_cpu_max", text)
        assert got == want, (
            f"parse_cpu_max({text!r}) returned {got!r}, but it means {show(want)}: the line "
            "is quota then period in microseconds, CPUs = quota / period, and a quota of "
            "'max' is no limit (None)")


# ---- parts 4 to 6: the limits ----------------------------------------------------------------

@pytest.mark.points(3)
def test_memory_limit(learner):
    """memory_limit() is the smallest memory limit on the chain, in bytes, or None."""
    got = learner.call("memory_limit")
    want = read_limit("memory", _memory, worker(learner))
    names = "memory.max" if read_version() == "v2" else "memory.limit_in_bytes"
    assert got == want.value and (got is None) == (want.value is None), (
        f"memory_limit() returned {show(got)}, but the checker finds {show(want.value)} "
        f"({want.source}): read {names} in every folder of the chain, count 'max' (v2) "
        f"and numbers of 2**60 or more (v1's 'no limit') as none, and keep the smallest")


@pytest.mark.points(3)
def test_cpu_quota(learner):
    """cpu_quota() is the smallest CPU quota on the chain, in CPUs, or None."""
    got = learner.call("cpu_quota")
    want = read_limit("cpu", _cpu, worker(learner))
    if want.value is None:
        assert got is None, (
            f"cpu_quota() returned {got!r}, but the checker finds no quota ({want.source}): "
            "'max' in cpu.max (v2) and -1 in cpu.cfs_quota_us (v1) mean none, and so does a "
            "missing file: return None")
    else:
        assert isinstance(got, (int, float)) and math.isclose(got, want.value), (
            f"cpu_quota() returned {got!r}, but the tightest quota is {want.value:g} CPUs, "
            f"{want.source}: divide the quota by the period, both in microseconds, and "
            "keep the smallest on the chain")


@pytest.mark.points(2)
def test_pids_limit(learner):
    """pids_limit() is the smallest pids.max on the chain, or None."""
    got = learner.call("pids_limit")
    want = read_limit("pids", _pids, worker(learner))
    assert got == want.value and (got is None) == (want.value is None), (
        f"pids_limit() returned {show(got)}, but the checker finds {show(want.value)} "
        f"({want.source}): pids.max holds a number or 'max' (no limit), and a missing file "
        "sets no limit either")


# ---- part 7: allowed_cpus --------------------------------------------------------------------

@pytest.mark.points(2)
def test_allowed_cpus(learner):
    """allowed_cpus() is the effective cpuset nearest to this process's cgroup."""
    got = learner.call("allowed_cpus")
    want, source = read_cpuset(worker(learner))
    shown = "None" if want is None else f"{compact_cpu_list(want)} ({len(want)} CPUs)"
    assert got == want, (
        f"allowed_cpus() returned {got!r}, but the checker reads {shown} from {source}: "
        "take the first folder of the cpuset chain that has the effective file, and return "
        "the CPUs as a sorted list of ints")
