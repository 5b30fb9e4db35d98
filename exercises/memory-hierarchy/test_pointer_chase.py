"""Checks of the pointer-chase exercise (lesson: the GPU memory hierarchy).

Parts 1 to 3 need no GPU. `make_chain` is walked from entry 0 on chains of
1 to 4096 entries: it must be one cycle through every entry, in a random
order, the same for the same seed. `footprints` and `chase_plan` are compared
with the checks' own reading of the rules the notebook states (the plan is
gpulab's `pointer_chase_latency` probe's). `find_plateaus` gets latency
curves drawn afresh on every run, whose plateaus are known by construction
(noise, step points and a slow rise of HBM included), and the curve gpulab's
probe recorded on its H200.

Parts 4 and 5 run on the GPU. The checks pick one footprint in each plateau
from this GPU's own L2 size and free memory (32 KiB; the largest power of two
within a quarter of the L2; the smallest of at least four times the L2),
call your `chase_cycles` there, and in the same run chase the same footprints
themselves with gpulab's probe kernel (a pure ``p = *p``, warmed or flushed
as the probe's plan says). Your L1 figure must lie within 10 % of theirs,
your L2 and HBM figures within 15 %. `cold_vs_warm` at the L2 footprint is
compared the same way with the checks' own cold lap (within 25 %) and warm
chase (within 15 %). Every figure is recorded beside your prediction of it.
The checks' own code is in `gpulab.grading.checks.reference.pointer_chase`.
"""

from __future__ import annotations

import math
import random
from typing import Any

import pytest

from gpulab.grading.checks.reference.pointer_chase import (
    check_footprints,
    free_and_l2,
    own_chase_cycles,
    own_footprints,
    own_plan,
    own_plateaus,
    recorded_curve,
    synthetic_curve,
)

KiB, MiB, GiB = 1 << 10, 1 << 20, 1 << 30
LEVELS = ("l1", "l2", "hbm")
NAMES = {"l1": "L1", "l2": "L2", "hbm": "HBM"}
TOLERANCE = {"l1": 0.10, "l2": 0.15, "hbm": 0.15}
COLD_TOLERANCE = 0.25
CYCLES_CLOSE = 0.03  # a plateau's latency against the curve's own median of it
LINE_BYTES = 128     # the chain's entries are a cache line apart


