"""Hidden checks for the cgroup-limits exercise: inputs, machines and limits the visible
checks do not show.

Parser inputs; this machine itself, read by the checker's own walk (the hierarchies from
/proc/self/mountinfo, the worker's cgroup from /proc/<worker pid>/cgroup, the limit files
from there up to the top), for every controller the kernel knows; recorded machines
changed into a v2 cgroup tighter than its parent, a v1 container that sees only its own
cgroup, and chains with limits on several levels; and limits the checker sets itself (as
`docker run --memory --cpus --pids-limit` would) on a cgroup it makes as the *parent* of the
worker's, where it may (root, writable cgroup files; else it skips).

The inputs vary per run. Each check that takes inputs draws them from a seed made for the run
(`gpulab.grading.checks.draws`; GPULAB_CHECK_SEED=<n> replays a run) and names it in its failure
messages.
Beside the fixed cases of before: random cpu.max lines (periods of 1 ms to 1 s, quotas of
a hundredth of a CPU to 64 CPUs, 'max' with any period); on the changed machines (three
chains, a v2 VM, a v1 Kubernetes node and one more of either, and a v1 Docker container that
sees only its own cgroup), random memory, CPU (quota and period) and task limits; for each
controller the tightest sits on the process's own folder in one chain, on its parent in
another and on its grand-parent in the third, the other folders looser or without a limit
(always a looser parent where the own folder is the tightest), and never a quota of exactly
one CPU, which reads the same either way up; random cpusets, and a random container id. The
limits the checker sets itself are random too (256 MiB to 4 GiB, half a CPU to eight with a
random period, 64 to 4096 tasks), each below the limit already in force so that the
checker's binds. The expected answers come from the values drawn, or from the
kernel's files where the checker set them.
"""

from __future__ import annotations

import contextlib
import math
import os
import random
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

import pytest

from gpulab.grading.checks.draws import SEEN
from gpulab.grading.checks.draws import rng as _rng
from gpulab.grading.checks.draws import telling as _telling
from gpulab.grading.checks.machines import load_machine
from gpulab.grading.checks.pytest_plugin import visible_checks
from gpulab.probes.system import compact_cpu_list

UNLIMITED = 2**60     # cgroup v1 writes "no limit" as 2**63 - 4096 on x86-64
V1_NO_LIMIT = "9223372036854771712"
PAGE = 4096




def _visible() -> ModuleType:
    """The visible checks' module (its judges and messages serve both files)."""
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
    rng = _rng("parse_cpu_max_other_lines")
    for _ in range(24):
        end = rng.choice(("\n", "\n", ""))
        if rng.random() < 0.2:
            period = _period(rng)
            text = f"max {period}{end}"
            with _telling(f"parse_cpu_max was given {text!r}"):
                got = learner.call("parse_cpu_max", text)
            assert got is None, (
                f"parse_cpu_max({text!r}) returned {got!r}: a quota of 'max' is no limit "
                f"(None), whatever the period {SEEN}")
            continue
        quota, period = _quota(rng, rng.uniform(0.01, 64.0))
        text = f"{quota} {period}{end}"
        with _telling(f"parse_cpu_max was given {text!r}"):
            got = learner.call("parse_cpu_max", text)
        ok = isinstance(got, int | float) and not isinstance(got, bool)
        assert ok and math.isclose(got, quota / period), (
            f"parse_cpu_max({text!r}) returned {got!r}, which is not this quota in CPUs: "
            f"divide the quota by the period as given (the period is not always 100000) {SEEN}")


# ---- the checker's own reading of this machine ---------------------------------------------------

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
    types = frozenset(m.fs_type for m in read_mounts())
    return {frozenset({"cgroup2"}): "v2", frozenset({"cgroup"}): "v1",
            frozenset({"cgroup", "cgroup2"}): "hybrid"}.get(types)


def read_chain(controller: str, pid: int | str = "self") -> list[Path] | None:
    """A process's cgroup folder for `controller`, up to the top of its hierarchy."""
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
    root = mount.root.rstrip("/")      # the mount shows the hierarchy from `root` down
    if root and (path == root or path.startswith(root + "/")):
        path = path[len(root):]
    folder = mount.mount_point / path.lstrip("/")
    if not folder.is_dir():
        folder = mount.mount_point
    chain = [folder]
    while chain[-1] != mount.mount_point:
        chain.append(chain[-1].parent)
    return chain


