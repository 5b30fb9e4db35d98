"""The pointer-chase checks' own answers: footprints, plateaus, and the probe's chase.

The pure part needs no GPU: `own_footprints` and `own_plateaus` are the checks'
readings of the rules the notebook states (doubling footprints clipped to a
quarter of the free memory; plateaus as runs of latencies within 15 % of the
run's first), `own_plan` is the probe's chase plan (its untimed and timed
loads; the notebook flushes the L2 before every chase), `synthetic_curve`
draws a latency curve whose plateaus are known by construction, noise and a
slow rise included, and `recorded_curve` is the probe's curve recorded on
gpulab's H200. `check_footprints` picks the footprint the checks measure in
each plateau from the GPU's own L2 size and free memory.

The GPU part, `own_chase_cycles`, is the `pointer_chase_latency` probe's chase
at one footprint: its random cycle of 128-byte lines (`launch.cycle_table`),
its plan (`chase_plan`: one untimed lap for a footprint that fits in the L2,
else a flush of the L2 and one lap), and its kernel (chase.cu, a pure
``p = *p``); with ``cold=True`` it flushes and times one lap without the
untimed one, the warm-cache pitfall on purpose. CuPy is imported only there.
Only the checks call these; the learner writes their own.
"""

from __future__ import annotations

import importlib
import random
import statistics
from collections.abc import Sequence
from typing import Any

from gpulab.probes.micro import chase_plan

__all__ = [
    "LINE",
    "MIN_STEPS",
    "RUN_TOLERANCE",
    "check_footprints",
    "free_and_l2",
    "own_chase_cycles",
    "own_footprints",
    "own_plan",
    "own_plateaus",
    "recorded_curve",
    "synthetic_curve",
]

KiB, MiB, GiB = 1 << 10, 1 << 20, 1 << 30
LINE = 128  # bytes between the chain's entries: one cache line each
MIN_STEPS = 1 << 16  # the fewest timed loads (chase_plan's)
RUN_TOLERANCE = 0.15  # a plateau's latencies lie within this of its first one
L1_FOOTPRINT = 32 * KiB  # inside L1 on every GPU since Volta, whatever the carve-out
LARGEST = GiB

Plateau = dict[str, float | int]


def _pow2_floor(n: int) -> int:
    return 1 << (max(n, 1).bit_length() - 1)


def _pow2_ceil(n: int) -> int:
    return 1 << max(n - 1, 0).bit_length()


def own_footprints(lo: int, hi: int, free_bytes: int) -> list[int]:
    """lo, 2 lo, 4 lo, ... up to hi, leaving out those above a quarter of free_bytes."""
    sizes, size = [], lo
    while 0 < size <= hi:
        if size <= free_bytes // 4:
            sizes.append(size)
        size *= 2
    return sizes


def own_plan(footprint: int, l2_bytes: int) -> list[int]:
    """[untimed loads, timed loads] after a flush of the L2: the probe's plan, as plain data.

    A footprint within the L2 gets one untimed lap and at least MIN_STEPS
    timed loads; a larger one no untimed lap and exactly one timed lap.
    """
    warm, steps, _flush = chase_plan(footprint, l2_bytes, LINE)
    return [warm, steps]


def own_plateaus(curve: Sequence[Sequence[float]]) -> dict[str, Plateau | None]:
    """The plateaus of a latency curve, by the notebook's rule.

    Sorted by footprint, a run takes in each next point whose latency lies
    within RUN_TOLERANCE of the run's first; a run of two or more points is a
    plateau, its latency the median, its end the last footprint. L1 is the
    first plateau, L2 the second, HBM the last of three or more.
    """
    points = sorted((int(size), float(cycles)) for size, cycles in curve)
    runs: list[list[tuple[int, float]]] = []
    for point in points:
        if runs and abs(point[1] - runs[-1][0][1]) <= RUN_TOLERANCE * runs[-1][0][1]:
            runs[-1].append(point)
        else:
            runs.append([point])
    found: list[Plateau] = [
        {"cycles": float(statistics.median(c for _, c in run)), "last": run[-1][0]}
        for run in runs
        if len(run) >= 2
    ]
    return {
        "l1": found[0] if found else None,
        "l2": found[1] if len(found) >= 2 else None,
        "hbm": found[-1] if len(found) >= 3 else None,
    }


