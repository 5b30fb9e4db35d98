"""Visible checks for the numa-topology exercise.

Each check calls one of your functions in the worker process. The readers get
recorded machines: the worker builds each machine's /sys files in a folder of
its own and your function gets that folder as `root`; what each should give
was taken when it was recorded (`gpulab.grading.checks.machines`). The pinning check
makes a map that splits the CPUs your worker may use between two nodes, and
asks the kernel afterwards which CPUs the worker may run on. The grader's
hidden checks add this machine itself.
"""

from __future__ import annotations

import os
from typing import Any

import pytest

from gpulab.grading.checks.learner import LearnerError
from gpulab.grading.checks.machines import Machine, load_machine

MACHINES = ("firecracker-vm", "h200-vm", "two-socket")
NODE_DIR = "sys/devices/system/node"


def machines() -> list[tuple[Machine, dict[str, Any]]]:
    """Each recorded machine with what the exercise's functions should give on it."""
    return [(m, m.want("numa-topology")) for m in map(load_machine, MACHINES)]


def compact(cpus: list[int]) -> str:
    """A sorted list of CPUs as the kernel writes it: [0, 1, 2, 5] -> "0-2,5"."""
    parts: list[str] = []
    for cpu in cpus:
        if parts and parts[-1].rpartition("-")[2] == str(cpu - 1):
            first = parts[-1].partition("-")[0]
            parts[-1] = f"{first}-{cpu}"
        else:
            parts.append(str(cpu))
    return ",".join(parts)


# ---- part 1: parse_cpulist ---------------------------------------------------------------

@pytest.mark.points(2)
def test_parse_cpulist_examples(learner):
    """parse_cpulist expands single CPUs and ranges"""
    for text, want in [
        ("0-3,8", [0, 1, 2, 3, 8]),
        ("5", [5]),
        ("0-1,4-5", [0, 1, 4, 5]),
        ("0-3,8\n", [0, 1, 2, 3, 8]),
    ]:
        got = learner.call("parse_cpulist", text)
        assert got == want, (
            f"parse_cpulist({text!r}) returned {got!r}, but the list means {want!r}: "
            "each item is one CPU or an inclusive range a-b, items are separated by commas, "
            "and the file's trailing newline is not part of the last item")


@pytest.mark.points(1)
def test_parse_cpulist_empty(learner):
    """parse_cpulist("") is no CPU at all"""
    try:
        got = learner.call("parse_cpulist", "")
    except LearnerError as exc:
        if exc.raised_as(NotImplementedError):
            raise                                 # not written yet: nothing to explain
        raise LearnerError(f"{exc}\nparse_cpulist('') must return []: a memory-only NUMA node "
                           "has an empty cpulist, and int('') fails") from None
    assert got == [], (
        f"parse_cpulist('') returned {got!r}, but an empty list means no CPU at all: "
        "a memory-only NUMA node has an empty cpulist, so return [] rather than fail "
        "on int('')")


@pytest.mark.points(1)
def test_parse_cpulist_recorded_machines(learner):
    """parse_cpulist reads the recorded machines' lists of online CPUs"""
    for machine, want in machines():
        text = machine.text("/sys/devices/system/cpu/online")
        got = learner.call("parse_cpulist", text)
        assert got == want["cpu_online"], (
            f"/sys/devices/system/cpu/online on {machine.about} reads {text.strip()!r}; "
            f"parse_cpulist returned {got!r:.200}, but that is {len(want['cpu_online'])} CPUs")


# ---- part 2: numa_nodes ------------------------------------------------------------------

