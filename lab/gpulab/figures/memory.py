"""Figures of the memory hierarchy: latency by level and footprint, bandwidth by
launch shape, occupancy and stride, shared-memory bank conflicts."""

from __future__ import annotations

import re

from gpulab.figures.common import binary_size, number, pairs, percent, power_ticks
from gpulab.figures.data import Data, Figure
from gpulab.figures.model import Axis, Line, Missing, Plot, Series

__all__ = ["MEMORY_FIGURES"]

CHASE = "pointer_chase_latency"
_CYCLES = Axis("latency", "cycles per load", log=True)
_BASELINE_KEY = re.compile(r"^(default|cg)_(\d+)KB_cycles$")


def _run_size(kb: float) -> str:
    """A footprint in the baseline's KB, written as the run writes sizes (1 MB = 1024 KB)."""
    for unit, size in (("GB", 1024**2), ("MB", 1024)):
        if kb >= size:
            return f"{kb / size:g} {unit}"
    return f"{kb:g} KB"


def _latency_ladder(d: Data) -> Plot:
    levels = [
        ("shared memory", "smem_latency", "smem_latency"),
        ("L1", CHASE, "l1_latency"),
        ("L2", CHASE, "l2_latency"),
        ("HBM", CHASE, "hbm_latency"),
    ]
    names, cycles, notes = [], [], []
    for name, probe, key in levels:
        cycles.append(d.number(probe, f"{key}_cycles"))
        names.append(name)
        ns = d.optional_number(probe, f"{key}_ns")
        notes.append(f"{ns:.3g} ns" if ns is not None else "")
    return Plot(
        (
            Series(
                "cycles per dependent load, one thread",
                tuple(names),
                tuple(cycles),
                "bars",
                notes=tuple(notes),
            ),
        )
    )


def _latency_footprint(d: Data) -> Plot:
    rows = d.table(CHASE, "footprint", "latency")
    x, y = pairs(rows, "footprint", "latency", "the pointer chase")
    lines = []
    for key, level in (("l1", "L1"), ("l2", "L2"), ("hbm", "HBM")):
        value = d.optional_number(CHASE, f"{key}_latency_cycles")
        if value is not None:
            lines.append(
                Line(
                    value,
                    f"{level}: {value:g} cycles",
                    role="measured",
                    source=f"the probe's reading {key}_latency_cycles",
                )
            )
    l2 = d.optional_number("cuda_properties", "l2CacheSize")
    if l2 is not None:
        lines.append(
            Line(
                l2,
                f"L2 size {binary_size(l2)}",
                axis="x",
                role="limit",
                source="CUDA's cudaDeviceProp.l2CacheSize",
            )
        )
    return Plot(
        (Series("one thread, a random cycle of 128-byte lines", x, y, "line"),), tuple(lines)
    )


def _warm_cache_pitfall(d: Data) -> Plot:
    latency = d.baseline_data().get("latency")
    if not isinstance(latency, dict):
        raise Missing("the baseline has no latency section")
    found: dict[str, list[tuple[float, float]]] = {"default": [], "cg": []}
    for key, value in latency.items():
        match, cycles = _BASELINE_KEY.match(key), number(value)
        if match and cycles is not None:
            found[match.group(1)].append((float(match.group(2)), cycles))
    if not found["default"] or not found["cg"]:
        raise Missing("the baseline's latency section lacks the default or the __ldcg chase")
    series = []
    for variant, label in (
        ("default", "default loads (L1, then L2, then HBM)"),
        ("cg", "loads with __ldcg (L2 only), run right after"),
    ):
        points = sorted(found[variant])
        series.append(Series(label, tuple(p[0] for p in points), tuple(p[1] for p in points)))
    return Plot(tuple(series))


