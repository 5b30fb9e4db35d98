"""The system probe's hardware sections: NUMA nodes, NVIDIA GPUs on the PCI bus, and the
NVIDIA driver and container-toolkit files, all read from sysfs, /proc and /dev.
"""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

from gpulab.probes.model import Reading, Table, Value
from gpulab.probes.system._files import Collector, Files, why
from gpulab.probes.system._parse import (
    compact_cpu_list,
    parse_cpu_list,
    parse_meminfo,
)

__all__ = ["NVIDIA_VENDOR", "is_nvidia_gpu"]

NVIDIA_VENDOR = 0x10DE
"""NVIDIA's PCI vendor id."""


def is_nvidia_gpu(vendor: int, pci_class: int) -> bool:
    """Whether a PCI device with this vendor id and 24-bit class code is an NVIDIA GPU: a
    display controller (base class 0x03), not the audio function or a switch beside it.

    The one rule for "a GPU on the PCI bus", used by the system probe and by
    `gpulab.probes.device.present`."""
    return vendor == NVIDIA_VENDOR and pci_class >> 16 == 0x03


# ---- NUMA and GPUs in sysfs -----------------------------------------------------------------


def read_numa(files: Files, out: Collector) -> None:
    folder = files.path("/sys/devices/system/node")
    try:
        nodes = sorted(
            (int(d.name[4:]), d) for d in folder.iterdir() if re.fullmatch(r"node\d+", d.name)
        )
    except OSError as exc:
        out.add(
            Reading.not_supported(
                "numa_nodes",
                "NUMA nodes",
                f"cannot read "
                f"{files.show(folder)}: {why(exc)} (a kernel built "
                "without NUMA support has no such folder)",
            )
        )
        return
    rows: list[tuple[Value, ...]] = []
    problems: list[str] = []
    for number, node in nodes:
        cpus: str | None = None
        count: int | None = None
        memory: int | None = None
        distances: str | None = None
        try:
            cpu_numbers = parse_cpu_list(files.read(node / "cpulist"))
            cpus, count = compact_cpu_list(cpu_numbers), len(cpu_numbers)
        except (OSError, ValueError) as exc:
            problems.append(f"{files.show(node / 'cpulist')}: {why(exc)}")
        try:
            memory = parse_meminfo(files.read(node / "meminfo")).get("MemTotal")
            if memory is None:
                problems.append(f"{files.show(node / 'meminfo')} has no MemTotal")
        except OSError as exc:
            problems.append(f"{files.show(node / 'meminfo')}: {why(exc)}")
        try:
            distances = " ".join(files.read(node / "distance").split())
        except OSError as exc:
            problems.append(f"{files.show(node / 'distance')}: {why(exc)}")
        rows.append((number, cpus, count, memory, distances))
    out.tables.append(
        Table(
            "NUMA nodes",
            ("node", "CPUs", "CPU count", "memory", "distances"),
            tuple(rows),
            ("", "", "CPUs", "bytes", ""),
        )
    )
    out.problems.extend(problems)
    detail = f"node* folders in {files.show(folder)}"
    out.add(
        Reading(
            "numa_nodes",
            "NUMA nodes",
            len(nodes),
            detail="; ".join([detail, *(f"unreadable: {p}" for p in problems)]),
        )
    )
    out.add(_local_distance([(row[0], row[4]) for row in rows]))


def _local_distance(distances: list[tuple[Value, Value]]) -> Reading:
    """Each node's SLIT distance to itself, from the diagonal of the distance table.

    A node's distance line lists its distance to every online node in node
    order, so node i's own entry is at i's place among the nodes.
    """
    key, label = "numa_local_distance", "NUMA distance of a node to itself"
    convention = "ACPI SLIT units, relative, not time"
    if not distances:
        return Reading.not_supported(key, label, "no NUMA nodes to read")
    order = [number for number, _ in distances]
    own: list[tuple[Value, int]] = []
    for place, (number, line) in enumerate(distances):
        fields = str(line or "").split()
        if len(fields) != len(order) or not all(f.isdigit() for f in fields):
            return Reading.failed(
                key,
                label,
                f"node{number}/distance should list {len(order)} "
                f"distances, one per node, not {line!r}",
            )
        own.append((number, int(fields[place])))
    values = {value for _, value in own}
    each = ", ".join(f"node{number} {value}" for number, value in own)
    if len(values) > 1:
        return Reading(
            key,
            label,
            max(values),
            "SLIT units",
            convention,
            detail=f"the nodes disagree, the largest is shown: {each}",
        )
    return Reading(
        key,
        label,
        values.pop(),
        "SLIT units",
        convention,
        detail=f"the diagonal of the distance table: {each}",
    )


