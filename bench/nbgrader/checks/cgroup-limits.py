"""nbgrader's test cells for the cgroup-limits exercise.

Ported from exercises/containers/test_cgroup_limits.py (visible) and
solutions/containers/test_cgroup_limits_hidden.py (hidden), one test cell per
check, worth the same points; they call the learner's functions directly, so
"this process" is the kernel on both sides. Where gpulab's check skips (the
checker may not make cgroups here), the test cell fails: no points, as a
skipped check earns none in gpulab.
"""
# ruff: noqa: F821, RUF100  (the notebook's answer cells define the learner's functions)

# %% checker
# ruff: noqa: F811  (in the notebook: the checker imports what it uses, whatever came before)
import contextlib
import math
import os
import re
from dataclasses import dataclass
from pathlib import Path

from gpulab.probes.system_parse import parse_cpu_list as check_parse_cpu_list

CHECK_UNLIMITED = 2**60


class CheckSkipped(Exception):
    """gpulab would skip this check here; nbgrader can only fail it."""


@dataclass(frozen=True)
class CheckMount:
    fs_type: str
    mount_point: Path
    root: str
    options: frozenset


def check_mounts():
    """The cgroup mounts, from /proc/self/mountinfo."""
    mounts = []
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        fields = line.split()
        after = fields[fields.index("-") + 1:]
        if after[0] in ("cgroup", "cgroup2"):
            point = re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), fields[4])
            mounts.append(CheckMount(after[0], Path(point), fields[3],
                                     frozenset(after[2].split(","))))
    return mounts


def check_version():
    types = {m.fs_type for m in check_mounts()}
    return {frozenset({"cgroup2"}): "v2", frozenset({"cgroup"}): "v1",
            frozenset({"cgroup", "cgroup2"}): "hybrid"}.get(frozenset(types))


def check_chain(controller, pid="self"):
    """The checker's own chain: a process's cgroup folder for `controller`, up to the top."""
    entries = [line.split(":", 2)
               for line in Path(f"/proc/{pid}/cgroup").read_text().splitlines()]
    mounts = check_mounts()
    mount = next((m for m in mounts if m.fs_type == "cgroup" and controller in m.options), None)
    if mount is not None:
        path = next((p for _, names, p in entries if controller in names.split(",")), None)
    else:
        def offers(m):
            try:
                return controller in (m.mount_point / "cgroup.controllers").read_text().split()
            except OSError:
                return False
        mount = next((m for m in mounts if m.fs_type == "cgroup2" and offers(m)), None)
        path = next((p for number, _, p in entries if number == "0"), None)
    if mount is None or path is None:
        return None
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


def check_limit(controller, read, pid="self"):
    """The smallest limit that `read` finds on a process's chain, or None."""
    chain = check_chain(controller, pid)
    if chain is None:
        return None
    found = [value for value in map(read, chain) if isinstance(value, int | float)]
    return min(found, default=None)


def check_text(path):
    try:
        return path.read_text().strip()
    except FileNotFoundError:
        return None


def check_memory(folder):
    text = check_text(folder / "memory.max") or check_text(folder / "memory.limit_in_bytes")
    if text is None or text == "max" or int(text) >= CHECK_UNLIMITED:
        return None
    return int(text)


def check_cpu(folder):
    text = check_text(folder / "cpu.max")
    if text is not None:
        quota, period = text.split()
        return None if quota == "max" else int(quota) / int(period)
    quota_us = check_text(folder / "cpu.cfs_quota_us")
    period_us = check_text(folder / "cpu.cfs_period_us")
    if quota_us is None or period_us is None or int(quota_us) < 0:
        return None
    return int(quota_us) / int(period_us)


def check_pids(folder):
    text = check_text(folder / "pids.max")
    return None if text is None or text == "max" else int(text)


def check_cpuset():
    for folder in check_chain("cpuset") or []:
        for name in ("cpuset.cpus.effective", "cpuset.effective_cpus"):
            text = check_text(folder / name)
            if text is not None:
                return check_parse_cpu_list(text)
    return None


def check_judge_chain(controller, got):
    """Why `got` is not this process's chain for `controller`; None when it is."""
    chain = check_chain(controller)
    want = None if chain is None else [str(folder) for folder in chain]
    if want is None:
        return None if got is None else f"cgroup_chain({controller!r}) is {got!r}, want None"
    if not isinstance(got, list) or not got or not all(isinstance(f, str) for f in got):
        return f"cgroup_chain({controller!r}) returned {got!r}, want a list from {want[0]}"
    got = [str(Path(folder)) for folder in got]
    if got != want:
        return f"cgroup_chain({controller!r}) is {got}, want {want}"
    return None


def check_controllers():
    """Controller names worth asking about: the kernel's list, the cgroup2 mounts' lists."""
    names = set()
    with contextlib.suppress(OSError):
        names.update(line.split()[0] for line in Path("/proc/cgroups").read_text().splitlines()
                     if line.strip() and not line.startswith("#"))
    for mount in check_mounts():
        if mount.fs_type == "cgroup2":
            with contextlib.suppress(OSError):
                names.update((mount.mount_point / "cgroup.controllers").read_text().split())
    return sorted(names)


