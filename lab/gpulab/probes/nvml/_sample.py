"""The NVML live sample: what one GPU is doing now, and who is using it.

`sample()` reads what changes all the time (utilisation, clocks, P-state,
power, temperature, clock-event reasons, processes) through a `Session`
(`_session`) and words NVML's numbers with `_decode`; the helpers it shares
with `inventory()` come from `_probes`. NVML's `NotSupported` is an answer,
not a failure: it becomes a reading with status `not_supported`.

A backend may offer `process_name(pid)`; without one the name comes from
/proc/<pid>/comm (`process_name`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from gpulab.probes.model import ProbeResult, Reading, Table, summarise
from gpulab.probes.nvml._decode import decode_clock_event_reasons, pstate_name
from gpulab.probes.nvml._probes import _MIB, _not_here, _ok
from gpulab.probes.nvml._session import (
    Field,
    MissingFunction,
    NotInAnswer,
    NvmlUnavailable,
    Session,
    nvml_session,
)
from gpulab.probes.registry import title_of

__all__ = ["process_name", "sample"]


# ---- sample ---------------------------------------------------------------------------------


def sample(backend: Any = None, index: int = 0) -> ProbeResult:
    """What one GPU is doing now: utilisation, clocks, power, temperature, processes."""
    probe = "nvml_sample"
    title = title_of(probe)
    try:
        with nvml_session(backend) as s:
            if not 0 <= index < s.count:
                return ProbeResult(
                    probe,
                    title,
                    "error",
                    f"there is no GPU {index}: NVML lists {s.count} (numbered from 0)",
                )
            try:
                h = s.call("nvmlDeviceGetHandleByIndex", index)
            except s.pm.NVMLError as exc:
                return ProbeResult(probe, title, "error", f"GPU {index} could not be opened: {exc}")
            name = s.value("nvmlDeviceGetName", h) or f"GPU {index}"
            readings = _sample_readings(s, h)
            processes, table = _processes(s, h)
    except NvmlUnavailable as exc:
        return _not_here(probe, title, exc)
    readings.append(processes)
    facts = []
    for key, text in (
        ("clock_sm", "SM {} MHz"),
        ("power_draw", "{:.0f} W"),
        ("temperature", "{} °C"),
        ("pstate", "{}"),
        ("clock_event_reasons", "clock events: {}"),
    ):
        value = _ok(readings, key)
        if value is not None:
            facts.append(text.format(value))
    message = f"{name}: " + (", ".join(facts) or "no live readings")
    return ProbeResult(
        probe,
        title,
        summarise(readings),
        message,
        tuple(readings),
        (table,) if table.rows else (),
        device=str(name),
    )


def _sample_readings(s: Session, h: Any) -> list[Reading]:
    pm = s.pm
    mib = "bytes / 2^20, rounded down"
    temperature = [
        ("nvmlDeviceGetTemperatureV", (h, pm.NVML_TEMPERATURE_GPU)),
        ("nvmlDeviceGetTemperature", (h, pm.NVML_TEMPERATURE_GPU)),
    ]
    reasons = [
        ("nvmlDeviceGetCurrentClocksEventReasons", (h,)),
        ("nvmlDeviceGetCurrentClocksThrottleReasons", (h,)),
    ]
    readings = [
        *s.read(
            "nvmlDeviceGetUtilizationRates",
            (h,),
            Field(
                "utilization_gpu",
                "GPU busy",
                "%",
                lambda u: int(u.gpu),
                "share of the last sample period in which a kernel ran",
            ),
            Field(
                "utilization_memory",
                "Memory busy",
                "%",
                lambda u: int(u.memory),
                "share of the last sample period in which memory was read or written",
            ),
        ),
        *s.read(
            "nvmlDeviceGetClockInfo", (h, pm.NVML_CLOCK_SM), Field("clock_sm", "SM clock", "MHz")
        ),
        *s.read(
            "nvmlDeviceGetClockInfo",
            (h, pm.NVML_CLOCK_MEM),
            Field("clock_mem", "Memory clock", "MHz"),
        ),
        *s.read(
            "nvmlDeviceGetClockInfo",
            (h, pm.NVML_CLOCK_GRAPHICS),
            Field("clock_graphics", "Graphics clock", "MHz"),
        ),
        *s.read(
            "nvmlDeviceGetPerformanceState",
            (h,),
            Field("pstate", "Performance state", extract=pstate_name),
        ),
        *s.read(
            "nvmlDeviceGetPowerUsage",
            (h,),
            Field("power_draw", "Power draw", "W", lambda mw: mw / 1000),
        ),
        *s.read(temperature, (), Field("temperature", "Temperature", "°C")),
    ]
    for threshold, key, label in (
        (pm.NVML_TEMPERATURE_THRESHOLD_SLOWDOWN, "temperature_slowdown", "Slowdown temperature"),
        (pm.NVML_TEMPERATURE_THRESHOLD_SHUTDOWN, "temperature_shutdown", "Shutdown temperature"),
        (
            pm.NVML_TEMPERATURE_THRESHOLD_GPU_MAX,
            "temperature_limit",
            "T.Limit (highest operating temperature)",
        ),
    ):
        readings += s.read(
            "nvmlDeviceGetTemperatureThreshold", (h, threshold), Field(key, label, "°C")
        )
    readings += s.read(
        "nvmlDeviceGetMarginTemperature",
        (h,),
        Field(
            "temperature_limit_margin",
            "Headroom to T.Limit",
            "°C",
            convention="nvidia-smi's 'GPU T.Limit Temp'",
        ),
    )
    memory = [("nvmlDeviceGetMemoryInfo", (h, pm.nvmlMemory_v2)), ("nvmlDeviceGetMemoryInfo", (h,))]
    readings += s.read(
        memory,
        (),
        Field("memory_used", "Memory used", "bytes", lambda m: int(m.used)),
        Field("memory_used_mib", "Memory used", "MiB", lambda m: int(m.used) // _MIB, mib),
        Field("memory_free", "Memory free", "bytes", lambda m: int(m.free)),
        Field("memory_free_mib", "Memory free", "MiB", lambda m: int(m.free) // _MIB, mib),
        Field(
            "memory_reserved_mib",
            "Memory reserved by the driver",
            "MiB",
            _reserved_mib,
            "counted in neither used nor free",
        ),
    )
    readings += s.read(
        reasons,
        (),
        Field(
            "clock_event_reasons_mask",
            "Clock-event reasons (bits)",
            extract=int,
            convention="bit mask of nvmlClocksEventReason*",
        ),
        Field(
            "clock_event_reasons",
            "Clock-event reasons",
            extract=lambda bits: ", ".join(decode_clock_event_reasons(bits)) or "none",
            convention="why the clocks are where they are, not only throttling",
        ),
    )
    return readings


def _reserved_mib(memory: Any) -> int:
    if not hasattr(memory, "reserved"):
        raise NotInAnswer(
            "this driver has only the older memory call, whose 'used' includes the reserved memory"
        )
    return int(memory.reserved) // _MIB


def _processes(s: Session, h: Any) -> tuple[Reading, Table]:
    """The compute processes on the GPU: a count and a table of pid, name, memory."""
    key, label = "compute_processes", "Compute processes"
    try:
        found = s.call("nvmlDeviceGetComputeRunningProcesses", h)
    except (MissingFunction, s.pm.NVMLError) as exc:
        return (
            s.problem(key, label, "nvmlDeviceGetComputeRunningProcesses", exc),
            Table("Compute processes", (), ()),
        )
    name_of = getattr(s.nv, "process_name", None) or process_name
    rows = []
    for proc in found:
        used = getattr(proc, "usedGpuMemory", None)
        rows.append(
            (int(proc.pid), name_of(int(proc.pid)), None if used is None else int(used) // _MIB)
        )
    return (
        Reading(key, label, len(rows), "processes"),
        Table("Compute processes", ("pid", "name", "GPU memory"), tuple(rows), ("", "", "MiB")),
    )


def process_name(pid: int) -> str | None:
    """The command name of a process from /proc/<pid>/comm, or None when unreadable.

    NVML reports host PIDs; inside a container with its own PID namespace the
    name may be missing.
    """
    try:
        return (
            Path(f"/proc/{pid}/comm").read_text(encoding="utf-8", errors="replace").strip() or None
        )
    except OSError:
        return None
