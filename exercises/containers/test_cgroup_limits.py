"""Visible checks for the cgroup-limits exercise.

Each check calls one of your functions in the worker process on recorded
machines: the worker builds each machine's /proc/self/mounts,
/proc/self/cgroup and cgroup files in a folder of its own, and your function
gets that folder as `root`. What each machine should give was taken when it
was recorded (`gpulab.grading.checks.machines`): a hybrid VM without limits, a v2 VM
and a hybrid server whose limits sit on a parent cgroup, a v1 node whose
container is tighter than its pod, a v2 container that sees only its own
cgroup. The grader's hidden checks add this machine, and limits they set.
"""

from __future__ import annotations

import math
from typing import Any

import pytest

from gpulab.grading.checks.machines import Machine, load_machine

MACHINES = ("firecracker-vm", "h200-vm", "two-socket", "k8s-hostpid", "docker-container")
FILES = {"memory": "memory.max (v2) or memory.limit_in_bytes (v1)",
         "cpu": "cpu.max (v2), or cpu.cfs_quota_us and cpu.cfs_period_us (v1)",
         "pids": "pids.max"}


def machines() -> list[tuple[Machine, dict[str, Any]]]:
    """Each recorded machine with what the exercise's functions should give on it."""
    return [(m, m.want("cgroup-limits")) for m in map(load_machine, MACHINES)]


def show(value: object) -> str:
    return "None (no limit)" if value is None else repr(value)


def judge_chain(controller: str, got: object, want: list[str] | None) -> str | None:
    """Why `got` is not the chain `want` for `controller`; None when it is."""
    if want is None:
        return None if got is None else (
            f"cgroup_chain({controller!r}) returned {got!r}, but no mounted hierarchy holds "
            f"the {controller} controller there: return None")
    if not isinstance(got, list) or not got or not all(isinstance(f, str) for f in got):
        return (f"cgroup_chain({controller!r}) returned {got!r}, but the process's "
                f"{controller} cgroup is {want[0]}: return a list of folders (strings), "
                "starting there")
    got = [folder.rstrip("/") or "/" for folder in got]
    if got[0] != want[0]:
        return (f"cgroup_chain({controller!r}) starts at {got[0]}, but the process's "
                f"{controller} cgroup is {want[0]}: find the mount that holds the controller "
                "(a v1 mount whose options name it, else the cgroup2 mount whose "
                "cgroup.controllers lists it), join its mount point with the path on the "
                "matching line of /proc/self/cgroup, and take the mount point itself where "
                "that folder does not exist; name folders as the machine does, without root")
    if got != want:
        return (f"cgroup_chain({controller!r}) is {got}, but from {want[0]} up to the mount "
                f"point the folders are {want}: each parent in turn, the mount point last")
    return None


def judge_limit(function: str, controller: str, got: object, want: dict[str, Any]) -> str | None:
    """Why `got` is not the limit that `function` should find on the `controller` chain of a
    machine whose answers are `want` (the limit under the function's name, and "where" it
    sits by controller); None when it is."""
    value = want[function]
    if value is None:
        if got is None:
            return None
        return (f"{function}() returned {got!r}, but no limit is set on the {controller} "
                "chain there: 'max' (v2), -1 for a v1 quota, numbers of 2**60 or more (v1's "
                "'no limit') and missing files all mean none, so return None")
    same = got == value if isinstance(value, int) else (
        isinstance(got, int | float) and math.isclose(got, value))
    if same and not isinstance(got, bool):
        return None
    where = want["where"][controller]
    number = isinstance(got, int | float) and not isinstance(got, bool)
    if number and controller == "memory" and got in (value // 2**20, value // 2**10):
        because = "that is not in bytes: report bytes, as the file writes them"
    elif number and controller == "cpu" and got and math.isclose(got, 1 / value):
        because = "CPUs are quota / period, not period / quota"
    elif got is None and where == "parent":
        because = "it is set on a parent cgroup, not the process's own: walk up the chain"
    elif number and got > value and where.startswith("own, tighter"):
        because = ("the process's own cgroup sets it, tighter than its parent's: keep the "
                   "smallest on the chain")
    else:
        because = f"set on {'a parent cgroup' if where == 'parent' else 'its own cgroup'}"
    return (f"{function}() returned {show(got)}, but the limit in force is {value!r} "
            f"({because}). Read {FILES[controller]} in every folder of the chain")


# ---- part 1: cgroup_version ------------------------------------------------------------------

@pytest.mark.points(1)
def test_cgroup_version(learner):
    """cgroup_version(root) says v1, v2 or hybrid as each machine's mounts do."""
    for machine, want in machines():
        got = learner.call("cgroup_version", learner.machine(machine.name))
        assert got == want["cgroup_version"], (
            f"on {machine.about}, cgroup_version() returned {got!r}, but its mounts make it "
            f"{want['cgroup_version']!r}: only cgroup2 is v2, only cgroup (v1) is v1, both "
            "together are hybrid (read /proc/self/mounts under root)")


# ---- part 2: cgroup_chain --------------------------------------------------------------------

@pytest.mark.points(3)
def test_cgroup_chain(learner):
    """cgroup_chain(controller, root) finds the process's cgroups, and parents, on each machine."""
    problems = []
    for machine, want in machines():
        root = learner.machine(machine.name)
        for controller, chain in want["cgroup_chain"].items():
            why = judge_chain(controller, learner.call("cgroup_chain", controller, root), chain)
            if why:
                problems.append(f"on {machine.about}: {why}")
                break
    assert not problems, "\n".join(problems)


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

def limit_problems(learner, function: str, controller: str) -> list[str]:
    problems = []
    for machine, want in machines():
        got = learner.call(function, learner.machine(machine.name))
        why = judge_limit(function, controller, got, want)
        if why:
            problems.append(f"on {machine.about}: {why}")
    return problems


@pytest.mark.points(3)
def test_memory_limit(learner):
    """memory_limit(root) is the smallest memory limit on the chain, in bytes, or None."""
    problems = limit_problems(learner, "memory_limit", "memory")
    assert not problems, "\n".join(problems)


@pytest.mark.points(3)
def test_cpu_quota(learner):
    """cpu_quota(root) is the smallest CPU quota on the chain, in CPUs, or None."""
    problems = limit_problems(learner, "cpu_quota", "cpu")
    assert not problems, "\n".join(problems)


@pytest.mark.points(2)
def test_pids_limit(learner):
    """pids_limit(root) is the smallest pids.max on the chain, or None."""
    problems = limit_problems(learner, "pids_limit", "pids")
    assert not problems, "\n".join(problems)


# ---- part 7: allowed_cpus --------------------------------------------------------------------

@pytest.mark.points(2)
def test_allowed_cpus(learner):
    """allowed_cpus(root) is the effective cpuset nearest to the process's cgroup."""
    for machine, want in machines():
        got = learner.call("allowed_cpus", learner.machine(machine.name))
        cpus = want["allowed_cpus"]
        assert got == cpus, (
            f"on {machine.about}, allowed_cpus() returned {got!r}, but its effective cpuset "
            f"is {len(cpus)} CPUs ({cpus[0]} to {cpus[-1]}): take the first folder of the "
            "cpuset chain that has cpuset.cpus.effective (v2) or cpuset.effective_cpus (v1), "
            "and return the CPUs as a sorted list of ints")
