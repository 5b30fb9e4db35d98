"""Hidden checks for the numa-topology exercise: odd CPU lists, a pin that really happens,
machines the visible checks do not show, and this machine itself.

The pin check watches the worker process from outside: it narrows the worker to one
CPU, lets the learner's pin_to_node(0) run, and reads the worker's affinity from the
kernel, so an answer that returns node 0's CPUs without pinning anything fails even on a
one-node machine. The changed machines add a server of twelve nodes (node10 and node11
after node9), a kernel without NUMA, a workstation GPU and an audio function.

The inputs vary per run. Each check that takes inputs draws them from a seed made for the
run (`gpulab.grading.checks.draws`; GPULAB_CHECK_SEED=<n> replays a run) and names it in its
failure messages.
Beside the fixed cases of before: random CPU lists (ranges, single CPUs, gaps, items out of
order, overlapping and repeated, blanks around items and around the list, a final newline or
none); random NUMA maps (node numbers with gaps, always one of 10 to 19 beside one of 2 to 9,
so that sorting by the folder's name goes wrong; random CPUs per node, memory-only nodes
in random places, a random symmetric distance table, the other entries of the node folder);
random PCI buses (NVIDIA GPUs of class 0x0300 and 0x0302 at random addresses, on random NUMA
nodes or none, with random local CPUs, beside NVIDIA audio, NVSwitch and USB functions and
other vendors' display controllers); and the CPU of node 0 the worker is narrowed to. The
expected answers come from the values drawn.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from pathlib import Path

import pytest

from gpulab.grading.checks.draws import SEEN
from gpulab.grading.checks.draws import rng as _rng
from gpulab.grading.checks.draws import telling as _telling
from gpulab.probes.system import compact_cpu_list, parse_cpu_list

NODE_ROOT = Path("/sys/devices/system/node")
PCI_ROOT = Path("/sys/bus/pci/devices")
NODE_DIR = "sys/devices/system/node"
PCI_DIR = "sys/bus/pci/devices"




def _cpus(rng: random.Random, first: int, count: int) -> list[int]:
    """A random non-empty set of CPUs from `first` to `first + count - 1`: runs and single
    CPUs, with gaps."""
    chosen: set[int] = set()
    while not chosen:
        for _ in range(rng.randint(1, 4)):
            start = first + rng.randrange(count)
            length = rng.choice((1, 1, 2, 3, 8, 32))
            chosen.update(range(start, min(first + count, start + length)))
    return sorted(chosen)


def _cpu_list_text(rng: random.Random, cpus: list[int]) -> str:
    """`cpus` as a CPU list the kernel could not write but the parser must read: items out
    of order, ranges split and overlapping, some repeated, blanks around items."""
    runs: list[tuple[int, int]] = []
    for cpu in cpus:
        if runs and runs[-1][1] == cpu - 1:
            runs[-1] = (runs[-1][0], cpu)
        else:
            runs.append((cpu, cpu))
    items = []
    for first, last in runs:
        if last > first and rng.random() < 0.4:            # split, the halves overlapping
            cut = rng.randint(first, last - 1)
            items += [(first, min(last, cut + rng.randint(0, 2))), (cut + 1, last)]
        else:
            items.append((first, last))
    items += rng.sample(items, rng.randint(0, min(2, len(items))))     # repeated
    rng.shuffle(items)
    blank = ("", "", "", " ", "  ", "\t")
    text = ",".join(f"{rng.choice(blank)}{a if a == b else f'{a}-{b}'}{rng.choice(blank)}"
                    for a, b in items)
    return rng.choice(blank) + text + rng.choice(("", "\n", " \n"))


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
    rng = _rng("parse_cpulist_odd_inputs")
    for _ in range(30):
        want = _cpus(rng, rng.choice((0, 0, rng.randint(1, 500))), rng.choice((8, 64, 512)))
        text = _cpu_list_text(rng, want)
        with _telling(f"parse_cpulist was given {text!r}"):
            got = learner.call("parse_cpulist", text)
        if got == want:
            continue
        if isinstance(got, list) and set(got) == set(want):
            why = "the CPUs are right, but the result is sorted and lists each CPU once"
        else:
            why = ("each item is one CPU or an inclusive range a-b, items may come in any "
                   "order and overlap, and blanks around an item or the list are not part of it")
        raise AssertionError(f"parse_cpulist({text!r}) returned {got!r:.300}: {why} {SEEN}")


def _granted(cpus: list[int]) -> list[int]:
    """What a fresh process of the checker's own reads back after pinning itself to `cpus`."""
    code = ("import json, os, sys; os.sched_setaffinity(0, json.loads(sys.argv[1])); "
            "print(json.dumps(sorted(os.sched_getaffinity(0))))")
    done = subprocess.run([sys.executable, "-c", code, json.dumps(cpus)],
                          capture_output=True, text=True, timeout=60, check=True)
    return list(json.loads(done.stdout))