def _text(path: Path) -> str | None:
    try:
        return path.read_text().strip()
    except FileNotFoundError:
        return None


def _memory(folder: Path) -> int | None:
    text = _text(folder / "memory.max") or _text(folder / "memory.limit_in_bytes")
    return None if text is None or text == "max" or int(text) >= UNLIMITED else int(text)


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


READERS: dict[str, tuple[str, Callable[[Path], float | int | None]]] = {
    "memory_limit": ("memory", _memory), "cpu_quota": ("cpu", _cpu), "pids_limit": ("pids", _pids)}


def read_limits(pid: int) -> dict[str, object]:
    """What the learner's functions should answer for process `pid`, as the visible judges
    take it: each limit, and where the tightest sits ("own", "parent" or "none")."""
    want: dict[str, object] = {}
    where: dict[str, str] = {}
    for function, (controller, read) in READERS.items():
        chain = read_chain(controller, pid) or []
        found = [(value, n) for n, folder in enumerate(chain)
                 if isinstance(value := read(folder), int | float)]
        best = min(found, default=None)
        want[function] = None if best is None else best[0]
        where[controller] = "none" if best is None else "own" if best[1] == 0 else "parent"
    return {**want, "where": where}


def read_cpuset(pid: int) -> list[int] | None:
    for folder in read_chain("cpuset", pid) or []:
        for name in ("cpuset.cpus.effective", "cpuset.effective_cpus"):
            text = _text(folder / name)
            if text is not None:
                cpus: set[int] = set()
                for item in filter(None, text.split(",")):
                    first, _, last = item.partition("-")
                    cpus.update(range(int(first), int(last or first) + 1))
                return sorted(cpus)
    return None


def _controllers() -> list[str]:
    """Controller names worth asking about: the kernel's list, the cgroup2 mounts' lists."""
    names: set[str] = set()
    with contextlib.suppress(OSError):
        names.update(line.split()[0] for line in Path("/proc/cgroups").read_text().splitlines()
                     if line.strip() and not line.startswith("#"))
    for mount in read_mounts():
        if mount.fs_type == "cgroup2":
            with contextlib.suppress(OSError):
                names.update((mount.mount_point / "cgroup.controllers").read_text().split())
    return sorted(names)


def _worker(learner) -> int:
    pid = learner.pid
    assert pid is not None, "the checker cannot find the worker process"
    return int(pid)


@pytest.mark.points(2)
def test_this_machine(learner):
    """On the machine the checks run on: the version, and the limits the checker reads."""
    visible = _visible()
    pid = _worker(learner)
    got = learner.call("cgroup_version")
    want = read_version()
    assert got == want, f"cgroup_version() returned {got!r} on this machine, which is {want!r}"
    truth = read_limits(pid)
    problems = [why for function, (controller, _) in READERS.items()
                if (why := visible.judge_limit(function, controller, learner.call(function),
                                               truth))]
    cpus = read_cpuset(pid)
    got = learner.call("allowed_cpus")
    if got != cpus:
        problems.append(f"allowed_cpus() returned {got!r}, but the cpuset here is {cpus!r}")
    assert not problems, "on the machine the checks run on: " + "; ".join(problems)


@pytest.mark.points(2)
def test_cgroup_chain_every_controller(learner):
    """cgroup_chain() is right for every controller the kernel knows, and None for a made-up one."""
    visible = _visible()
    pid = _worker(learner)
    wrong = []
    for controller in [*_controllers(), "no-such-controller"]:
        chain = read_chain(controller, pid)
        want = None if chain is None else [str(folder) for folder in chain]
        why = visible.judge_chain(controller, learner.call("cgroup_chain", controller), want)
        if why:
            wrong.append(why)
    shown = wrong[:3] + ([f"and {len(wrong) - 3} more"] if len(wrong) > 3 else [])
    assert not wrong, (
        "on this machine: " + "; ".join(shown) + ". A controller that no mounted hierarchy "
        "holds gives None; under hybrid, a controller missing from the v1 mounts may still be "
        "offered by the cgroup2 mount (its cgroup.controllers)")


# ---- recorded machines, changed --------------------------------------------------------------

_SCOPE = "sys/fs/cgroup/lab.slice/lab-user.slice/session-7.scope"
_POD = "kubepods/burstable/pod5f8d2c3e-7b1a-4c2e-9d4f-2a6b8c0e1f37"
_CONTAINER = f"{_POD}/8c2f41d9b7e3a05c6d1f9e8b7a6c5d4e3f2a1b0c9d8e7f6a5b4c3d2e1f0a9b8c"
LEVELS = ("own", "parent", "grand-parent")
Limit = int | tuple[int, int] | None          # bytes or tasks; (quota, period) for the CPU


