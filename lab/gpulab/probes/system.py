"""The system probe: what the kernel, the container and the cgroups give this process.

Everything here is read from files (/proc, /sys, /etc, /dev) plus three system
calls (uname, sched_getaffinity and a PATH search), so it runs on any Linux
machine, with or without a GPU. Each file that cannot be read becomes a
reading with status `not_supported` (the machine has no such thing),
`unknown` (it may, but this process may not look) or `error`, whose detail
names the file; nothing raises.

`system(root)` reads every file under `root` instead of "/", so tests can
build a small fake /proc and /sys tree; the system calls still describe this
process. This module holds the probe and its sections (kernel and OS,
containers and namespaces, NUMA, GPUs in sysfs, NVIDIA files); the cgroup
section is in `system_cgroup`, reading files under the root in
`system_files`, and the small parsers (CPU lists, cgroup files, os-release,
meminfo) in `system_parse`, pure functions of text.
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Callable
from pathlib import Path

from gpulab.probes.model import ProbeResult, Reading, Table, Value
from gpulab.probes.system_cgroup import _cgroups
from gpulab.probes.system_files import _Collector, _Files, _why
from gpulab.probes.system_parse import (
    compact_cpu_list,
    parse_cgroup_file,
    parse_cpu_list,
    parse_meminfo,
    parse_ns_link,
    parse_os_release,
)

__all__ = ["system"]

# Inode numbers the kernel gives its initial namespaces (uapi linux/nsfs.h). net
# and mnt got fixed numbers only in Linux 6.18; before, theirs were allocated
# like any other, so a different number there proves nothing.
_INITIAL_NS_INODES = {"ipc": 0xEFFFFFFF, "uts": 0xEFFFFFFE, "user": 0xEFFFFFFD,
                      "pid": 0xEFFFFFFC, "cgroup": 0xEFFFFFFB, "time": 0xEFFFFFFA,
                      "net": 0xEFFFFFF9, "mnt": 0xEFFFFFF8}
# Fixed since each namespace type appeared (3.8; cgroup 4.6, time 5.6).
_ALWAYS_FIXED = {"ipc", "uts", "user", "pid", "cgroup", "time"}
# Cgroup path segments that container runtimes create (docker-<id>.scope,
# kubepods.slice, libpod-<id>, cri-containerd-<id>, crio-<id>, lxc.payload.<name>).
_RUNTIME_SEGMENT = re.compile(r"^(docker|kubepods|libpod|cri-containerd|crio|containerd|lxc)\b")
_NVIDIA_VENDOR = 0x10DE


# ---- kernel, OS, CPUs -----------------------------------------------------------------------

def _kernel(files: _Files, out: _Collector) -> None:
    uname = os.uname()
    for key, label, name, fallback in (
        ("kernel_release", "Kernel release", "/proc/sys/kernel/osrelease", uname.release),
        ("kernel_version", "Kernel build", "/proc/sys/kernel/version", uname.version),
    ):
        try:
            out.add(Reading(key, label, files.read(name), detail=f"from {name}"))
        except OSError as exc:
            if files.root == Path("/"):
                out.add(Reading(key, label, fallback,
                                detail=f"from os.uname(): {name} is {_why(exc)}"))
            else:
                out.add(Reading.failed(key, label, f"cannot read {name}: {_why(exc)}"))
    out.add(Reading("architecture", "Architecture", uname.machine, detail="from os.uname()"))
    errors = []
    for name in ("/etc/os-release", "/usr/lib/os-release"):
        try:
            fields = parse_os_release(files.read(name))
        except OSError as exc:
            errors.append(f"{name} is {_why(exc)}")
            continue
        pretty = fields.get("PRETTY_NAME") or " ".join(
            filter(None, (fields.get("NAME", "Linux"), fields.get("VERSION", ""))))
        out.add(Reading("os", "Operating system", pretty, detail=f"PRETTY_NAME in {name}"))
        break
    else:
        out.add(Reading.not_supported("os", "Operating system", "; ".join(errors)))

    name = "/sys/devices/system/cpu/online"
    try:
        online = parse_cpu_list(files.read(name))
        out.add(Reading("cpus_online", "CPUs online", len(online), "CPUs",
                        detail=f"{compact_cpu_list(online)} from {name}"))
    except (OSError, ValueError) as exc:
        out.add(Reading.failed("cpus_online", "CPUs online", f"cannot read {name}: {_why(exc)}"))
    try:
        allowed = os.sched_getaffinity(0)
    except (AttributeError, OSError) as exc:
        for key in ("cpu_affinity", "cpu_affinity_count"):
            out.add(Reading.not_supported(key, "CPU affinity", f"sched_getaffinity: {_why(exc)}"))
        return
    out.add(Reading("cpu_affinity", "CPUs this process may run on", compact_cpu_list(allowed),
                    convention="kernel CPU list", detail="os.sched_getaffinity(0)"))
    out.add(Reading("cpu_affinity_count", "Number of CPUs this process may run on",
                    len(allowed), "CPUs", detail="os.sched_getaffinity(0)"))


# ---- containers and namespaces --------------------------------------------------------------

def _ns_inodes(files: _Files, pid: str) -> tuple[dict[str, int], str]:
    """Namespace inodes of a process by type, and why some could not be read ("" if none)."""
    folder = files.path(f"/proc/{pid}/ns")
    try:
        names = sorted(os.listdir(folder))
    except OSError as exc:
        return {}, f"cannot read {files.show(folder)}: {_why(exc)}"
    inodes: dict[str, int] = {}
    problem = ""
    for name in names:
        try:
            inodes[name] = parse_ns_link(os.readlink(folder / name))
        except (OSError, ValueError) as exc:
            problem = problem or f"cannot read {files.show(folder / name)}: {_why(exc)}"
    return inodes, problem


def _initial(name: str, inode: int | None) -> bool | None:
    """Whether an inode is the kernel's initial namespace of that type; None if unknowable."""
    kind = name.removesuffix("_for_children")
    fixed = _INITIAL_NS_INODES.get(kind)
    if inode is None or fixed is None:
        return None
    if inode == fixed:
        return True
    return False if kind in _ALWAYS_FIXED else None


