"""Latency microbenchmarks: the memory hierarchy by pointer chase, and shared memory.

`pointer_chase_latency` follows a random cycle of dependent loads over
footprints from 16 KiB to 1 GiB and reads the L1, L2 and HBM plateaus off
the curve; `smem_latency` chases through shared memory; and
`smem_bank_conflicts` times warp-wide shared-memory loads at strides 1-64,
padded and broadcast. Latencies are counted in SM cycles (clock64) and
turned into nanoseconds with the SM clock seen during the run.

The pure helpers at the top (footprints, chase plans, plateaus, bank
arithmetic) need no GPU; the probes import CuPy and NumPy only when they
run. How every microbenchmark checks, times and reports its work is
described in `gpulab.probes.micro`.
"""

from __future__ import annotations

import contextlib
import functools
import math
import random
import statistics
from collections.abc import Sequence

from gpulab.probes.cuda import CudaDevice
from gpulab.probes.micro._common import (
    GiB,
    KiB,
    MiB,
    Outcome,
    WrongResult,
    check_equal,
    full_grid,
    measure,
    median_ms,
    pow2_ceil,
    pow2_floor,
    prop,
    ratio,
    watch_telemetry,
)
from gpulab.probes.model import ProbeResult, Reading, Table, Telemetry

__all__ = [
    "CHASE_RANGES",
    "bank_conflict_ways",
    "bank_count",
    "chase_footprints",
    "chase_plan",
    "plateaus",
    "pointer_chase_latency",
    "smem_bank_conflicts",
    "smem_latency",
]


# ---------------------------------------------------------------------------
# Pure helpers: no GPU needed, tested exactly.
# ---------------------------------------------------------------------------


def bank_conflict_ways(stride: int) -> int:
    """How many lanes of a warp share one shared-memory bank when lane l reads word l*stride.

    32 banks of 4-byte words: the 32 lanes touch 32 / gcd(stride, 32)
    different banks, gcd(stride, 32) lanes per bank, served one after another.
    """
    return math.gcd(stride, 32)


def bank_count(slowdowns: dict[int, float]) -> int | None:
    """The number of shared-memory banks, read off a sweep of power-of-two strides.

    The slowdown doubles with the stride until the stride equals the number
    of banks (every lane in one bank) and then stays put: the answer is the
    smallest stride whose slowdown is within 10 % of the largest. None when
    the sweep never levels off (its largest stride is the slowest alone).
    """
    strides = sorted(s for s in slowdowns if s & (s - 1) == 0)
    if len(strides) < 2:
        return None
    worst = max(slowdowns[s] for s in strides)
    first = next(s for s in strides if slowdowns[s] >= 0.9 * worst)
    return None if first == strides[-1] else first


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
# Latency: pointer chase, shared memory
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
    return measure("pointer_chase_latency", "Memory latency (pointer chase)", _pointer_chase)