def _copy_launch_shapes(d: Data) -> Plot:
    rows = d.table("hbm_bandwidth", "kernel", "threads per block", "blocks", "bandwidth")
    names, rates = [], []
    for row in rows:
        rate = number(row["bandwidth"])
        if rate is None:
            continue
        threads, blocks = number(row["threads per block"]), number(row["blocks"])
        shape = f"{threads:g} × {blocks:,.0f}" if threads is not None and blocks is not None else ""
        names.append(f"{row['kernel']}, {shape}".rstrip(", "))
        rates.append(rate)
    if not rates:
        raise Missing("the hbm_bandwidth table has no bandwidths")
    lines = []
    memcpy = d.optional_number("hbm_bandwidth", "memcpy_bandwidth")
    if memcpy is not None:
        lines.append(
            Line(
                memcpy,
                f"cudaMemcpy: {memcpy:g} GB/s",
                role="measured",
                source="the same run's device-to-device cudaMemcpy",
            )
        )
    sheet = d.datasheet("memory_bandwidth", "GB/s")
    if sheet is not None:
        lines.append(sheet)
    return Plot(
        (Series("copy kernel, bytes read + bytes written", tuple(names), tuple(rates), "bars"),),
        tuple(lines),
    )


def _occupancy_bandwidth(d: Data) -> Plot:
    rows = d.table("occupancy_bandwidth", "warps per SM", "bandwidth")
    x, y = pairs(rows, "warps per SM", "bandwidth", "the occupancy sweep")
    most = d.optional_number("cuda_properties", "maxWarpsPerMultiProcessor")
    notes = tuple(percent(w / most) for w in x) if most else ()
    lines = []
    sheet = d.datasheet("memory_bandwidth", "GB/s")
    if sheet is not None:
        lines.append(sheet)
    label = "copy_float4, bytes read + bytes written" + (
        " (labels: occupancy, of the most warps an SM holds)" if notes else ""
    )
    return Plot((Series(label, x, y, notes=notes),), tuple(lines))


def _stride_sweep(d: Data) -> Plot:
    rows = d.table(
        "stride_sweep",
        "stride",
        "useful bandwidth",
        "fraction of stride 1",
        "bytes moved per useful byte",
    )
    x, y = pairs(rows, "stride", "useful bandwidth", "the stride sweep")
    by_stride = {number(r["stride"]): r for r in rows}
    notes = tuple(
        percent(f) if (f := number(by_stride[s]["fraction of stride 1"])) is not None else ""
        for s in x
    )
    series = [Series("measured: useful bytes read per second", x, y, notes=notes)]
    first = dict(zip(x, y, strict=True)).get(1.0)
    moved = [(s, number(by_stride[s]["bytes moved per useful byte"])) for s in x]
    expected = [(s, first / m) for s, m in moved if first is not None and m]
    if expected:
        series.append(
            Series(
                "expected from 32-byte sectors: stride-1 rate ÷ bytes moved per useful byte",
                tuple(s for s, _ in expected),
                tuple(v for _, v in expected),
                role="computed",
            )
        )
    return Plot(tuple(series))


def _bank_conflicts(d: Data) -> Plot:
    rows = d.table("smem_bank_conflicts", "stride", "lanes per bank", "slowdown")
    names, slow, lanes = [], [], []
    for row in rows:
        value, degree = number(row["slowdown"]), number(row["lanes per bank"])
        if value is None or degree is None:
            continue
        names.append(str(row["stride"]))
        slow.append(value)
        lanes.append(degree)
    if not names:
        raise Missing("the bank-conflict table has no slowdowns")
    return Plot(
        (
            Series("measured slowdown against stride 1", tuple(names), tuple(slow), "bars"),
            Series(
                "lanes per bank: the conflict degree",
                tuple(names),
                tuple(lanes),
                "bars",
                role="computed",
            ),
        )
    )


