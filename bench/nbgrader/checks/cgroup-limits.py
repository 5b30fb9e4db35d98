"""nbgrader's test cells for the cgroup-limits exercise.

Ported from exercises/containers/test_cgroup_limits.py (visible) and
solutions/containers/test_cgroup_limits_hidden.py (hidden), one test cell per
check, worth the same points; they call the learner's functions directly.

As in gpulab, the functions read recorded machines: the checker builds each
machine's /proc/self/mounts, /proc/self/cgroup and cgroup files in a temporary
folder with `gpulab.grading.checks.machines.materialize`, changed where a hidden
check changes it, and passes the folder as `root`. "This machine" is the
kernel the functions run in, as gpulab's is the worker: the checker reads the
kernel's own cgroups, and sets its limits on a parent of the kernel's cgroup.
Where gpulab's check skips (the checker may not make cgroups here), the test
cell fails: nbgrader cannot take a check's points out of those possible. The
hidden checks draw fresh inputs per run from a seed of their own
(GPULAB_CHECK_SEED=<n> replays one).
"""
# ruff: noqa: F821, RUF100  (the notebook's answer cells define the learner's functions)

# %% checker
# ruff: noqa: F811  (in the notebook: the checker imports what it uses, whatever came before)
import atexit
import contextlib
import math
import os
import random
import re
import secrets
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

from gpulab.grading.checks.machines import load_machine as check_load_machine
from gpulab.grading.checks.machines import materialize as check_materialize
from gpulab.probes.system import compact_cpu_list as check_compact_cpu_list

CHECK_FOLDER = Path(tempfile.mkdtemp(prefix="nbgrader-machines-"))
atexit.register(shutil.rmtree, CHECK_FOLDER, True)


def check_machine(name, *, files=None, links=None):
    """Recorded machine `name` built in a folder of its own (changed by `files` and `links`);
    its root, as gpulab's worker names it."""
    root = check_materialize(
        name, Path(tempfile.mkdtemp(prefix="machine-", dir=CHECK_FOLDER)), files=files, links=links
    )
    return str(root) + "/"


def check_new_seed():
    given = os.environ.get("GPULAB_CHECK_SEED", "").strip()
    return int(given) if given.isdigit() else secrets.randbits(32)


CHECK_SEED = check_new_seed()
CHECK_SEEN = f"(seed {CHECK_SEED})"


def check_rng(check):
    """The random inputs of one check: the run's seed and the check's name decide them."""
    return random.Random(f"{CHECK_SEED}:{check}")


@contextlib.contextmanager
def check_telling(about):
    """Where the learner's code fails on drawn inputs, say which inputs, and the seed."""
    try:
        yield
    except NotImplementedError:
        raise
    except Exception as exc:
        raise AssertionError(f"{type(exc).__name__}: {exc}\n({about} {CHECK_SEEN})") from exc


class CheckSkipped(Exception):
    """gpulab would skip this check here; nbgrader can only fail it."""


# ---- the visible checks' machines and judges ----------------------------------------------------
CHECK_MACHINES = ("firecracker-vm", "h200-vm", "two-socket", "k8s-hostpid", "docker-container")
CHECK_FILES = {
    "memory": "memory.max (v2) or memory.limit_in_bytes (v1)",
    "cpu": "cpu.max (v2), or cpu.cfs_quota_us and cpu.cfs_period_us (v1)",
    "pids": "pids.max",
}


def check_machines():
    """Each recorded machine with what the exercise's functions should give on it."""
    return [(m, m.want("cgroup-limits")) for m in map(check_load_machine, CHECK_MACHINES)]


def check_show(value):
    return "None (no limit)" if value is None else repr(value)


