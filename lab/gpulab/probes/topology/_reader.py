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
and the matrix are worked out by the pure helpers of `_matrix`; the
readings, the message and the tables by `_report`, where the records this
module fills (`_Answer`, `_Gpu`, `_Link`) are defined.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from gpulab.probes.model import ProbeResult, summarise
from gpulab.probes.nvml import MissingFunction, NvmlUnavailable, Session, nvml_session
from gpulab.probes.registry import title_of
from gpulab.probes.sysfs import sysfs_text
from gpulab.probes.topology._matrix import (
    LinkEnd,
    cpu_list,
    nvlink_counts,
    nvlink_version_text,
    sysfs_pci_address,
)
from gpulab.probes.topology._report import (
    _NVLINK_SWITCH,
    _P2P_CAPS,
    _active,
    _Answer,
    _Gpu,
    _gpu_table,
    _Link,
    _link_table,
    _matrix,
    _message,
    _pair_table,
    _Pairs,
    _readings,
)

__all__ = ["gpu_topology"]

_CPU_WORDS = 16  # 1024 CPUs, NVML's own limit for CPU affinity; fixed so recordings replay
_NODE_WORDS = 4  # 256 NUMA nodes
_NVLINK_LINKS = 36  # NVML_NVLINK_MAX_LINKS


def _ask(s: Session, call: str, *args: Any) -> _Answer:
    """One NVML answer, or why there is none (not supported, missing, failed)."""
    try:
        return _Answer(s.call(call, *args))
    except (MissingFunction, s.pm.NVMLError) as exc:
        problem = s.problem("", "", call, exc)
        return _Answer(None, problem.status, problem.detail)


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
    gpu.numa = (
        _Answer(nodes, detail="NVML memory affinity")
        if nodes
        else _sysfs_node(read(sysfs + "numa_node") if sysfs else None, memory)
    )
    gpu.numa_id = _ask(s, "nvmlDeviceGetNumaNodeId", h)
    cpus = _ask(s, "nvmlDeviceGetCpuAffinity", h, _CPU_WORDS)
    listed = cpu_list(list(cpus.value)) if cpus.status == "ok" else ""
    gpu.cpus = (
        _Answer(listed)
        if listed
        else (cpus if cpus.status != "ok" else _Answer(None, "not_supported", "NVML gave no CPUs"))
    )
    gpu.sysfs_cpus = read(sysfs + "local_cpulist") if sysfs else None
    gpu.nvlink = _read_links(s, h)
    return gpu


def _sysfs_node(text: str | None, nvml: _Answer) -> _Answer:
    why = f"NVML: {nvml.detail or 'no node'}"
    if text is None:
        return _Answer(None, "not_supported", f"{why}; sysfs numa_node unreadable")
    if text.lstrip("-").isdigit() and int(text) >= 0:
        return _Answer(text, detail="sysfs numa_node")
    return _Answer(
        None,
        "not_supported",
        f"{why}; sysfs numa_node is {text} (no NUMA information for this device)",
    )


def _read_links(s: Session, h: Any) -> _Answer:
    """Every NVLink link of one GPU; not supported (with NVML's words) without NVLink."""
    first = _ask(s, "nvmlDeviceGetNvLinkState", h, 0)
    if first.status != "ok":
        return first
    links = []
    for link in range(_NVLINK_LINKS):
        state = first.value if link == 0 else s.value("nvmlDeviceGetNvLinkState", h, link)
        if state is None:
            break  # past the last link
        if not state:
            links.append(_Link(link, False))
            continue
        version = s.value("nvmlDeviceGetNvLinkVersion", h, link)
        remote = s.value("nvmlDeviceGetNvLinkRemotePciInfo", h, link)
        links.append(
            _Link(
                link,
                True,
                None if version is None else nvlink_version_text(version),
                None if remote is None else _text(remote.busId),
                s.value("nvmlDeviceGetNvLinkRemoteDeviceType", h, link),
            )
        )
    return _Answer(links)


def gpu_topology(backend: Any = None) -> ProbeResult:
    """Every GPU's bus, NUMA node and CPUs; every pair's path and P2P status; NVLink links."""
    probe = "gpu_topology"
    title = title_of(probe)
    try:
        with nvml_session(backend) as s:
            read = getattr(s.nv, "sysfs_text", None) or sysfs_text
            gpus = [_read_gpu(s, index, read) for index in range(s.count)]
            levels, p2p = _pairs(s, gpus)
    except NvmlUnavailable as exc:
        if exc.status == "no_gpu":
            return ProbeResult(probe, title, "no_gpu", f"no NVIDIA GPU found: {exc.reason}")
        return ProbeResult(probe, title, "unavailable", exc.reason)
    counts = nvlink_counts(
        [g.bus.value for g in gpus],
        [
            [LinkEnd(link.remote_bus, link.remote_type == _NVLINK_SWITCH) for link in _active(g)]
            for g in gpus
        ],
    )
    matrix = _matrix(gpus, levels, counts)
    readings = _readings(gpus, matrix)
    tables = (
        matrix.to_table(),
        _gpu_table(gpus),
        _link_table(gpus),
        _pair_table(matrix, levels, p2p),
    )
    return ProbeResult(
        probe,
        title,
        summarise(readings),
        _message(gpus, readings),
        tuple(readings),
        tables,
        device=gpus[0].name,
    )


def _pairs(s: Session, gpus: Sequence[_Gpu]) -> tuple[_Pairs, dict[tuple[int, int], list[_Answer]]]:
    """Each pair's common PCIe ancestor and P2P statuses, asked from the lower index."""
    levels: _Pairs = {}
    p2p: dict[tuple[int, int], list[_Answer]] = {}
    for a in gpus:
        for b in gpus[a.index + 1 :]:
            if a.handle is None or b.handle is None:
                continue
            levels[a.index, b.index] = _ask(
                s, "nvmlDeviceGetTopologyCommonAncestor", a.handle, b.handle
            )
            p2p[a.index, b.index] = [
                _ask(s, "nvmlDeviceGetP2PStatus", a.handle, b.handle, cap) for _, cap in _P2P_CAPS
            ]
    return levels, p2p
