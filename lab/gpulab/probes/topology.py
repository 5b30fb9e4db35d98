"""GPU topology: how the GPUs of this machine reach each other and the CPUs.

`gpu_topology()` asks NVML what `nvidia-smi topo -m` shows, and a little more:

- every GPU: its PCI bus id; the host NUMA node nearest to it (NVML's memory
  affinity, else the kernel's `numa_node` in sysfs: nvidia-smi's "NUMA
  Affinity"); the CPUs of that node (NVML's CPU affinity, checked against
  sysfs `local_cpulist`: where a process feeding this GPU should run); and
  the GPU's own NUMA id, which exists only where GPU memory is a NUMA node of
  its own (coherent CPU-GPU systems; elsewhere NVML says "not supported");
- every pair of GPUs: the path between them in `nvidia-smi topo -m`'s words,
  and whether the driver allows peer-to-peer (P2P) reads, writes, NVLink and
  atomics between them;
- every NVLink link: active or not, its version, and what is at the far end.

The path labels, nearest first, as nvidia-smi's legend defines them: NV#, a
bonded set of # NVLink links; PIX, at most one PCIe bridge; PXB, several PCIe
bridges but no host bridge; PHB, through a PCIe host bridge (the CPU); NODE,
between the host bridges of one NUMA node; SYS, across the interconnect
between NUMA nodes (QPI/UPI). NVML's common ancestor of two GPUs gives the
PCIe part (`ancestor_label`); the NV# part is counted from the NVLink links
(`nvlink_counts`). Where the links go to NVSwitches rather than to the other
GPU, any two GPUs reach each other over all their switch links, so a pair
counts the smaller of the two GPUs' switch links: nvidia-smi prints NV18
between all eight GPUs of an HGX H100.

The pure helpers (labels, ranking, CPU lists, the matrix, and a parser of
`nvidia-smi topo -m` text) need neither NVML nor a GPU. Every NVML and sysfs
read goes through a backend (see `gpulab.probes.nvml`), so a recording made
on a GPU machine replays here; a backend may offer `sysfs_text(path)`, else
the file is read directly.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gpulab.probes.model import ProbeResult, Reading, ReadingStatus, Table, Value, summarise
from gpulab.probes.nvml_session import NvmlUnavailable, _Missing, _Session, nvml_session

__all__ = [
    "LEVEL_LABELS",
    "LinkEnd",
    "TopoMatrix",
    "ancestor_label",
    "best_pair",
    "build_matrix",
    "cpu_list",
    "format_cpu_list",
    "gpu_topology",
    "label_rank",
    "nvlink_counts",
    "nvlink_version_text",
    "p2p_status_text",
    "parse_cpu_list",
    "parse_topo_matrix",
    "sysfs_pci_address",
    "sysfs_text",
]

# ---- pure helpers: no NVML, no GPU, tested exactly -----------------------------------------

# NVML's nvmlGpuTopologyLevel_t as nvidia-smi labels it. INTERNAL (0) means two GPUs on
# one board (a dual-GPU card); the legend has no label for it, so it shows as PIX, the
# nearest PCIe label.
LEVEL_LABELS = {0: "PIX", 10: "PIX", 20: "PXB", 30: "PHB", 40: "NODE", 50: "SYS"}
_PCIE_RANK = {"PIX": 5, "PXB": 4, "PHB": 3, "NODE": 2, "SYS": 1}
_NV = re.compile(r"NV(\d+)")


def ancestor_label(level: int) -> str:
    """NVML's common-ancestor level of two GPUs as a `nvidia-smi topo -m` label: 30 -> "PHB"."""
    try:
        return LEVEL_LABELS[level]
    except KeyError:
        raise ValueError(f"NVML topology level {level} is not one of "
                         f"{', '.join(map(str, LEVEL_LABELS))}") from None