def check_judge_chain(controller, got, want):
    """Why `got` is not the chain `want` for `controller`; None when it is."""
    if want is None:
        return (
            None
            if got is None
            else (
                f"cgroup_chain({controller!r}) returned {got!r}, but no mounted hierarchy holds "
                f"the {controller} controller there: return None"
            )
        )
    if not isinstance(got, list) or not got or not all(isinstance(f, str) for f in got):
        return (
            f"cgroup_chain({controller!r}) returned {got!r}, but the process's "
            f"{controller} cgroup is {want[0]}: return a list of folders (strings)"
        )
    got = [folder.rstrip("/") or "/" for folder in got]
    if got[0] != want[0]:
        return (
            f"cgroup_chain({controller!r}) starts at {got[0]}, but the process's "
            f"{controller} cgroup is {want[0]}"
        )
    if got != want:
        return (
            f"cgroup_chain({controller!r}) is {got}, but from {want[0]} up to the mount "
            f"point the folders are {want}"
        )
    return None


def check_judge_limit(function, controller, got, want):
    """Why `got` is not the limit that `function` should find on the `controller` chain of a
    machine whose answers are `want`; None when it is."""
    value = want[function]
    if value is None:
        if got is None:
            return None
        return (
            f"{function}() returned {got!r}, but no limit is set on the {controller} "
            "chain there: return None"
        )
    same = (
        got == value
        if isinstance(value, int)
        else (isinstance(got, int | float) and math.isclose(got, value))
    )
    if same and not isinstance(got, bool):
        return None
    where = want["where"][controller]
    return (
        f"{function}() returned {check_show(got)}, but the limit in force is {value!r} "
        f"(set on {'a parent cgroup' if where == 'parent' else 'its own cgroup'}). Read "
        f"{CHECK_FILES[controller]} in every folder of the chain"
    )


def check_limit_problems(function, controller):
    problems = []
    for machine, want in check_machines():
        got = globals()[function](check_machine(machine.name))
        why = check_judge_limit(function, controller, got, want)
        if why:
            problems.append(f"on {machine.about}: {why}")
    return problems


# ---- the checker's own reading of this machine --------------------------------------------------
CHECK_UNLIMITED = 2**60
CHECK_V1_NO_LIMIT = "9223372036854771712"
CHECK_PAGE = 4096


@dataclass(frozen=True)
class CheckMount:
    fs_type: str
    mount_point: Path
    root: str
    options: frozenset


def check_read_mounts():
    """The cgroup mounts, from /proc/self/mountinfo."""
    mounts = []
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        fields = line.split()
        after = fields[fields.index("-") + 1 :]
        if after[0] in ("cgroup", "cgroup2"):
            point = re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), fields[4])
            mounts.append(
                CheckMount(after[0], Path(point), fields[3], frozenset(after[2].split(",")))
            )
    return mounts


def check_read_version():
    types = frozenset(m.fs_type for m in check_read_mounts())
    return {
        frozenset({"cgroup2"}): "v2",
        frozenset({"cgroup"}): "v1",
        frozenset({"cgroup", "cgroup2"}): "hybrid",
    }.get(types)


def check_read_chain(controller, pid="self"):
    """A process's cgroup folder for `controller`, up to the top of its hierarchy."""
    entries = [line.split(":", 2) for line in Path(f"/proc/{pid}/cgroup").read_text().splitlines()]
    mounts = check_read_mounts()
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
    top = mount.root.rstrip("/")
    if top and (path == top or path.startswith(top + "/")):
        path = path[len(top) :]
    folder = mount.mount_point / path.lstrip("/")
    if not folder.is_dir():
        folder = mount.mount_point
    chain = [folder]
    while chain[-1] != mount.mount_point:
        chain.append(chain[-1].parent)
    return chain


def check_text(path):
    try:
        return path.read_text().strip()
    except FileNotFoundError:
        return None


def check_memory(folder):
    text = check_text(folder / "memory.max") or check_text(folder / "memory.limit_in_bytes")
    return None if text is None or text == "max" or int(text) >= CHECK_UNLIMITED else int(text)


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


