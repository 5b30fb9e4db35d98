"""Diagrams of the host around the GPU: NUMA nodes, their CPUs and memory, the PCIe tree.

Two servers are drawn the same way (`server`): each NUMA node with its CPUs,
its memory and its PCIe host bridges, a bridge with the devices behind it
(grouped under a PCIe switch where two share one), and the link between the
sockets. `two-socket-server` is the numa lesson's illustrative `nvidia-smi
topo -m` (a PCIe-only server with four GPUs and a NIC), labelled as an example;
`recorded-server` is what gpulab's probes recorded on its H200 machine, which
has one NUMA node and one GPU, and says so.
"""

from __future__ import annotations

from dataclasses import dataclass

from gpulab.figures.common import number
from gpulab.figures.diagram_data import Diagram, Facts
from gpulab.figures.diagram_model import Box, Drawing, Link
from gpulab.figures.model import Missing
from gpulab.probes.topology import sysfs_pci_address

__all__ = ["EXAMPLE_SERVER", "HOST_DIAGRAMS", "Bridge", "Device", "NumaNode", "server"]


@dataclass(frozen=True)
class Device:
    """A PCIe device: its name and what is known of it."""

    name: str
    lines: tuple[str, ...] = ()


@dataclass(frozen=True)
class Bridge:
    """A PCIe host bridge (a root complex) and what hangs off it: each group of more than
    one device shares a PCIe switch (`nvidia-smi topo -m`'s PIX)."""

    groups: tuple[tuple[Device, ...], ...]


@dataclass(frozen=True)
class NumaNode:
    """A NUMA node: its number, its CPUs (a kernel CPU list), its memory, its bridges."""

    index: int
    cpus: str
    memory: str
    bridges: tuple[Bridge, ...]


def _device(device: Device) -> Box:
    return Box(device.name, device.lines, role="device", key=device.name)


def _bridge(node: int, index: int, bridge: Bridge) -> Box:
    inside = tuple(
        Box(
            "PCIe switch",
            children=tuple(_device(d) for d in group),
            layout="row",
            role="link",
            span=len(group),
        )
        if len(group) > 1
        else _device(group[0])
        for group in bridge.groups
    )
    return Box(
        "PCIe host bridge",
        children=inside,
        layout="row",
        role="host",
        key=f"node{node}-bridge{index}",
        span=max(1, sum(len(g) for g in bridge.groups)),
    )


def server(nodes: tuple[NumaNode, ...]) -> tuple[Box, tuple[Link, ...]]:
    """The boxes of a server with these NUMA nodes, side by side, joined by the link
    between the sockets when there are several; and the links from each node's CPUs
    to its bridges."""
    boxes: list[Box] = []
    links: list[Link] = []
    for node in nodes:
        cpus = Box("CPUs", (node.cpus,), role="host", key=f"node{node.index}-cpus")
        memory = Box("Memory", (node.memory,), role="memory")
        bridges = tuple(_bridge(node.index, i, b) for i, b in enumerate(node.bridges))
        links += [Link(cpus.key, b.key) for b in bridges]
        boxes.append(
            Box(
                f"NUMA node {node.index}",
                children=(
                    Box("", layout="row", children=(cpus, memory)),
                    Box("", layout="row", children=bridges),
                ),
                span=max(2, sum(b.span for b in bridges)),
                key=f"node{node.index}",
            )
        )
    if len(boxes) > 1:
        joined: list[Box] = []
        for index, box in enumerate(boxes):
            if index:
                key = f"socket-link-{index}"
                joined.append(
                    Box(
                        "Inter-socket link",
                        ("UPI or Infinity Fabric: SYS",),
                        role="link",
                        span=0.9,
                        key=key,
                    )
                )
                links += [Link(boxes[index - 1].key, key, both=True), Link(key, box.key, both=True)]
            joined.append(box)
        boxes = joined
    return Box("", children=tuple(boxes), layout="row"), tuple(links)