def label_rank(label: str) -> tuple[int, int]:
    """A sort key for path labels, larger is nearer (faster).

    Any NVLink path beats any PCIe path and more links beat fewer
    (NV18 > NV12 > NV4); then PIX > PXB > PHB > NODE > SYS.
    """
    nv = _NV.fullmatch(label)
    if nv:
        return 1, int(nv.group(1))
    if label in _PCIE_RANK:
        return 0, _PCIE_RANK[label]
    raise ValueError(f"{label!r} is not a path label (NV#, PIX, PXB, PHB, NODE or SYS)")


def format_cpu_list(cpus: Iterable[int]) -> str:
    """CPU numbers in the kernel's list format: {0, 1, 2, 3, 8} -> "0-3,8"."""
    runs: list[list[int]] = []
    for cpu in sorted(set(cpus)):
        if runs and cpu == runs[-1][1] + 1:
            runs[-1][1] = cpu
        else:
            runs.append([cpu, cpu])
    return ",".join(f"{a}" if a == b else f"{a}-{b}" for a, b in runs)


def cpu_list(words: Sequence[int], word_bits: int = 64) -> str:
    """An NVML affinity bitmask (one integer per `word_bits` CPUs) as a kernel CPU list.

    Bit b of word w stands for CPU w * word_bits + b: [0xFFFF] -> "0-15";
    "" when no bit is set.
    """
    return format_cpu_list(w * word_bits + bit for w, word in enumerate(words)
                           for bit in range(word_bits) if int(word) >> bit & 1)


def parse_cpu_list(text: str) -> frozenset[int]:
    """The CPUs of a kernel CPU list: "0-3,8" -> {0, 1, 2, 3, 8}."""
    cpus: set[int] = set()
    for part in filter(None, (p.strip() for p in text.strip().split(","))):
        low, dash, high = part.partition("-")
        if not low.isdigit() or (dash and not high.isdigit()):
            raise ValueError(f"{part!r} in CPU list {text!r} is neither N nor N-M")
        cpus.update(range(int(low), int(high if dash else low) + 1))
    return frozenset(cpus)


# nvmlNvlinkVersion_t: the number NVML answers is this enum, not the version itself.
NVLINK_VERSIONS = {1: "1.0", 2: "2.0", 3: "2.2", 4: "3.0", 5: "3.1", 6: "4.0", 7: "5.0",
                   8: "6.0"}


def nvlink_version_text(code: int) -> str:
    """NVML's NVLink version enum as a version: 6 -> "4.0" (Hopper), 5 -> "3.1"."""
    return NVLINK_VERSIONS.get(code, f"unknown ({code})")


# nvmlGpuP2PStatus_t, in the words of `nvidia-smi topo -p2p`'s legend.
_P2P_STATUS = {0: "OK", 1: "chipset not supported", 2: "GPU not supported",
               3: "topology not supported", 4: "disabled by regkey", 5: "not supported",
               6: "unknown"}
# nvmlGpuP2PCapsIndex_t; pynvml spells NVML_P2P_CAPS_INDEX_READ as a tuple, so use numbers.
_P2P_CAPS = (("read", 0), ("write", 1), ("nvlink", 2), ("atomics", 3))


def p2p_status_text(code: int) -> str:
    """NVML's P2P status as words: 0 -> "OK", 2 -> "GPU not supported"."""
    return _P2P_STATUS.get(code, f"unknown ({code})")


def sysfs_pci_address(bus_id: str) -> str:
    """NVML's PCI bus id as sysfs names the device: "00000000:1B:00.0" -> "0000:1b:00.0"."""
    domain, _, rest = bus_id.strip().partition(":")
    return f"{domain[-4:].rjust(4, '0')}:{rest}".lower()


@dataclass(frozen=True)
class LinkEnd:
    """The far end of one active NVLink link: a PCI bus id (None if NVML cannot say)."""

    remote_bus: str | None
    switch: bool = False        # NVML says the far end is an NVSwitch