CHECK_READERS = {
    "memory_limit": ("memory", check_memory),
    "cpu_quota": ("cpu", check_cpu),
    "pids_limit": ("pids", check_pids),
}


def check_read_limits(pid):
    """What the limit functions should answer for process `pid`, and where each sits."""
    want = {}
    where = {}
    for function, (controller, read) in CHECK_READERS.items():
        chain = check_read_chain(controller, pid) or []
        found = [
            (value, n)
            for n, folder in enumerate(chain)
            if isinstance(value := read(folder), int | float)
        ]
        best = min(found, default=None)
        want[function] = None if best is None else best[0]
        where[controller] = "none" if best is None else "own" if best[1] == 0 else "parent"
    return {**want, "where": where}


def check_read_cpuset(pid):
    for folder in check_read_chain("cpuset", pid) or []:
        for name in ("cpuset.cpus.effective", "cpuset.effective_cpus"):
            text = check_text(folder / name)
            if text is not None:
                cpus = set()
                for item in filter(None, text.split(",")):
                    first, _, last = item.partition("-")
                    cpus.update(range(int(first), int(last or first) + 1))
                return sorted(cpus)
    return None


def check_controllers():
    """Controller names worth asking about: the kernel's list, the cgroup2 mounts' lists."""
    names = set()
    with contextlib.suppress(OSError):
        names.update(
            line.split()[0]
            for line in Path("/proc/cgroups").read_text().splitlines()
            if line.strip() and not line.startswith("#")
        )
    for mount in check_read_mounts():
        if mount.fs_type == "cgroup2":
            with contextlib.suppress(OSError):
                names.update((mount.mount_point / "cgroup.controllers").read_text().split())
    return sorted(names)


# ---- recorded machines, changed -----------------------------------------------------------------
CHECK_SCOPE = "sys/fs/cgroup/lab.slice/lab-user.slice/session-7.scope"
CHECK_POD = "kubepods/burstable/pod5f8d2c3e-7b1a-4c2e-9d4f-2a6b8c0e1f37"
CHECK_CONTAINER = f"{CHECK_POD}/8c2f41d9b7e3a05c6d1f9e8b7a6c5d4e3f2a1b0c9d8e7f6a5b4c3d2e1f0a9b8c"


def check_period(rng):
    """A CFS period in microseconds (the kernel takes 1 ms to 1 s)."""
    return rng.choice((100000, 100000, 50000, 250000, 10000, 1000000, rng.randint(1000, 10**6)))


def check_quota(rng, cpus, period=None):
    """(quota, period) in microseconds for about `cpus` CPUs, never exactly one CPU."""
    period = period or check_period(rng)
    quota = max(1000, round(cpus * period))
    if quota == period:
        quota += -1000 if quota > 1000 else 1000
    return quota, period


def check_ratio(limit):
    if isinstance(limit, tuple):
        return limit[0] / limit[1]
    return float(limit or 0)


def check_chain_limits(rng, controller, folders, tightest):
    """A limit (or None) for each folder, the process's own first: the tightest on folder
    `tightest`; the others looser or none, and a looser parent where the own folder is the
    tightest."""

    def draw(above=None):
        if controller == "memory":
            low = 2**14 if above is None else int(above) // CHECK_PAGE + 1
            return rng.randint(low, low + 2**25) * CHECK_PAGE
        if controller == "pids":
            low = 8 if above is None else int(above) + 1
            return rng.randint(low, low + 50000)
        cpus = rng.uniform(0.05, 32.0) if above is None else above * rng.uniform(1.05, 4.0)
        return check_quota(rng, cpus)

    tight = draw()
    limits = [None] * folders
    limits[tightest] = tight
    others = [n for n in range(folders) if n != tightest]
    looser = [n for n in others if rng.random() < 0.5]
    if tightest == 0 and not looser:
        looser = [rng.choice(others)]
    for n in looser:
        while check_ratio(limit := draw(check_ratio(tight))) <= check_ratio(tight):
            pass
        limits[n] = limit
    return limits