CHECK_SETTINGS = {
    "memory": {"cgroup": {"memory.limit_in_bytes": "536870912"},
               "cgroup2": {"memory.max": "536870912"}},
    "cpu": {"cgroup": {"cpu.cfs_period_us": "100000", "cpu.cfs_quota_us": "150000"},
            "cgroup2": {"cpu.max": "150000 100000"}},
    "pids": {"cgroup": {"pids.max": "100"}, "cgroup2": {"pids.max": "100"}},
}


@contextlib.contextmanager
def check_confined(pid):
    """Move process `pid` into new cgroups with CHECK_SETTINGS's limits; undo it afterwards."""
    undo = []
    try:
        try:
            for controller, files in CHECK_SETTINGS.items():
                chain = check_chain(controller, pid)
                if chain is None:
                    raise CheckSkipped(f"no mounted hierarchy has the {controller} controller")
                v2 = (chain[-1] / "cgroup.controllers").exists()
                home = chain[0]
                parent = home if not v2 or len(chain) == 1 else chain[1]
                offered = (parent / "cgroup.subtree_control").read_text().split() if v2 else []
                if v2 and controller not in offered:
                    raise CheckSkipped(f"{parent} does not hand {controller} to its children")
                new = parent / f"gpulab-check-{os.getpid()}"
                if not new.is_dir():
                    new.mkdir()
                    undo.append((new, home))
                for name, value in files["cgroup2" if v2 else "cgroup"].items():
                    (new / name).write_text(value)
                (new / "cgroup.procs").write_text(str(pid))
        except OSError as exc:
            raise CheckSkipped(f"the checker cannot make cgroups here: {exc}") from None
        yield
    finally:
        for new, home in reversed(undo):
            with contextlib.suppress(OSError):
                (home / "cgroup.procs").write_text(str(pid))
            with contextlib.suppress(OSError):
                new.rmdir()


# %% test test_cgroup_version points=1 needs=cgroup_version
got = cgroup_version()
assert got == check_version(), f"cgroup_version() returned {got!r}, want {check_version()!r}"

# %% test test_cgroup_chain points=3 needs=cgroup_chain
problems = [why for controller in ("memory", "cpu", "pids", "cpuset")
            if (why := check_judge_chain(controller, cgroup_chain(controller)))]
assert not problems, "; ".join(problems)

# %% test test_parse_cpu_max_examples points=1 needs=parse_cpu_max
for text, want in [("150000 100000\n", 1.5), ("max 100000\n", None)]:
    got = parse_cpu_max(text)
    assert got == want, f"parse_cpu_max({text!r}) returned {got!r}, want {want!r}"

# %% test test_memory_limit points=3 needs=memory_limit,cgroup_chain
got = memory_limit()
want = check_limit("memory", check_memory)
assert got == want and (got is None) == (want is None), (
    f"memory_limit() returned {got!r}, but the checker finds {want!r}")

# %% test test_cpu_quota points=3 needs=cpu_quota,cgroup_chain,parse_cpu_max
got = cpu_quota()
want = check_limit("cpu", check_cpu)
if want is None:
    assert got is None, f"cpu_quota() returned {got!r}, but there is no quota"
else:
    assert isinstance(got, int | float) and math.isclose(got, want), (
        f"cpu_quota() returned {got!r}, want {want:g}")

# %% test test_pids_limit points=2 needs=pids_limit,cgroup_chain
got = pids_limit()
want = check_limit("pids", check_pids)
assert got == want and (got is None) == (want is None), (
    f"pids_limit() returned {got!r}, but the checker finds {want!r}")

# %% test test_allowed_cpus points=2 needs=allowed_cpus,cgroup_chain
got = allowed_cpus()
want = check_cpuset()
assert got == want, f"allowed_cpus() returned {got!r}, want {want!r}"

# %% hidden test_parse_cpu_max_other_lines points=2 needs=parse_cpu_max
for text, want in [("50000 100000\n", 0.5), ("200000 100000\n", 2.0), ("100000 100000", 1.0),
                   ("25000 50000\n", 0.5), ("1000 1000000\n", 0.001), ("400000 50000\n", 8.0),
                   ("max 250000\n", None), ("max 100000", None)]:
    got = parse_cpu_max(text)
    if want is None:
        assert got is None, f"parse_cpu_max({text!r}) returned {got!r}: 'max' is None"
    else:
        assert isinstance(got, int | float) and math.isclose(got, want), (
            f"parse_cpu_max({text!r}) returned {got!r}, not {want:g}")

# %% hidden test_cgroup_chain_every_controller points=2 needs=cgroup_chain
wrong = [why for controller in [*check_controllers(), "no-such-controller"]
         if (why := check_judge_chain(controller, cgroup_chain(controller)))]
assert not wrong, "; ".join(wrong[:3])

# %% hidden test_limits_the_checker_sets points=3 needs=memory_limit,cpu_quota,pids_limit,cgroup_chain,parse_cpu_max  # noqa: E501
with check_confined(os.getpid()):
    got = {"memory_limit": memory_limit(), "cpu_quota": cpu_quota(),
           "pids_limit": pids_limit()}
    want = {"memory_limit": check_limit("memory", check_memory),
            "cpu_quota": check_limit("cpu", check_cpu),
            "pids_limit": check_limit("pids", check_pids)}
problems = []
for name, limit in want.items():
    value = got[name]
    same = (value is None and limit is None) or (
        isinstance(value, int | float) and limit is not None and math.isclose(value, limit))
    if not same:
        problems.append(f"{name}() returned {value!r}, but the limit in force is {limit!r}")
assert not problems, "in a cgroup the checker made: " + "; ".join(problems)
