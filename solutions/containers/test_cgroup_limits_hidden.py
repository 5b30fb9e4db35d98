"""Hidden checks for the cgroup-limits exercise: inputs and limits this machine does not show.

Beyond parser inputs and every controller the kernel knows, one check sets known limits
itself (as `docker run --memory 512m --cpus 1.5 --pids-limit 100` would) in a cgroup it
makes for the learner's worker, where it may (root, writable cgroup files; else it skips).
"""

from __future__ import annotations

import contextlib
import math
import os
import re
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

from gpulab.grading.pytest_plugin import visible_checks


def _visible() -> ModuleType:
    """The visible checks' module (one copy of the helpers for both files)."""
    return visible_checks(__file__)


@pytest.mark.points(2)
def test_parse_cpu_max_other_lines(learner):
    """parse_cpu_max() reads quotas this machine lacks: fractions, many CPUs, other periods."""
    for text, want in [
        ("50000 100000\n", 0.5),
        ("200000 100000\n", 2.0),
        ("100000 100000", 1.0),
        ("25000 50000\n", 0.5),
        ("1000 1000000\n", 0.001),
        ("400000 50000\n", 8.0),
        ("max 250000\n", None),
        ("max 100000", None),
    ]:
        got = learner.call("parse_cpu_max", text)
        if want is None:
            assert got is None, (
                f"parse_cpu_max({text!r}) returned {got!r}: a quota of 'max' is no limit "
                "(None), whatever the period")
        else:
            assert isinstance(got, (int, float)) and math.isclose(got, want), (
                f"parse_cpu_max({text!r}) returned {got!r}, not {want:g}: divide the quota "
                "by the period as given (the period is not always 100000)")


def _controllers() -> list[str]:
    """Controller names worth asking about: the kernel's list, the cgroup2 mounts' lists."""
    names: set[str] = set()
    with contextlib.suppress(OSError):
        names.update(line.split()[0] for line in Path("/proc/cgroups").read_text().splitlines()
                     if line.strip() and not line.startswith("#"))
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        fields = line.split()
        if fields[fields.index("-") + 1] == "cgroup2":
            point = re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), fields[4])
            with contextlib.suppress(OSError):
                names.update((Path(point) / "cgroup.controllers").read_text().split())
    return sorted(names)


@pytest.mark.points(2)
def test_cgroup_chain_every_controller(learner):
    """cgroup_chain() is right for every controller the kernel knows, and None for a made-up one."""
    visible = _visible()
    pid = visible.worker(learner)
    wrong = [why for controller in [*_controllers(), "no-such-controller"]
             if (why := visible.judge_chain(controller,
                                            learner.call("cgroup_chain", controller), pid))]
    shown = wrong[:3] + ([f"and {len(wrong) - 3} more"] if len(wrong) > 3 else [])
    assert not wrong, (
        "; ".join(shown) + ". A controller that no mounted hierarchy holds gives None; under "
        "hybrid, a controller missing from the v1 mounts may still be offered by the cgroup2 "
        "mount (its cgroup.controllers)")


# ---- limits the checker sets itself ----------------------------------------------------------

# What `docker run --memory 512m --cpus 1.5 --pids-limit 100` writes, file by file.
_SETTINGS = {
    "memory": {"cgroup": {"memory.limit_in_bytes": "536870912"},
               "cgroup2": {"memory.max": "536870912"}},
    "cpu": {"cgroup": {"cpu.cfs_period_us": "100000", "cpu.cfs_quota_us": "150000"},
            "cgroup2": {"cpu.max": "150000 100000"}},
    "pids": {"cgroup": {"pids.max": "100"}, "cgroup2": {"pids.max": "100"}},
}


@contextlib.contextmanager
def _confined(pid: int) -> Iterator[None]:
    """Move process `pid` into new cgroups with _SETTINGS's limits; undo it all afterwards.

    v1: a child of its cgroup in each controller's hierarchy. v2: one new cgroup beside its
    own (a v2 cgroup with processes cannot hand controllers to children), whose parent
    already offers the controllers. Skips the check where the checker may not do this.
    """
    visible = _visible()
    undo: list[tuple[Path, Path]] = []           # (new folder, the folder to move back to)
    try:
        try:
            for controller, files in _SETTINGS.items():
                chain = visible.read_chain(controller, pid)
                if chain is None:
                    pytest.skip(f"no mounted hierarchy has the {controller} controller")
                v2 = (chain[-1] / "cgroup.controllers").exists()
                home = chain[0]
                parent = home if not v2 or len(chain) == 1 else chain[1]
                offered = (parent / "cgroup.subtree_control").read_text().split() if v2 else []
                if v2 and controller not in offered:
                    pytest.skip(f"{parent} does not hand the {controller} controller to its "
                                "children")
                new = parent / f"gpulab-check-{os.getpid()}"
                if not new.is_dir():
                    new.mkdir()
                    undo.append((new, home))
                for name, value in files["cgroup2" if v2 else "cgroup"].items():
                    (new / name).write_text(value)
                (new / "cgroup.procs").write_text(str(pid))
        except OSError as exc:
            pytest.skip(f"the checker cannot make cgroups here (it needs root and a writable "
                        f"/sys/fs/cgroup): {exc}")
        yield
    finally:
        for new, home in reversed(undo):
            with contextlib.suppress(OSError):
                (home / "cgroup.procs").write_text(str(pid))
            with contextlib.suppress(OSError):
                new.rmdir()


@pytest.mark.points(3)
def test_limits_the_checker_sets(learner):
    """With 512 MiB, 1.5 CPUs and 100 tasks set by the checker, the limit functions read them."""
    pid = learner.pid
    assert pid is not None
    visible = _visible()
    with _confined(pid):
        got = {name: learner.call(name) for name in ("memory_limit", "cpu_quota", "pids_limit")}
        want = {"memory_limit": visible.read_limit("memory", visible._memory, pid),
                "cpu_quota": visible.read_limit("cpu", visible._cpu, pid),
                "pids_limit": visible.read_limit("pids", visible._pids, pid)}
    problems = []
    for name, limit in want.items():
        value = got[name]
        same = (value is None and limit.value is None) or (
            isinstance(value, (int, float)) and limit.value is not None
            and math.isclose(value, limit.value))
        if not same:
            problems.append(f"{name}() returned {visible.show(value)}, but the limit in force "
                            f"is {visible.show(limit.value)}, {limit.source}")
    assert not problems, (
        "in a cgroup the checker made, as `docker run --memory 512m --cpus 1.5 "
        "--pids-limit 100` would: " + "; ".join(problems))