def check_v2_files(folder, controller, limit, rng):
    if controller == "cpu":
        quota, period = limit if isinstance(limit, tuple) else ("max", check_period(rng))
        return {f"{folder}/cpu.max": f"{quota} {period}\n"}
    name = "memory.max" if controller == "memory" else "pids.max"
    return {f"{folder}/{name}": f"{'max' if limit is None else limit}\n"}


def check_v1_files(folder, controller, limit, rng):
    if controller == "cpu":
        quota, period = limit if isinstance(limit, tuple) else (-1, check_period(rng))
        return {
            f"{folder}/cpu.cfs_quota_us": f"{quota}\n",
            f"{folder}/cpu.cfs_period_us": f"{period}\n",
        }
    if controller == "memory":
        return {
            f"{folder}/memory.limit_in_bytes": f"{CHECK_V1_NO_LIMIT if limit is None else limit}\n"
        }
    return {f"{folder}/pids.max": f"{'max' if limit is None else limit}\n"}


def check_expected(limit):
    return limit[0] / limit[1] if isinstance(limit, tuple) else limit


def check_cpuset(rng, cpus):
    """A random non-empty set of CPUs below `cpus`, in runs and single CPUs."""
    chosen = set()
    while not chosen:
        for _ in range(rng.randint(1, 4)):
            first = rng.randrange(cpus)
            chosen.update(range(first, min(cpus, first + rng.choice((1, 1, 2, 4, 8, 16)))))
    return sorted(chosen)


def check_random_chain(rng, machine, tightest):
    """h200-vm (v2) or k8s-hostpid (v1) with random limits on every folder of the chain below
    the top, the tightest of each controller on folder `tightest[controller]`; a random
    cpuset. The changes, and what the functions should answer."""
    v2 = machine == "h200-vm"
    folders = 3 if v2 else 4
    files = {}
    want = {}
    where = {}
    shown = {}
    for controller in ("memory", "cpu", "pids"):
        limits = check_chain_limits(rng, controller, folders, tightest[controller])
        for n, limit in enumerate(limits):
            if v2:
                folder = CHECK_SCOPE.rsplit("/", n)[0] if n else CHECK_SCOPE
                changed = check_v2_files(folder, controller, limit, rng)
            else:
                hierarchy = "cpu,cpuacct" if controller == "cpu" else controller
                folder = f"sys/fs/cgroup/{hierarchy}/{CHECK_CONTAINER.rsplit('/', n)[0]}"
                changed = check_v1_files(folder, controller, limit, rng)
            files.update(changed)
            shown.setdefault(controller, []).extend(
                f"/{path}: {text.strip()!r}" for path, text in changed.items()
            )
        function = {"memory": "memory_limit", "cpu": "cpu_quota", "pids": "pids_limit"}
        want[function[controller]] = check_expected(limits[tightest[controller]])
        where[controller] = (
            "own, tighter than a parent's" if tightest[controller] == 0 else "parent"
        )
    cpus = check_cpuset(rng, 16 if v2 else 32)
    if v2:
        files["sys/fs/cgroup/cpuset.cpus.effective"] = check_compact_cpu_list(cpus) + "\n"
    else:
        files[f"sys/fs/cgroup/cpuset/{CHECK_CONTAINER}/cpuset.effective_cpus"] = (
            check_compact_cpu_list(cpus) + "\n"
        )
    chains = check_load_machine(machine).want("cgroup-limits")["cgroup_chain"]
    about = (
        "a v2 VM (h200-vm) with random limits on its session scope and the slices above it"
        if v2
        else "a v1 Kubernetes node (k8s-hostpid) with random limits on the "
        "container's cgroup and the pod's and QoS class's above it"
    )
    return {
        "machine": machine,
        "files": files,
        "limits": {**want, "where": where},
        "chains": {c: chains[c] for c in ("memory", "cpu", "pids")},
        "cpus": cpus,
        "about": about,
        "shown": shown,
    }