MEMORY_FIGURES = (
    Figure(
        "latency-ladder",
        "Load latency, level by level",
        "Cycles for one dependent load, one thread, from shared memory out to HBM: each "
        "level further out costs several times more. Nanoseconds are cycles divided by the "
        "SM clock of the run.",
        Axis("level"),
        _CYCLES,
        _latency_ladder,
        probes=(CHASE, "smem_latency"),
    ),
    Figure(
        "latency-footprint",
        "Latency against footprint: the L1, L2 and HBM plateaus",
        "A pointer chase through a random cycle of 128-byte lines, one dependent load at a "
        "time. Each plateau is a level of the hierarchy; where a plateau ends is that "
        "level's capacity as the hardware behaves. Footprints up to the L2 size are warmed "
        "by one untimed lap; larger ones are timed over a full lap after flushing the L2.",
        Axis("footprint", log=True, ticks=power_ticks(4, 5, 15, binary_size)),
        _CYCLES,
        _latency_footprint,
        probes=(CHASE,),
        optional=("cuda_properties",),
    ),
    Figure(
        "warm-cache-pitfall",
        "The warm-cache pitfall",
        "The same chase with default loads and with __ldcg (cached in L2 only), in one run. "
        "From 128 MB the default chase reaches HBM, but the __ldcg chase stays near 287 "
        "cycles: it touched only about 21,000 lines, and the default chase run just before "
        "had left exactly those in L2. A latency probe must touch more lines than the cache "
        "holds, or flush it between variants.",
        Axis("footprint", log=True, ticks=power_ticks(4, 2, 10, _run_size)),
        Axis("latency", "cycles per load"),
        _warm_cache_pitfall,
        baseline=True,
    ),
    Figure(
        "copy-launch-shapes",
        "Copy bandwidth by launch shape",
        "A float4 copy of a buffer far larger than the L2, counting bytes read + bytes "
        "written, launched as one full wave of a grid-stride loop and as one tile per block "
        "at three block sizes (threads × blocks), against cudaMemcpy in the same run and the "
        "datasheet's figure.",
        Axis("kernel, threads per block × blocks"),
        Axis("bandwidth", "GB/s"),
        _copy_launch_shapes,
        probes=("hbm_bandwidth",),
        horizontal=True,
    ),
    Figure(
        "occupancy-bandwidth",
        "Copy bandwidth against resident warps per SM",
        "The same copy kernel with fewer warps resident per SM (dynamic shared memory caps "
        "the blocks that fit, checked with CUDA's occupancy API). Fewer warps keep fewer "
        "bytes in flight, and HBM's latency is no longer hidden.",
        Axis("resident warps per SM", log=True, ticks=power_ticks(2, 2, 6)),
        Axis("bandwidth", "GB/s"),
        _occupancy_bandwidth,
        probes=("occupancy_bandwidth",),
        optional=("cuda_properties",),
    ),
    Figure(
        "stride-sweep",
        "Useful bandwidth against access stride",
        "Each lane reads one 4-byte word every stride words of a buffer far larger than "
        "the L2; only the words read count as useful bytes. Labels give the share of the "
        "stride-1 rate. The dotted line is what 32-byte sectors alone predict: past stride 8 "
        "every word costs one whole sector, so it stays flat; where the measured rate falls "
        "below it, DRAM pays for more than the sectors.",
        Axis("stride", "4-byte words", log=True, ticks=power_ticks(2, 0, 6)),
        Axis("useful bandwidth", "GB/s", log=True),
        _stride_sweep,
        probes=("stride_sweep",),
    ),
    Figure(
        "bank-conflicts",
        "Shared-memory bank conflicts: slowdown by stride",
        "Time per warp-wide shared-memory load against stride 1, with 64 warps per SM. A "
        "stride of s words puts gcd(s, 32) lanes on one bank, and the load takes that many "
        "turns; padding a 32-word row to 33, or every lane reading one word (a broadcast), "
        "costs nothing.",
        Axis("stride (4-byte words)"),
        Axis("slowdown", "×", log=True, ticks=power_ticks(2, 0, 5)),
        _bank_conflicts,
        probes=("smem_bank_conflicts",),
    ),
)