def read_gpus(files: Files, out: Collector) -> None:
    folder = files.path("/sys/bus/pci/devices")
    try:
        devices = sorted(folder.iterdir())
    except OSError as exc:
        out.add(
            Reading.unknown(
                "gpus_in_sysfs",
                "NVIDIA GPUs on the PCI bus",
                f"cannot read {files.show(folder)}: {why(exc)}",
            )
        )
        return

    def optional(device: Path, name: str) -> str | None:
        try:
            return files.read(device / name)
        except OSError:
            return None

    rows: list[tuple[Value, ...]] = []
    problems: list[str] = []
    no_numa = False
    for device in devices:
        try:
            vendor = int(files.read(device / "vendor"), 16)
            pci_class = int(files.read(device / "class"), 16) if vendor == NVIDIA_VENDOR else 0
        except (OSError, ValueError) as exc:
            problems.append(f"{files.show(device)}: vendor or class {why(exc)}")
            continue
        if not is_nvidia_gpu(vendor, pci_class):
            continue
        numa_text = optional(device, "numa_node")
        numa = int(numa_text) if numa_text and numa_text.lstrip("-").isdigit() else None
        no_numa = no_numa or numa == -1
        try:
            driver: str | None = os.path.basename(os.readlink(device / "driver"))
        except OSError:
            driver = None
        widths = [optional(device, name) for name in ("current_link_width", "max_link_width")]
        rows.append(
            (
                device.name,
                optional(device, "device"),
                f"0x{pci_class:06x}",
                driver,
                None if numa == -1 else numa,
                optional(device, "local_cpulist"),
                optional(device, "current_link_speed"),
                optional(device, "max_link_speed"),
                *(int(w) if w and w.isdigit() else w for w in widths),
            )
        )
    out.tables.append(
        Table(
            "NVIDIA GPUs on the PCI bus",
            (
                "address",
                "device id",
                "class",
                "driver",
                "NUMA node",
                "local CPUs",
                "link speed",
                "max link speed",
                "link width",
                "max link width",
            ),
            tuple(rows),
            ("", "", "", "", "", "", "", "", "lanes", "lanes"),
        )
    )
    out.problems.extend(problems)
    notes = [f"vendor 0x10de, class 0x03xxxx in {files.show(folder)}"]
    if no_numa:
        notes.append("NUMA node – : sysfs numa_node is -1, the firmware gave no NUMA information")
    notes += [f"unreadable: {p}" for p in problems]
    out.add(
        Reading("gpus_in_sysfs", "NVIDIA GPUs on the PCI bus", len(rows), detail="; ".join(notes))
    )


# ---- NVIDIA driver and container toolkit ----------------------------------------------------


def _which(files: Files, program: str) -> str | None:
    """A program's path on PATH, each PATH folder looked up under the probe's root."""
    if files.root == Path("/"):
        return shutil.which(program)
    folders = (os.environ.get("PATH") or os.defpath).split(os.pathsep)
    found = shutil.which(program, path=os.pathsep.join(str(files.path(f)) for f in folders if f))
    return files.show(Path(found)) if found else None


def read_nvidia_files(files: Files, out: Collector) -> None:
    key, label, name = "nvidia_driver", "NVIDIA kernel driver", "/proc/driver/nvidia/version"
    try:
        line = (files.read(name).splitlines() or [""])[0].strip()
    except FileNotFoundError:
        out.add(Reading(key, label, None, detail=f"not loaded: no {name}"))
    except OSError as exc:
        out.add(Reading.failed(key, label, f"cannot read {name}: {why(exc)}"))
    else:
        match = re.search(r"\s(\d+\.\d+(?:\.\d+)*)\s", f" {line} ")
        out.add(
            Reading(
                key,
                label,
                match.group(1) if match else line,
                detail=f"{name}: {' '.join(line.split())}",
            )
        )

    key, label = "nvidia_device_nodes", "NVIDIA device nodes"
    try:
        nodes = sorted(p.name for p in files.path("/dev").glob("nvidia*"))
    except OSError as exc:
        out.add(Reading.failed(key, label, f"cannot list /dev: {why(exc)}"))
    else:
        out.add(
            Reading(
                key,
                label,
                ", ".join(nodes) or None,
                detail=f"{len(nodes)} /dev/nvidia* entries" if nodes else "none: no /dev/nvidia*",
            )
        )

    for program in ("nvidia-container-cli", "nvidia-ctk"):
        found = _which(files, program)
        out.add(
            Reading(
                program.replace("-", "_"),
                f"{program} on PATH",
                found,
                detail="found with shutil.which" if found else "not on PATH",
            )
        )

    specs: list[str] = []
    for folder in ("/etc/cdi", "/var/run/cdi"):
        try:
            specs += sorted(files.show(p) for p in files.path(folder).glob("*nvidia*"))
        except OSError:
            continue
    out.add(
        Reading(
            "nvidia_cdi_specs",
            "CDI specs for NVIDIA devices",
            ", ".join(specs) or None,
            detail="*nvidia* in /etc/cdi and /var/run/cdi"
            if specs
            else "none in /etc/cdi or /var/run/cdi",
        )
    )
