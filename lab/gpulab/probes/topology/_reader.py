"""The GPU topology probe: how the GPUs of this machine reach each other and the CPUs.

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

Every NVML and sysfs read goes through a backend (see `gpulab.probes.nvml`),
so a recording made on a GPU machine replays here; a backend may offer
`sysfs_text(path)`, else the file is read directly. The labels, the counts
and the matrix are worked out by the pure helpers of `_matrix`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gpulab.probes.model import ProbeResult, Reading, ReadingStatus, Table, Value, summarise
from gpulab.probes.nvml import MissingFunction, NvmlUnavailable, Session, nvml_session
from gpulab.probes.topology._matrix import (
    LinkEnd,
    TopoMatrix,
    ancestor_label,
    best_pair,
    build_matrix,
    cpu_list,
    nvlink_counts,
    nvlink_version_text,
    p2p_status_text,
    parse_cpu_list,
    sysfs_pci_address,
)

__all__ = ["gpu_topology", "sysfs_text"]

_CPU_WORDS = 16          # 1024 CPUs, NVML's own limit for CPU affinity; fixed so recordings replay
_NODE_WORDS = 4          # 256 NUMA nodes
_NVLINK_LINKS = 36       # NVML_NVLINK_MAX_LINKS
_NVLINK_SWITCH = 2       # NVML_NVLINK_DEVICE_TYPE_SWITCH
# nvmlGpuP2PCapsIndex_t; pynvml spells NVML_P2P_CAPS_INDEX_READ as a tuple, so use numbers.
_P2P_CAPS = (("read", 0), ("write", 1), ("nvlink", 2), ("atomics", 3))


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


def _ask(s: Session, call: str, *args: Any) -> _Answer:
    """One NVML answer, or why there is none (not supported, missing, failed)."""
    try:
        return _Answer(s.call(call, *args))
    except (MissingFunction, s.pm.NVMLError) as exc:
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


def _read_gpu(s: Session, index: int, read: Any) -> _Gpu:
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


def _read_links(s: Session, h: Any) -> _Answer:
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


def _pairs(s: Session, gpus: Sequence[_Gpu]) -> tuple[_Pairs, dict[tuple[int, int],
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