def nvlink_counts(buses: Sequence[str | None],
                  links: Sequence[Sequence[LinkEnd]]) -> dict[tuple[int, int], int]:
    """NVLink links between GPU i and GPU j (i < j), from each GPU's active links.

    A link whose far end is GPU j counts for the pair directly. Links to an
    NVSwitch, or to a device that is no GPU here, join the switch fabric: two
    GPUs that both have such links reach each other over min(a, b) of them.
    """
    index = {sysfs_pci_address(bus): i for i, bus in enumerate(buses) if bus}
    seen: dict[tuple[int, int], int] = {}
    fabric = [0] * len(links)
    for i, ends in enumerate(links):
        for end in ends:
            j = None if end.switch or end.remote_bus is None else index.get(
                sysfs_pci_address(end.remote_bus))
            if j is None or j == i:
                fabric[i] += 1
            else:
                seen[i, j] = seen.get((i, j), 0) + 1
    counts = {}
    for i in range(len(links)):
        for j in range(i + 1, len(links)):
            # a direct link shows on both GPUs; take the larger count in case one side is mute
            direct = max(seen.get((i, j), 0), seen.get((j, i), 0))
            counts[i, j] = direct or min(fabric[i], fabric[j])
    return counts


@dataclass(frozen=True)
class TopoMatrix:
    """The matrix of `nvidia-smi topo -m`, GPUs only, with each GPU's affinity.

    `links[i][j]` is the path label from GPU i to GPU j ("X" for itself, None
    where NVML could not say); the affinity columns hold the text nvidia-smi
    prints, None for "N/A" or a column the output lacks (`columns` lists the
    ones it has). `others` names the non-GPU devices of the output (NICs).
    """

    gpus: tuple[str, ...]
    links: tuple[tuple[str | None, ...], ...]
    cpu_affinity: tuple[str | None, ...]
    numa_affinity: tuple[str | None, ...]
    gpu_numa_id: tuple[str | None, ...]
    columns: tuple[str, ...] = ("CPU Affinity", "NUMA Affinity", "GPU NUMA ID")
    others: tuple[str, ...] = field(default=())

    TITLE = "GPU topology"

    def to_table(self) -> Table:
        """The matrix as a probe table, shaped like `nvidia-smi topo -m`."""
        rows = tuple((gpu, *self.links[i], self.cpu_affinity[i], self.numa_affinity[i],
                      self.gpu_numa_id[i]) for i, gpu in enumerate(self.gpus))
        return Table(self.TITLE, ("GPU", *self.gpus, *_AFFINITY), rows)

    @classmethod
    def from_table(cls, table: Table) -> TopoMatrix:
        """The matrix back from `to_table`'s table (a result read from JSON, say)."""
        n = len(table.columns) - 1 - len(_AFFINITY)
        if n < 1 or table.columns[0] != "GPU" or table.columns[n + 1:] != _AFFINITY:
            raise ValueError(f"table {table.title!r} is not a GPU topology table")
        text = [tuple(None if c is None else str(c) for c in row) for row in table.rows]
        return cls(tuple(row[0] or "" for row in text), tuple(row[1:n + 1] for row in text),
                   tuple(row[n + 1] for row in text), tuple(row[n + 2] for row in text),
                   tuple(row[n + 3] for row in text))


_AFFINITY = ("CPU Affinity", "NUMA Affinity", "GPU NUMA ID")


def best_pair(matrix: TopoMatrix) -> tuple[int, int, str] | None:
    """The nearest pair of GPUs (first in order on a tie), or None with fewer than two."""
    found: tuple[int, int, str] | None = None
    for i in range(len(matrix.gpus)):
        for j in range(i + 1, len(matrix.gpus)):
            label = matrix.links[i][j]
            if label is not None and (found is None or
                                      label_rank(label) > label_rank(found[2])):
                found = (i, j, label)
    return found