EXAMPLE_SERVER = (
    NumaNode(
        0,
        "0-31",
        "its own DIMMs",
        (
            Bridge(((Device("GPU0"), Device("GPU1")),)),
            Bridge(((Device("NIC0"),),)),
        ),
    ),
    NumaNode(1, "32-63", "its own DIMMs", (Bridge(((Device("GPU2"), Device("GPU3")),)),)),
)
"""The numa lesson's illustrative `nvidia-smi topo -m`: GPU0 and GPU1 behind one switch
(PIX) on node 0, CPUs 0-31; the NIC on node 0 under another host bridge (NODE to them);
GPU2 and GPU3 behind a switch on node 1, CPUs 32-63 (SYS to the others)."""


def _example(_f: Facts) -> Drawing:
    root, links = server(EXAMPLE_SERVER)
    return Drawing(
        root,
        links,
        notes=("GPU0 to GPU1 is PIX, GPU0 to NIC0 NODE, and GPU0 to GPU2 SYS",),
        sources=("the numa lesson's illustrative nvidia-smi topo -m",),
        example=True,
    )


_WORDS = ("no", "one", "two", "three", "four", "five", "six", "seven", "eight")


def _count(n: int, noun: str) -> str:
    """3, "GPU" -> "three GPUs"; 1, "NUMA node" -> "one NUMA node"."""
    number = _WORDS[n] if n < len(_WORDS) else str(n)
    return f"{number} {noun}{'' if n == 1 else 's'}"


def _gib(value: float) -> str:
    return f"{value / 2**30:.1f} GiB"


def _recorded(f: Facts) -> Drawing:
    nodes = f.table("system", "node", "CPUs", "CPU count", "memory")
    gpus = f.table("gpu_topology", "index", "name", "PCI bus id", "NUMA node")
    try:
        links = {
            str(r["address"]): r for r in f.table("system", "address", "link speed", "link width")
        }
    except Missing:
        links = {}
    built: list[NumaNode] = []
    for row in nodes:
        index = int(row["node"])
        devices = []
        for gpu in gpus:
            if str(gpu["NUMA node"]) != str(index):
                continue
            bus = str(gpu["PCI bus id"])
            link = links.get(sysfs_pci_address(bus), {})
            speed, width = link.get("link speed"), link.get("link width")
            lines = [str(gpu["name"]), bus]
            if speed and width:
                lines.append(f"PCIe {str(speed).removesuffix(' PCIe')} x{width}")
            devices.append(Device(f"GPU{gpu['index']}", tuple(lines)))
        count, memory = number(row["CPU count"]), number(row["memory"])
        built.append(
            NumaNode(
                index,
                f"{row['CPUs']} ({count:g} CPUs)" if count is not None else str(row["CPUs"]),
                _gib(memory) if memory is not None else "not recorded",
                tuple(Bridge(((d,),)) for d in devices),
            )
        )
    if not built:
        raise Missing("the system probe recorded no NUMA node")
    root, links_out = server(tuple(built))
    placed = ", ".join(
        f"{g['NUMA node']} ({g.get('NUMA node: from, or why not', '')})" for g in gpus
    )
    notes = [
        f"{_count(len(built), 'NUMA node')} and {_count(len(gpus), 'GPU')} recorded; "
        f"the NUMA node nearest each GPU: {placed}"
    ]
    sysfs = f.detail("system", "gpus_in_sysfs")
    if "numa_node is -1" in sysfs:
        notes.append("sysfs gave the GPU no NUMA node (numa_node is -1)")
    return Drawing(root, links_out, notes=tuple(notes))


HOST_DIAGRAMS = (
    Diagram(
        "two-socket-server",
        "A two-socket server: NUMA nodes, PCIe and GPUs",
        "Each socket and its memory form a NUMA node with its own PCIe host bridges. Two "
        "GPUs behind one PCIe switch are PIX to each other; a device under another bridge "
        "of the same node is NODE away; anything on the other socket is SYS, across the "
        "link between the sockets. Keep a GPU's data loader on the CPUs of its own node.",
        _example,
    ),
    Diagram(
        "recorded-server",
        "gpulab's H200 machine, as its probes recorded it",
        "The NUMA nodes, their CPUs and memory, and the GPUs with the node each is nearest "
        "to, as the system and GPU topology probes read them on gpulab's H200. With one "
        "node there is no remote memory and no link between sockets to cross.",
        _recorded,
    ),
)
