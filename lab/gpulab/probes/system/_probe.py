"""The system probe itself: its kernel, OS and CPU section, and the sections run in turn.

`system(root)` runs every section (`_read_kernel` here; containers in
`_namespaces`, cgroups in `_cgroup`, NUMA, GPUs and NVIDIA files in
`_devices`) against the files under `root`, each guarded so that a bug in one
becomes an error reading, and sums the readings up in one line.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from pathlib import Path

from gpulab.probes.model import ProbeResult, Reading
from gpulab.probes.registry import title_of
from gpulab.probes.system._cgroup import read_cgroups
from gpulab.probes.system._devices import read_gpus, read_numa, read_nvidia_files
from gpulab.probes.system._files import Collector, Files, why
from gpulab.probes.system._namespaces import read_containers
from gpulab.probes.system._parse import compact_cpu_list, parse_cpu_list, parse_os_release

__all__ = ["system"]


# ---- kernel, OS, CPUs -----------------------------------------------------------------------


def _read_kernel(files: Files, out: Collector) -> None:
    uname = os.uname()
    for key, label, name, fallback in (
        ("kernel_release", "Kernel release", "/proc/sys/kernel/osrelease", uname.release),
        ("kernel_version", "Kernel build", "/proc/sys/kernel/version", uname.version),
    ):
        try:
            out.add(Reading(key, label, files.read(name), detail=f"from {name}"))
        except OSError as exc:
            if files.root == Path("/"):
                out.add(
                    Reading(key, label, fallback, detail=f"from os.uname(): {name} is {why(exc)}")
                )
            else:
                out.add(Reading.failed(key, label, f"cannot read {name}: {why(exc)}"))
    out.add(Reading("architecture", "Architecture", uname.machine, detail="from os.uname()"))
    errors = []
    for name in ("/etc/os-release", "/usr/lib/os-release"):
        try:
            fields = parse_os_release(files.read(name))
        except OSError as exc:
            errors.append(f"{name} is {why(exc)}")
            continue
        pretty = fields.get("PRETTY_NAME") or " ".join(
            filter(None, (fields.get("NAME", "Linux"), fields.get("VERSION", "")))
        )
        out.add(Reading("os", "Operating system", pretty, detail=f"PRETTY_NAME in {name}"))
        break
    else:
        out.add(Reading.not_supported("os", "Operating system", "; ".join(errors)))

    name = "/sys/devices/system/cpu/online"
    try:
        online = parse_cpu_list(files.read(name))
        out.add(
            Reading(
                "cpus_online",
                "CPUs online",
                len(online),
                "CPUs",
                detail=f"{compact_cpu_list(online)} from {name}",
            )
        )
    except (OSError, ValueError) as exc:
        out.add(Reading.failed("cpus_online", "CPUs online", f"cannot read {name}: {why(exc)}"))
    try:
        allowed = os.sched_getaffinity(0)
    except (AttributeError, OSError) as exc:
        for key in ("cpu_affinity", "cpu_affinity_count"):
            out.add(Reading.not_supported(key, "CPU affinity", f"sched_getaffinity: {why(exc)}"))
        return
    out.add(
        Reading(
            "cpu_affinity",
            "CPUs this process may run on",
            compact_cpu_list(allowed),
            convention="kernel CPU list",
            detail="os.sched_getaffinity(0)",
        )
    )
    out.add(
        Reading(
            "cpu_affinity_count",
            "Number of CPUs this process may run on",
            len(allowed),
            "CPUs",
            detail="os.sched_getaffinity(0)",
        )
    )


# ---- the probe ------------------------------------------------------------------------------


def system(root: Path = Path("/")) -> ProbeResult:
    """Kernel, OS, container, cgroup limits, NUMA, affinity, GPUs in sysfs, NVIDIA files.

    `root` is where /proc, /sys, /etc and /dev are looked for; tests pass a
    fake tree. Status is "ok" when every file read, else "partial".
    """
    files = Files(Path(root))
    out = Collector()
    sections: tuple[tuple[str, Callable[[Files, Collector], None]], ...] = (
        ("kernel", _read_kernel),
        ("containers", read_containers),
        ("cgroups", read_cgroups),
        ("numa", read_numa),
        ("gpus", read_gpus),
        ("nvidia_files", read_nvidia_files),
    )
    for section, run in sections:
        out.guarded(section, run, files)
    ok = all(r.status == "ok" for r in out.readings) and not out.problems
    return ProbeResult(
        "system",
        title_of("system"),
        "ok" if ok else "partial",
        _message(out),
        tuple(out.readings),
        tuple(out.tables),
    )


def _message(out: Collector) -> str:
    """One line: "Linux 6.8 (Ubuntu 24.04), cgroup v2, 1 NUMA node, 16 CPUs, 1 NVIDIA GPU"."""
    release = str(out.value("kernel_release") or "")
    short = re.match(r"\d+\.\d+", release)
    os_name = out.value("os")
    parts = [
        f"Linux {short.group(0) if short else release or '?'}"
        + (f" ({os_name})" if os_name else "")
    ]
    version = out.value("cgroup_version")
    if version:
        parts.append(
            "cgroup v1 with a v2 hierarchy (hybrid)" if version == "hybrid" else f"cgroup {version}"
        )
    nodes = out.value("numa_nodes")
    if isinstance(nodes, int):
        parts.append(f"{nodes} NUMA node{'' if nodes == 1 else 's'}")
    online, usable = out.value("cpus_online"), out.value("cpu_affinity_count")
    if isinstance(online, int):
        parts.append(
            f"{online} CPUs"
            + (f" ({usable} usable here)" if isinstance(usable, int) and usable != online else "")
        )
    gpus = out.value("gpus_in_sysfs")
    if isinstance(gpus, int):
        parts.append(f"{gpus} NVIDIA GPU{'' if gpus == 1 else 's'}" if gpus else "no NVIDIA GPU")
    if out.value("in_container"):
        parts.append("in a container")
    return ", ".join(parts)
