"""The pure side of GPU topology: path labels, CPU lists, NVLink counts and the matrix.

The path labels, nearest first, as nvidia-smi's legend defines them: NV#, a
bonded set of # NVLink links; PIX, at most one PCIe bridge; PXB, several PCIe
bridges but no host bridge; PHB, through a PCIe host bridge (the CPU); NODE,
between the host bridges of one NUMA node; SYS, across the interconnect
between NUMA nodes (QPI/UPI). NVML's common ancestor of two GPUs gives the
PCIe part (`ancestor_label`); the NV# part is counted from the NVLink links
(`nvlink_counts`). Where the links go to NVSwitches rather than to the other
GPU, any two GPUs reach each other over all their switch links, so a pair
counts the smaller of the two GPUs' switch links: nvidia-smi prints NV18
between all eight GPUs of an HGX H100. `build_matrix` puts the two together
as `nvidia-smi topo -m` shows them (`TopoMatrix`).

Nothing here needs NVML or a GPU; every function is tested exactly.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import ClassVar

from gpulab.probes.model import Table
from gpulab.probes.registry import title_of

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
    "label_rank",
    "nvlink_counts",
    "nvlink_version_text",
    "p2p_status_text",
    "parse_cpu_list",
    "sysfs_pci_address",
]

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
        raise ValueError(
            f"NVML topology level {level} is not one of {', '.join(map(str, LEVEL_LABELS))}"
        ) from None


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
    return format_cpu_list(
        w * word_bits + bit
        for w, word in enumerate(words)
        for bit in range(word_bits)
        if int(word) >> bit & 1
    )


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
NVLINK_VERSIONS = {1: "1.0", 2: "2.0", 3: "2.2", 4: "3.0", 5: "3.1", 6: "4.0", 7: "5.0", 8: "6.0"}


def nvlink_version_text(code: int) -> str:
    """NVML's NVLink version enum as a version: 6 -> "4.0" (Hopper), 5 -> "3.1"."""
    return NVLINK_VERSIONS.get(code, f"unknown ({code})")


# nvmlGpuP2PStatus_t, in the words of `nvidia-smi topo -p2p`'s legend.
_P2P_STATUS = {
    0: "OK",
    1: "chipset not supported",
    2: "GPU not supported",
    3: "topology not supported",
    4: "disabled by regkey",
    5: "not supported",
    6: "unknown",
}


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
    switch: bool = False  # NVML says the far end is an NVSwitch


def nvlink_counts(
    buses: Sequence[str | None], links: Sequence[Sequence[LinkEnd]]
) -> dict[tuple[int, int], int]:
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
            j = (
                None
                if end.switch or end.remote_bus is None
                else index.get(sysfs_pci_address(end.remote_bus))
            )
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


AFFINITY_COLUMNS = ("CPU Affinity", "NUMA Affinity", "GPU NUMA ID")
"""The affinity columns of `nvidia-smi topo -m`, after the devices, in its order."""


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
    columns: tuple[str, ...] = AFFINITY_COLUMNS
    others: tuple[str, ...] = field(default=())

    TITLE: ClassVar[str] = title_of("gpu_topology")  # the table is named as its probe

    def to_table(self) -> Table:
        """The matrix as a probe table, shaped like `nvidia-smi topo -m`."""
        rows = tuple(
            (gpu, *self.links[i], self.cpu_affinity[i], self.numa_affinity[i], self.gpu_numa_id[i])
            for i, gpu in enumerate(self.gpus)
        )
        return Table(self.TITLE, ("GPU", *self.gpus, *AFFINITY_COLUMNS), rows)

    @classmethod
    def from_table(cls, table: Table) -> TopoMatrix:
        """The matrix back from `to_table`'s table (a result read from JSON, say)."""
        n = len(table.columns) - 1 - len(AFFINITY_COLUMNS)
        if n < 1 or table.columns[0] != "GPU" or table.columns[n + 1 :] != AFFINITY_COLUMNS:
            raise ValueError(f"table {table.title!r} is not a GPU topology table")
        text = [tuple(None if c is None else str(c) for c in row) for row in table.rows]
        return cls(
            tuple(row[0] or "" for row in text),
            tuple(row[1 : n + 1] for row in text),
            tuple(row[n + 1] for row in text),
            tuple(row[n + 2] for row in text),
            tuple(row[n + 3] for row in text),
        )


def best_pair(matrix: TopoMatrix) -> tuple[int, int, str] | None:
    """The nearest pair of GPUs (first in order on a tie), or None with fewer than two."""
    found: tuple[int, int, str] | None = None
    for i in range(len(matrix.gpus)):
        for j in range(i + 1, len(matrix.gpus)):
            label = matrix.links[i][j]
            if label is not None and (found is None or label_rank(label) > label_rank(found[2])):
                found = (i, j, label)
    return found


def build_matrix(
    n: int,
    pcie: Mapping[tuple[int, int], str | None],
    nvlinks: Mapping[tuple[int, int], int],
    cpu_affinity: Sequence[str | None],
    numa_affinity: Sequence[str | None],
    gpu_numa_id: Sequence[str | None],
) -> TopoMatrix:
    """The matrix of n GPUs from each pair's PCIe label and NVLink count (keys i < j).

    X on the diagonal; NV# wherever a pair has NVLink links, else its PCIe
    label; None where neither is known. The matrix is symmetric.
    """
    cells: list[list[str | None]] = [["X" if i == j else None for j in range(n)] for i in range(n)]
    for i in range(n):
        for j in range(i + 1, n):
            links = nvlinks.get((i, j), 0)
            cells[i][j] = cells[j][i] = f"NV{links}" if links else pcie.get((i, j))
    return TopoMatrix(
        tuple(f"GPU{i}" for i in range(n)),
        tuple(map(tuple, cells)),
        tuple(cpu_affinity),
        tuple(numa_affinity),
        tuple(gpu_numa_id),
    )
