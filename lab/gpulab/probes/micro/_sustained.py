"""A matmul held for many seconds: throughput, SM clock, power and temperature over time.

`sustained_matmul` keeps the GPU busy with back-to-back BF16 matmuls (cuBLAS,
the same multiply as `matmul_throughput`) for `duration_s` seconds and times
them in windows of about half a second, while NVML is sampled every 100 ms
(`gpulab.probes.nvml.Sampler` with ``keep=True``). The result's table has one
row per window: when it ended, the TFLOPS it reached, and the mean SM clock,
mean power and highest temperature NVML reported during it. This shows what a
short benchmark hides: a GPU at its power cap lowers its clock, and the
throughput follows.

`windows` and `trace_rows` are pure (no GPU) and tested exactly.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from gpulab.probes.cuda import CudaDevice
from gpulab.probes.micro._common import Outcome, WrongResult, _nvml_index, measure, prop
from gpulab.probes.micro._compute import tflops
from gpulab.probes.micro._matmul import (
    _MATMUL_CONVENTION,
    _gemm_bf16,
    _relative_error,
    matmul_size,
)
from gpulab.probes.model import ProbeResult, Reading, Table

__all__ = ["Window", "sustained_matmul", "trace_rows"]

DURATION_S = 20.0
WINDOW_MS = 500.0
SAMPLE_S = 0.1
TOLERANCE = 2e-2  # as matmul_throughput's BF16 case


@dataclass(frozen=True)
class Window:
    """One timed stretch of back-to-back matmuls: when it began and ended (seconds since
    the sampler started), how many multiplies it ran and how long the GPU took for them."""

    start_s: float
    end_s: float
    multiplies: int
    ms: float


def trace_rows(
    windows: Sequence[Window], samples: Sequence[Any], flops: float
) -> tuple[tuple[float, float, float | None, float | None, float | None], ...]:
    """One row per window: (end in s, TFLOPS, mean SM clock, mean power, highest temperature).

    A sample belongs to the window whose interval [start, end) holds its time;
    a window without a sample (or NVML without a reading) has None there.
    """
    rows = []
    for w in windows:
        inside = [s for s in samples if w.start_s <= s.t_s < w.end_s]
        clocks = [s.sm_clock_mhz for s in inside if s.sm_clock_mhz is not None]
        powers = [s.power_w for s in inside if s.power_w is not None]
        temps = [s.temperature_c for s in inside if s.temperature_c is not None]
        rows.append(
            (
                round(w.end_s, 2),
                round(tflops(flops * w.multiplies, w.ms), 1),
                round(statistics.fmean(clocks)) if clocks else None,
                round(statistics.fmean(powers), 1) if powers else None,
                max(temps) if temps else None,
            )
        )
    return tuple(rows)


def sustained_matmul(duration_s: float = DURATION_S) -> ProbeResult:
    """BF16 matmuls back to back for `duration_s` seconds, with NVML sampled throughout."""
    if duration_s <= 0:
        raise ValueError(f"duration_s must be positive, not {duration_s}")
    return measure("sustained_matmul", lambda device: _sustained(device, duration_s))


def _sustained(device: CudaDevice, duration_s: float) -> Outcome:
    from gpulab.probes.nvml import Sampler

    cp = device.cupy
    n = matmul_size(prop(device, "totalGlobalMem"))
    rng = cp.random.RandomState(20261205)
    a32 = rng.uniform(-1.0, 1.0, size=(n, n), dtype=cp.float32)
    b32 = rng.uniform(-1.0, 1.0, size=(n, n), dtype=cp.float32)
    flops = 2.0 * n**3
    with _gemm_bf16(device, a32, b32) as gemm:
        per_window = _multiplies_per_window(cp, gemm.run)
        with Sampler(_nvml_index(device), interval_s=SAMPLE_S, keep=True) as sampler:
            began = time.monotonic()
            found: list[Window] = []
            while not found or found[-1].end_s < duration_s:
                start_s = time.monotonic() - began
                start, end = cp.cuda.Event(), cp.cuda.Event()
                start.record()
                for _ in range(per_window):
                    gemm.run()
                end.record()
                end.synchronize()
                found.append(
                    Window(
                        start_s,
                        time.monotonic() - began,
                        per_window,
                        float(cp.cuda.get_elapsed_time(start, end)),
                    )
                )
        error = _relative_error(cp, gemm)
        how = gemm.how
    if not error <= TOLERANCE:
        raise WrongResult(
            f"bf16: largest error {error:.2e} of the largest value, more than "
            f"{TOLERANCE:.0e} ({how})"
        )
    rows = trace_rows(found, sampler.trace, flops)
    return _outcome(rows, n, how, sampler, duration_s)


def _multiplies_per_window(cp: Any, run: Any) -> int:
    """How many multiplies fill about WINDOW_MS, after a warm-up that lets cuBLAS choose."""
    for _ in range(2):
        run()
    start, end = cp.cuda.Event(), cp.cuda.Event()
    start.record()
    run()
    end.record()
    end.synchronize()
    one = float(cp.cuda.get_elapsed_time(start, end))
    return max(1, min(1000, round(WINDOW_MS / max(one, 1e-3))))


def _outcome(
    rows: tuple[tuple[Any, ...], ...], n: int, how: str, sampler: Any, duration_s: float
) -> Outcome:
    speeds = [float(row[1]) for row in rows]
    last = speeds[len(speeds) * 2 // 3 :] or speeds
    first, held = speeds[0], statistics.median(last)
    where = f"{n}³ BF16, {how}; {len(rows)} windows over {rows[-1][0]:.0f} s"
    readings = [
        Reading(
            "first_tflops",
            "BF16 matmul throughput, first half second",
            first,
            "TFLOPS",
            _MATMUL_CONVENTION,
            detail=where,
        ),
        Reading(
            "sustained_tflops",
            "BF16 matmul throughput, last third of the run (median)",
            round(held, 1),
            "TFLOPS",
            _MATMUL_CONVENTION,
            detail=where,
        ),
        Reading(
            "sustained_ratio",
            "sustained throughput / first half second",
            round(held / first, 3),
            "x",
            "ratio of the two readings above",
        ),
    ]
    trace = sampler.trace
    why = sampler.unavailable or "NVML gave no reading of it during the run"
    for key, label, unit, pick, best in (
        ("lowest_sm_clock", "lowest SM clock sampled", "MHz", "sm_clock_mhz", min),
        ("highest_power", "highest power sampled", "W", "power_w", max),
        ("highest_temperature", "highest GPU temperature sampled", "°C", "temperature_c", max),
    ):
        values = [getattr(s, pick) for s in trace if getattr(s, pick) is not None]
        readings.append(
            Reading(
                key,
                label,
                best(values),
                unit,
                detail=f"NVML every {SAMPLE_S * 1000:.0f} ms, {len(values)} samples",
            )
            if values
            else Reading.not_supported(key, label, why)
        )
    table = Table(
        f"BF16 matmul held for {duration_s:g} s, window by window",
        ("until", "throughput", "SM clock", "power", "temperature"),
        rows,
        ("s", "TFLOPS", "MHz (mean)", "W (mean)", "°C (highest)"),
    )
    message = (
        f"{first:.0f} TFLOPS at first, {held:.0f} held over the last third ({held / first:.2f}x)"
    )
    return Outcome(message, readings, [table], sampler.telemetry)
