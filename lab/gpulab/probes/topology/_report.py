"""What the topology probe reports: the records `_reader` fills, and the readings and tables.

`_reader` asks NVML and sysfs and keeps each answer as an `_Answer` (a value,
or why there is none): one `_Gpu` per GPU, with a `_Link` per NVLink link,
and the answers about each pair. From these the functions here make the
`TopoMatrix` (built by `_matrix`), the probe's readings (GPU 0 and the
nearest pair), its one-line message and its tables (GPUs, NVLink links,
pairs). Nothing here asks NVML or reads a file.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from gpulab.probes.model import Reading, ReadingStatus, Table, Value
from gpulab.probes.topology._matrix import (
    TopoMatrix,
    ancestor_label,
    best_pair,
    build_matrix,
    p2p_status_text,
    parse_cpu_list,
    sysfs_pci_address,
)

__all__: list[str] = []

_NVLINK_SWITCH = 2  # NVML_NVLINK_DEVICE_TYPE_SWITCH
# nvmlGpuP2PCapsIndex_t; pynvml spells NVML_P2P_CAPS_INDEX_READ as a tuple, so use numbers.
_P2P_CAPS = (("read", 0), ("write", 1), ("nvlink", 2), ("atomics", 3))


@dataclass(frozen=True)
class _Answer:
    value: Any
    status: ReadingStatus = "ok"
    detail: str = ""


@dataclass
class _Gpu:
    index: int
    name: str
    handle: Any = None
    bus: _Answer = _Answer(None, "error", "no handle")
    numa: _Answer = _Answer(None, "error", "no handle")  # nearest host node(s)
    numa_id: _Answer = _Answer(None, "error", "no handle")  # the GPU's own node
    cpus: _Answer = _Answer(None, "error", "no handle")
    sysfs_cpus: str | None = None
    nvlink: _Answer = _Answer(None, "error", "no handle")  # list of _Link when ok


@dataclass(frozen=True)
class _Link:
    link: int
    active: bool
    version: str | None = None
    remote_bus: str | None = None
    remote_type: int | None = None


def _active(gpu: _Gpu) -> list[_Link]:
    return [link for link in gpu.nvlink.value if link.active] if gpu.nvlink.status == "ok" else []


_Pairs = dict[tuple[int, int], _Answer]


def _pcie_label(level: _Answer) -> str | None:
    if level.status != "ok":
        return None
    try:
        return ancestor_label(int(level.value))
    except ValueError:  # a level newer than this code: say nothing rather than guess
        return None


def _matrix(gpus: Sequence[_Gpu], levels: _Pairs, counts: dict[tuple[int, int], int]) -> TopoMatrix:
    return build_matrix(
        len(gpus),
        {pair: _pcie_label(level) for pair, level in levels.items()},
        counts,
        [g.cpus.value for g in gpus],
        [g.numa.value for g in gpus],
        [None if g.numa_id.value is None else str(g.numa_id.value) for g in gpus],
    )


def _reading(
    key: str, label: str, answer: _Answer, unit: str = "", convention: str = "", detail: str = ""
) -> Reading:
    if answer.status == "ok":
        return Reading(key, label, answer.value, unit, convention, detail=detail or answer.detail)
    if answer.status == "not_supported":
        return Reading.not_supported(key, label, answer.detail)
    return Reading.failed(key, label, answer.detail)


def _readings(gpus: Sequence[_Gpu], matrix: TopoMatrix) -> list[Reading]:
    gpu = gpus[0]
    readings = [
        Reading("gpu_count", "GPUs", len(gpus), "GPUs", detail="as NVML lists them"),
        _reading("gpu_pci_bus_id", "GPU 0 PCI bus id", gpu.bus),
    ]
    links = gpu.nvlink
    active = _active(gpu)
    if links.status == "ok":
        readings.append(
            Reading(
                "nvlink_links_active",
                "NVLink links active (GPU 0)",
                len(active),
                "links",
                detail=f"of {len(links.value)} links",
            )
        )
        versions = sorted({link.version for link in active if link.version})
        readings.append(
            _reading(
                "nvlink_version",
                "NVLink version (GPU 0)",
                _Answer(", ".join(versions))
                if versions
                else _Answer(
                    None, "not_supported", "no active link answered nvmlDeviceGetNvLinkVersion"
                ),
                convention="nvmlDeviceGetNvLinkVersion's enum as a version number",
            )
        )
    else:
        readings += [
            _reading("nvlink_links_active", "NVLink links active (GPU 0)", links),
            _reading("nvlink_version", "NVLink version (GPU 0)", links),
        ]
    numa = gpu.numa
    node: Value = (
        int(numa.value) if numa.status == "ok" and str(numa.value).isdigit() else (numa.value)
    )
    readings += [
        _reading(
            "gpu_numa_node",
            "NUMA node nearest GPU 0",
            _Answer(node, numa.status, numa.detail),
            convention="the host node whose memory is nearest, as nvidia-smi's 'NUMA Affinity'",
        ),
        _reading(
            "gpu_numa_id",
            "GPU 0's own NUMA id",
            gpu.numa_id,
            convention="only where GPU memory is a NUMA node (coherent CPU-GPU systems)",
        ),
        _reading(
            "gpu_local_cpus",
            "CPUs local to GPU 0",
            gpu.cpus,
            convention="kernel CPU list of NVML's CPU affinity (the nearest NUMA node)",
            detail=_sysfs_agreement(gpu),
        ),
    ]
    pair = best_pair(matrix)
    if pair is None:
        readings.append(
            Reading.not_supported(
                "best_pair",
                "Nearest pair of GPUs",
                "needs two GPUs" if len(gpus) < 2 else "NVML gave no path between any two GPUs",
            )
        )
    else:
        i, j, label = pair
        readings.append(
            Reading(
                "best_pair",
                "Nearest pair of GPUs",
                f"GPU{i}-GPU{j} ({label})",
                convention="NVLink count first, then PIX > PXB > PHB > NODE > SYS",
            )
        )
    return readings


def _sysfs_agreement(gpu: _Gpu) -> str:
    if gpu.sysfs_cpus is None or gpu.cpus.status != "ok":
        return "sysfs local_cpulist not readable here" if gpu.sysfs_cpus is None else ""
    try:
        same = parse_cpu_list(gpu.sysfs_cpus) == parse_cpu_list(str(gpu.cpus.value))
    except ValueError:
        same = False
    return "sysfs local_cpulist agrees" if same else f"sysfs local_cpulist says {gpu.sysfs_cpus!r}"


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
    rows = tuple(
        (
            g.index,
            g.name,
            g.bus.value,
            g.numa.value,
            g.numa.detail or None,
            g.numa_id.value,
            g.cpus.value,
            g.sysfs_cpus,
        )
        for g in gpus
    )
    return Table(
        "GPUs",
        (
            "index",
            "name",
            "PCI bus id",
            "NUMA node",
            "NUMA node: from, or why not",
            "GPU NUMA id",
            "local CPUs (NVML)",
            "local CPUs (sysfs)",
        ),
        rows,
    )


_REMOTE_KIND = {0: "GPU", 1: "IBM NPU", _NVLINK_SWITCH: "NVSwitch"}


def _link_table(gpus: Sequence[_Gpu]) -> Table:
    by_bus = {sysfs_pci_address(g.bus.value): g.index for g in gpus if g.bus.value}
    rows = []
    for g in gpus:
        for link in g.nvlink.value if g.nvlink.status == "ok" else ():
            kind = (
                None if link.remote_type is None else _REMOTE_KIND.get(link.remote_type, "unknown")
            )
            remote = by_bus.get(sysfs_pci_address(link.remote_bus)) if link.remote_bus else None
            rows.append(
                (
                    g.index,
                    link.link,
                    "Active" if link.active else "Inactive",
                    link.version,
                    link.remote_bus,
                    kind,
                    None if remote is None else f"GPU{remote}",
                )
            )
    return Table(
        "NVLink links",
        ("GPU", "link", "state", "version", "remote PCI bus id", "remote device", "remote GPU"),
        tuple(rows),
    )


def _pair_table(
    matrix: TopoMatrix, levels: _Pairs, p2p: dict[tuple[int, int], list[_Answer]]
) -> Table:
    rows = []
    for (i, j), level in levels.items():
        status = [
            p2p_status_text(int(a.value)) if a.status == "ok" else a.status.replace("_", " ")
            for a in p2p[i, j]
        ]
        rows.append((f"GPU{i}-GPU{j}", matrix.links[i][j], _pcie_label(level), *status))
    return Table(
        "GPU pairs",
        ("pair", "link", "PCIe path", *(f"P2P {name}" for name, _ in _P2P_CAPS)),
        tuple(rows),
    )