def check_docker_on_v1(rng=None):
    """k8s-hostpid's node turned into a Docker container on a v1 host without a cgroup
    namespace; with `rng`, a random id, random limits and a random cpuset."""
    docker = "/docker/0f3b9a1c5e7d"
    memory, (quota, period), tasks, cpus = 1073741824, (200000, 100000), 256, [4, 5, 6, 7]
    if rng is not None:
        docker = f"/docker/{rng.getrandbits(256):064x}"[: rng.choice((20, 72))]
        memory = rng.randint(2**14, 2**24) * CHECK_PAGE
        quota, period = check_quota(rng, rng.uniform(0.05, 32.0))
        tasks, cpus = rng.randint(8, 50000), check_cpuset(rng, 64)
    lines = [
        f"{n}:{c}:{docker}"
        for n, c in (
            (10, "cpuset"),
            (9, "memory"),
            (8, "pids"),
            (7, "cpu,cpuacct"),
            (1, "name=systemd"),
        )
    ]
    points = ["cpuset", "memory", "pids", "cpu,cpuacct"]
    info = [
        "1 0 0:1 / / rw - overlay overlay rw",
        "2 1 0:2 / /sys/fs/cgroup ro - tmpfs tmpfs ro,mode=755",
    ]
    info += [
        f"{3 + n} 2 0:{3 + n} {docker} /sys/fs/cgroup/{p} ro - cgroup cgroup rw,{p}"
        for n, p in enumerate(points)
    ]
    files = {
        "sys/fs/cgroup": None,
        "proc/self/cgroup": "\n".join(lines) + "\n",
        "proc/self/mountinfo": "\n".join(info) + "\n",
        "proc/self/mounts": "overlay / overlay rw 0 0\ntmpfs /sys/fs/cgroup tmpfs ro 0 0\n"
        + "".join(
            f"cgroup /sys/fs/cgroup/{p} cgroup ro,nosuid,nodev,noexec,relatime,{p} 0 0\n"
            for p in points
        ),
        "sys/fs/cgroup/memory/memory.limit_in_bytes": f"{memory}\n",
        "sys/fs/cgroup/cpu,cpuacct/cpu.cfs_quota_us": f"{quota}\n",
        "sys/fs/cgroup/cpu,cpuacct/cpu.cfs_period_us": f"{period}\n",
        "sys/fs/cgroup/pids/pids.max": f"{tasks}\n",
        "sys/fs/cgroup/cpuset/cpuset.effective_cpus": check_compact_cpu_list(cpus) + "\n",
    }
    answers = {
        "limits": {
            "memory_limit": memory,
            "cpu_quota": quota / period,
            "pids_limit": tasks,
            "where": {c: "own" for c in ("memory", "cpu", "pids")},
        },
        "chains": {"memory": ["/sys/fs/cgroup/memory"], "cpu": ["/sys/fs/cgroup/cpu,cpuacct"]},
        "cpus": cpus,
    }
    return files, answers


def check_machine_problems(case):
    """The problems of the learner's answers on one changed machine."""
    root = check_machine(case["machine"], files=case["files"])
    about, shown = case["about"], case.get("shown", {})
    problems = []
    for controller, chain in case["chains"].items():
        why = check_judge_chain(controller, cgroup_chain(controller, root), chain)
        if why:
            problems.append(f"on {about}: {why}")
    for function, (controller, _) in CHECK_READERS.items():
        why = check_judge_limit(function, controller, globals()[function](root), case["limits"])
        if why:
            files = shown.get(controller)
            problems.append(
                f"on {about}: {why}"
                + (f" (the files changed: {'; '.join(files)})" if files else "")
            )
    got = allowed_cpus(root)
    if got != case["cpus"]:
        problems.append(
            f"on {about}: allowed_cpus() returned {got!r:.200}, but its effective "
            f"cpuset reads {check_compact_cpu_list(case['cpus'])!r}"
        )
    return problems