def build_matrix(n: int, pcie: Mapping[tuple[int, int], str | None],
                 nvlinks: Mapping[tuple[int, int], int], cpu_affinity: Sequence[str | None],
                 numa_affinity: Sequence[str | None], gpu_numa_id: Sequence[str | None]
                 ) -> TopoMatrix:
    """The matrix of n GPUs from each pair's PCIe label and NVLink count (keys i < j).

    X on the diagonal; NV# wherever a pair has NVLink links, else its PCIe
    label; None where neither is known. The matrix is symmetric.
    """
    cells: list[list[str | None]] = [["X" if i == j else None for j in range(n)]
                                     for i in range(n)]
    for i in range(n):
        for j in range(i + 1, n):
            links = nvlinks.get((i, j), 0)
            cells[i][j] = cells[j][i] = f"NV{links}" if links else pcie.get((i, j))
    return TopoMatrix(tuple(f"GPU{i}" for i in range(n)), tuple(map(tuple, cells)),
                      tuple(cpu_affinity), tuple(numa_affinity), tuple(gpu_numa_id))


_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_CELL = re.compile(r"X|NV\d+|PIX|PXB|PHB|NODE|SYS")
_GPU = re.compile(r"GPU\d+")


def parse_topo_matrix(text: str) -> TopoMatrix:
    """Read the matrix printed by `nvidia-smi topo -m` (or `-mp`).

    Lines before the header (the first line that starts with the column
    GPU0) are ignored, and so is everything from the first blank line or
    "Legend:" after the rows. NIC and other device rows may follow the GPU
    rows. Raises ValueError naming the line (counted from 1) on anything else.
    """
    lines = [_ANSI.sub("", line).rstrip() for line in text.splitlines()]
    start = next((n for n, line in enumerate(lines)
                  if line.split()[:1] == ["GPU0"] and line.split()[1:2] != ["X"]), None)
    if start is None:
        raise ValueError("no header line found: nvidia-smi topo -m starts its matrix with a "
                         "line of columns GPU0, GPU1, ...")
    header = lines[start]
    first = min((header.find(name) for name in _AFFINITY if name in header), default=-1)
    devices = (header if first < 0 else header[:first]).split()
    extra = tuple(re.findall("|".join(_AFFINITY), header[first:])) if first >= 0 else ()
    leftover = re.sub("|".join(_AFFINITY), "", header[first:]).strip() if first >= 0 else ""
    if leftover:
        raise ValueError(f"line {start + 1}: unknown column text {leftover!r} after the "
                         "devices")
    gpus = [d for d in devices if _GPU.fullmatch(d)]
    rows: dict[str, tuple[list[str], list[str]]] = {}
    for n in range(start + 1, len(lines)):
        tokens = lines[n].split()
        if not tokens or tokens[0].startswith("Legend"):
            break
        name, cells, rest = tokens[0], tokens[1:len(devices) + 1], tokens[len(devices) + 1:]
        where = f"line {n + 1}"
        if name not in devices:
            raise ValueError(f"{where}: row {name!r} is not a column of the header")
        if len(cells) < len(devices):
            raise ValueError(f"{where}: row {name} has {len(cells)} cells, the header names "
                             f"{len(devices)} devices")
        for device, cell in zip(devices, cells, strict=True):
            if not _CELL.fullmatch(cell):
                raise ValueError(f"{where}: {cell!r} in column {device} is not a path label "
                                 "(NV#, PIX, PXB, PHB, NODE, SYS, or X for the device itself)")
            if (cell == "X") != (device == name):
                raise ValueError(f"{where}: row {name} has {cell!r} in column {device}; X "
                                 "belongs in a device's own column and nowhere else")
        if _GPU.fullmatch(name) and len(rest) != len(extra):
            raise ValueError(f"{where}: row {name} has {len(rest)} affinity values, the "
                             f"header names {len(extra)} ({', '.join(extra) or 'none'})")
        rows[name] = (cells, rest)
    missing = [gpu for gpu in gpus if gpu not in rows]
    if missing:
        raise ValueError(f"no row for {', '.join(missing)} below the header (line {start + 1})")
    at = [devices.index(gpu) for gpu in gpus]

    def column(name: str) -> tuple[str | None, ...]:
        if name not in extra:
            return (None,) * len(gpus)
        k = extra.index(name)
        return tuple(None if rows[g][1][k] == "N/A" else rows[g][1][k] for g in gpus)

    return TopoMatrix(tuple(gpus), tuple(tuple(rows[g][0][a] for a in at) for g in gpus),
                      column("CPU Affinity"), column("NUMA Affinity"), column("GPU NUMA ID"),
                      extra, tuple(d for d in devices if d not in gpus))


