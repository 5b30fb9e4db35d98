"""Arithmetic microbenchmarks: warp divergence and the FP32 FMA peak.

`warp_divergence` times branches that split a warp against the same work
on one path; `fp32_peak` runs independent FMA chains on every lane against
the peak at the SM clock seen. Matrix multiply (cuBLAS) is in `_matmul`.

The pure helpers at the top (TFLOPS, FP32 lanes per SM) need no GPU; the
probes import CuPy and NumPy only when they run. How every microbenchmark
checks, times and reports its work is described in `gpulab.probes.micro`.
"""

from __future__ import annotations

import functools
from typing import Any

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
from gpulab.probes.model import ProbeResult, Reading, Table

__all__ = ["fp32_lanes_per_sm", "fp32_peak", "tflops", "warp_divergence"]


# ---------------------------------------------------------------------------
# Pure helpers: no GPU needed, tested exactly.
# ---------------------------------------------------------------------------


def tflops(flops: float, ms: float) -> float:
    """Floating-point operations per millisecond as TFLOPS (10^12 per second)."""
    return flops / (ms * 1e-3) / 1e12


# FP32 lanes per SM by compute capability (CUDA C Programming Guide, arithmetic throughput).
_FP32_LANES = {
    (7, 0): 64,
    (7, 2): 64,
    (7, 5): 64,
    (8, 0): 64,
    (8, 6): 128,
    (8, 7): 128,
    (8, 9): 128,
    (9, 0): 128,
    (10, 0): 128,
    (10, 3): 128,
    (12, 0): 128,
    (12, 1): 128,
}


def fp32_lanes_per_sm(major: int, minor: int) -> int | None:
    """FP32 FMA lanes per SM for a compute capability, None where gpulab does not know it."""
    return _FP32_LANES.get((major, minor))


# ---------------------------------------------------------------------------
# Arithmetic: divergence, FP32 peak
# ---------------------------------------------------------------------------

# (pattern, mask of lanes on path B, uniform FMAs per divergent FMA before the branch)
_DIVERGENCE: tuple[tuple[str, int, int], ...] = (
    ("no divergence, all lanes on path A", 0x00000000, 0),
    ("no divergence, all lanes on path B", 0xFFFFFFFF, 0),
    ("two ways: lanes 0-15 A, 16-31 B", 0xFFFF0000, 0),
    ("one lane out: lane 0 on B", 0x00000001, 0),
    ("uniform, with a 9x uniform prefix", 0x00000000, 9),
    ("two ways for a tenth of the work", 0xFFFF0000, 9),
)


def warp_divergence() -> ProbeResult:
    """The cost of branches that split a warp: half/half, one lane out, a tenth of the work."""
    return measure("warp_divergence", _warp_divergence)


def _warp_divergence(device: CudaDevice) -> Outcome:
    from gpulab.kernels import launch

    cp = device.cupy
    threads = 256
    blocks = full_grid(device, threads)
    iters = 1 << 16
    lanes = cp.arange(blocks * threads, dtype=cp.uint32) % 32
    outs: dict[tuple[int, int], Any] = {}
    ms: dict[str, float] = {}
    with watch_telemetry(device) as watch:
        for name, mask, prefix in _DIVERGENCE:
            out = cp.empty(blocks * threads, dtype=cp.float32)
            run = functools.partial(
                launch.divergent_paths,
                out,
                mask=mask,
                iters=iters,
                uniform_iters=prefix * iters,
                blocks=blocks,
                threads=threads,
            )
            ms[name] = median_ms(launch.time_ms(run, iters=3, repeats=5))
            outs[(mask, prefix)] = out
    # Every lane must end where a run with all lanes on its path ends.
    reference_b9 = cp.empty(blocks * threads, dtype=cp.float32)
    launch.divergent_paths(
        reference_b9,
        mask=0xFFFFFFFF,
        iters=iters,
        uniform_iters=9 * iters,
        blocks=blocks,
        threads=threads,
    )
    on_path = {0: outs[(0xFFFFFFFF, 0)], 9: reference_b9}
    for (mask, prefix), out in outs.items():
        on_b = ((mask >> lanes) & 1).astype(bool)
        want = cp.where(on_b, on_path[prefix], outs[(0, prefix)])
        check_equal(cp, out, want, f"divergence kernel, mask {mask:#010x}, prefix {prefix}")
    names = [name for name, _, _ in _DIVERGENCE]
    uniform, all_b, two_way, one_lane, uniform_long, tenth = (ms[n] for n in names)
    rows = tuple(
        (
            name,
            bin(mask).count("1"),
            round(ms[name], 3),
            ratio(ms[name], uniform_long if prefix else uniform),
        )
        for name, mask, prefix in _DIVERGENCE
    )
    convention = "kernel time divided by the same kernel with every lane on path A"
    readings = [
        Reading(
            "slowdown_two_way",
            "16/16 split",
            ratio(two_way, uniform),
            "x",
            convention,
            detail=f"path B alone takes {ratio(all_b, uniform)}x path A",
        ),
        Reading("slowdown_one_lane", "one lane out", ratio(one_lane, uniform), "x", convention),
        Reading(
            "slowdown_tenth_two_way",
            "16/16 split in a tenth of the work",
            ratio(tenth, uniform_long),
            "x",
            convention,
            detail="every lane first runs 9 units of path A together, then 1 unit split",
        ),
    ]
    table = Table(
        f"Divergent paths, {iters:,} dependent FMAs per path per lane",
        ("pattern", "lanes on path B", "time", "slowdown"),
        rows,
        ("", "of 32", "ms", "x"),
    )
    return Outcome(
        f"a 16/16 split costs {two_way / uniform:.2f}x, one lane out {one_lane / uniform:.2f}x",
        readings,
        [table],
        watch.telemetry,
    )


