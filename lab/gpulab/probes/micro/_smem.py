"""Shared-memory microbenchmarks: load latency and bank conflicts.

`smem_latency` chases through shared memory, one dependent load after
another, in SM cycles (clock64) turned into nanoseconds with the SM clock
seen during the run (`sm_clock_mhz`, from `_latency`); `smem_bank_conflicts`
times warp-wide shared-memory loads at strides 1-64, padded and broadcast.

The pure helpers at the top (bank arithmetic) need no GPU; the probes import
CuPy and NumPy only when they run. How every microbenchmark checks, times and
reports its work is described in `gpulab.probes.micro`.
"""

from __future__ import annotations

import functools
import math
import random
import statistics

from gpulab.probes.cuda import CudaDevice
from gpulab.probes.micro._common import (
    Outcome,
    WrongResult,
    check_equal,
    full_grid,
    measure,
    median_ms,
    prop,
    ratio,
    watch_telemetry,
)
from gpulab.probes.micro._latency import sm_clock_mhz
from gpulab.probes.model import ProbeResult, Reading, Table

__all__ = ["bank_conflict_ways", "bank_count", "smem_bank_conflicts", "smem_latency"]


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


# ---------------------------------------------------------------------------
# Latency: shared memory
# ---------------------------------------------------------------------------


def smem_latency() -> ProbeResult:
    """Dependent loads in shared memory, in SM cycles."""
    return measure("smem_latency", _smem_latency)


def _smem_latency(device: CudaDevice) -> Outcome:
    from gpulab.kernels import launch

    cp = device.cupy
    words = 1024
    order = list(range(words))
    random.Random(7).shuffle(order)
    order.remove(0)
    order.insert(0, 0)  # the kernel starts at word 0
    table = cp.asarray(launch.cycle_successors(order), dtype=cp.uint32)
    steps = 1 << 20
    per_load: list[float] = []
    with watch_telemetry(device) as watch:
        for _ in range(5):
            reached, cycles = launch.smem_chase(table, steps)
            if reached != order[steps % words]:
                raise WrongResult(
                    f"the shared-memory chase ended at word {reached}, the cycle "
                    f"says {order[steps % words]}"
                )
            per_load.append(cycles / steps)
    cycles_per_load = float(statistics.median(per_load))
    clock, clock_how = sm_clock_mhz(device, watch.telemetry)
    readings = [
        Reading(
            "smem_latency_cycles",
            "shared-memory load latency",
            round(cycles_per_load, 1),
            "cycles",
            "SM clock cycles per dependent load (clock64), one thread",
            detail=f"median of 5 runs of {steps:,} loads through a random cycle of {words} words",
        )
    ]
    if clock:
        readings.append(
            Reading(
                "smem_latency_ns",
                "shared-memory load latency",
                round(cycles_per_load / clock * 1000, 2),
                "ns",
                "cycles / SM clock",
                detail=f"{clock_how}: {clock:.0f} MHz",
            )
        )
    return Outcome(
        f"{cycles_per_load:.1f} cycles per dependent shared-memory load",
        readings,
        [],
        watch.telemetry,
    )


_BANK_CASES: tuple[tuple[str, int, bool], ...] = (
    ("1", 1, False),
    ("2", 2, False),
    ("4", 4, False),
    ("8", 8, False),
    ("16", 16, False),
    ("32", 32, False),
    ("64", 64, False),
    ("33 (padded)", 33, False),
    ("broadcast", 1, True),
)


def smem_bank_conflicts() -> ProbeResult:
    """Time per warp-wide shared-memory load at strides 1-64, padded, and broadcast."""
    return measure("smem_bank_conflicts", _smem_bank_conflicts)


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
            run = functools.partial(
                launch.smem_bank_access,
                table,
                out,
                stride=stride,
                broadcast=broadcast,
                iters=iters,
                blocks=blocks,
                threads=threads,
            )
            ms = median_ms(launch.time_ms(run, iters=3, repeats=5))
            want = cp.zeros_like(lanes) if broadcast else (lanes * stride) % bank_words
            check_equal(cp, out, want, f"bank-conflict kernel at stride {name}")
            ns[name] = ms * 1e6 / (warps_per_sm * iters)
    base = ns["1"]
    rows = tuple(
        (
            name,
            1 if broadcast else bank_conflict_ways(stride),
            round(ns[name], 3),
            ratio(ns[name], base),
        )
        for name, stride, broadcast in _BANK_CASES
    )
    convention = "time per warp-wide load divided by that at stride 1"
    readings = [
        Reading(
            f"slowdown_stride_{name}",
            f"stride {name} / stride 1",
            ratio(ns[name], base),
            "x",
            convention,
            detail=f"{bank_conflict_ways(stride)} lanes per bank",
        )
        for name, stride, _ in _BANK_CASES[1:7]
    ]
    readings.append(
        Reading(
            "slowdown_stride_33_padded",
            "stride 33 (padded) / stride 1",
            ratio(ns["33 (padded)"], base),
            "x",
            convention,
            detail="a 32 x 32 tile with rows of 33 words, read down a column",
        )
    )
    readings.append(
        Reading(
            "slowdown_broadcast",
            "all lanes one word / stride 1",
            ratio(ns["broadcast"], base),
            "x",
            convention,
            detail="every lane reads word 0: one access, broadcast",
        )
    )
    banks = bank_count(
        {
            stride: ns[name] / base
            for name, stride, broadcast in _BANK_CASES
            if not broadcast and stride & (stride - 1) == 0
        }
    )
    readings.append(
        Reading(
            "bank_count",
            "shared-memory banks",
            banks,
            "banks",
            "smallest power-of-two stride whose slowdown is within 10 % of "
            "the largest (every lane in one bank)",
        )
        if banks
        else Reading.failed(
            "bank_count", "shared-memory banks", "the slowdown never levelled off up to stride 64"
        )
    )
    table_out = Table(
        f"Shared-memory loads, {warps_per_sm} warps per SM, {iters:,} dependent loads per lane",
        ("stride", "lanes per bank", "time per warp-wide load", "slowdown"),
        rows,
        ("4-byte words", "lanes", "ns per SM", "x"),
    )
    return Outcome(
        f"stride 2: {ns['2'] / base:.1f}x, stride 32: {ns['32'] / base:.1f}x, "
        f"padded: {ns['33 (padded)'] / base:.2f}x the time of stride 1",
        readings,
        [table_out],
        watch.telemetry,
    )
