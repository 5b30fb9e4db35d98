"""The system probe's cgroup section: the cgroup version, this process's cgroup, its limits.

`read_cgroups` finds the cgroup version (v1, v2 or hybrid) from the mounted
hierarchies, this process's cgroup from /proc/self/cgroup, and the tightest
memory, CPU and task limits and the cpuset set in that cgroup or a parent,
for v1 and v2 alike. Where the hierarchies are mounted (from
/proc/self/mountinfo, else from the layout of /sys/fs/cgroup) and which folder
is this process's cgroup in each is worked out in `_cgroup_paths`. Files are
read under the probe's root (`_files`); their text is parsed by `_parse`.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from gpulab.probes.model import Reading, Table
from gpulab.probes.system._cgroup_paths import _hierarchies, _Place, _place
from gpulab.probes.system._files import Collector, Files, why
from gpulab.probes.system._parse import (
    compact_cpu_list,
    parse_cgroup_file,
    parse_cpu_list,
    parse_cpu_max,
)

__all__: list[str] = []

# cgroup v1 writes "no limit" as the largest page-aligned counter, 2**63 - 4096
# on x86-64; anything this large cannot be a real limit.
_UNLIMITED_BYTES = 2**60
# Options a cgroup v1 mount lists beside its controllers.
_MOUNT_OPTIONS = {
    "rw",
    "ro",
    "clone_children",
    "noprefix",
    "xattr",
    "cpuset_v2_mode",
    "favordynmods",
}


# ---- cgroups --------------------------------------------------------------------------------


def _limit(
    files: Files,
    place: _Place | str,
    key: str,
    label: str,
    unit: str,
    names: tuple[str, ...],
    parse: Callable[[list[str]], float | int | None],
) -> Reading:
    """The tightest limit set in this cgroup or a parent; None (no limit) if none is set."""
    if isinstance(place, str):
        return Reading.not_supported(key, label, place)
    best: tuple[float | int, Path] | None = None
    for folder in place.upwards():
        try:
            texts = [files.read(folder / name) for name in names]
        except FileNotFoundError:
            continue
        except OSError as exc:
            return Reading.failed(
                key, label, f"cannot read {files.show(folder / names[0])}: {why(exc)}"
            )
        try:
            value = parse(texts)
        except ValueError as exc:
            return Reading.failed(key, label, f"{files.show(folder / names[0])}: {exc}")
        if value is not None and (best is None or value < best[0]):
            best = (value, folder)
    shown = " and ".join(names)
    if best is None:
        return Reading(
            key,
            label,
            None,
            detail=f"no limit: no {shown} sets one in {files.show(place.leaf)} or its parents",
        )
    return Reading(
        key,
        label,
        best[0],
        unit,
        detail=f"from {files.show(best[1] / names[0])}"
        + ("" if best[1] == place.leaf else " (a parent cgroup)"),
    )


def _memory(texts: list[str]) -> int | None:
    if texts[0] == "max":
        return None
    value = int(texts[0])
    return None if value < 0 or value >= _UNLIMITED_BYTES else value


def _cpu_v1(texts: list[str]) -> float | None:
    quota, period = int(texts[0]), int(texts[1])
    if period <= 0:
        raise ValueError(f"cpu.cfs_period_us must be positive, not {period}")
    return None if quota < 0 else quota / period


def _pids(texts: list[str]) -> int | None:
    return None if texts[0] == "max" else int(texts[0])


def read_cgroups(files: Files, out: Collector) -> None:
    hierarchies, source = _hierarchies(files)
    v1 = sorted(
        name
        for h in hierarchies
        if h.version == 1
        for name in h.controllers
        if name not in _MOUNT_OPTIONS and "=" not in name
    )
    v2 = next((h for h in hierarchies if h.version == 2), None)
    if files.path("/sys/fs/cgroup/cgroup.controllers").exists():
        version = "v2"
        detail = "/sys/fs/cgroup/cgroup.controllers exists: one unified hierarchy"
    elif v1 and v2:
        version = "hybrid"
        detail = (
            f"v1 controllers ({', '.join(v1)}) and a v2 hierarchy at "
            f"{files.show(v2.mount)} with {', '.join(sorted(v2.controllers)) or 'none'}"
        )
    elif v1:
        version, detail = "v1", f"v1 controllers: {', '.join(v1)}"
    elif v2:
        version, detail = "v2", f"one unified hierarchy at {files.show(v2.mount)}"
    else:
        out.add(
            Reading.not_supported(
                "cgroup_version", "cgroup version", f"no cgroup hierarchy found in {source}"
            )
        )
        return
    out.add(Reading("cgroup_version", "cgroup version", version, detail=f"{detail} ({source})"))

    try:
        entries = parse_cgroup_file(files.read("/proc/self/cgroup"))
    except OSError as exc:
        entries = []
        out.add(
            Reading.failed(
                "cgroup_path", "This process's cgroup", f"cannot read /proc/self/cgroup: {why(exc)}"
            )
        )
    else:
        out.tables.append(
            Table(
                "cgroups of this process",
                ("hierarchy", "controllers", "path"),
                tuple((n, ",".join(names), p) for n, names, p in entries),
                ("", "", ""),
            )
        )
        if version == "v2":
            line = next((e for e in entries if e[0] == 0 and not e[1]), None)
        else:
            line = next((e for e in entries if "memory" in e[1]), entries[0] if entries else None)
        if line is None:
            out.add(
                Reading.failed(
                    "cgroup_path",
                    "This process's cgroup",
                    "/proc/self/cgroup has no line for this hierarchy",
                )
            )
        else:
            out.add(
                Reading(
                    "cgroup_path",
                    "This process's cgroup",
                    line[2],
                    detail="from /proc/self/cgroup"
                    + ("" if version == "v2" else f" ({','.join(line[1])} hierarchy)"),
                )
            )

    memory, cpu = _place(hierarchies, entries, "memory"), _place(hierarchies, entries, "cpu")
    pids, cpuset = _place(hierarchies, entries, "pids"), _place(hierarchies, entries, "cpuset")
    v1_memory = isinstance(memory, _Place) and memory.version == 1
    memory_file = "memory.limit_in_bytes" if v1_memory else "memory.max"
    out.add(
        _limit(
            files,
            memory,
            "cgroup_memory_limit",
            "cgroup memory limit",
            "bytes",
            (memory_file,),
            _memory,
        )
    )
    if isinstance(cpu, _Place) and cpu.version == 1:
        out.add(
            _limit(
                files,
                cpu,
                "cgroup_cpu_limit",
                "cgroup CPU quota",
                "CPUs",
                ("cpu.cfs_quota_us", "cpu.cfs_period_us"),
                _cpu_v1,
            )
        )
    else:
        out.add(
            _limit(
                files,
                cpu,
                "cgroup_cpu_limit",
                "cgroup CPU quota",
                "CPUs",
                ("cpu.max",),
                lambda texts: parse_cpu_max(texts[0]),
            )
        )
    out.add(_cpu_period(files, cpu))
    out.add(
        _limit(files, pids, "cgroup_pids_limit", "cgroup task limit", "tasks", ("pids.max",), _pids)
    )
    out.add(_cpuset(files, cpuset))


def _cpu_period(files: Files, place: _Place | str) -> Reading:
    """The period over which this cgroup's CPU quota is counted, in milliseconds.

    v2 keeps it as the second field of cpu.max, v1 in cpu.cfs_period_us, both
    in microseconds. The nearest cgroup from this one upwards that has the file
    gives it (the root cgroup of v2 has no cpu.max).
    """
    key, label = "cgroup_cpu_period", "cgroup CPU quota period"
    convention = "the CFS bandwidth period: the quota is granted anew in every period"
    if isinstance(place, str):
        return Reading.not_supported(key, label, place)
    name = "cpu.cfs_period_us" if place.version == 1 else "cpu.max"
    for folder in place.upwards():
        try:
            text = files.read(folder / name)
        except FileNotFoundError:
            continue
        except OSError as exc:
            return Reading.failed(
                key, label, f"cannot read {files.show(folder / name)}: {why(exc)}"
            )
        fields = text.split()
        field = fields[0] if place.version == 1 else (fields[1] if len(fields) == 2 else "")
        if not field.isdigit() or int(field) <= 0:
            return Reading.failed(
                key,
                label,
                f"{files.show(folder / name)} should give a "
                f"period in microseconds, not {text.strip()!r}",
            )
        where = "" if folder == place.leaf else " (a parent cgroup)"
        return Reading(
            key,
            label,
            int(field) / 1000,
            "ms",
            convention,
            detail=f"{int(field)} µs, from {files.show(folder / name)}{where}",
        )
    return Reading.not_supported(
        key,
        label,
        f"no {name} in {files.show(place.leaf)} or its parents (the root cgroup of v2 has none)",
    )


def _cpuset(files: Files, place: _Place | str) -> Reading:
    """The CPUs the cgroup allows: the nearest cpuset file from this cgroup upwards."""
    key, label = "cgroup_cpuset", "CPUs the cgroup allows"
    if isinstance(place, str):
        return Reading.not_supported(key, label, place)
    names = (
        ("cpuset.cpus.effective",)
        if place.version == 2
        else ("cpuset.effective_cpus", "cpuset.cpus")
    )
    for folder in place.upwards():
        for name in names:
            try:
                cpus = parse_cpu_list(files.read(folder / name))
            except FileNotFoundError:
                continue
            except (OSError, ValueError) as exc:
                return Reading.failed(
                    key, label, f"cannot read {files.show(folder / name)}: {why(exc)}"
                )
            try:
                online = parse_cpu_list(files.read("/sys/devices/system/cpu/online"))
            except (OSError, ValueError):
                online = []
            scope = (
                f"all {len(online)} online CPUs (no restriction)"
                if cpus == online
                else f"{len(cpus)} of {len(online) or '?'} online CPUs"
            )
            return Reading(
                key,
                label,
                compact_cpu_list(cpus),
                convention="kernel CPU list",
                detail=f"{scope}, from {files.show(folder / name)}",
            )
    return Reading.not_supported(
        key, label, f"no {' or '.join(names)} in {files.show(place.leaf)} or its parents"
    )