def synthetic_curve(
    draw: random.Random, *, hbm: bool = True, far: bool = False
) -> tuple[list[list[float]], dict[str, Plateau | None]]:
    """A latency curve from 16 KiB with known plateaus, and the plateaus it was made with.

    L1 (28-45 cycles) ends at 64-256 KiB, L2 (180-330) at 4-32 MiB (later if
    L1 left no room), HBM (1.9-2.6 times L2) runs to 256 MiB-1 GiB with a slow
    rise of up to 6 %. Between two levels stands one step point at their
    geometric mean (on four curves in five) or none; with `far`, a plateau of
    two or three points at 1.45-1.6 times L2 comes before HBM (then 1.6-1.8
    times that); without `hbm`, the curve stops at the end of L2. Each point
    carries up to 2 % of noise either way: every run stays within 13 % of its
    first point and every step lies at least 21 % from its neighbours, so any
    reading of the rule (against the run's first point, its median, or the
    point before) finds the same plateaus.
    """
    size = 16 * KiB
    curve: list[list[float]] = []

    def noisy(value: float) -> float:
        return round(value * draw.uniform(0.98, 1.02), 1)

    def plateau(level: float, last: int, rise: float = 0.0) -> Plateau:
        nonlocal size
        first, values = size, []
        while size <= last:
            share = (size.bit_length() - first.bit_length()) / max(
                1, last.bit_length() - first.bit_length()
            )
            values.append(noisy(level * (1 + rise * share)))
            curve.append([size, values[-1]])
            size *= 2
        return {"cycles": float(statistics.median(values)), "last": last}

    def step(low: float, high: float) -> None:
        nonlocal size
        if draw.random() < 0.8:
            curve.append([size, noisy((low * high) ** 0.5)])
            size *= 2

    l1, l2 = draw.uniform(28, 45), draw.uniform(180, 330)
    want: dict[str, Plateau | None] = {"l1": None, "l2": None, "hbm": None}
    want["l1"] = plateau(l1, draw.choice((64, 128, 256)) * KiB)
    step(l1, l2)
    want["l2"] = plateau(l2, max(size * 2, draw.choice((4, 8, 16, 32)) * MiB))
    if not hbm:
        return curve, want
    below = l2
    if far:
        below = l2 * draw.uniform(1.45, 1.6)
        plateau(below, size * draw.choice((2, 4)))
        memory = below * draw.uniform(1.6, 1.8)
    else:
        memory = l2 * draw.uniform(1.9, 2.6)
    step(below, memory)
    last = max(size * 2, draw.choice((256, 512, 1024)) * MiB)
    want["hbm"] = plateau(memory, last, rise=draw.uniform(0.0, 0.06))
    return curve, want


# -- on the GPU ------------------------------------------------------------------------------


def _cupy() -> Any:
    return importlib.import_module("cupy")


def free_and_l2() -> tuple[int, int]:
    """(free bytes, L2 bytes) of the current GPU, as CUDA reports them."""
    cp = _cupy()
    free, _total = cp.cuda.Device().mem_info
    device = cp.cuda.Device().id
    return int(free), int(cp.cuda.runtime.getDeviceProperties(device)["l2CacheSize"])


def check_footprints(l2_bytes: int, free_bytes: int) -> dict[str, int]:
    """The footprint the checks measure in each plateau, from this GPU's L2 and free memory.

    L1: 32 KiB. L2: the largest power of two within a quarter of the L2 (inside
    the near partition's share, on GPUs whose L2 has two). HBM: the smallest
    power of two of at least four times the L2, within an eighth of the free
    memory and 1 GiB.
    """
    hbm = min(_pow2_ceil(4 * l2_bytes), _pow2_floor(free_bytes // 8), LARGEST)
    return {"l1": L1_FOOTPRINT, "l2": _pow2_floor(l2_bytes // 4), "hbm": hbm}


def _flush_l2(cp: Any, l2_bytes: int) -> None:
    """Write twice the L2's size of other data, so that none of a chase table stays in it."""
    scratch = cp.empty(_pow2_ceil(2 * l2_bytes) // 4, dtype=cp.uint32)
    scratch.fill(0x5A5A5A5A)
    cp.cuda.get_current_stream().synchronize()


def own_chase_cycles(footprint: int, *, cold: bool = False, seed: int | None = None) -> float:
    """Cycles per dependent load of the probe's chase over `footprint` bytes.

    The probe's plan: a footprint within the L2 gets one untimed lap and at
    least MIN_STEPS timed loads; a larger one a flush of the L2 and one timed
    lap. ``cold=True``: a flush, then one timed lap with no untimed one, every
    load the first touch of its line since the flush. The chase must end on
    the line its cycle says, or this raises RuntimeError.
    """
    from gpulab.kernels import launch

    cp = _cupy()
    _free, l2 = free_and_l2()
    lines = footprint // LINE
    table = cp.zeros(footprint // 8, dtype=cp.uint64)
    seed = random.randrange(1 << 30) if seed is None else seed
    order = launch.cycle_table(table, lines, seed=seed)
    warm, steps, flush = chase_plan(footprint, l2, LINE)
    if cold:
        warm, steps, flush = 0, lines, True
    if flush:
        _flush_l2(cp, l2)
    reached, cycles = launch.chase(table, int(order[0]), warm_steps=warm, steps=steps)
    expected = int(order[(warm + steps) % lines])
    if reached != expected:
        raise RuntimeError(
            f"the checks' own chase of {footprint} bytes ended at line {reached}, "
            f"its cycle says {expected}"
        )
    return cycles / steps


def recorded_curve() -> list[list[float]]:
    """[footprint, cycles per load] of the pointer_chase_latency probe recorded on gpulab's
    H200 (empty where this copy ships no recording)."""
    from gpulab.probes.recorded import recorded_results

    result = recorded_results().get("pointer_chase_latency")
    if result is None or not result.tables:
        return []
    table = result.tables[0]
    size, cycles = table.columns.index("footprint"), table.columns.index("latency")
    return [[int(str(row[size])), float(str(row[cycles]))] for row in table.rows]