def _period(rng: random.Random) -> int:
    """A CFS period in microseconds (the kernel takes 1 ms to 1 s)."""
    return rng.choice((100000, 100000, 50000, 250000, 10000, 1000000, rng.randint(1000, 10**6)))


def _quota(rng: random.Random, cpus: float, period: int | None = None) -> tuple[int, int]:
    """(quota, period) in microseconds for about `cpus` CPUs, never exactly one CPU."""
    period = period or _period(rng)
    quota = max(1000, round(cpus * period))
    if quota == period:
        quota += -1000 if quota > 1000 else 1000
    return quota, period


def _ratio(limit: Limit) -> float:
    if isinstance(limit, tuple):
        return limit[0] / limit[1]
    return float(limit or 0)


def _chain_limits(rng: random.Random, controller: str, folders: int,
                  tightest: int) -> list[Limit]:
    """A limit (or None) for each of `folders` folders, the process's own first: the tightest
    on folder `tightest`; the others looser or none, and one of the parents looser at least
    where the own folder is the tightest."""
    def draw(above: float | None = None) -> Limit:
        if controller == "memory":
            low = 2**14 if above is None else int(above) // PAGE + 1
            return rng.randint(low, low + 2**25) * PAGE           # 64 MiB up, whole pages
        if controller == "pids":
            low = 8 if above is None else int(above) + 1
            return rng.randint(low, low + 50000)
        cpus = rng.uniform(0.05, 32.0) if above is None else above * rng.uniform(1.05, 4.0)
        return _quota(rng, cpus)

    tight = draw()
    limits: list[Limit] = [None] * folders
    limits[tightest] = tight
    others = [n for n in range(folders) if n != tightest]
    looser = [n for n in others if rng.random() < 0.5]
    if tightest == 0 and not looser:
        looser = [rng.choice(others)]
    for n in looser:
        while _ratio(limit := draw(_ratio(tight))) <= _ratio(tight):
            pass
        limits[n] = limit
    return limits


def _v2_files(folder: str, controller: str, limit: Limit, rng: random.Random) -> dict[str, str]:
    if controller == "cpu":
        quota, period = limit if isinstance(limit, tuple) else ("max", _period(rng))
        return {f"{folder}/cpu.max": f"{quota} {period}\n"}
    name = "memory.max" if controller == "memory" else "pids.max"
    return {f"{folder}/{name}": f"{'max' if limit is None else limit}\n"}


def _v1_files(folder: str, controller: str, limit: Limit, rng: random.Random) -> dict[str, str]:
    if controller == "cpu":
        quota, period = limit if isinstance(limit, tuple) else (-1, _period(rng))
        return {f"{folder}/cpu.cfs_quota_us": f"{quota}\n",
                f"{folder}/cpu.cfs_period_us": f"{period}\n"}
    if controller == "memory":
        return {f"{folder}/memory.limit_in_bytes": f"{V1_NO_LIMIT if limit is None else limit}\n"}
    return {f"{folder}/pids.max": f"{'max' if limit is None else limit}\n"}


def _expected(limit: Limit) -> int | float | None:
    return limit[0] / limit[1] if isinstance(limit, tuple) else limit


def _cpuset(rng: random.Random, cpus: int) -> list[int]:
    """A random non-empty set of CPUs below `cpus`, in runs and single CPUs."""
    chosen: set[int] = set()
    while not chosen:
        for _ in range(rng.randint(1, 4)):
            first = rng.randrange(cpus)
            chosen.update(range(first, min(cpus, first + rng.choice((1, 1, 2, 4, 8, 16)))))
    return sorted(chosen)