@pytest.mark.points(2)
def test_pin_to_node_really_pins(learner):
    """pin_to_node(0) changes the worker's affinity, as the kernel sees it"""
    node0 = NODE_ROOT / "node0" / "cpulist"
    if not node0.is_file():
        pytest.skip("this machine has no NUMA node 0 in sysfs")
    want = _granted(parse_cpu_list(node0.read_text()))
    if len(want) < 2:
        pytest.skip("node 0 offers fewer than two CPUs here: narrowing would prove nothing")
    pid = learner.pid
    if pid is None:
        learner.call("pin_to_node", 0)            # the worker is gone: this says why
        pytest.skip("cannot see the worker process to watch its affinity")
    narrow = _rng("pin_to_node_really_pins").choice(want)
    os.sched_setaffinity(pid, [narrow])           # narrow the worker from outside
    got = learner.call("pin_to_node", 0)
    seen = sorted(os.sched_getaffinity(pid))      # the kernel's view, not the learner's
    assert seen == want, (
        f"the checker narrowed your worker to CPU {narrow} and then called pin_to_node(0); "
        f"afterwards the kernel says the worker may run on {compact_cpu_list(seen)!r}, but "
        f"node 0 is {compact_cpu_list(want)!r}. Your function returned {got!r}: it must "
        "call os.sched_setaffinity(0, node 0's CPUs), not just report them")
    assert got == want, (
        f"the worker is pinned correctly, but pin_to_node(0) returned {got!r} instead of "
        f"what it may now use, {want!r}: return what the kernel granted, read back "
        "after pinning")


# ---- this machine ------------------------------------------------------------------------------

def _read_nodes() -> list[dict] | None:
    if not NODE_ROOT.is_dir():
        return None
    numbers = sorted(int(d.name[4:]) for d in NODE_ROOT.iterdir()
                     if d.name.startswith("node") and d.name[4:].isdigit())
    return [{"node": n,
             "cpus": parse_cpu_list((NODE_ROOT / f"node{n}" / "cpulist").read_text()),
             "distances": [int(x) for x in
                           (NODE_ROOT / f"node{n}" / "distance").read_text().split()]}
            for n in numbers]


def _read_gpus() -> list[dict]:
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


@pytest.mark.points(2)
def test_this_machine(learner):
    """On the machine the checks run on: the nodes, the GPUs, and pinning to node 0"""
    problems = []
    want = _read_nodes()
    got = learner.call("numa_nodes")
    if got != want:
        problems.append(f"numa_nodes() returned {got!r:.300}, but sysfs here says {want!r:.300}")
    want_gpus = _read_gpus()
    got = learner.call("gpu_nodes")
    if got != want_gpus:
        problems.append(f"gpu_nodes() returned {got!r:.300}, but sysfs here says "
                        f"{want_gpus!r:.300}")
    if want and want[0]["node"] == 0 and want[0]["cpus"]:
        granted = _granted(want[0]["cpus"])
        got = learner.call("pin_to_node", 0)
        if got != granted:
            problems.append(f"pin_to_node(0) returned {got!r:.200}, but a process pinned to "
                            f"node 0 here may run on {granted!r:.200}")
    assert not problems, "on the machine the checks run on: " + "; ".join(problems)


# ---- recorded machines, changed ----------------------------------------------------------------