# ---- reading the machine through NVML and sysfs --------------------------------------------

_CPU_WORDS = 16          # 1024 CPUs, NVML's own limit for CPU affinity; fixed so recordings replay
_NODE_WORDS = 4          # 256 NUMA nodes
_NVLINK_LINKS = 36       # NVML_NVLINK_MAX_LINKS
_NVLINK_SWITCH = 2       # NVML_NVLINK_DEVICE_TYPE_SWITCH


def sysfs_text(path: str) -> str | None:
    """A sysfs file's text, stripped, or None when it cannot be read."""
    try:
        return Path(path).read_text(encoding="utf-8", errors="replace").strip()
    except OSError:
        return None


@dataclass(frozen=True)
class _Answer:
    value: Any
    status: ReadingStatus = "ok"
    detail: str = ""


def _ask(s: _Session, call: str, *args: Any) -> _Answer:
    """One NVML answer, or why there is none (not supported, missing, failed)."""
    try:
        return _Answer(s.call(call, *args))
    except (_Missing, s.pm.NVMLError) as exc:
        problem = s.problem("", "", call, exc)
        return _Answer(None, problem.status, problem.detail)


@dataclass
class _Gpu:
    index: int
    name: str
    handle: Any = None
    bus: _Answer = _Answer(None, "error", "no handle")
    numa: _Answer = _Answer(None, "error", "no handle")           # nearest host node(s)
    numa_id: _Answer = _Answer(None, "error", "no handle")        # the GPU's own node
    cpus: _Answer = _Answer(None, "error", "no handle")
    sysfs_cpus: str | None = None
    nvlink: _Answer = _Answer(None, "error", "no handle")         # list of _Link when ok


@dataclass(frozen=True)
class _Link:
    link: int
    active: bool
    version: str | None = None
    remote_bus: str | None = None
    remote_type: int | None = None


def _text(value: Any) -> str:
    return value.decode(errors="replace") if isinstance(value, bytes) else str(value)


def _read_gpu(s: _Session, index: int, read: Any) -> _Gpu:
    try:
        h = s.call("nvmlDeviceGetHandleByIndex", index)
    except s.pm.NVMLError as exc:
        return _Gpu(index, f"GPU {index}", bus=_Answer(None, "error", f"no handle: {exc}"))
    gpu = _Gpu(index, _text(s.value("nvmlDeviceGetName", h) or f"GPU {index}"), h)
    pci = _ask(s, "nvmlDeviceGetPciInfo", h)
    gpu.bus = _Answer(_text(pci.value.busId)) if pci.status == "ok" else pci
    sysfs = f"/sys/bus/pci/devices/{sysfs_pci_address(gpu.bus.value)}/" if gpu.bus.value else ""
    scope = getattr(s.pm, "NVML_AFFINITY_SCOPE_NODE", 0)
    memory = _ask(s, "nvmlDeviceGetMemoryAffinity", h, _NODE_WORDS, scope)
    nodes = cpu_list(list(memory.value)) if memory.status == "ok" else ""
    gpu.numa = _Answer(nodes, detail="NVML memory affinity") if nodes else _sysfs_node(
        read(sysfs + "numa_node") if sysfs else None, memory)
    gpu.numa_id = _ask(s, "nvmlDeviceGetNumaNodeId", h)
    cpus = _ask(s, "nvmlDeviceGetCpuAffinity", h, _CPU_WORDS)
    listed = cpu_list(list(cpus.value)) if cpus.status == "ok" else ""
    gpu.cpus = _Answer(listed) if listed else (
        cpus if cpus.status != "ok" else _Answer(None, "not_supported", "NVML gave no CPUs"))
    gpu.sysfs_cpus = read(sysfs + "local_cpulist") if sysfs else None
    gpu.nvlink = _read_links(s, h)
    return gpu