def _random_chain(rng: random.Random, machine: str, tightest: dict[str, int]) -> dict:
    """h200-vm (v2) or k8s-hostpid (v1) with random limits on every folder of the chain below
    the top, the tightest of each controller on folder `tightest[controller]` (0 the process's
    own, 1 its parent, 2 its grand-parent); a random cpuset. The changes, and what the
    functions should answer."""
    v2 = machine == "h200-vm"
    folders = 3 if v2 else 4                # the folders below the mount point
    files: dict[str, str | None] = {}
    want: dict[str, object] = {}
    where: dict[str, str] = {}
    shown: dict[str, list[str]] = {}
    for controller in ("memory", "cpu", "pids"):
        limits = _chain_limits(rng, controller, folders, tightest[controller])
        for n, limit in enumerate(limits):
            if v2:
                folder = _SCOPE.rsplit("/", n)[0] if n else _SCOPE
                changed = _v2_files(folder, controller, limit, rng)
            else:
                hierarchy = "cpu,cpuacct" if controller == "cpu" else controller
                folder = f"sys/fs/cgroup/{hierarchy}/{_CONTAINER.rsplit('/', n)[0]}"
                changed = _v1_files(folder, controller, limit, rng)
            files.update(changed)
            shown.setdefault(controller, []).extend(
                f"/{path}: {text.strip()!r}" for path, text in changed.items())
        function = {"memory": "memory_limit", "cpu": "cpu_quota", "pids": "pids_limit"}
        want[function[controller]] = _expected(limits[tightest[controller]])
        where[controller] = ("own, tighter than a parent's" if tightest[controller] == 0
                             else "parent")
    cpus = _cpuset(rng, 16 if v2 else 32)
    if v2:
        files["sys/fs/cgroup/cpuset.cpus.effective"] = compact_cpu_list(cpus) + "\n"
    else:
        files[f"sys/fs/cgroup/cpuset/{_CONTAINER}/cpuset.effective_cpus"] = \
            compact_cpu_list(cpus) + "\n"
    chains = load_machine(machine).want("cgroup-limits")["cgroup_chain"]
    about = ("a v2 VM (h200-vm) with random limits on its session scope and the slices above "
             "it" if v2 else "a v1 Kubernetes node (k8s-hostpid) with random limits on the "
             "container's cgroup and the pod's and QoS class's above it")
    return {"machine": machine, "files": files, "limits": {**want, "where": where},
            "chains": {c: chains[c] for c in ("memory", "cpu", "pids")}, "cpus": cpus,
            "about": about, "shown": shown}


def _docker_on_v1(rng: random.Random | None = None) -> tuple[dict[str, str | None], dict]:
    """k8s-hostpid's node turned into a Docker container on a v1 host without a cgroup
    namespace: /proc/self/cgroup names /docker/<id>, but each mount shows only that cgroup.
    With `rng`, a random id, random limits and a random cpuset. The files, and the answers."""
    docker = "/docker/0f3b9a1c5e7d"
    memory, (quota, period), tasks, cpus = 1073741824, (200000, 100000), 256, [4, 5, 6, 7]
    if rng is not None:
        docker = f"/docker/{rng.getrandbits(256):064x}"[:rng.choice((20, 72))]
        memory = rng.randint(2**14, 2**24) * PAGE
        quota, period = _quota(rng, rng.uniform(0.05, 32.0))
        tasks, cpus = rng.randint(8, 50000), _cpuset(rng, 64)
    lines = [f"{n}:{c}:{docker}" for n, c in ((10, "cpuset"), (9, "memory"), (8, "pids"),
                                              (7, "cpu,cpuacct"), (1, "name=systemd"))]
    points = ["cpuset", "memory", "pids", "cpu,cpuacct"]
    info = ["1 0 0:1 / / rw - overlay overlay rw",
            "2 1 0:2 / /sys/fs/cgroup ro - tmpfs tmpfs ro,mode=755"]
    info += [f"{3 + n} 2 0:{3 + n} {docker} /sys/fs/cgroup/{p} ro - cgroup cgroup rw,{p}"
             for n, p in enumerate(points)]
    files: dict[str, str | None] = {
        "sys/fs/cgroup": None,
        "proc/self/cgroup": "\n".join(lines) + "\n",
        "proc/self/mountinfo": "\n".join(info) + "\n",
        "proc/self/mounts": "overlay / overlay rw 0 0\ntmpfs /sys/fs/cgroup tmpfs ro 0 0\n"
        + "".join(f"cgroup /sys/fs/cgroup/{p} cgroup ro,nosuid,nodev,noexec,relatime,{p} 0 0\n"
                  for p in points),
        "sys/fs/cgroup/memory/memory.limit_in_bytes": f"{memory}\n",
        "sys/fs/cgroup/cpu,cpuacct/cpu.cfs_quota_us": f"{quota}\n",
        "sys/fs/cgroup/cpu,cpuacct/cpu.cfs_period_us": f"{period}\n",
        "sys/fs/cgroup/pids/pids.max": f"{tasks}\n",
        "sys/fs/cgroup/cpuset/cpuset.effective_cpus": compact_cpu_list(cpus) + "\n",
    }
    answers = {"limits": {"memory_limit": memory, "cpu_quota": quota / period,
                          "pids_limit": tasks,
                          "where": {c: "own" for c in ("memory", "cpu", "pids")}},
               "chains": {"memory": ["/sys/fs/cgroup/memory"],
                          "cpu": ["/sys/fs/cgroup/cpu,cpuacct"]},
               "cpus": cpus}
    return files, answers


