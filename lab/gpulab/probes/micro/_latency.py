"""Latency microbenchmarks: the memory hierarchy by pointer chase.

`pointer_chase_latency` follows a random cycle of dependent loads over
footprints from 16 KiB to 1 GiB and reads the L1, L2 and HBM plateaus off
the curve. The chase is a pure one, ``p = *p`` through a table of device
addresses (chase.cu says why a chase of indices reads high at L1).
Latencies are counted in SM cycles (clock64) and turned into nanoseconds
with the SM clock seen during the run (`sm_clock_mhz`, which the
shared-memory probes of `_smem` and the P2P chase of `_p2p` use too).

The pure helpers at the top (footprints, chase plans, plateaus) need no GPU;
the probe imports CuPy and NumPy only when it runs. How every microbenchmark
checks, times and reports its work is described in `gpulab.probes.micro`.
"""

from __future__ import annotations

import contextlib
import statistics
from collections.abc import Sequence

from gpulab.probes.cuda import CudaDevice
from gpulab.probes.micro._common import (
    GiB,
    KiB,
    MiB,
    Outcome,
    WrongResult,
    measure,
    pow2_ceil,
    pow2_floor,
    prop,
    ratio,
    watch_telemetry,
)
from gpulab.probes.model import ProbeResult, Reading, Table, Telemetry

__all__ = ["CHASE_RANGES", "chase_footprints", "chase_plan", "plateaus", "pointer_chase_latency"]


# ---------------------------------------------------------------------------
# Pure helpers: no GPU needed, tested exactly.
# ---------------------------------------------------------------------------


# Plateau ranges of the pointer chase, in bytes of footprint (inclusive).
CHASE_RANGES: dict[str, tuple[int, int]] = {
    "l1": (0, 64 * KiB),
    "l2": (1 * MiB, 16 * MiB),
    "hbm": (256 * MiB, 1 << 62),
}

_CHASE_MIN_STEPS = 1 << 16


