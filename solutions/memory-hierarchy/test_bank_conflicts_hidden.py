"""Hidden checks of bank-conflicts: random warps, thin and odd matrices, another timed shape.

`passes` on warps drawn at random (strides, broadcasts, a few hot banks);
the transpose on one-row and one-column matrices, small odd ones and a large
secret size; and the speed check again on a wide matrix whose sides are not
multiples of 32. Expected values come from the visible checks' own helpers.
"""

from __future__ import annotations

import random
from typing import Any

import pytest

from gpulab.grading.checks.pytest_plugin import visible_checks

visible = visible_checks(__file__)

WIDE = (3001, 20003)        # 60 million elements, every edge tile partial


def random_warp(draw: random.Random) -> list[int]:
    """The 32 word indices of one warp-wide load, from a family chosen at random."""
    kind = draw.choice(("stride", "column", "few words", "scatter"))
    if kind == "stride":
        stride, start = draw.randrange(0, 80), draw.randrange(0, 1000)
        return [start + stride * lane for lane in range(32)]
    if kind == "column":
        return visible.column(draw.randrange(1, 100), draw.randrange(0, 40))
    if kind == "few words":
        words = [draw.randrange(0, 256) for _ in range(draw.randrange(1, 6))]
        return [draw.choice(words) for _ in range(32)]
    return [draw.randrange(0, 4096) for _ in range(32)]


@pytest.mark.points(2)
def test_passes_random(learner: Any) -> None:
    """passes on 200 random warps"""
    draw = random.SystemRandom()
    for _ in range(200):
        words = random_warp(draw)
        got, want = learner.call("passes", words), visible.want_passes(words)
        assert got == want, (
            f"passes({words}) returned {got!r}, but the most crowded bank must deliver "
            f"{want} distinct words")
        word = draw.randrange(0, 2**24)
        assert learner.call("bank", word) == word % visible.BANKS, \
            f"bank({word}) should be {word % visible.BANKS}"


@pytest.mark.gpu
@pytest.mark.points(3)
def test_thin_and_odd_sizes(learner: Any) -> None:
    """Right on 1 x 4097, 4097 x 1, 63 x 65, 2 x 3 and a large secret size"""
    secret = visible.secret_size(random.SystemRandom(), 3000, 7000)
    cases = visible.learner_cases(learner, ((1, 4097), (4097, 1), (63, 65), (2, 3), secret))
    cases[-1]["label"] = "a large secret size"
    message = visible.diagnose(visible.findings(learner, cases, None)["cases"])
    assert message is None, message


@pytest.mark.gpu
@pytest.mark.points(2)
def test_speed_wide(learner: Any) -> None:
    """Near the padded reference's speed on a wide 3001 x 20003 matrix (0.8 of it or more)"""
    found = visible.findings(learner, visible.learner_cases(learner, (WIDE,)), WIDE)
    case, timed = found["cases"][0], found["timed"]
    assert visible.passed(case), visible.describe(case)
    assert visible.passed(timed), (
        f"the timed run went wrong on {timed['failed_launches']} of its {timed['launches']} "
        f"launches: {visible.describe(timed)}")
    bar = visible.speed_bar(timed)
    assert timed["vs_padded"] >= bar, visible.speed_message(
        timed, bar, f"on {WIDE[0]} x {WIDE[1]}, ")