def _machine_problems(learner, case: dict) -> list[str]:
    """The problems of the learner's answers on one changed machine."""
    visible = _visible()
    root = learner.machine(case["machine"], files=case["files"])
    about, shown = case["about"], case.get("shown", {})
    problems = []
    for controller, chain in case["chains"].items():
        why = visible.judge_chain(controller, learner.call("cgroup_chain", controller, root),
                                  chain)
        if why:
            problems.append(f"on {about}: {why}")
    for function, (controller, _) in READERS.items():
        why = visible.judge_limit(function, controller, learner.call(function, root),
                                  case["limits"])
        if why:
            files = shown.get(controller)
            problems.append(f"on {about}: {why}"
                            + (f" (the files changed: {'; '.join(files)})" if files else ""))
    got = learner.call("allowed_cpus", root)
    if got != case["cpus"]:
        problems.append(f"on {about}: allowed_cpus() returned {got!r:.200}, but its effective "
                        f"cpuset reads {compact_cpu_list(case['cpus'])!r}")
    return problems


@pytest.mark.points(2)
def test_changed_machines(learner):
    """A v2 cgroup tighter than its parent; a v1 container that sees only its own cgroup;
    random limits on own, parent and grand-parent cgroups, v1 and v2."""
    docker, answers = _docker_on_v1()
    cases = [
        {"machine": "h200-vm",
         "files": {f"{_SCOPE}/memory.max": "8589934592\n", f"{_SCOPE}/pids.max": "64\n",
                   f"{_SCOPE}/cpu.max": "50000 100000\n"},
         "limits": {"memory_limit": 8589934592, "cpu_quota": 0.5, "pids_limit": 64,
                    "where": {c: "own, tighter than a parent's"
                              for c in ("memory", "cpu", "pids")}},
         "chains": {"memory": ["/sys/fs/cgroup/lab.slice/lab-user.slice/session-7.scope",
                               "/sys/fs/cgroup/lab.slice/lab-user.slice",
                               "/sys/fs/cgroup/lab.slice", "/sys/fs/cgroup"]},
         "cpus": list(range(16)), "about": "a v2 VM whose session scope is tighter than its "
                                           "slices"},
        {"machine": "k8s-hostpid", "files": docker, **answers,
         "about": "a Docker container on a v1 host, whose mounts show only its own cgroup (the "
                  "folder /proc/self/cgroup names is not there)"},
    ]
    problems = [why for case in cases for why in _machine_problems(learner, case)]
    assert not problems, "\n".join(problems)
    rng = _rng("changed_machines")
    # Three chains, v2 and v1 and one more of either; for each controller, the tightest limit
    # on the own folder in one, on the parent in another, on the grand-parent in the third.
    machines = ["h200-vm", "k8s-hostpid", rng.choice(("h200-vm", "k8s-hostpid"))]
    levels = {controller: rng.sample(range(3), 3) for controller in ("memory", "cpu", "pids")}
    cases = [_random_chain(rng, machine, {c: levels[c][n] for c in levels})
             for n, machine in enumerate(machines)]
    docker, answers = _docker_on_v1(rng)
    cases.append({"machine": "k8s-hostpid", "files": docker, **answers,
                  "about": "a Docker container on a v1 host, whose mounts show only its own "
                           "cgroup, with random limits",
                  "shown": {c: [f"/{path}: {text.strip()!r}" for path, text in docker.items()
                                if text and f"/{h}/" in path and path.startswith("sys/")]
                            for c, h in (("memory", "memory"), ("cpu", "cpu,cpuacct"),
                                         ("pids", "pids"))}})
    problems = []
    for case in cases:
        with _telling(f"on {case['about']}; the files changed: "
                      + "; ".join(line for lines in case["shown"].values() for line in lines)):
            problems += _machine_problems(learner, case)
    assert not problems, "\n".join(problems) + f" {SEEN}"


# ---- limits the checker sets itself, on a parent of the worker's cgroup -------------------------