def _containers(files: _Files, out: _Collector) -> None:
    mine, my_problem = _ns_inodes(files, "self")
    pid1, pid1_problem = _ns_inodes(files, "1")
    if pid1_problem and "permission denied" in pid1_problem:
        pid1_problem += " (another process's namespaces need ptrace access to it)"
    rows = tuple((name, mine.get(name), pid1.get(name),
                  (mine[name] == pid1[name]) if name in mine and name in pid1 else None,
                  _initial(name, mine.get(name)))
                 for name in sorted(set(mine) | set(pid1)))
    out.tables.append(Table("Namespaces", ("namespace", "this process", "PID 1", "same",
                                           "initial"), rows, ("", "inode", "inode", "", "")))
    if my_problem:
        out.problems.append(my_problem)
    label = "Namespaces that differ from PID 1's"
    if pid1_problem or not pid1:
        out.add(Reading.unknown("namespaces_differ_from_pid1", label,
                                pid1_problem or "no namespaces listed for PID 1"))
    else:
        differ = [name for name, _, _, same, _ in rows if same is False]
        out.add(Reading("namespaces_differ_from_pid1", label, ", ".join(differ) or "none",
                        detail="link targets of /proc/self/ns/* against /proc/1/ns/*"))

    strong: list[str] = []
    weak: list[str] = []
    for kind in ("pid", "user"):
        if _initial(kind, mine.get(kind)) is False:
            strong.append(f"the {kind} namespace is not the initial one (inode {mine[kind]})")
    for name, evidence in (("/run/.containerenv", strong), ("/.dockerenv", weak)):
        if files.path(name).exists():
            evidence.append(f"{name} exists")
    for pid in ("1", "self"):
        try:
            environ = files.read(f"/proc/{pid}/environ").split("\0")
        except OSError:
            continue
        runtime = next((v[10:] for v in environ if v.startswith("container=")), None)
        if runtime is not None:
            strong.append(f"/proc/{pid}/environ has container={runtime}")
            break
    for pid in ("self", "1"):
        try:
            entries = parse_cgroup_file(files.read(f"/proc/{pid}/cgroup"))
        except OSError:
            continue
        paths = [path for _, _, path in entries
                 if any(_RUNTIME_SEGMENT.match(part) and not part.endswith(".service")
                        for part in path.split("/"))]
        if paths:
            strong.append(f"/proc/{pid}/cgroup path {paths[0]} names a container runtime")
            break
    pid_initial = _initial("pid", mine.get("pid"))
    inside = bool(strong) or (bool(weak) and pid_initial is not True)
    evidence = strong + weak
    if not inside:
        evidence = ["this process is in the kernel's initial pid namespace" if pid_initial
                    else "no sign found"]
        if weak:
            evidence.append(f"{' and '.join(weak)}, but only as a file, which stays in a root "
                            "filesystem exported from a container (a container sharing the "
                            "host's pid namespace would look the same)")
    out.add(Reading("in_container", "Running in a container", inside,
                    detail=("yes: " if inside else "no: ") + "; ".join(evidence)))