def _sysfs_node(text: str | None, nvml: _Answer) -> _Answer:
    why = f"NVML: {nvml.detail or 'no node'}"
    if text is None:
        return _Answer(None, "not_supported", f"{why}; sysfs numa_node unreadable")
    if text.lstrip("-").isdigit() and int(text) >= 0:
        return _Answer(text, detail="sysfs numa_node")
    return _Answer(None, "not_supported", f"{why}; sysfs numa_node is {text} (no NUMA "
                                          "information for this device)")


def _read_links(s: _Session, h: Any) -> _Answer:
    """Every NVLink link of one GPU; not supported (with NVML's words) without NVLink."""
    first = _ask(s, "nvmlDeviceGetNvLinkState", h, 0)
    if first.status != "ok":
        return first
    links = []
    for link in range(_NVLINK_LINKS):
        state = first.value if link == 0 else s.value("nvmlDeviceGetNvLinkState", h, link)
        if state is None:
            break       # past the last link
        if not state:
            links.append(_Link(link, False))
            continue
        version = s.value("nvmlDeviceGetNvLinkVersion", h, link)
        remote = s.value("nvmlDeviceGetNvLinkRemotePciInfo", h, link)
        links.append(_Link(link, True, None if version is None else nvlink_version_text(version),
                           None if remote is None else _text(remote.busId),
                           s.value("nvmlDeviceGetNvLinkRemoteDeviceType", h, link)))
    return _Answer(links)


def _active(gpu: _Gpu) -> list[_Link]:
    return [link for link in gpu.nvlink.value if link.active] if gpu.nvlink.status == "ok" else []


def gpu_topology(backend: Any = None) -> ProbeResult:
    """Every GPU's bus, NUMA node and CPUs; every pair's path and P2P status; NVLink links."""
    probe, title = "gpu_topology", "GPU topology"
    try:
        with nvml_session(backend) as s:
            read = getattr(s.nv, "sysfs_text", None) or sysfs_text
            gpus = [_read_gpu(s, index, read) for index in range(s.count)]
            levels, p2p = _pairs(s, gpus)
    except NvmlUnavailable as exc:
        if exc.status == "no_gpu":
            return ProbeResult(probe, title, "no_gpu", f"no NVIDIA GPU found: {exc.reason}")
        return ProbeResult(probe, title, "unavailable", exc.reason)
    counts = nvlink_counts([g.bus.value for g in gpus],
                           [[LinkEnd(link.remote_bus, link.remote_type == _NVLINK_SWITCH)
                             for link in _active(g)] for g in gpus])
    matrix = _matrix(gpus, levels, counts)
    readings = _readings(gpus, matrix)
    tables = (matrix.to_table(), _gpu_table(gpus), _link_table(gpus),
              _pair_table(matrix, levels, p2p))
    return ProbeResult(probe, title, summarise(readings), _message(gpus, readings),
                       tuple(readings), tables, device=gpus[0].name)


_Pairs = dict[tuple[int, int], _Answer]