def _snc_server() -> tuple[dict[str, str | None], list[dict]]:
    """Two sockets in sub-NUMA clustering of four (nodes 0-7, 16 CPUs each, and their
    siblings) and four CXL memory-only nodes (8-11): the files and the nodes they mean."""
    nodes = []
    for n in range(12):
        if n < 8:
            cpus = [*range(16 * n, 16 * n + 16), *range(128 + 16 * n, 128 + 16 * n + 16)]
        else:
            cpus = []
        row = []
        for m in range(12):
            if m == n:
                row.append(10)
            elif n >= 8 or m >= 8:
                row.append(14 if (n % 2) == (m % 2) else 24)
            else:
                row.append(12 if n // 4 == m // 4 else 21)
        nodes.append({"node": n, "cpus": cpus, "distances": row})
    files: dict[str, str | None] = {NODE_DIR: None}
    for node in nodes:
        folder = f"{NODE_DIR}/node{node['node']}"
        files[f"{folder}/cpulist"] = compact_cpu_list(node["cpus"]) + "\n"
        files[f"{folder}/distance"] = " ".join(map(str, node["distances"])) + "\n"
    files[f"{NODE_DIR}/online"] = "0-11\n"
    files[f"{NODE_DIR}/has_cpu"] = "0-7\n"
    return files, nodes


def _random_map(rng: random.Random) -> tuple[dict[str, str | None], list[dict]]:
    """A random NUMA map: node 0, some of nodes 1 to 9 (one of 2 to 9 at least) and of 10 to
    63 (one of 10 to 19 at least, whose folder name sorts before node2's), CPUs in blocks with
    gaps (and their SMT siblings, sometimes), one or two memory-only nodes in random places
    (sometimes none), a random symmetric distance table, and the other entries sysfs has. The
    files, and the nodes they mean."""
    numbers = sorted({0, rng.randint(2, 9), rng.randint(10, 19),
                      *rng.sample(range(1, 10), rng.randint(0, 3)),
                      *rng.sample(range(10, 64), rng.randint(0, 2))})
    memory_only = set(rng.sample(numbers[1:], rng.choice((0, 1, 1, 2))))
    blocks: dict[int, list[int]] = {}
    first = 0
    for n in numbers:
        if n in memory_only:
            continue
        size = rng.choice((2, 4, 8, 12, 16, 28, 32))
        cpus = [cpu for cpu in range(first, first + size) if rng.random() > 0.1] or [first]
        blocks[n], first = cpus, first + size
    if rng.random() < 0.5:                                   # SMT siblings after every core
        blocks = {n: [*cpus, *(cpu + first for cpu in cpus)] for n, cpus in blocks.items()}
    table = {(n, n): 10 for n in numbers}
    for a in numbers:
        for b in numbers:
            if a < b:
                table[a, b] = table[b, a] = rng.choice((11, 12, 16, 20, 21, 22, 24, 28, 32, 40))
    nodes = [{"node": n, "cpus": blocks.get(n, []),
              "distances": [table[n, m] for m in numbers]} for n in numbers]
    files: dict[str, str | None] = {NODE_DIR: None}
    for node in nodes:
        folder = f"{NODE_DIR}/node{node['node']}"
        mask = sum(1 << cpu for cpu in node["cpus"])
        groups = max(1, (max(node["cpus"], default=0) + 32) // 32)
        files[f"{folder}/cpulist"] = compact_cpu_list(node["cpus"]) + "\n"
        files[f"{folder}/cpumap"] = ",".join(f"{mask >> 32 * g & 0xFFFFFFFF:08x}"
                                             for g in reversed(range(groups))) + "\n"
        files[f"{folder}/distance"] = " ".join(map(str, node["distances"])) + "\n"
    files[f"{NODE_DIR}/online"] = compact_cpu_list(numbers) + "\n"
    files[f"{NODE_DIR}/possible"] = f"0-{max(numbers)}\n"
    files[f"{NODE_DIR}/has_cpu"] = compact_cpu_list(blocks) + "\n"
    files[f"{NODE_DIR}/has_memory"] = compact_cpu_list(numbers) + "\n"
    files[f"{NODE_DIR}/power/control"] = "auto\n"
    files[f"{NODE_DIR}/uevent"] = ""
    return files, nodes


def _nodes_problem(got: object, nodes: list[dict], about: str,
                   files: dict[str, str | None] | None = None) -> str | None:
    """Why numa_nodes() answered `got` where the node folder means `nodes`; None if right.
    With `files` (the files of a random map), the messages quote them, not the answer."""
    if not isinstance(got, list):
        return f"{about}, numa_nodes() returned {got!r:.200}: return a list, one dict per node"
    numbers = [n.get("node") if isinstance(n, dict) else n for n in got]
    if numbers != [n["node"] for n in nodes]:
        listed = "" if files is None else " (its node folders are " + ", ".join(
            sorted(f"node{n['node']}" for n in nodes)) + ")"
        return (f"{about}{listed}, numa_nodes() gave the nodes {numbers!r}: one per nodeN "
                "folder, sorted by the number in the folder's name (node10 after node9)")
    for mine, truth in zip(got, nodes, strict=True):
        if mine == truth:
            continue
        n = truth["node"]
        if files is None:
            means = f"its files mean {truth!r:.200}"
        else:
            folder = f"{NODE_DIR}/node{n}"
            means = (f"{folder}/cpulist reads {files[f'{folder}/cpulist']!r:.200} and "
                     f"{folder}/distance {files[f'{folder}/distance']!r}")
        return (f"{about}, numa_nodes() says {mine!r:.200} for node {n}, but {means}: the "
                "CPUs as a sorted list of ints (empty for a memory-only node), the distances "
                "as ints, and nothing else in the dict but node, cpus and distances")
    return None


@pytest.mark.points(1)
def test_more_nodes_and_none(learner):
    """numa_nodes() on twelve nodes (node10 after node9), on random maps, without NUMA"""
    files, nodes = _snc_server()
    root = learner.machine("two-socket", files=files)
    why = _nodes_problem(learner.call("numa_nodes", root), nodes,
                         "on a server of twelve nodes (two sockets in four clusters each, four "
                         "CXL memory expanders)")
    assert why is None, why
    rng = _rng("more_nodes_and_none")
    for _ in range(3):
        files, nodes = _random_map(rng)
        machine = rng.choice(("two-socket", "h200-vm", "firecracker-vm"))
        about = f"on a copy of {machine} with a NUMA map of {len(nodes)} nodes"
        with _telling(f"numa_nodes(root) was called {about}, whose files are "
                      + "; ".join(f"{path}: {text!r}" for path, text in files.items()
                                  if path.endswith(("/cpulist", "/distance")))):
            got = learner.call("numa_nodes", learner.machine(machine, files=files))
        why = _nodes_problem(got, nodes, about, files)
        assert why is None, f"{why} {SEEN}"
    for machine in ("two-socket", rng.choice(("h200-vm", "firecracker-vm"))):
        root = learner.machine(machine, files={NODE_DIR: None})
        got = learner.call("numa_nodes", root)
        assert got is None, (f"on a kernel without NUMA support (a copy of {machine} without "
                             f"{NODE_DIR}), numa_nodes() returned {got!r:.200}: return None")


# Other devices on a PCI bus: vendor, class, and the name lspci gives it.
NOT_GPUS = (("0x10de", "0x040300", "NVIDIA audio device"),
            ("0x10de", "0x068000", "NVIDIA bridge (an NVSwitch)"),
            ("0x10de", "0x0c0330", "NVIDIA USB controller"),
            ("0x10de", "0x0c8000", "NVIDIA serial bus controller (USB-C)"),
            ("0x8086", "0x030000", "Intel VGA compatible controller"),
            ("0x1a03", "0x030000", "ASPEED VGA compatible controller"),
            ("0x1002", "0x038000", "AMD display controller"),
            ("0x15b3", "0x020700", "Mellanox InfiniBand controller"),
            ("0x8086", "0x060000", "Intel host bridge"))
GPU_CLASSES = {"0x030200": "NVIDIA 3D controller", "0x030000": "NVIDIA VGA compatible controller"}


def _random_bus(rng: random.Random) -> tuple[dict[str, str | None], list[dict], list[str]]:
    """A random PCI bus: one to eight NVIDIA GPUs (class 0x0302 or 0x0300) at random
    addresses, on random NUMA nodes or none, with random local CPUs, and other devices,
    NVIDIA's among them. The files, the GPUs they mean, and the devices in words."""
    places: set[tuple[str, int, int]] = set()
    nodes = rng.choice(([-1], [0, 1], [0, 1, 2, 3], [0, 1, 2, 3, 4, 5, 6, 7]))
    devices: list[tuple[str, str, str, int, list[int], str]] = []

    def place() -> tuple[str, int, int]:
        while (at := (rng.choice(("0000", "0000", "0000", "0001")), rng.randrange(1, 256),
                      rng.randrange(32))) in places:
            pass
        places.add(at)
        return at

    for _ in range(rng.randint(1, 8)):
        domain, bus, slot = place()
        node, cpus = rng.choice(nodes), _cpus(rng, 0, 256)
        klass = rng.choice(("0x030200", "0x030200", "0x030000"))
        devices.append((f"{domain}:{bus:02x}:{slot:02x}.0", "0x10de", klass, node, cpus,
                        GPU_CLASSES[klass]))
        if klass == "0x030000":      # a graphics card's audio, USB and USB-C functions
            functions = [d for d in NOT_GPUS[:4] if d[1] != "0x068000"][:rng.randint(1, 3)]
            for function, (vendor, other, what) in enumerate(functions, start=1):
                devices.append((f"{domain}:{bus:02x}:{slot:02x}.{function}", vendor, other,
                                node, cpus, what))
    for vendor, klass, what in rng.sample(NOT_GPUS, rng.randint(2, len(NOT_GPUS))):
        domain, bus, slot = place()
        devices.append((f"{domain}:{bus:02x}:{slot:02x}.0", vendor, klass, rng.choice(nodes),
                        _cpus(rng, 0, 256), what))
    files: dict[str, str | None] = {PCI_DIR: None}
    for address, vendor, klass, node, cpus, _ in devices:
        for name, text in (("vendor", vendor), ("class", klass), ("numa_node", str(node)),
                           ("local_cpulist", compact_cpu_list(cpus))):
            files[f"{PCI_DIR}/{address}/{name}"] = text + "\n"
    gpus = [{"bus_id": address, "numa_node": None if node < 0 else node, "local_cpus": cpus}
            for address, vendor, klass, node, cpus, _ in sorted(devices)
            if vendor == "0x10de" and klass.startswith("0x03")]
    said = [f"{address} ({what}: vendor {vendor}, class {klass}, numa_node {node}, "
            f"local_cpulist {compact_cpu_list(cpus)})"
            for address, vendor, klass, node, cpus, what in sorted(devices)]
    return files, gpus, said


@pytest.mark.points(1)
def test_other_gpus(learner):
    """gpu_nodes() keeps a workstation's VGA-class GPU, drops its audio, copes without PCI, and
    reads random buses"""
    base = f"{PCI_DIR}/0000:65:00"
    files: dict[str, str | None] = {PCI_DIR: None}
    for function, klass in ((0, "0x030000"), (1, "0x040300")):
        for name, text in (("vendor", "0x10de"), ("class", klass), ("numa_node", "-1"),
                           ("local_cpulist", "0-15")):
            files[f"{base}.{function}/{name}"] = text + "\n"
    for name, text in (("vendor", "0x8086"), ("class", "0x030000"), ("numa_node", "-1"),
                       ("local_cpulist", "0-15")):
        files[f"{PCI_DIR}/0000:00:02.0/{name}"] = text + "\n"
    root = learner.machine("h200-vm", files=files)
    want = [{"bus_id": "0000:65:00.0", "numa_node": None, "local_cpus": list(range(16))}]
    got = learner.call("gpu_nodes", root)
    assert got == want, (
        f"on a workstation with an NVIDIA VGA card (class 0x030000), its HDMI audio function "
        f"and Intel graphics, gpu_nodes() returned {got!r:.300}, not {want!r}: keep every "
        "NVIDIA display controller, whatever its subclass, and nothing else")
    root = learner.machine("docker-container")
    got = learner.call("gpu_nodes", root)
    assert got == [], (f"in a container without {PCI_DIR}, gpu_nodes() returned {got!r:.200}: "
                       "return []")
    rng = _rng("other_gpus")
    for _ in range(3):
        files, want, said = _random_bus(rng)
        machine = rng.choice(("two-socket", "h200-vm"))
        with _telling(f"gpu_nodes(root) was called on a copy of {machine} whose PCI devices "
                      f"are {'; '.join(said)}"):
            got = learner.call("gpu_nodes", learner.machine(machine, files=files))
        assert got == want, (
            f"on a copy of {machine} whose PCI devices are {'; '.join(said)}, gpu_nodes() "
            f"returned {got!r:.300}: keep every NVIDIA display controller (vendor 0x10de, class "
            "0x03xxxx) and nothing else, sorted by address, with numa_node -1 as None and "
            f"local_cpulist as a sorted list of ints {SEEN}")
