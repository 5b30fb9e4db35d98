"""Hidden checks for the numa-topology exercise: odd CPU lists, and a pin that really happens.

The second check watches the worker process from outside: it narrows the
worker to one CPU, lets the learner's pin_to_node(0) run, and reads the
worker's affinity from the kernel, so an answer that returns node 0's CPUs
without pinning anything fails even on a one-node machine.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from gpulab.probes.system_parse import compact_cpu_list, parse_cpu_list

NODE0 = Path("/sys/devices/system/node/node0/cpulist")


@pytest.mark.points(2)
def test_parse_cpulist_odd_inputs(learner):
    """parse_cpulist copes with whitespace, unsorted and overlapping items"""
    for text, want, why in [
        ("\n", [], "a file holding only a newline lists no CPU"),
        ("  7 \n", [7], "whitespace around the list is not part of it"),
        ("0-0", [0], "a range may start and end at the same CPU"),
        ("8,0-3", [0, 1, 2, 3, 8], "the result is sorted, whatever the order of the items"),
        ("0-3,2-5", [0, 1, 2, 3, 4, 5], "each CPU appears once, even where ranges overlap"),
        ("12-15,130", [12, 13, 14, 15, 130], "CPU numbers have more than one digit"),
    ]:
        got = learner.call("parse_cpulist", text)
        assert got == want, f"parse_cpulist({text!r}) returned {got!r}, not {want!r}: {why}"


def _worker_pid(learner) -> int | None:
    """The worker's pid (the learner fixture starts the worker when asked)."""
    return learner.pid


def _granted(cpus: list[int]) -> list[int]:
    """What a fresh process of the checker's own reads back after pinning itself to `cpus`."""
    code = ("import json, os, sys; os.sched_setaffinity(0, json.loads(sys.argv[1])); "
            "print(json.dumps(sorted(os.sched_getaffinity(0))))")
    done = subprocess.run([sys.executable, "-c", code, json.dumps(cpus)],
                          capture_output=True, text=True, timeout=60, check=True)
    return json.loads(done.stdout)


@pytest.mark.points(2)
def test_pin_to_node_really_pins(learner):
    """pin_to_node(0) changes the worker's affinity, as the kernel sees it"""
    if not NODE0.is_file():
        pytest.skip("this machine has no NUMA node 0 in sysfs")
    want = _granted(parse_cpu_list(NODE0.read_text()))
    if len(want) < 2:
        pytest.skip("node 0 offers fewer than two CPUs here: narrowing would prove nothing")
    pid = _worker_pid(learner)
    if pid is None:
        learner.call("pin_to_node", 0)            # the worker is gone: this says why
        pytest.skip("cannot see the worker process to watch its affinity")
    os.sched_setaffinity(pid, [min(want)])        # narrow the worker from outside
    got = learner.call("pin_to_node", 0)
    seen = sorted(os.sched_getaffinity(pid))      # the kernel's view, not the learner's
    assert seen == want, (
        f"the checker narrowed your worker to CPU {min(want)} and then called pin_to_node(0); "
        f"afterwards the kernel says the worker may run on {compact_cpu_list(seen)!r}, but "
        f"node 0 is {compact_cpu_list(want)!r}. Your function returned {got!r}: it must "
        "call os.sched_setaffinity(0, node 0's CPUs), not just report them")
    assert got == want, (
        f"the worker is pinned correctly, but pin_to_node(0) returned {got!r} instead of "
        f"what it may now use, {want!r}: return sorted(os.sched_getaffinity(0))")