def _pairs(s: _Session, gpus: Sequence[_Gpu]) -> tuple[_Pairs, dict[tuple[int, int],
                                                                      list[_Answer]]]:
    """Each pair's common PCIe ancestor and P2P statuses, asked from the lower index."""
    levels: _Pairs = {}
    p2p: dict[tuple[int, int], list[_Answer]] = {}
    for a in gpus:
        for b in gpus[a.index + 1:]:
            if a.handle is None or b.handle is None:
                continue
            levels[a.index, b.index] = _ask(s, "nvmlDeviceGetTopologyCommonAncestor",
                                            a.handle, b.handle)
            p2p[a.index, b.index] = [_ask(s, "nvmlDeviceGetP2PStatus", a.handle, b.handle, cap)
                                     for _, cap in _P2P_CAPS]
    return levels, p2p


def _pcie_label(level: _Answer) -> str | None:
    if level.status != "ok":
        return None
    try:
        return ancestor_label(int(level.value))
    except ValueError:          # a level newer than this code: say nothing rather than guess
        return None


def _matrix(gpus: Sequence[_Gpu], levels: _Pairs, counts: dict[tuple[int, int], int]
            ) -> TopoMatrix:
    return build_matrix(len(gpus), {pair: _pcie_label(level) for pair, level in levels.items()},
                        counts, [g.cpus.value for g in gpus], [g.numa.value for g in gpus],
                        [None if g.numa_id.value is None else str(g.numa_id.value)
                         for g in gpus])


def _reading(key: str, label: str, answer: _Answer, unit: str = "", convention: str = "",
             detail: str = "") -> Reading:
    if answer.status == "ok":
        return Reading(key, label, answer.value, unit, convention, detail=detail or answer.detail)
    if answer.status == "not_supported":
        return Reading.not_supported(key, label, answer.detail)
    return Reading.failed(key, label, answer.detail)


def _readings(gpus: Sequence[_Gpu], matrix: TopoMatrix) -> list[Reading]:
    gpu = gpus[0]
    readings = [Reading("gpu_count", "GPUs", len(gpus), "GPUs", detail="as NVML lists them"),
                _reading("gpu_pci_bus_id", "GPU 0 PCI bus id", gpu.bus)]
    links = gpu.nvlink
    active = _active(gpu)
    if links.status == "ok":
        readings.append(Reading("nvlink_links_active", "NVLink links active (GPU 0)",
                                len(active), "links", detail=f"of {len(links.value)} links"))
        versions = sorted({link.version for link in active if link.version})
        readings.append(_reading("nvlink_version", "NVLink version (GPU 0)", _Answer(
            ", ".join(versions)) if versions else _Answer(
            None, "not_supported", "no active link answered nvmlDeviceGetNvLinkVersion"),
            convention="nvmlDeviceGetNvLinkVersion's enum as a version number"))
    else:
        readings += [_reading("nvlink_links_active", "NVLink links active (GPU 0)", links),
                     _reading("nvlink_version", "NVLink version (GPU 0)", links)]
    numa = gpu.numa
    node: Value = int(numa.value) if numa.status == "ok" and str(numa.value).isdigit() else (
        numa.value)
    readings += [
        _reading("gpu_numa_node", "NUMA node nearest GPU 0", _Answer(node, numa.status,
                                                                     numa.detail),
                 convention="the host node whose memory is nearest, as nvidia-smi's "
                            "'NUMA Affinity'"),
        _reading("gpu_numa_id", "GPU 0's own NUMA id", gpu.numa_id,
                 convention="only where GPU memory is a NUMA node (coherent CPU-GPU systems)"),
        _reading("gpu_local_cpus", "CPUs local to GPU 0", gpu.cpus,
                 convention="kernel CPU list of NVML's CPU affinity (the nearest NUMA node)",
                 detail=_sysfs_agreement(gpu)),
    ]
    pair = best_pair(matrix)
    if pair is None:
        readings.append(Reading.not_supported(
            "best_pair", "Nearest pair of GPUs",
            "needs two GPUs" if len(gpus) < 2 else "NVML gave no path between any two GPUs"))
    else:
        i, j, label = pair
        readings.append(Reading("best_pair", "Nearest pair of GPUs",
                                f"GPU{i}-GPU{j} ({label})",
                                convention="NVLink count first, then PIX > PXB > PHB > NODE > "
                                           "SYS"))
    return readings