# -- part 1: the chain ----------------------------------------------------------------------
def chain_problem(got: Any, n: int, stride: int, call: str) -> str | None:
    """What is wrong with the chain `got` of make_chain(n, stride, ...), or None."""
    if not isinstance(got, list) or len(got) != n or not all(
            isinstance(v, int) and not isinstance(v, bool) for v in got):
        return (f"{call} returned {got!r:.100}: want a list of {n} plain ints, the byte offset "
                "of the entry that follows each entry")
    span = n * stride
    odd = [(i, v) for i, v in enumerate(got) if v % stride or not 0 <= v < span]
    if odd:
        i, v = odd[0]
        hint = (f"they look like entry numbers: an offset is the entry's number times "
                f"stride_bytes ({stride})" if stride > 1 and all(0 <= x < n for x in got) else
                f"offsets are multiples of stride_bytes ({stride}) below {span}")
        return (f"{call}: entry {i} is followed by offset {v}, which is no entry's start: "
                f"{hint}")
    successor = [v // stride for v in got]
    first_of: dict[int, int] = {}
    for i, after in enumerate(successor):
        if after in first_of:
            return (f"{call}: entries {first_of[after]} and {i} are both followed by entry "
                    f"{after}, so some entry follows none and the chase can never reach it: "
                    "every entry must come after exactly one other")
        first_of[after] = i
    seen, at = 0, 0
    while True:
        seen, at = seen + 1, successor[at]
        if at == 0:
            break
    if seen < n:
        return (f"{call}: following the chain from entry 0 comes back to entry 0 after "
                f"{seen} steps, having visited {seen} of the {n} entries; the chain falls into "
                f"{_cycles(successor)} separate cycles. A chase that starts in a short cycle "
                "never leaves it and stays in L1 at every footprint. A random permutation used "
                "as the successor table is not one cycle: choose the order in which the chase "
                "visits the entries, and link each to the next")
    if n >= 64:
        neighbours = sum(abs(v // stride - i) in (1, n - 1) for i, v in enumerate(got))
        steps: dict[int, int] = {}
        for i, v in enumerate(got):
            steps[(v // stride - i) % n] = steps.get((v // stride - i) % n, 0) + 1
        common, count = max(steps.items(), key=lambda item: item[1])
        if neighbours > n // 8:
            return (f"{call}: {neighbours} of {n} entries are followed by their neighbour: the "
                    "chain runs in order (sequential). In order, neighbouring lines share DRAM "
                    "rows (the row is already open) and TLB entries, which makes a miss look "
                    "cheaper than a random one. Visit the entries in a random order")
        if count > n // 8:
            return (f"{call}: {count} of {n} entries are followed by the entry {common} "
                    "further on: a fixed stride walks the memory in order as surely as stride "
                    "1, sharing DRAM rows and TLB entries. Visit the entries in a random order")
    return None


def _cycles(successor: list[int]) -> int:
    left, count = set(range(len(successor))), 0
    while left:
        at = left.pop()
        count += 1
        while (at := successor[at]) in left:
            left.remove(at)
    return count


CHAIN_CASES = ((1, 128, 0), (2, 128, 1), (33, 128, 7), (1000, 128, 42), (4096, 64, 3),
               (777, 8, 5))


@pytest.mark.points(3)
def test_make_chain_is_one_random_cycle(learner: Any) -> None:
    """make_chain: one cycle through every entry, in a random order, offsets in bytes"""
    for n, stride, seed in CHAIN_CASES:
        call = f"make_chain({n}, {stride}, {seed})"
        problem = chain_problem(learner.call("make_chain", n, stride, seed), n, stride, call)
        assert problem is None, problem


@pytest.mark.points(1)
def test_make_chain_follows_its_seed(learner: Any) -> None:
    """make_chain gives the same chain for the same seed and another for another seed"""
    first, again = (learner.call("make_chain", 1000, 128, 11) for _ in range(2))
    other = learner.call("make_chain", 1000, 128, 12)
    assert first == again, ("make_chain(1000, 128, 11) gave two different chains: draw from a "
                            "generator seeded with `seed` (random.Random(seed) or NumPy's "
                            "default_rng(seed)), not from the global one")
    assert first != other, ("make_chain(1000, 128, 11) and make_chain(1000, 128, 12) gave the "
                            "same chain: the seed must change the order")


# -- part 2: footprints and the plan ----------------------------------------------------------
FOOTPRINT_CASES = ((16 * KiB, GiB, 80 * GiB), (16 * KiB, GiB, 2 * GiB), (4 * KiB, 64 * KiB, GiB),
                   (MiB, 512 * KiB, GiB), (16 * KiB, GiB, 48 * KiB), (16 * KiB, 16 * KiB, GiB))


@pytest.mark.points(1)
def test_footprints(learner: Any) -> None:
    """footprints doubles from lo to hi and leaves out what a quarter of free memory cannot hold"""
    for lo, hi, free in FOOTPRINT_CASES:
        got, want = learner.call("footprints", lo, hi, free), own_footprints(lo, hi, free)
        assert got == want, (
            f"footprints({lo}, {hi}, {free}) returned {got!r:.160}, want {want!r:.160}: lo, "
            "2 lo, 4 lo, ... up to hi included, leaving out each footprint larger than "
            "free_bytes // 4")


L2_SIZES = (60 * MiB, 50 * MiB, 6 * MiB)


def plan_cases(l2: int) -> list[int]:
    return [16 * KiB, 32 * KiB, 8 * MiB, l2 // 2, l2, l2 + LINE_BYTES, 4 * l2, GiB]


def plan_problem(got: Any, footprint: int, l2: int) -> str | None:
    """What is wrong with chase_plan(footprint, l2), or None."""
    want = own_plan(footprint, l2)
    if got == want and all(not isinstance(x, bool) for x in got):
        return None
    loads = footprint // LINE_BYTES
    if footprint <= l2:
        why = (f"a {footprint}-byte chain fits in the {l2}-byte L2: after the flush, one "
               f"untimed lap ({loads} loads) brings every line back into the cache; then time "
               f"max(lines, MIN_STEPS) = {want[1]} loads")
        if isinstance(got, list) and got[:1] == [0]:
            why += (". Without the untimed lap the timed loads find a cache left cold: each "
                    "line's first load goes to HBM")
    else:
        why = (f"a {footprint}-byte chain does not fit in the {l2}-byte L2, so an untimed lap "
               f"would leave only part of it there: time exactly one lap ({loads} loads) "
               "right after the flush, every load the first touch of its line")
    return f"chase_plan({footprint}, {l2}) returned {got!r:.80}, want {want}: {why}"


@pytest.mark.points(2)
def test_chase_plan(learner: Any) -> None:
    """chase_plan: warm a chain that fits in the L2, time one cold lap of a larger one"""
    for l2 in L2_SIZES:
        for footprint in plan_cases(l2):
            problem = plan_problem(learner.call("chase_plan", footprint, l2), footprint, l2)
            assert problem is None, problem


# -- part 3: plateaus -----------------------------------------------------------------------
def plateaus_problem(got: Any, want: dict[str, Any], what: str) -> str | None:
    """What is wrong with find_plateaus' answer on the curve `what`, or None."""
    call = f"find_plateaus({what})"
    if not isinstance(got, dict) or set(got) != set(LEVELS):
        return f"{call} returned {got!r:.120}: want a dict with the keys 'l1', 'l2' and 'hbm'"
    for level in LEVELS:
        mine, right = got[level], want[level]
        if right is None:
            if mine is not None:
                return (f"{call}[{level!r}] is {mine!r:.80}, want None: the curve has "
                        f"{sum(want[k] is not None for k in LEVELS)} plateau(s); L2 is the "
                        "second, HBM the last of three or more")
            continue
        if not isinstance(mine, dict) or not {"cycles", "last"} <= set(mine):
            return (f"{call}[{level!r}] is {mine!r:.80}, want {{'cycles': ..., 'last': ...}}: "
                    f"the {NAMES[level]} plateau ends at {right['last']} bytes")
        if mine["last"] != right["last"]:
            return (f"{call}: your {NAMES[level]} plateau ends at {mine['last']!r}, but it ends "
                    f"at {right['last']} bytes on this curve: {FROM_THE_CURVE}")
        cycles = mine["cycles"]
        if not isinstance(cycles, int | float) or isinstance(cycles, bool) or \
                abs(cycles - right["cycles"]) > CYCLES_CLOSE * right["cycles"]:
            return (f"{call}: your {NAMES[level]} latency is {cycles!r}, want about "
                    f"{right['cycles']:.1f} cycles (the median of its run, within 3 %): a "
                    "point between two levels belongs to neither plateau")
    return None


FROM_THE_CURVE = (
    "plateaus come from the curve itself, not from fixed ranges of footprints (each GPU puts "
    "its edges elsewhere, and L1's edge moves with the shared-memory carve-out): a run goes "
    "on while each latency stays within 15 % of the run's first")


def curve_text(curve: list[list[float]]) -> str:
    return "[" + ", ".join(f"[{int(s)}, {c}]" for s, c in curve[:4]) + f", ... {len(curve)} points]"


@pytest.mark.points(2)
def test_find_plateaus_on_fresh_curves(learner: Any) -> None:
    """find_plateaus on curves drawn afresh: noise, step points, a slow rise of HBM"""
    draw = random.SystemRandom()
    for kind in ({}, {}, {"far": True}, {"hbm": False}):
        curve, want = synthetic_curve(draw, **kind)
        problem = plateaus_problem(learner.call("find_plateaus", curve), want, curve_text(curve))
        assert problem is None, problem


@pytest.mark.points(1)
def test_find_plateaus_on_the_h200_recording(learner: Any) -> None:
    """find_plateaus on the curve gpulab's probe recorded on its H200"""
    curve = recorded_curve()
    if not curve:
        pytest.skip("this copy of gpulab ships no recorded H200 curve")
    want = own_plateaus(curve)
    problem = plateaus_problem(learner.call("find_plateaus", curve), want,
                               "the H200 recording")
    assert problem is None, problem


# -- parts 4 and 5: on the GPU ----------------------------------------------------------------
def size_text(footprint: int) -> str:
    return f"{footprint // MiB} MiB" if footprint >= MiB else f"{footprint // KiB} KiB"


def learner_cycles(learner: Any, footprint: int) -> Any:
    return learner.call("chase_cycles", footprint)


def measure_levels(learner: Any, sizes: dict[str, int]) -> dict[str, dict[str, Any]]:
    """Your chase_cycles and the checks' own chase at each level's footprint, one after the
    other, in this run."""
    found: dict[str, dict[str, Any]] = {}
    for level in LEVELS:
        footprint = sizes[level]
        found[level] = {"footprint": footprint, "yours": learner_cycles(learner, footprint),
                        "trusted": own_chase_cycles(footprint)}
    return found


def judge_level(level: str, found: dict[str, dict[str, Any]]) -> str | None:
    """Why your figure at `level` is not the checks' within the tolerance; None if it is."""
    mine, theirs = found[level]["yours"], found[level]["trusted"]
    footprint = size_text(found[level]["footprint"])
    name = NAMES[level]
    call = f"chase_cycles({found[level]['footprint']}) ({footprint}, the {name} plateau)"
    if not isinstance(mine, int | float) or isinstance(mine, bool) or not mine > 0:
        return f"{call} returned {mine!r:.80}: want the cycles per load, a positive number"
    ratio = mine / theirs
    if abs(ratio - 1) <= TOLERANCE[level]:
        return None
    said = (f"{call} returned {mine:.1f} cycles per load; the checks' own chase of the same "
            f"footprint read {theirs:.1f} in this run ({ratio:.2f} times; within "
            f"{TOLERANCE[level]:.0%} needed). ")
    l1 = found["l1"]["trusted"]
    l2 = found["l2"]["trusted"]
    hbm = found["hbm"]["trusted"]
    if ratio > 50:
        return said + ("That is far more than one load costs anywhere in the hierarchy: the "
                       "cycles were divided by the wrong count. The clock64 difference covers "
                       "every timed load, so divide by the loads timed (steps), not by the "
                       "laps or passes over the chain")
    if level != "l1" and mine < 1.3 * l1:
        return said + (f"It reads like L1 ({l1:.1f} cycles here): the chase never left a few "
                       "lines. Does your chain visit every entry of the footprint, in one "
                       "cycle?")
    if level == "l2" and ratio > 1 and abs(mine - hbm) < abs(mine - l2):
        return said + (f"It reads like HBM ({hbm:.1f} cycles here): the timed loads missed "
                       "the L2, a cache left cold. Walk the chain once, untimed, after any "
                       "flush and in the same launch, before the clock starts")
    if level == "l2" and ratio > 1:
        return said + ("Part of the timed chase missed the L2: were all its lines loaded "
                       "once, untimed, in the same launch, before the clock started?")
    if level == "l1" and 1 < ratio < 2:
        return said + ("Every load costs more than a pure chase's: is there work between one "
                       "load's return and the next load's issue (an index to turn into an "
                       "address, an offset added to a base, a bounds test)? Or was the chain "
                       "warmed in another launch, whose SM's L1 is not this one's?")
    if level == "l1" and ratio >= 2:
        return said + (f"It reads like L2 ({l2:.1f} cycles here): loads that bypass L1 "
                       "(volatile, __ldcg), or an untimed lap that did not run before the "
                       "clock started in the same launch?")
    if level == "hbm" and ratio < 1:
        return said + ("Some loads hit in the L2: was it flushed just before the timed lap, "
                       "with no untimed lap first? A chain longer than the L2 keeps part of "
                       "itself there after an untimed lap")
    return said + ("Is the L2 flushed before the chase, and is the plan for this footprint "
                   "the one part 2 describes?")


@pytest.fixture(scope="module")
def levels(learner: Any) -> dict[str, dict[str, Any]]:
    free, l2 = free_and_l2()
    return measure_levels(learner, check_footprints(l2, free))


def record(measured: Any, level: str, found: dict[str, dict[str, Any]]) -> None:
    label = f"{NAMES[level]} latency, {size_text(found[level]['footprint'])} chain"
    measured(f"{level}_cycles", label=label, unit="cycles", yours=found[level]["yours"],
             trusted=found[level]["trusted"], tolerance=TOLERANCE[level])


@pytest.mark.gpu
@pytest.mark.points(2)
def test_l1_latency(levels: dict[str, dict[str, Any]], measured: Any) -> None:
    """Your L1 figure (32 KiB chain) within 10 % of the checks' pure chase, same run"""
    record(measured, "l1", levels)
    problem = judge_level("l1", levels)
    assert problem is None, problem


@pytest.mark.gpu
@pytest.mark.points(2)
def test_l2_latency(levels: dict[str, dict[str, Any]], measured: Any) -> None:
    """Your L2 figure (a quarter of the L2) within 15 % of the checks' chase, same run"""
    record(measured, "l2", levels)
    problem = judge_level("l2", levels)
    assert problem is None, problem


@pytest.mark.gpu
@pytest.mark.points(2)
def test_hbm_latency(levels: dict[str, dict[str, Any]], measured: Any) -> None:
    """Your HBM figure (at least four times the L2) within 15 % of the checks' chase"""
    record(measured, "hbm", levels)
    problem = judge_level("hbm", levels)
    assert problem is None, problem


def judge_cold_warm(got: Any, footprint: int, cold: float, warm: float) -> str | None:
    """Why cold_vs_warm(footprint) is not the checks' cold lap and warm chase; None if it is."""
    call = f"cold_vs_warm({footprint}) ({size_text(footprint)})"
    if not isinstance(got, dict) or not all(
            isinstance(got.get(k), int | float) and not isinstance(got.get(k), bool)
            and math.isfinite(got[k]) and got[k] > 0 for k in ("cold", "warm")):
        return f"{call} returned {got!r:.100}: want {{'cold': cycles, 'warm': cycles}}"
    mine_cold, mine_warm = got["cold"], got["warm"]
    said = (f"{call} returned cold {mine_cold:.1f} and warm {mine_warm:.1f} cycles per load; "
            f"the checks' own chase read cold {cold:.1f} and warm {warm:.1f} in this run. ")
    if abs(mine_warm / warm - 1) > TOLERANCE["l2"]:
        return said + (f"The warm figure must be within {TOLERANCE['l2']:.0%} of theirs: it is "
                       "chase_cycles at this footprint (the plan of part 2)")
    if abs(mine_cold / cold - 1) > COLD_TOLERANCE:
        if mine_cold < 1.3 * mine_warm:
            return said + ("Your cold chase reads like the warm one, so its lines were still "
                           "in the L2: flush it after the chain is written, just before the "
                           "timed lap, and run no untimed lap first")
        return said + (f"The cold figure must be within {COLD_TOLERANCE:.0%} of theirs: one "
                       "timed lap, every load the first touch of its line since a flush, "
                       "divided by the loads timed")
    return None


@pytest.mark.gpu
@pytest.mark.points(2)
def test_cold_vs_warm(learner: Any, measured: Any) -> None:
    """cold_vs_warm at the L2 footprint: a cold lap reads like HBM, a warmed chase like L2"""
    free, l2 = free_and_l2()
    footprint = check_footprints(l2, free)["l2"]
    got = learner.call("cold_vs_warm", footprint)
    cold, warm = own_chase_cycles(footprint, cold=True), own_chase_cycles(footprint)
    mine = got if isinstance(got, dict) else {}
    for key, theirs, tolerance in (("cold", cold, COLD_TOLERANCE), ("warm", warm,
                                                                     TOLERANCE["l2"])):
        measured(f"l2_{key}_cycles", label=f"{key} chase, {size_text(footprint)} chain",
                 unit="cycles", yours=mine.get(key), trusted=theirs, tolerance=tolerance)
    problem = judge_cold_warm(got, footprint, cold, warm)
    assert problem is None, problem