def fp32_peak() -> ProbeResult:
    """Independent FP32 FMA chains on every lane, against the peak at the clock seen."""
    return measure("fp32_peak", _fp32_peak)


def _fp32_peak(device: CudaDevice) -> Outcome:
    from gpulab.kernels import launch

    cp = device.cupy
    threads = 256
    blocks = full_grid(device, threads)
    out = cp.empty(blocks * threads, dtype=cp.float32)
    chains = 8

    def timed(iters: int, repeats: int) -> float:
        run = functools.partial(launch.fma_chains, out, iters=iters, blocks=blocks, threads=threads)
        ms = median_ms(launch.time_ms(run, iters=2, repeats=repeats))
        if not bool(cp.all(out == 28 + 4 * iters)):
            raise WrongResult(f"FMA kernel: expected every thread to end at {28 + 4 * iters}")
        return ms

    with watch_telemetry(device) as watch:
        probe_iters = 1 << 12
        first = timed(probe_iters, 1)
        iters = int(min(1 << 21, max(probe_iters, probe_iters * 50 / max(first, 1e-3))))
        iters -= iters % 16
        ms = timed(iters, 5)
    flops = 2.0 * chains * iters * blocks * threads
    measured = tflops(flops, ms)
    readings = [
        Reading(
            "fp32_tflops",
            "FP32 FMA throughput",
            round(measured, 2),
            "TFLOPS",
            "FMA = 2 FLOPs",
            detail=f"{blocks} blocks x {threads} threads, "
            f"{chains} independent chains of {iters:,} FMAs each; median of 5",
        )
    ]
    clock = watch.telemetry.sm_clock_mhz
    major, minor = prop(device, "major"), prop(device, "minor")
    lanes = fp32_lanes_per_sm(major, minor)
    if clock:
        readings.append(
            Reading(
                "sm_clock_mhz",
                "SM clock during the run",
                clock[1],
                "MHz",
                detail=f"NVML, {clock[0]:.0f}-{clock[1]:.0f} MHz seen",
            )
        )
    else:
        readings.append(
            Reading.not_supported("sm_clock_mhz", "SM clock during the run", "NVML gave no sample")
        )
    if clock and lanes:
        peak = prop(device, "multiProcessorCount") * lanes * 2 * clock[1] * 1e6 / 1e12
        readings.append(
            Reading(
                "fp32_peak_at_clock_tflops",
                "peak at the clock seen",
                round(peak, 2),
                "TFLOPS",
                "SMs x FP32 lanes x 2 x SM clock",
                detail=f"{lanes} FP32 lanes per SM (compute capability {major}.{minor})",
            )
        )
        readings.append(
            Reading(
                "fraction_of_peak", "measured / peak at the clock seen", ratio(measured, peak), "x"
            )
        )
    return Outcome(f"{measured:.1f} TFLOPS FP32 (FMA = 2 FLOPs)", readings, [], watch.telemetry)