# ---- NUMA and GPUs in sysfs -----------------------------------------------------------------

def _numa(files: _Files, out: _Collector) -> None:
    folder = files.path("/sys/devices/system/node")
    try:
        nodes = sorted((int(d.name[4:]), d) for d in folder.iterdir()
                       if re.fullmatch(r"node\d+", d.name))
    except OSError as exc:
        out.add(Reading.not_supported("numa_nodes", "NUMA nodes", f"cannot read "
                                      f"{files.show(folder)}: {_why(exc)} (a kernel built "
                                      "without NUMA support has no such folder)"))
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
            problems.append(f"{files.show(node / 'cpulist')}: {_why(exc)}")
        try:
            memory = parse_meminfo(files.read(node / "meminfo")).get("MemTotal")
            if memory is None:
                problems.append(f"{files.show(node / 'meminfo')} has no MemTotal")
        except OSError as exc:
            problems.append(f"{files.show(node / 'meminfo')}: {_why(exc)}")
        try:
            distances = " ".join(files.read(node / "distance").split())
        except OSError as exc:
            problems.append(f"{files.show(node / 'distance')}: {_why(exc)}")
        rows.append((number, cpus, count, memory, distances))
    out.tables.append(Table("NUMA nodes", ("node", "CPUs", "CPU count", "memory", "distances"),
                            tuple(rows), ("", "", "CPUs", "bytes", "")))
    out.problems.extend(problems)
    detail = f"node* folders in {files.show(folder)}"
    out.add(Reading("numa_nodes", "NUMA nodes", len(nodes),
                    detail="; ".join([detail, *(f"unreadable: {p}" for p in problems)])))
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
            return Reading.failed(key, label, f"node{number}/distance should list {len(order)} "
                                              f"distances, one per node, not {line!r}")
        own.append((number, int(fields[place])))
    values = {value for _, value in own}
    each = ", ".join(f"node{number} {value}" for number, value in own)
    if len(values) > 1:
        return Reading(key, label, max(values), "SLIT units", convention,
                       detail=f"the nodes disagree, the largest is shown: {each}")
    return Reading(key, label, values.pop(), "SLIT units", convention,
                   detail=f"the diagonal of the distance table: {each}")


def _gpus(files: _Files, out: _Collector) -> None:
    folder = files.path("/sys/bus/pci/devices")
    try:
        devices = sorted(folder.iterdir())
    except OSError as exc:
        out.add(Reading.unknown("gpus_in_sysfs", "NVIDIA GPUs on the PCI bus",
                                f"cannot read {files.show(folder)}: {_why(exc)}"))
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
            pci_class = int(files.read(device / "class"), 16) if vendor == _NVIDIA_VENDOR else 0
        except (OSError, ValueError) as exc:
            problems.append(f"{files.show(device)}: vendor or class {_why(exc)}")
            continue
        if vendor != _NVIDIA_VENDOR or pci_class >> 16 != 0x03:
            continue
        numa_text = optional(device, "numa_node")
        numa = int(numa_text) if numa_text and numa_text.lstrip("-").isdigit() else None
        no_numa = no_numa or numa == -1
        try:
            driver: str | None = os.path.basename(os.readlink(device / "driver"))
        except OSError:
            driver = None
        widths = [optional(device, name) for name in ("current_link_width", "max_link_width")]
        rows.append((device.name, optional(device, "device"), f"0x{pci_class:06x}", driver,
                     None if numa == -1 else numa, optional(device, "local_cpulist"),
                     optional(device, "current_link_speed"), optional(device, "max_link_speed"),
                     *(int(w) if w and w.isdigit() else w for w in widths)))
    out.tables.append(Table(
        "NVIDIA GPUs on the PCI bus",
        ("address", "device id", "class", "driver", "NUMA node", "local CPUs", "link speed",
         "max link speed", "link width", "max link width"),
        tuple(rows), ("", "", "", "", "", "", "", "", "lanes", "lanes")))
    out.problems.extend(problems)
    notes = [f"vendor 0x10de, class 0x03xxxx in {files.show(folder)}"]
    if no_numa:
        notes.append("NUMA node – : sysfs numa_node is -1, the firmware gave no NUMA information")
    notes += [f"unreadable: {p}" for p in problems]
    out.add(Reading("gpus_in_sysfs", "NVIDIA GPUs on the PCI bus", len(rows),
                    detail="; ".join(notes)))


# ---- NVIDIA driver and container toolkit ----------------------------------------------------