def _sysfs_agreement(gpu: _Gpu) -> str:
    if gpu.sysfs_cpus is None or gpu.cpus.status != "ok":
        return "sysfs local_cpulist not readable here" if gpu.sysfs_cpus is None else ""
    try:
        same = parse_cpu_list(gpu.sysfs_cpus) == parse_cpu_list(str(gpu.cpus.value))
    except ValueError:
        same = False
    return ("sysfs local_cpulist agrees" if same
            else f"sysfs local_cpulist says {gpu.sysfs_cpus!r}")


def _message(gpus: Sequence[_Gpu], readings: Sequence[Reading]) -> str:
    value = {r.key: r.value for r in readings if r.status == "ok"}
    names = sorted({g.name for g in gpus})
    facts = [f"{len(gpus)} GPU{'s' if len(gpus) != 1 else ''}: {', '.join(names)}"]
    if "gpu_numa_node" in value:
        facts.append(f"GPU 0 on NUMA node {value['gpu_numa_node']}")
    if "gpu_local_cpus" in value:
        facts.append(f"local CPUs {value['gpu_local_cpus']}")
    links = value.get("nvlink_links_active")
    facts.append(f"{links} NVLink links active on GPU 0" if links is not None else "no NVLink")
    if "best_pair" in value:
        facts.append(f"nearest pair {value['best_pair']}")
    return "; ".join(facts)


def _gpu_table(gpus: Sequence[_Gpu]) -> Table:
    rows = tuple((g.index, g.name, g.bus.value, g.numa.value, g.numa.detail or None,
                  g.numa_id.value, g.cpus.value, g.sysfs_cpus) for g in gpus)
    return Table("GPUs", ("index", "name", "PCI bus id", "NUMA node",
                          "NUMA node: from, or why not", "GPU NUMA id", "local CPUs (NVML)",
                          "local CPUs (sysfs)"), rows)


_REMOTE_KIND = {0: "GPU", 1: "IBM NPU", _NVLINK_SWITCH: "NVSwitch"}


def _link_table(gpus: Sequence[_Gpu]) -> Table:
    by_bus = {sysfs_pci_address(g.bus.value): g.index for g in gpus if g.bus.value}
    rows = []
    for g in gpus:
        for link in g.nvlink.value if g.nvlink.status == "ok" else ():
            kind = None if link.remote_type is None else _REMOTE_KIND.get(link.remote_type,
                                                                          "unknown")
            remote = by_bus.get(sysfs_pci_address(link.remote_bus)) if link.remote_bus else None
            rows.append((g.index, link.link, "Active" if link.active else "Inactive",
                         link.version, link.remote_bus, kind,
                         None if remote is None else f"GPU{remote}"))
    return Table("NVLink links", ("GPU", "link", "state", "version", "remote PCI bus id",
                                  "remote device", "remote GPU"), tuple(rows))


def _pair_table(matrix: TopoMatrix, levels: _Pairs,
                p2p: dict[tuple[int, int], list[_Answer]]) -> Table:
    rows = []
    for (i, j), level in levels.items():
        status = [p2p_status_text(int(a.value)) if a.status == "ok" else a.status.replace(
            "_", " ") for a in p2p[i, j]]
        rows.append((f"GPU{i}-GPU{j}", matrix.links[i][j], _pcie_label(level), *status))
    return Table("GPU pairs", ("pair", "link", "PCIe path",
                               *(f"P2P {name}" for name, _ in _P2P_CAPS)), tuple(rows))