def _settings(rng: random.Random,
              before: dict[str, object]) -> tuple[dict[str, dict[str, dict[str, str]]], str]:
    """Random limits as `docker run --memory --cpus --pids-limit` would write them, file by
    file for v1 ("cgroup") and v2 ("cgroup2"), and in words: 256 MiB to 4 GiB, half a CPU to
    eight, 64 to 4096 tasks, each drawn below the limit already in force on the worker's chain
    (`before`, a grading job's own limits among them), so that the checker's is the one that
    binds."""
    most = 2**20                                              # pages: 4 GiB
    if isinstance(memory_now := before["memory_limit"], int):
        most = min(most, memory_now * 9 // 10 // PAGE)
    memory = rng.randint(min(2**16, most // 2), most) * PAGE
    cpus = rng.uniform(0.5, 8.0)
    if isinstance(cpus_now := before["cpu_quota"], int | float):
        cpus = min(cpus, cpus_now * rng.uniform(0.5, 0.9))
    quota, period = _quota(rng, cpus, period=rng.choice(
        (100000, 100000, 50000, 200000, rng.randint(10000, 500000))))
    tasks = rng.randint(64, 4096)
    if isinstance(tasks_now := before["pids_limit"], int) and tasks >= tasks_now:
        tasks = rng.randint(max(1, min(16, tasks_now - 1)), max(1, tasks_now - 1))
    files = {
        "memory": {"cgroup": {"memory.limit_in_bytes": str(memory)},
                   "cgroup2": {"memory.max": str(memory)}},
        "cpu": {"cgroup": {"cpu.cfs_period_us": str(period), "cpu.cfs_quota_us": str(quota)},
                "cgroup2": {"cpu.max": f"{quota} {period}"}},
        "pids": {"cgroup": {"pids.max": str(tasks)}, "cgroup2": {"pids.max": str(tasks)}},
    }
    return files, (f"a memory limit of {memory} bytes, a CPU quota of {quota} us per {period} "
                   f"us and a task limit of {tasks}")


@contextlib.contextmanager
def _confined(pid: int, settings: dict[str, dict[str, dict[str, str]]]) -> Iterator[None]:
    """Put `settings`' limits on a new cgroup and move process `pid` into a child of it, with
    no limit of its own; undo it all afterwards.

    v1: the new cgroup is a child of the worker's, in each controller's hierarchy. v2: it is
    a sibling of the worker's (a v2 cgroup with processes cannot hand controllers to
    children), whose parent already offers the controller, and it hands the controller on
    to the child. Skips the check where the checker may not do this.
    """
    undo: list[tuple[Path, Path, Path]] = []       # (new, its child, the folder to go back to)
    try:
        try:
            for controller, files in settings.items():
                chain = read_chain(controller, pid)
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
                leaf = new / "worker"
                if not new.is_dir():
                    new.mkdir()
                    undo.append((new, leaf, home))
                for name, value in files["cgroup2" if v2 else "cgroup"].items():
                    (new / name).write_text(value)
                if v2:
                    (new / "cgroup.subtree_control").write_text(f"+{controller}")
                leaf.mkdir(exist_ok=True)
                (leaf / "cgroup.procs").write_text(str(pid))
        except OSError as exc:
            pytest.skip(f"the checker cannot make cgroups here (it needs root and a writable "
                        f"/sys/fs/cgroup): {exc}")
        yield
    finally:
        for new, leaf, home in reversed(undo):
            with contextlib.suppress(OSError):
                (home / "cgroup.procs").write_text(str(pid))
            for folder in (leaf, new):
                with contextlib.suppress(OSError):
                    folder.rmdir()


@pytest.mark.points(3)
def test_limits_the_checker_sets(learner):
    """With random memory, CPU and task limits set on a parent cgroup, the functions read them."""
    visible = _visible()
    pid = _worker(learner)
    settings, said = _settings(_rng("limits_the_checker_sets"), read_limits(pid))
    with _confined(pid, settings), _telling(f"with {said} set by the checker on the parent "
                                             "of your process's cgroup"):
        got = {function: learner.call(function) for function in READERS}
        truth = read_limits(pid)
    problems = [why for function, (controller, _) in READERS.items()
                if (why := visible.judge_limit(function, controller, got[function], truth))]
    assert not problems, (
        f"with {said} set by the checker on the parent of your process's cgroup (as `docker "
        "run --memory --cpus --pids-limit` would set them on a container's): "
        + "; ".join(problems) + f" {SEEN}")