def _which(files: _Files, program: str) -> str | None:
    """A program's path on PATH, each PATH folder looked up under the probe's root."""
    if files.root == Path("/"):
        return shutil.which(program)
    folders = (os.environ.get("PATH") or os.defpath).split(os.pathsep)
    found = shutil.which(program, path=os.pathsep.join(str(files.path(f)) for f in folders if f))
    return files.show(Path(found)) if found else None


def _nvidia_files(files: _Files, out: _Collector) -> None:
    key, label, name = "nvidia_driver", "NVIDIA kernel driver", "/proc/driver/nvidia/version"
    try:
        line = (files.read(name).splitlines() or [""])[0].strip()
    except FileNotFoundError:
        out.add(Reading(key, label, None, detail=f"not loaded: no {name}"))
    except OSError as exc:
        out.add(Reading.failed(key, label, f"cannot read {name}: {_why(exc)}"))
    else:
        match = re.search(r"\s(\d+\.\d+(?:\.\d+)*)\s", f" {line} ")
        out.add(Reading(key, label, match.group(1) if match else line,
                        detail=f"{name}: {' '.join(line.split())}"))

    key, label = "nvidia_device_nodes", "NVIDIA device nodes"
    try:
        nodes = sorted(p.name for p in files.path("/dev").glob("nvidia*"))
    except OSError as exc:
        out.add(Reading.failed(key, label, f"cannot list /dev: {_why(exc)}"))
    else:
        out.add(Reading(key, label, ", ".join(nodes) or None,
                        detail=f"{len(nodes)} /dev/nvidia* entries" if nodes
                        else "none: no /dev/nvidia*"))

    for program in ("nvidia-container-cli", "nvidia-ctk"):
        found = _which(files, program)
        out.add(Reading(program.replace("-", "_"), f"{program} on PATH", found,
                        detail="found with shutil.which" if found else "not on PATH"))

    specs: list[str] = []
    for folder in ("/etc/cdi", "/var/run/cdi"):
        try:
            specs += sorted(files.show(p) for p in files.path(folder).glob("*nvidia*"))
        except OSError:
            continue
    out.add(Reading("nvidia_cdi_specs", "CDI specs for NVIDIA devices", ", ".join(specs) or None,
                    detail="*nvidia* in /etc/cdi and /var/run/cdi" if specs
                    else "none in /etc/cdi or /var/run/cdi"))


# ---- the probe ------------------------------------------------------------------------------

def system(root: Path = Path("/")) -> ProbeResult:
    """Kernel, OS, container, cgroup limits, NUMA, affinity, GPUs in sysfs, NVIDIA files.

    `root` is where /proc, /sys, /etc and /dev are looked for; tests pass a
    fake tree. Status is "ok" when every file read, else "partial".
    """
    files = _Files(Path(root))
    out = _Collector()
    sections: tuple[tuple[str, Callable[[_Files, _Collector], None]], ...] = (
        ("kernel", _kernel), ("containers", _containers), ("cgroups", _cgroups),
        ("numa", _numa), ("gpus", _gpus), ("nvidia_files", _nvidia_files))
    for section, run in sections:
        out.guarded(section, run, files)
    ok = all(r.status == "ok" for r in out.readings) and not out.problems
    return ProbeResult("system", "System", "ok" if ok else "partial", _message(out),
                       tuple(out.readings), tuple(out.tables))


def _message(out: _Collector) -> str:
    """One line: "Linux 6.8 (Ubuntu 24.04), cgroup v2, 1 NUMA node, 16 CPUs, 1 NVIDIA GPU"."""
    release = str(out.value("kernel_release") or "")
    short = re.match(r"\d+\.\d+", release)
    os_name = out.value("os")
    parts = [f"Linux {short.group(0) if short else release or '?'}"
             + (f" ({os_name})" if os_name else "")]
    version = out.value("cgroup_version")
    if version:
        parts.append("cgroup v1 with a v2 hierarchy (hybrid)" if version == "hybrid"
                     else f"cgroup {version}")
    nodes = out.value("numa_nodes")
    if isinstance(nodes, int):
        parts.append(f"{nodes} NUMA node{'' if nodes == 1 else 's'}")
    online, usable = out.value("cpus_online"), out.value("cpu_affinity_count")
    if isinstance(online, int):
        parts.append(f"{online} CPUs" + (f" ({usable} usable here)"
                                         if isinstance(usable, int) and usable != online else ""))
    gpus = out.value("gpus_in_sysfs")
    if isinstance(gpus, int):
        parts.append(f"{gpus} NVIDIA GPU{'' if gpus == 1 else 's'}" if gpus
                     else "no NVIDIA GPU")
    if out.value("in_container"):
        parts.append("in a container")
    return ", ".join(parts)
