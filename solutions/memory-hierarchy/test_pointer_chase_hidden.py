"""Hidden checks of pointer-chase: other chains, other curves, other footprints.

`make_chain` on chains drawn afresh (sizes up to 20,000 entries, strides from
8 to 256 bytes, any seed); `footprints` and `chase_plan` on random sizes and
L2s; `find_plateaus` on more fresh curves, given in a shuffled order, with a
far L2 partition, cut short before HBM, and with one plateau only. On a GPU,
`chase_cycles` at a footprint drawn afresh inside each plateau, against the
checks' own chase of the same footprints in the same run. Expected values and
judgements come from the visible checks' helpers and the trusted reference.
"""

from __future__ import annotations

import random
from typing import Any

import pytest

from gpulab.grading.checks.pytest_plugin import visible_checks
from gpulab.grading.checks.reference.pointer_chase import (
    check_footprints,
    free_and_l2,
    own_footprints,
    own_plateaus,
    synthetic_curve,
)

visible = visible_checks(__file__)
KiB, MiB, GiB = visible.KiB, visible.MiB, visible.GiB


@pytest.mark.points(2)
def test_make_chain_random_sizes(learner: Any) -> None:
    """make_chain on chains drawn afresh: sizes, strides and seeds"""
    draw = random.SystemRandom()
    for _ in range(5):
        n, stride = draw.randrange(65, 20_000), draw.choice((8, 16, 64, 128, 256))
        seed = draw.randrange(1 << 31)
        call = f"make_chain({n}, {stride}, {seed})"
        got = learner.call("make_chain", n, stride, seed)
        problem = visible.chain_problem(got, n, stride, call)
        assert problem is None, problem
        assert learner.call("make_chain", n, stride, seed) == got, (
            f"{call} gave two different chains: seed a generator of your own with `seed`")


@pytest.mark.points(1)
def test_footprints_and_plans_random(learner: Any) -> None:
    """footprints and chase_plan on sizes, memories and L2s drawn afresh"""
    draw = random.SystemRandom()
    for _ in range(6):
        lo = 2 ** draw.randrange(10, 20)
        hi = lo * 2 ** draw.randrange(0, 16)
        free = draw.randrange(lo, 200 * GiB)
        got, want = learner.call("footprints", lo, hi, free), own_footprints(lo, hi, free)
        assert got == want, (
            f"footprints({lo}, {hi}, {free}) returned {got!r:.160}, want {want!r:.160}: lo, "
            "2 lo, 4 lo, ... up to hi, leaving out each one larger than free_bytes // 4")
        l2 = draw.randrange(4, 128) * MiB
        for footprint in (2 ** draw.randrange(14, 31), l2, l2 + 128):
            problem = visible.plan_problem(learner.call("chase_plan", footprint, l2),
                                           footprint, l2)
            assert problem is None, problem


@pytest.mark.points(2)
def test_find_plateaus_hidden_curves(learner: Any) -> None:
    """find_plateaus on shuffled, far-partition, short and one-plateau curves"""
    draw = random.SystemRandom()
    cases: list[tuple[list[list[float]], dict[str, Any], str]] = []
    for kind in ({"far": True}, {}, {"hbm": False}):
        curve, want = synthetic_curve(draw, **kind)
        shuffled = list(curve)
        draw.shuffle(shuffled)
        cases.append((shuffled, want, "a curve in a shuffled order: " +
                      visible.curve_text(shuffled)))
    curve, _ = synthetic_curve(draw)
    only_l1 = [point for point in curve if point[0] <= 64 * KiB]
    cases.append((only_l1, own_plateaus(only_l1), "a curve of three L1 footprints"))
    cases.append(([], {"l1": None, "l2": None, "hbm": None}, "an empty curve"))
    for curve, want, what in cases:
        problem = visible.plateaus_problem(learner.call("find_plateaus", curve), want, what)
        assert problem is None, problem


@pytest.mark.gpu
@pytest.mark.points(3)
def test_other_footprints_in_each_plateau(learner: Any, measured: Any) -> None:
    """chase_cycles at footprints drawn afresh inside each plateau, against the checks' chase"""
    draw = random.SystemRandom()
    free, l2 = free_and_l2()
    chosen = check_footprints(l2, free)
    sizes = {
        "l1": draw.choice((16 * KiB, 32 * KiB, 64 * KiB)),
        "l2": draw.choice([MiB * 2**k for k in range(8) if MiB * 2**k <= chosen["l2"]]),
        "hbm": draw.choice([s for s in (chosen["hbm"], 2 * chosen["hbm"])
                            if s <= min(512 * MiB, free // 8)] or [chosen["hbm"]]),
    }
    found = visible.measure_levels(learner, sizes)
    problems = []
    for level in visible.LEVELS:
        visible.record(measured, level, found)
        problem = visible.judge_level(level, found)
        if problem:
            problems.append(problem)
    assert not problems, "\n".join(problems)