def chase_footprints(total_mem: int) -> list[int]:
    """Footprints for the pointer chase: 16 KiB doubling up to 1 GiB (less on a small GPU).

    The largest is at most an eighth of device memory.
    """
    largest = min(GiB, pow2_floor(total_mem // 8))
    sizes, size = [], 16 * KiB
    while size <= largest:
        sizes.append(size)
        size *= 2
    return sizes


def chase_plan(footprint: int, l2_bytes: int, line: int = 128) -> tuple[int, int, bool]:
    """(warm-up steps, timed steps, flush first?) for one footprint of the pointer chase.

    A footprint that fits in the L2 gets one untimed lap (every line loaded
    once), then a timed run of at least one lap and at least 65,536 loads.
    A larger one is timed over exactly one lap after the L2 has been flushed:
    every load goes to a line not touched since the flush, so none can hit,
    which is what the HBM plateau must mean (a short chase over a big
    footprint would measure whatever the cache kept from before).
    """
    lines = footprint // line
    if footprint <= l2_bytes:
        return lines, max(lines, _CHASE_MIN_STEPS), False
    return 0, lines, True


def plateaus(points: Sequence[tuple[int, float]]) -> dict[str, float | None]:
    """Median latency per level of the hierarchy from (footprint bytes, latency) points.

    L1: footprints up to 64 KiB; L2: 1-16 MiB; HBM: 256 MiB and more
    (`CHASE_RANGES`). A level with no footprint in its range is None.
    """
    found: dict[str, float | None] = {}
    for level, (low, high) in CHASE_RANGES.items():
        values = [value for size, value in points if low <= size <= high]
        found[level] = float(statistics.median(values)) if values else None
    return found


# ---------------------------------------------------------------------------
# Latency: pointer chase
# ---------------------------------------------------------------------------


def sm_clock_mhz(device: CudaDevice, telemetry: Telemetry) -> tuple[float | None, str]:
    """The SM clock to turn cycles into time: NVML during the run, else the attribute."""
    if telemetry.sm_clock_mhz:
        return telemetry.sm_clock_mhz[1], "SM clock read by NVML during the run (highest seen)"
    with contextlib.suppress(Exception):
        khz = int(device.cupy.cuda.runtime.deviceGetAttribute(13, device.index))
        if khz > 0:
            return khz / 1000, "maximum SM clock (cudaDevAttrClockRate): NVML gave no sample"
    return None, "no SM clock known: NVML gave no sample and cudaDevAttrClockRate failed"


_CHASE_CONVENTION = "SM clock cycles per dependent load (clock64), one thread"


def pointer_chase_latency() -> ProbeResult:
    """Dependent loads over footprints from 16 KiB to 1 GiB: the L1, L2 and HBM plateaus."""
    return measure("pointer_chase_latency", _pointer_chase)


def _pointer_chase(device: CudaDevice) -> Outcome:
    from gpulab.kernels import launch

    cp = device.cupy
    l2 = prop(device, "l2CacheSize")
    footprints = chase_footprints(prop(device, "totalGlobalMem"))
    table = cp.zeros(footprints[-1] // 8, dtype=cp.uint64)  # 64-bit addresses, p = *p
    scratch = cp.empty(pow2_ceil(2 * l2) // 4, dtype=cp.uint32)
    points: list[tuple[int, float]] = []
    rows: list[tuple[int, int, int, int, bool, float]] = []
    with watch_telemetry(device) as watch:
        for footprint in footprints:
            lines = footprint // launch.LINE_BYTES
            order = launch.cycle_table(table, lines, seed=footprint)
            warm, steps, flush = chase_plan(footprint, l2, launch.LINE_BYTES)
            if flush:
                scratch.fill(footprint & 0xFFFF)  # 2 x L2 of other data evicts the table
            cp.cuda.get_current_stream().synchronize()
            reached, cycles = launch.chase(table, int(order[0]), warm_steps=warm, steps=steps)
            expected = int(order[(warm + steps) % lines])
            if reached != expected:
                raise WrongResult(
                    f"{footprint // KiB} KiB: the chase ended at line {reached}, "
                    f"the cycle says {expected}"
                )
            per_load = cycles / steps
            points.append((footprint, per_load))
            rows.append((footprint, lines, warm, steps, flush, round(per_load, 1)))
    clock, clock_how = sm_clock_mhz(device, watch.telemetry)
    levels = plateaus(points)
    ranges = {
        "l1": "footprints up to 64 KiB",
        "l2": "footprints of 1-16 MiB",
        "hbm": "footprints of 256 MiB and more",
    }
    readings: list[Reading] = []
    for level, name in (("l1", "L1"), ("l2", "L2"), ("hbm", "HBM")):
        value = levels[level]
        if value is None:
            readings.append(
                Reading.not_supported(
                    f"{level}_latency_cycles",
                    f"{name} hit latency",
                    f"no footprint in the range ({ranges[level]}) fits this GPU",
                )
            )
            continue
        readings.append(
            Reading(
                f"{level}_latency_cycles",
                f"{name} latency",
                round(value, 1),
                "cycles",
                _CHASE_CONVENTION,
                detail=f"median of {ranges[level]}",
            )
        )
        if clock:
            readings.append(
                Reading(
                    f"{level}_latency_ns",
                    f"{name} latency",
                    round(value / clock * 1000, 1),
                    "ns",
                    "cycles / SM clock",
                    detail=f"{clock_how}: {clock:.0f} MHz",
                )
            )
        else:
            readings.append(
                Reading.not_supported(f"{level}_latency_ns", f"{name} latency", clock_how)
            )
    if levels["l1"] and levels["hbm"]:
        readings.append(
            Reading(
                "hbm_to_l1_latency_ratio",
                "HBM latency / L1 latency",
                ratio(levels["hbm"], levels["l1"]),
                "x",
                "both plateaus in SM cycles, same chase",
            )
        )
    table_out = Table(
        "Pointer chase: one thread, a random cycle of 128-byte lines",
        ("footprint", "lines", "warm-up loads", "timed loads", "L2 flushed first", "latency"),
        tuple(rows),
        ("bytes", "lines", "loads", "loads", "", "cycles per load"),
    )
    message = ", ".join(
        f"{name} {levels[level]:.0f}"
        for level, name in (("l1", "L1"), ("l2", "L2"), ("hbm", "HBM"))
        if levels[level]
    )
    return Outcome(
        f"{message} cycles per dependent load. Footprints up to the L2 size are "
        "warmed by one untimed lap; larger ones are timed over one full lap "
        "after a flush of the L2",
        readings,
        [table_out],
        watch.telemetry,
    )
