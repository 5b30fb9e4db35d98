"""Figures of the GPU as a device: clocks, power and temperature under load (probe by
probe, and over a long matmul), host copies over PCIe, and what NVML's utilisation does
and does not count."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from gpulab.figures.data import Data, Figure
from gpulab.figures.model import Axis, Line, Missing, Plot, Series

if TYPE_CHECKING:
    from gpulab.probes.model import ProbeResult, Telemetry

__all__ = ["DEVICE_FIGURES", "LOADED_PROBES"]

LOADED_PROBES = (
    "hbm_bandwidth",
    "stride_sweep",
    "pcie_bandwidth",
    "pointer_chase_latency",
    "smem_latency",
    "smem_bank_conflicts",
    "warp_divergence",
    "occupancy_bandwidth",
    "util_one_thread",
    "fp32_peak",
    "matmul_throughput",
    "sustained_matmul",
)
"""The probes that load the GPU and sample NVML while they run, in the order they run."""


def _loaded(d: Data, pick: Callable[[Telemetry], object]) -> list[tuple[ProbeResult, Telemetry]]:
    found = [
        (r, r.telemetry)
        for p in LOADED_PROBES
        if (r := d.results.get(p)) is not None
        and r.telemetry is not None
        and pick(r.telemetry) is not None
    ]
    if not found:
        raise Missing("no probe result carries this telemetry (NVML sampled nothing)")
    return found


def _reasons(found: list[tuple[ProbeResult, Telemetry]]) -> tuple[str, ...]:
    return tuple(
        f"{r.title}: clock-event reasons seen: {', '.join(t.clock_event_reasons)}"
        for r, t in found
        if t.clock_event_reasons
    )


def _sm_clock(d: Data) -> Plot:
    found = _loaded(d, lambda t: t.sm_clock_mhz)
    names = tuple(r.title for r, _ in found)
    low = tuple(t.sm_clock_mhz[0] for _, t in found if t.sm_clock_mhz)
    high = tuple(t.sm_clock_mhz[1] for _, t in found if t.sm_clock_mhz)
    lines = []
    top = d.optional_number("nvml_inventory", "clocks_max_sm")
    if top is not None:
        lines.append(
            Line(
                top,
                f"the GPU's maximum SM clock: {top:g} MHz",
                role="limit",
                source="NVML, nvmlDeviceGetMaxClockInfo",
            )
        )
    else:
        sheet = d.datasheet("boost_clock", "MHz")
        if sheet is not None:
            lines.append(sheet)
    return Plot(
        (
            Series("lowest SM clock sampled", names, low, "bars"),
            Series("highest SM clock sampled", names, high, "bars"),
        ),
        tuple(lines),
        _reasons(found),
    )


def _power(d: Data) -> Plot:
    found = _loaded(d, lambda t: t.power_w)
    names = tuple(r.title for r, _ in found)
    watts = tuple(float(t.power_w) for _, t in found if t.power_w is not None)
    lines = []
    limit = d.optional_number("nvml_inventory", "power_limit")
    if limit is not None:
        lines.append(
            Line(
                limit,
                f"power limit in force: {limit:g} W",
                role="limit",
                source="NVML, nvmlDeviceGetEnforcedPowerLimit",
            )
        )
    else:
        sheet = d.datasheet("tdp", "W")
        if sheet is not None:
            lines.append(sheet)
    return Plot(
        (Series("highest power draw sampled", names, watts, "bars"),), tuple(lines), _reasons(found)
    )


def _temperature(d: Data) -> Plot:
    found = _loaded(d, lambda t: t.temperature_c)
    names = tuple(r.title for r, _ in found)
    degrees = tuple(float(t.temperature_c) for _, t in found if t.temperature_c is not None)
    lines = []
    for key, what in (
        ("temperature_limit", "T.Limit, the highest operating temperature"),
        ("temperature_slowdown", "slowdown temperature"),
    ):
        value = d.optional_number("nvml_sample", key)
        if value is not None:
            lines.append(
                Line(
                    value,
                    f"{what}: {value:g} °C",
                    role="limit",
                    source="NVML, the GPU's own thresholds",
                )
            )
    return Plot((Series("highest GPU temperature sampled", names, degrees, "bars"),), tuple(lines))


def _pcie(d: Data) -> Plot:
    series = []
    for direction, label in (("h2d", "host to device"), ("d2h", "device to host")):
        kinds, rates = [], []
        for memory in ("pinned", "pageable"):
            value = d.optional_number("pcie_bandwidth", f"{direction}_{memory}_bandwidth")
            if value is not None:
                kinds.append(f"{memory} host memory")
                rates.append(value)
        if rates:
            series.append(Series(label, tuple(kinds), tuple(rates), "bars"))
    if not series:
        raise Missing("the pcie_bandwidth result has no copy rates")
    lines = []
    link = d.optional_number("pcie_bandwidth", "link_bandwidth")
    if link is not None:
        lines.append(
            Line(
                link,
                f"the link's rate, per direction: {link:g} GB/s",
                role="limit",
                source="the negotiated PCIe generation and width, after line encoding",
            )
        )
    return Plot(tuple(series), tuple(lines))


def _util(d: Data) -> Plot:
    rows = d.table("util_one_thread", "phase", "seconds", "GPU utilisation")
    phases: dict[str, list[tuple[float, float]]] = {}
    for row in rows:
        t, u = row["seconds"], row["GPU utilisation"]
        if isinstance(t, int | float) and isinstance(u, int | float):
            phases.setdefault(str(row["phase"]), []).append((float(t), float(u)))
    if not phases:
        raise Missing("the utilisation samples hold no numbers")
    series = tuple(
        Series(
            f"NVML GPU utilisation, {phase}",
            tuple(p[0] for p in points),
            tuple(p[1] for p in points),
            "line",
        )
        for phase, points in phases.items()
    )
    lines = []
    sm = d.optional_number("util_one_thread", "sm_util_one_thread")
    if sm is not None:
        lines.append(
            Line(
                sm,
                f"SM activity while one thread spins (GPM): {sm:g} %",
                role="measured",
                source="NVML GPM, NVML_GPM_METRIC_SM_UTIL",
            )
        )
    return Plot(series, tuple(lines))


def _sustained(d: Data) -> Plot:
    rows = d.table("sustained_matmul", "until", "throughput", "SM clock", "power", "temperature")
    numeric = [
        r
        for r in rows
        if isinstance(r["until"], int | float) and isinstance(r["throughput"], int | float)
    ]
    if not numeric:
        raise Missing("the sustained_matmul result has no timed windows")
    t = tuple(float(r["until"]) for r in numeric)
    first = float(numeric[0]["throughput"])
    series = [
        Series(
            "BF16 matmul throughput, % of the first half second",
            t,
            tuple(round(100 * float(r["throughput"]) / first, 1) for r in numeric),
        )
    ]
    notes = [
        f"throughput: {first:g} TFLOPS in the first half second, "
        f"{float(numeric[-1]['throughput']):g} in the last"
    ]
    for column, key, what, unit in (
        ("SM clock", "clocks_max_sm", "the maximum SM clock", "MHz"),
        ("power", "power_limit", "the power limit in force", "W"),
    ):
        limit = d.optional_number("nvml_inventory", key)
        kept = [
            (x, float(r[column]))
            for x, r in zip(t, numeric, strict=True)
            if isinstance(r[column], int | float)
        ]
        if limit and kept:
            series.append(
                Series(
                    f"{column}, % of {what} ({limit:g} {unit})",
                    tuple(x for x, _ in kept),
                    tuple(round(100 * v / limit, 1) for _, v in kept),
                )
            )
    temps = [float(r["temperature"]) for r in numeric if isinstance(r["temperature"], int | float)]
    if temps:
        notes.append(
            f"GPU temperature: {temps[0]:g} °C in the first window, {max(temps):g} °C at most"
        )
    return Plot(tuple(series), (Line(100.0, "100 %", role="computed"),), tuple(notes))


DEVICE_FIGURES = (
    Figure(
        "sm-clock-by-probe",
        "SM clock under load, probe by probe",
        "The lowest and highest SM clock NVML sampled while each probe ran (samples every "
        "few milliseconds; a result keeps the range, not the trace). On gpulab's H200 the "
        "short probes stayed at the maximum, and during the sustained matmul the driver "
        'lowered the clock to stay under the power limit (clock-event reason "SW power '
        'cap").',
        Axis("probe"),
        Axis("SM clock", "MHz"),
        _sm_clock,
        probes=("matmul_throughput",),
        optional=(*LOADED_PROBES, "nvml_inventory"),
        horizontal=True,
    ),
    Figure(
        "power-by-probe",
        "Power draw under load, probe by probe",
        "The highest power draw NVML sampled while each probe ran, against the power limit in "
        "force. Memory-bound work draws a fraction of it; a large matmul, keeping the "
        "Tensor Cores busy, draws the most (on gpulab's H200 enough to trip the software "
        "power cap).",
        Axis("probe"),
        Axis("power", "W"),
        _power,
        probes=("matmul_throughput",),
        optional=(*LOADED_PROBES, "nvml_inventory"),
        horizontal=True,
    ),
    Figure(
        "temperature-by-probe",
        "GPU temperature under load, probe by probe",
        "The highest GPU temperature NVML sampled while each probe ran, against the GPU's "
        "own thresholds: T.Limit and the temperature at which it starts to slow down.",
        Axis("probe"),
        Axis("temperature", "°C"),
        _temperature,
        probes=("matmul_throughput",),
        optional=(*LOADED_PROBES, "nvml_sample"),
        horizontal=True,
    ),
    Figure(
        "sustained-matmul",
        "Twenty seconds of matmul: throughput, clock and power",
        "BF16 matmuls back to back, timed every half second, with the mean SM clock and "
        "power NVML sampled meanwhile, each as a percentage: throughput of the first half "
        "second, clock of the GPU's maximum, power of the limit in force. A GPU that reaches "
        "its power limit lowers its clock to stay under it; how much throughput that costs "
        "depends on what limits the work. A short benchmark sees only the first second.",
        Axis("time", "s"),
        Axis("share of the reference", "%"),
        _sustained,
        probes=("sustained_matmul",),
        optional=("nvml_inventory",),
    ),
    Figure(
        "pcie-copy",
        "Host–device copies: pinned and pageable, each direction",
        "cudaMemcpy between host and device, each byte counted once, in one direction at a "
        "time. From pinned memory a copy is one DMA at close to the link's rate; from "
        "pageable memory the driver stages it through a pinned buffer, and it is several "
        "times slower.",
        Axis("host memory"),
        Axis("copy rate", "GB/s"),
        _pcie,
        probes=("pcie_bandwidth",),
    ),
    Figure(
        "util-one-thread",
        'NVML "GPU utilisation" for a kernel of one thread',
        "NVML's GPU utilisation, sampled while the GPU is idle and then while a single thread "
        "on one SM spins: it reads 100 %, because it counts the time in which any kernel "
        "runs. The GPM SM activity of the same kernel, the share of SMs busy, is the line "
        "near zero.",
        Axis("time", "s"),
        Axis("GPU utilisation", "%"),
        _util,
        probes=("util_one_thread",),
    ),
)