def _pointer_chase(device: CudaDevice) -> Outcome:
    from gpulab.kernels import launch

    cp = device.cupy
    l2 = prop(device, "l2CacheSize")
    footprints = chase_footprints(prop(device, "totalGlobalMem"))
    table = cp.zeros(footprints[-1] // 4, dtype=cp.uint32)
    scratch = cp.empty(pow2_ceil(2 * l2) // 4, dtype=cp.uint32)
    points: list[tuple[int, float]] = []
    rows: list[tuple[int, int, int, int, bool, float]] = []
    with watch_telemetry(device) as watch:
        for footprint in footprints:
            lines = footprint // launch.LINE_BYTES
            order = launch.cycle_table(table, lines, seed=footprint)
            warm, steps, flush = chase_plan(footprint, l2, launch.LINE_BYTES)
            if flush:
                scratch.fill(footprint & 0xFFFF)     # 2 x L2 of other data evicts the table
            cp.cuda.get_current_stream().synchronize()
            reached, cycles = launch.chase(table, int(order[0]), warm_steps=warm, steps=steps)
            expected = int(order[(warm + steps) % lines])
            if reached != expected:
                raise WrongResult(f"{footprint // KiB} KiB: the chase ended at line {reached}, "
                                  f"the cycle says {expected}")
            per_load = cycles / steps
            points.append((footprint, per_load))
            rows.append((footprint, lines, warm, steps, flush, round(per_load, 1)))
    clock, clock_how = sm_clock_mhz(device, watch.telemetry)
    levels = plateaus(points)
    ranges = {"l1": "footprints up to 64 KiB", "l2": "footprints of 1-16 MiB",
              "hbm": "footprints of 256 MiB and more"}
    readings: list[Reading] = []
    for level, name in (("l1", "L1"), ("l2", "L2"), ("hbm", "HBM")):
        value = levels[level]
        if value is None:
            readings.append(Reading.not_supported(
                f"{level}_latency_cycles", f"{name} hit latency",
                f"no footprint in the range ({ranges[level]}) fits this GPU"))
            continue
        readings.append(Reading(f"{level}_latency_cycles", f"{name} latency", round(value, 1),
                                "cycles", _CHASE_CONVENTION,
                                detail=f"median of {ranges[level]}"))
        if clock:
            readings.append(Reading(f"{level}_latency_ns", f"{name} latency",
                                    round(value / clock * 1000, 1), "ns",
                                    "cycles / SM clock", detail=f"{clock_how}: {clock:.0f} MHz"))
        else:
            readings.append(Reading.not_supported(f"{level}_latency_ns", f"{name} latency",
                                                  clock_how))
    if levels["l1"] and levels["hbm"]:
        readings.append(Reading("hbm_to_l1_latency_ratio", "HBM latency / L1 latency",
                                ratio(levels["hbm"], levels["l1"]), "x",
                                "both plateaus in SM cycles, same chase"))
    table_out = Table("Pointer chase: one thread, a random cycle of 128-byte lines",
                      ("footprint", "lines", "warm-up loads", "timed loads", "L2 flushed first",
                       "latency"), tuple(rows),
                      ("bytes", "lines", "loads", "loads", "", "cycles per load"))
    message = ", ".join(f"{name} {levels[level]:.0f}" for level, name in
                        (("l1", "L1"), ("l2", "L2"), ("hbm", "HBM")) if levels[level])
    return Outcome(f"{message} cycles per dependent load. Footprints up to the L2 size are "
                   "warmed by one untimed lap; larger ones are timed over one full lap "
                   "after a flush of the L2", readings, [table_out], watch.telemetry)


def smem_latency() -> ProbeResult:
    """Dependent loads in shared memory, in SM cycles."""
    return measure("smem_latency", "Shared-memory latency", _smem_latency)


def _smem_latency(device: CudaDevice) -> Outcome:
    from gpulab.kernels import launch

    cp = device.cupy
    words = 1024
    order = list(range(words))
    random.Random(7).shuffle(order)
    order.remove(0)
    order.insert(0, 0)                 # the kernel starts at word 0
    table = cp.asarray(launch.cycle_successors(order), dtype=cp.uint32)
    steps = 1 << 20
    per_load: list[float] = []
    with watch_telemetry(device) as watch:
        for _ in range(5):
            reached, cycles = launch.smem_chase(table, steps)
            if reached != order[steps % words]:
                raise WrongResult(f"the shared-memory chase ended at word {reached}, the cycle "
                                  f"says {order[steps % words]}")
            per_load.append(cycles / steps)
    cycles_per_load = float(statistics.median(per_load))
    clock, clock_how = sm_clock_mhz(device, watch.telemetry)
    readings = [Reading("smem_latency_cycles", "shared-memory load latency",
                        round(cycles_per_load, 1), "cycles",
                        "SM clock cycles per dependent load (clock64), one thread",
                        detail=f"median of 5 runs of {steps:,} loads through a random cycle "
                               f"of {words} words")]
    if clock:
        readings.append(Reading("smem_latency_ns", "shared-memory load latency",
                                round(cycles_per_load / clock * 1000, 2), "ns",
                                "cycles / SM clock", detail=f"{clock_how}: {clock:.0f} MHz"))
    return Outcome(f"{cycles_per_load:.1f} cycles per dependent shared-memory load",
                   readings, [], watch.telemetry)


_BANK_CASES: tuple[tuple[str, int, bool], ...] = (
    ("1", 1, False), ("2", 2, False), ("4", 4, False), ("8", 8, False), ("16", 16, False),
    ("32", 32, False), ("64", 64, False), ("33 (padded)", 33, False), ("broadcast", 1, True))


def smem_bank_conflicts() -> ProbeResult:
    """Time per warp-wide shared-memory load at strides 1-64, padded, and broadcast."""
    return measure("smem_bank_conflicts", "Shared-memory bank conflicts", _smem_bank_conflicts)


def _smem_bank_conflicts(device: CudaDevice) -> Outcome:
    from gpulab.kernels import launch

    cp = device.cupy
    bank_words = 32 * 33
    table = cp.arange(bank_words, dtype=cp.uint32)
    threads = min(1024, prop(device, "maxThreadsPerBlock"))
    blocks = full_grid(device, threads)
    warps_per_sm = blocks // prop(device, "multiProcessorCount") * threads // 32
    out = cp.empty(blocks * threads, dtype=cp.uint32)
    lanes = cp.arange(blocks * threads, dtype=cp.uint32) % 32
    iters = 1 << 14
    ns: dict[str, float] = {}
    with watch_telemetry(device) as watch:
        for name, stride, broadcast in _BANK_CASES:
            run = functools.partial(launch.smem_bank_access, table, out, stride=stride,
                                    broadcast=broadcast, iters=iters, blocks=blocks,
                                    threads=threads)
            ms = median_ms(launch.time_ms(run, iters=3, repeats=5))
            want = cp.zeros_like(lanes) if broadcast else (lanes * stride) % bank_words
            check_equal(cp, out, want, f"bank-conflict kernel at stride {name}")
            ns[name] = ms * 1e6 / (warps_per_sm * iters)
    base = ns["1"]
    rows = tuple((name, 1 if broadcast else bank_conflict_ways(stride), round(ns[name], 3),
                  ratio(ns[name], base)) for name, stride, broadcast in _BANK_CASES)
    convention = "time per warp-wide load divided by that at stride 1"
    readings = [Reading(f"slowdown_stride_{name}", f"stride {name} / stride 1",
                        ratio(ns[name], base), "x", convention,
                        detail=f"{bank_conflict_ways(stride)} lanes per bank")
                for name, stride, _ in _BANK_CASES[1:7]]
    readings.append(Reading("slowdown_stride_33_padded", "stride 33 (padded) / stride 1",
                            ratio(ns["33 (padded)"], base), "x", convention,
                            detail="a 32 x 32 tile with rows of 33 words, read down a column"))
    readings.append(Reading("slowdown_broadcast", "all lanes one word / stride 1",
                            ratio(ns["broadcast"], base), "x", convention,
                            detail="every lane reads word 0: one access, broadcast"))
    banks = bank_count({stride: ns[name] / base for name, stride, broadcast in _BANK_CASES
                        if not broadcast and stride & (stride - 1) == 0})
    readings.append(Reading("bank_count", "shared-memory banks", banks, "banks",
                            "smallest power-of-two stride whose slowdown is within 10 % of "
                            "the largest (every lane in one bank)") if banks else
                    Reading.failed("bank_count", "shared-memory banks",
                                   "the slowdown never levelled off up to stride 64"))
    table_out = Table(f"Shared-memory loads, {warps_per_sm} warps per SM, {iters:,} dependent "
                      "loads per lane", ("stride", "lanes per bank", "time per warp-wide load",
                                         "slowdown"),
                      rows, ("4-byte words", "lanes", "ns per SM", "x"))
    return Outcome(f"stride 2: {ns['2'] / base:.1f}x, stride 32: {ns['32'] / base:.1f}x, "
                   f"padded: {ns['33 (padded)'] / base:.2f}x the time of stride 1",
                   readings, [table_out], watch.telemetry)