# ---- limits the checker sets itself, on a parent of the kernel's cgroup ---------------------
def check_settings(rng, before):
    """Random limits as `docker run --memory --cpus --pids-limit` would write them, file by
    file for v1 ("cgroup") and v2 ("cgroup2"), each below the limit already in force."""
    most = 2**20
    if isinstance(memory_now := before["memory_limit"], int):
        most = min(most, memory_now * 9 // 10 // CHECK_PAGE)
    memory = rng.randint(min(2**16, most // 2), most) * CHECK_PAGE
    cpus = rng.uniform(0.5, 8.0)
    if isinstance(cpus_now := before["cpu_quota"], int | float):
        cpus = min(cpus, cpus_now * rng.uniform(0.5, 0.9))
    quota, period = check_quota(
        rng, cpus, period=rng.choice((100000, 100000, 50000, 200000, rng.randint(10000, 500000)))
    )
    tasks = rng.randint(64, 4096)
    if isinstance(tasks_now := before["pids_limit"], int) and tasks >= tasks_now:
        tasks = rng.randint(max(1, min(16, tasks_now - 1)), max(1, tasks_now - 1))
    files = {
        "memory": {
            "cgroup": {"memory.limit_in_bytes": str(memory)},
            "cgroup2": {"memory.max": str(memory)},
        },
        "cpu": {
            "cgroup": {"cpu.cfs_period_us": str(period), "cpu.cfs_quota_us": str(quota)},
            "cgroup2": {"cpu.max": f"{quota} {period}"},
        },
        "pids": {"cgroup": {"pids.max": str(tasks)}, "cgroup2": {"pids.max": str(tasks)}},
    }
    return files, (
        f"a memory limit of {memory} bytes, a CPU quota of {quota} us per {period} "
        f"us and a task limit of {tasks}"
    )


@contextlib.contextmanager
def check_confined(pid, settings):
    """Put `settings`' limits on a new cgroup and move process `pid` into a child of it, with
    no limit of its own; undo it all afterwards. Raises CheckSkipped where gpulab's check
    skips (the checker may not do this)."""
    undo = []
    try:
        try:
            for controller, files in settings.items():
                chain = check_read_chain(controller, pid)
                if chain is None:
                    raise CheckSkipped(f"no mounted hierarchy has the {controller} controller")
                v2 = (chain[-1] / "cgroup.controllers").exists()
                home = chain[0]
                parent = home if not v2 or len(chain) == 1 else chain[1]
                offered = (parent / "cgroup.subtree_control").read_text().split() if v2 else []
                if v2 and controller not in offered:
                    raise CheckSkipped(
                        f"{parent} does not hand the {controller} controller to its children"
                    )
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
            raise CheckSkipped(
                f"the checker cannot make cgroups here (it needs root and a "
                f"writable /sys/fs/cgroup): {exc}"
            ) from None
        yield
    finally:
        for new, leaf, home in reversed(undo):
            with contextlib.suppress(OSError):
                (home / "cgroup.procs").write_text(str(pid))
            for folder in (leaf, new):
                with contextlib.suppress(OSError):
                    folder.rmdir()


# %% test test_cgroup_version points=1 needs=cgroup_version
for machine, want in check_machines():
    got = cgroup_version(check_machine(machine.name))
    assert got == want["cgroup_version"], (
        f"on {machine.about}, cgroup_version() returned {got!r}, but its mounts make it "
        f"{want['cgroup_version']!r}: only cgroup2 is v2, only cgroup (v1) is v1, both "
        "together are hybrid (read /proc/self/mounts under root)"
    )

# %% test test_cgroup_chain points=3 needs=cgroup_chain
problems = []
for machine, want in check_machines():
    root = check_machine(machine.name)
    for controller, chain in want["cgroup_chain"].items():
        why = check_judge_chain(controller, cgroup_chain(controller, root), chain)
        if why:
            problems.append(f"on {machine.about}: {why}")
            break
assert not problems, "\n".join(problems)

# %% test test_parse_cpu_max_examples points=1 needs=parse_cpu_max
for text, want in [("150000 100000\n", 1.5), ("max 100000\n", None)]:
    got = parse_cpu_max(text)
    assert got == want, (
        f"parse_cpu_max({text!r}) returned {got!r}, but it means {check_show(want)}: "
        "CPUs = quota / period, and a quota of 'max' is no limit (None)"
    )

# %% test test_memory_limit points=3 needs=memory_limit,cgroup_chain
problems = check_limit_problems("memory_limit", "memory")
assert not problems, "\n".join(problems)

# %% test test_cpu_quota points=3 needs=cpu_quota,cgroup_chain,parse_cpu_max
problems = check_limit_problems("cpu_quota", "cpu")
assert not problems, "\n".join(problems)

# %% test test_pids_limit points=2 needs=pids_limit,cgroup_chain
problems = check_limit_problems("pids_limit", "pids")
assert not problems, "\n".join(problems)

# %% test test_allowed_cpus points=2 needs=allowed_cpus,cgroup_chain
for machine, want in check_machines():
    got = allowed_cpus(check_machine(machine.name))
    cpus = want["allowed_cpus"]
    assert got == cpus, (
        f"on {machine.about}, allowed_cpus() returned {got!r}, but its effective cpuset is "
        f"{len(cpus)} CPUs ({cpus[0]} to {cpus[-1]}): take the first folder of the cpuset "
        "chain that has cpuset.cpus.effective (v2) or cpuset.effective_cpus (v1)"
    )

# %% hidden test_parse_cpu_max_other_lines points=2 needs=parse_cpu_max
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
    got = parse_cpu_max(text)
    if want is None:
        assert got is None, f"parse_cpu_max({text!r}) returned {got!r}: 'max' is no limit"
    else:
        assert isinstance(got, int | float) and math.isclose(got, want), (
            f"parse_cpu_max({text!r}) returned {got!r}, not {want:g}: divide the quota by the "
            "period as given (the period is not always 100000)"
        )
rng = check_rng("parse_cpu_max_other_lines")
for _ in range(24):
    end = rng.choice(("\n", "\n", ""))
    if rng.random() < 0.2:
        text = f"max {check_period(rng)}{end}"
        with check_telling(f"parse_cpu_max was given {text!r}"):
            got = parse_cpu_max(text)
        assert got is None, f"parse_cpu_max({text!r}) returned {got!r} {CHECK_SEEN}"
        continue
    quota, period = check_quota(rng, rng.uniform(0.01, 64.0))
    text = f"{quota} {period}{end}"
    with check_telling(f"parse_cpu_max was given {text!r}"):
        got = parse_cpu_max(text)
    ok = isinstance(got, int | float) and not isinstance(got, bool)
    assert ok and math.isclose(got, quota / period), (
        f"parse_cpu_max({text!r}) returned {got!r}, which is not this quota in CPUs: divide "
        f"the quota by the period as given {CHECK_SEEN}"
    )

# %% hidden test_this_machine points=2 needs=all
got = cgroup_version()
want = check_read_version()
assert got == want, f"cgroup_version() returned {got!r} on this machine, which is {want!r}"
truth = check_read_limits(os.getpid())
problems = [
    why
    for function, (controller, _) in CHECK_READERS.items()
    if (why := check_judge_limit(function, controller, globals()[function](), truth))
]
cpus = check_read_cpuset(os.getpid())
got = allowed_cpus()
if got != cpus:
    problems.append(f"allowed_cpus() returned {got!r}, but the cpuset here is {cpus!r}")
assert not problems, "on the machine the checks run on: " + "; ".join(problems)

# %% hidden test_cgroup_chain_every_controller points=2 needs=cgroup_chain
wrong = []
for controller in [*check_controllers(), "no-such-controller"]:
    chain = check_read_chain(controller, os.getpid())
    want = None if chain is None else [str(folder) for folder in chain]
    why = check_judge_chain(controller, cgroup_chain(controller), want)
    if why:
        wrong.append(why)
shown = wrong[:3] + ([f"and {len(wrong) - 3} more"] if len(wrong) > 3 else [])
assert not wrong, "on this machine: " + "; ".join(shown)

# %% hidden test_changed_machines points=2 needs=cgroup_chain,parse_cpu_max,memory_limit,cpu_quota,pids_limit,allowed_cpus  # noqa: E501
docker, answers = check_docker_on_v1()
cases = [
    {
        "machine": "h200-vm",
        "files": {
            f"{CHECK_SCOPE}/memory.max": "8589934592\n",
            f"{CHECK_SCOPE}/pids.max": "64\n",
            f"{CHECK_SCOPE}/cpu.max": "50000 100000\n",
        },
        "limits": {
            "memory_limit": 8589934592,
            "cpu_quota": 0.5,
            "pids_limit": 64,
            "where": {c: "own, tighter than a parent's" for c in ("memory", "cpu", "pids")},
        },
        "chains": {
            "memory": [
                "/sys/fs/cgroup/lab.slice/lab-user.slice/session-7.scope",
                "/sys/fs/cgroup/lab.slice/lab-user.slice",
                "/sys/fs/cgroup/lab.slice",
                "/sys/fs/cgroup",
            ]
        },
        "cpus": list(range(16)),
        "about": "a v2 VM whose session scope is tighter than its slices",
    },
    {
        "machine": "k8s-hostpid",
        "files": docker,
        **answers,
        "about": "a Docker container on a v1 host, whose mounts show only its own cgroup",
    },
]
problems = [why for case in cases for why in check_machine_problems(case)]
assert not problems, "\n".join(problems)
rng = check_rng("changed_machines")
machines = ["h200-vm", "k8s-hostpid", rng.choice(("h200-vm", "k8s-hostpid"))]
levels = {controller: rng.sample(range(3), 3) for controller in ("memory", "cpu", "pids")}
cases = [
    check_random_chain(rng, machine, {c: levels[c][n] for c in levels})
    for n, machine in enumerate(machines)
]
docker, answers = check_docker_on_v1(rng)
cases.append(
    {
        "machine": "k8s-hostpid",
        "files": docker,
        **answers,
        "about": "a Docker container on a v1 host, whose mounts show only its own "
        "cgroup, with random limits",
        "shown": {
            c: [
                f"/{path}: {text.strip()!r}"
                for path, text in docker.items()
                if text and f"/{h}/" in path and path.startswith("sys/")
            ]
            for c, h in (("memory", "memory"), ("cpu", "cpu,cpuacct"), ("pids", "pids"))
        },
    }
)
problems = []
for case in cases:
    with check_telling(
        f"on {case['about']}; the files changed: "
        + "; ".join(line for lines in case["shown"].values() for line in lines)
    ):
        problems += check_machine_problems(case)
assert not problems, "\n".join(problems) + f" {CHECK_SEEN}"

# %% hidden test_limits_the_checker_sets points=3 needs=memory_limit,cpu_quota,pids_limit,cgroup_chain,parse_cpu_max  # noqa: E501
settings, said = check_settings(
    check_rng("limits_the_checker_sets"), check_read_limits(os.getpid())
)
with (
    check_confined(os.getpid(), settings),
    check_telling(f"with {said} set by the checker on the parent of your process's cgroup"),
):
    got = {function: globals()[function]() for function in CHECK_READERS}
    truth = check_read_limits(os.getpid())
problems = [
    why
    for function, (controller, _) in CHECK_READERS.items()
    if (why := check_judge_limit(function, controller, got[function], truth))
]
assert not problems, (
    f"with {said} set by the checker on the parent of your process's cgroup: "
    + "; ".join(problems)
    + f" {CHECK_SEEN}"
)
