"""Hidden checks of coalescing: other strides and offsets, secret sizes, odd grids.

The sector model at strides and offsets the notebook does not show, invalid
input, and the copy on secret sizes and grids the visible checks do not use,
all judged with the visible file's helpers and messages.
"""

from __future__ import annotations

import random
from typing import Any

import pytest

from gpulab.grading.checks.pytest_plugin import visible_checks

visible = visible_checks(__file__)


@pytest.mark.points(2)
def test_other_strides_and_offsets(learner: Any) -> None:
    """sectors_per_warp and useful_fraction at wide strides and random offsets."""
    draw = random.SystemRandom()
    for stride in (5, 6, 7, 9, 12, 33, 64, 100, 1000, draw.randrange(2, 10**6)):
        got = learner.call("sectors_per_warp", stride)
        assert got == visible.sectors(stride), (
            f"sectors_per_warp({stride}) returned {got!r}, want {visible.sectors(stride)}")
        got = learner.call("useful_fraction", stride)
        assert visible.close(got, visible.fraction(stride)), (
            f"useful_fraction({stride}) returned {got!r}, want {visible.fraction(stride):.6g}")
    for _ in range(20):
        stride, offset = draw.randrange(1, 12), draw.randrange(0, 64)
        got = learner.call("sectors_per_warp", stride, offset)
        want = visible.sectors(stride, offset)
        assert got == want, (
            f"sectors_per_warp({stride}, offset={offset}) returned {got!r}, want {want}: the "
            f"warp reads floats {offset} to {offset + 31 * stride}, and a sector starts at "
            "every multiple of 8 floats")


@pytest.mark.points(1)
def test_invalid_input_raises_value_error(learner: Any) -> None:
    """Negative strides and offsets raise ValueError."""
    calls = [("sectors_per_warp", (-1,), "a negative stride"),
             ("sectors_per_warp", (1, -3), "a negative offset"),
             ("useful_fraction", (-8,), "a negative stride")]
    for function, args, what in calls:
        ok, did = visible.raised_value_error(learner, function, *args)
        shown = ", ".join(repr(a) for a in args)
        assert ok, f"{function}({shown}) {did}, but with {what} it should raise ValueError"


@pytest.fixture(scope="module")
def hidden_run(learner: Any) -> dict[str, Any]:
    draw = random.SystemRandom()
    sizes = (2, 4, 5, 7, 8, 9, 1023, 1025, draw.randrange(10**4, 10**6) | 1,
             2**27 + (draw.randrange(1, 2**20) | 1))
    cases = visible.learner_cases(learner, sizes)
    n = draw.randrange(10**4, 10**6) | 1
    cases += [{"label": "one warp for the whole array", "n": n,
               "config": {"blocks": 1, "threads": 32}},
              {"label": "blocks of 96 threads", "n": n, "config": {"blocks": 7, "threads": 96}}]
    # Exactly one round of float4s for a grid of 3 x 64 threads, and the sizes around it.
    per_round = 4 * 3 * 64
    cases += [{"label": f"n = {n:,} (around a whole round of the grid)", "n": n,
               "config": {"blocks": 3, "threads": 64}}
              for n in (per_round - 4, per_round, per_round + 1, per_round + 3)]
    return visible.findings(learner, cases, None)


@pytest.mark.gpu
@pytest.mark.points(3)
def test_secret_sizes_and_grids(hidden_run: dict[str, Any]) -> None:
    """Exact on secret sizes, with your configuration and with odd grids of ours."""
    for case in hidden_run["cases"]:
        assert visible.passed(case), visible.describe(case)
