"""GPU topology: how the GPUs of this machine reach each other and the CPUs.

`gpu_topology()` is the probe: every GPU's PCI bus id, nearest NUMA node and
local CPUs; every pair's path in `nvidia-smi topo -m`'s words and its P2P
status; every NVLink link (`_reader`, through NVML and sysfs). Its readings,
message and tables are made from those answers in `_report`. The pure
helpers beside it (path labels and their ranking, kernel CPU lists, NVLink
counts, and the `TopoMatrix` that `nvidia-smi topo -m` prints) need neither
NVML nor a GPU (`_matrix`).
"""

from gpulab.probes.topology._matrix import (
    AFFINITY_COLUMNS,
    LEVEL_LABELS,
    LinkEnd,
    TopoMatrix,
    ancestor_label,
    best_pair,
    build_matrix,
    cpu_list,
    format_cpu_list,
    label_rank,
    nvlink_counts,
    nvlink_version_text,
    p2p_status_text,
    parse_cpu_list,
    sysfs_pci_address,
)
from gpulab.probes.topology._reader import gpu_topology

__all__ = [
    "AFFINITY_COLUMNS",
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
    "sysfs_pci_address",
]
