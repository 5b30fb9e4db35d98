"""Visible checks for the numa-topology exercise.

Each check calls one of your functions in the worker process and compares
the result with what this file reads from /sys itself, on this machine.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from gpulab.grading.learner import LearnerError
from gpulab.probes.system_parse import compact_cpu_list, parse_cpu_list

NODE_ROOT = Path("/sys/devices/system/node")
PCI_ROOT = Path("/sys/bus/pci/devices")


def read_nodes() -> list[dict] | None:
    """The checker's own reading of every node's cpulist and distance row."""
    if not NODE_ROOT.is_dir():
        return None
    numbers = sorted(int(d.name[4:]) for d in NODE_ROOT.iterdir()
                     if d.name.startswith("node") and d.name[4:].isdigit())
    return [{"node": n,
             "cpus": parse_cpu_list((NODE_ROOT / f"node{n}" / "cpulist").read_text()),
             "distances": [int(x) for x in
                           (NODE_ROOT / f"node{n}" / "distance").read_text().split()]}
            for n in numbers]


def cpus_after_pinning(cpus: list[int]) -> list[int]:
    """What a fresh process of the checker's own reads back after pinning itself to `cpus`.

    The kernel may grant fewer CPUs than asked (a container's cpuset), so the
    truth is measured, not assumed; a child process keeps the checker unpinned.
    """
    code = ("import json, os, sys; os.sched_setaffinity(0, json.loads(sys.argv[1])); "
            "print(json.dumps(sorted(os.sched_getaffinity(0))))")
    done = subprocess.run([sys.executable, "-c", code, json.dumps(cpus)],
                          capture_output=True, text=True, timeout=60, check=True)
    return json.loads(done.stdout)


def read_gpus() -> list[dict]:
    """The checker's own list of NVIDIA display controllers on the PCI bus."""
    if not PCI_ROOT.is_dir():
        return []
    gpus = []
    for device in sorted(PCI_ROOT.iterdir(), key=lambda d: d.name):
        if (device / "vendor").read_text().strip() != "0x10de":
            continue
        if not (device / "class").read_text().strip().startswith("0x03"):
            continue
        node = int((device / "numa_node").read_text())
        gpus.append({"bus_id": device.name, "numa_node": None if node < 0 else node,
                     "local_cpus": parse_cpu_list((device / "local_cpulist").read_text())})
    return gpus


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
        if "NotImplementedError" in str(exc):
            raise                                 # not written yet: nothing to explain
        raise LearnerError(f"{exc}\nparse_cpulist('') must return []: a memory-only NUMA node "
                           "has an empty cpulist, and int('') fails") from None
    assert got == [], (
        f"parse_cpulist('') returned {got!r}, but an empty list means no CPU at all: "
        "a memory-only NUMA node has an empty cpulist, so return [] rather than fail "
        "on int('')")


@pytest.mark.points(1)
def test_parse_cpulist_this_machine(learner):
    """parse_cpulist reads this machine's list of online CPUs"""
    path = Path("/sys/devices/system/cpu/online")
    text = path.read_text()
    want = parse_cpu_list(text)
    got = learner.call("parse_cpulist", text)
    assert got == want, (
        f"{path} on this machine reads {text.strip()!r}; parse_cpulist returned {got!r}, "
        f"but that is {len(want)} CPUs: {want!r}")


# ---- part 2: numa_nodes ------------------------------------------------------------------

@pytest.mark.points(3)
def test_numa_nodes(learner):
    """numa_nodes matches every node's cpulist and distance row in sysfs"""
    want = read_nodes()
    got = learner.call("numa_nodes")
    if want is None:
        assert got is None, (
            f"{NODE_ROOT} does not exist here (a kernel without NUMA support), "
            f"so numa_nodes() should return None, not {got!r}")
        return
    assert isinstance(got, list), (
        f"numa_nodes() returned {got!r}, but {NODE_ROOT} lists {len(want)} node(s): "
        "return a list with one dict per node")
    got_numbers = [n.get("node") if isinstance(n, dict) else n for n in got]
    want_numbers = [n["node"] for n in want]
    assert got_numbers == want_numbers, (
        f"your nodes are {got_numbers!r}, but {NODE_ROOT} has node folders "
        f"{want_numbers!r}: one dict per nodeN folder, sorted by the number N "
        "(node10 after node9), and nothing for online, possible, has_cpu, ...")
    for mine, truth in zip(got, want, strict=True):
        folder = NODE_ROOT / f"node{truth['node']}"
        assert mine.get("cpus") == truth["cpus"], (
            f"node {truth['node']}: your cpus are {mine.get('cpus')!r}, but {folder}/cpulist "
            f"reads {compact_cpu_list(truth['cpus'])!r}, which is {truth['cpus']!r}")
        assert mine.get("distances") == truth["distances"], (
            f"node {truth['node']}: your distances are {mine.get('distances')!r}, but "
            f"{folder}/distance reads {' '.join(map(str, truth['distances']))!r}, which is "
            f"{truth['distances']!r}: a list with one int per node, in node order")


# ---- part 3: pin_to_node -----------------------------------------------------------------

@pytest.mark.points(2)
def test_pin_to_node_zero(learner):
    """pin_to_node(0) leaves the process on node 0's CPUs"""
    nodes = read_nodes()
    if not nodes or not nodes[0]["cpus"] or nodes[0]["node"] != 0:
        pytest.skip("this machine has no node 0 with CPUs to pin to")
    node0 = nodes[0]["cpus"]
    want = cpus_after_pinning(node0)
    got = learner.call("pin_to_node", 0)
    assert got == want, (
        f"pin_to_node(0) returned {got!r}, but node0/cpulist is "
        f"{compact_cpu_list(node0)!r} and a process pinned to it here may run on {want!r}. "
        "Pin with os.sched_setaffinity(0, cpus), then return sorted(os.sched_getaffinity(0)): "
        "what the kernel granted, not what you asked for")


# ---- part 4: gpu_nodes -------------------------------------------------------------------

@pytest.mark.points(2)
def test_gpu_nodes(learner):
    """gpu_nodes finds each NVIDIA GPU, its NUMA node and its local CPUs"""
    want = read_gpus()
    got = learner.call("gpu_nodes")
    if not want:
        assert got == [], (
            f"gpu_nodes() returned {got!r}, but no device in {PCI_ROOT} has vendor 0x10de "
            "and a class starting 0x03, so this machine has no NVIDIA GPU: return []")
        return
    assert got == want, (
        f"gpu_nodes() returned {got!r}, but sysfs says {want!r}. Keep only vendor 0x10de "
        "with class 0x03xxxx (NVSwitches and audio functions are not GPUs), sort by address, "
        "turn numa_node -1 into None, and parse local_cpulist")