@pytest.mark.points(3)
def test_numa_nodes(learner):
    """numa_nodes(root) matches every node's cpulist and distance row on each machine"""
    for machine, want in machines():
        nodes = want["numa_nodes"]
        got = learner.call("numa_nodes", learner.machine(machine.name))
        assert isinstance(got, list), (
            f"numa_nodes() returned {got!r:.200} on {machine.about}, whose {NODE_DIR} lists "
            f"{len(nodes)} node(s): return a list with one dict per node")
        got_numbers = [n.get("node") if isinstance(n, dict) else n for n in got]
        want_numbers = [n["node"] for n in nodes]
        assert got_numbers == want_numbers, (
            f"on {machine.about}, your nodes are {got_numbers!r}, but {NODE_DIR} has node "
            f"folders {want_numbers!r}: one dict per nodeN folder, sorted by the number N "
            "(node10 after node9), and nothing for online, possible, has_cpu, ...")
        for mine, truth in zip(got, nodes, strict=True):
            folder = f"{NODE_DIR}/node{truth['node']}"
            assert mine.get("cpus") == truth["cpus"], (
                f"on {machine.about}, node {truth['node']}: your cpus are "
                f"{mine.get('cpus')!r:.200}, but {folder}/cpulist reads "
                f"{compact(truth['cpus'])!r}" + (" (a memory-only node: no CPU)"
                                                 if not truth["cpus"] else "")
                + ": read each node's files under root")
            assert mine.get("distances") == truth["distances"], (
                f"on {machine.about}, node {truth['node']}: your distances are "
                f"{mine.get('distances')!r}, but {folder}/distance reads "
                f"{' '.join(map(str, truth['distances']))!r}: a list with one int per node, "
                "in node order")


# ---- part 3: pin_to_node -----------------------------------------------------------------

@pytest.mark.points(2)
def test_pin_to_node(learner):
    """pin_to_node(node, root) pins the worker to that node's CPUs, as the kernel sees it"""
    pid = learner.pid
    if pid is None:
        pytest.skip("cannot see the worker process to watch its affinity")
    allowed = sorted(os.sched_getaffinity(pid))
    if len(allowed) < 2:
        pytest.skip("the worker may use only one CPU here: no map can split it in two")
    # Node 0 is the last CPU alone; node 1 the others, and four this worker may not use (a
    # recorded machine has more CPUs): the kernel grants only the ones it may.
    extra = list(range(allowed[-1] + 1, allowed[-1] + 5))
    nodes = {0: [allowed[-1]], 1: allowed[:-1] + extra}
    granted = {0: [allowed[-1]], 1: allowed[:-1]}
    files = {f"{NODE_DIR}/node{n}/cpulist": compact(cpus) + "\n" for n, cpus in nodes.items()}
    files[f"{NODE_DIR}/node0/distance"] = "10 20\n"
    files[f"{NODE_DIR}/node1/distance"] = "20 10\n"
    root = learner.machine("firecracker-vm", files=files)
    for node in (0, 1):
        want = granted[node]
        got = learner.call("pin_to_node", node, root)
        seen = sorted(os.sched_getaffinity(pid))          # the kernel's view, not the learner's
        where = (f"on a map whose node {node} is CPUs {compact(nodes[node])}, of which this "
                 f"worker may use {compact(want)}, after pin_to_node({node}, root) the kernel "
                 f"says the worker may run on {compact(seen)}")
        assert seen == want or got != want, (
            f"{where}, though your function returned {got!r:.200}: pin the process with "
            "os.sched_setaffinity(0, cpus), do not just report the CPUs")
        assert seen == want, (
            f"{where}: pin to the CPUs that node's cpulist lists under root (not to every CPU, "
            "nor to this machine's own node)")
        assert got == want, (
            f"the worker is pinned to node {node}'s CPUs, but pin_to_node({node}, root) returned "
            f"{got!r:.200} instead of what it may now use, {want!r}: return what the kernel "
            "granted, read back with os.sched_getaffinity(0) and sorted, not what you asked for")


# ---- part 4: gpu_nodes -------------------------------------------------------------------

@pytest.mark.points(2)
def test_gpu_nodes(learner):
    """gpu_nodes(root) finds each NVIDIA GPU, its NUMA node and its local CPUs on each machine"""
    for machine, want in machines():
        gpus = want["gpu_nodes"]
        got = learner.call("gpu_nodes", learner.machine(machine.name))
        if not gpus:
            assert got == [], (
                f"gpu_nodes() returned {got!r:.200} on {machine.about}, but none of its PCI "
                "devices has vendor 0x10de and a class starting 0x03: return []")
            continue
        shown = [(g["bus_id"], g["numa_node"]) for g in gpus]
        assert got == gpus, (
            f"gpu_nodes() returned {got!r:.300} on {machine.about}, whose NVIDIA GPUs are "
            f"(address, node) {shown}. Keep only vendor 0x10de with class 0x03xxxx "
            "(NVSwitches, audio functions and other vendors' VGA chips are not NVIDIA GPUs), "
            "sort by address, turn numa_node -1 into None, and parse local_cpulist")
