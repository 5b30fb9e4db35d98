"""Hidden checks of the fp8-scaling exercise: inputs the notebook does not show.

Every input is drawn afresh on each run from the run's seed
(`gpulab.grading.checks.draws`; GPULAB_CHECK_SEED=<n> replays a run), and every message
about drawn inputs names the seed. `to_e4m3` meets values over every binade, exact ties
and values past 448; the recipes meet shapes whose widths are no multiple of 32 or 128
(a row narrower than one block too), magnitudes from 1e-3 to 1e3, rows and blocks of
zeros and blocks whose maximum is exactly a power of two; `recipe_sqnr` meets fresh
outlier tensors.
"""

from __future__ import annotations

import random
from types import ModuleType
from typing import Any

import numpy as np
import pytest

from gpulab.grading.checks.draws import SEEN, rng, telling
from gpulab.grading.checks.pytest_plugin import visible_checks
from gpulab.grading.checks.reference import fp8_scaling as reference

Array = np.ndarray[Any, np.dtype[Any]]


def _visible() -> ModuleType:
    """The visible checks' module (one copy of the helpers for both files)."""
    return visible_checks(__file__)


_V = _visible()
call, judge_e4m3, judge_recipe, judge_sqnr = _V.call, _V.judge_e4m3, _V.judge_recipe, _V.judge_sqnr


def numbers(draw: random.Random) -> np.random.Generator:
    return np.random.default_rng(draw.getrandbits(64))


def drawn_tensor(draw: random.Random) -> tuple[Array, str]:
    """A tensor no block length divides, with zeros and a power-of-two maximum."""
    gen = numbers(draw)
    rows = draw.randint(3, 9)
    cols = draw.choice([draw.randint(1, 31), draw.randint(33, 127), draw.randint(129, 700)])
    if cols % 32 == 0:
        cols += 1
    x = gen.standard_normal((rows, cols)) * 10.0 ** gen.uniform(-3, 3, size=(rows, 1))
    x[draw.randrange(rows)] = 0.0
    row = draw.randrange(rows)
    start = 32 * draw.randrange(max(1, cols // 32))
    x[row, start : start + 32] = 0.0
    other = draw.randrange(rows)
    x[other] = np.clip(x[other], -1.9, 1.9)
    x[other, draw.randrange(cols)] = draw.choice([-2.0, 2.0])
    result: Array = x.astype(np.float32)
    return result, f"a drawn {rows} x {cols} tensor"


@pytest.mark.points(2)
def test_e4m3_on_fresh_values(learner: Any) -> None:
    """to_e4m3 on drawn values: every binade, exact ties, magnitudes past 448"""
    draw = rng("test_e4m3_on_fresh_values")
    gen = numbers(draw)
    values = gen.choice([-1.0, 1.0], 3000) * 2.0 ** gen.uniform(-11, 9.5, 3000)
    exponents = gen.integers(-6, 9, 200)
    ties = (8 + gen.integers(0, 8, 200) + 0.5) * 2.0 ** (exponents - 3.0)
    x = np.concatenate([values, ties, gen.uniform(448, 1e4, 20)]).astype(np.float32)
    with telling("on drawn values"):
        got = call(learner, "to_e4m3", x)
    why = judge_e4m3(got, x, "to_e4m3(x) on drawn values", ties=False)
    assert why is None, f"{why} {SEEN}"


@pytest.mark.points(3)
def test_linear_recipes_on_fresh_tensors(learner: Any) -> None:
    """quantize_per_tensor, quantize_per_row and quantize_blocks on drawn tensors"""
    draw = rng("test_linear_recipes_on_fresh_tensors")
    problems = []
    for _ in range(3):
        x, what = drawn_tensor(draw)
        for recipe in ("per_tensor", "per_row", "block128"):
            with telling(f"on {what}"):
                why = judge_recipe(learner, x, recipe, what)
            if why:
                problems.append(f"{why} {SEEN}")
    assert not problems, "\n".join(problems[:3])


@pytest.mark.points(2)
def test_mx_on_fresh_tensors(learner: Any) -> None:
    """quantize_mx on drawn tensors: powers of two, partial last blocks, zero blocks"""
    draw = rng("test_mx_on_fresh_tensors")
    problems = []
    for _ in range(3):
        x, what = drawn_tensor(draw)
        with telling(f"on {what}"):
            why = judge_recipe(learner, x, "mx32", what)
        if why:
            problems.append(f"{why} {SEEN}")
    assert not problems, "\n".join(problems[:3])


@pytest.mark.points(2)
def test_sqnr_on_fresh_outliers(learner: Any) -> None:
    """recipe_sqnr on a drawn outlier tensor (size, channel and factor drawn)"""
    draw = rng("test_sqnr_on_fresh_outliers")
    rows, cols = draw.randint(16, 96), draw.randint(130, 600)
    channel, factor = draw.randrange(cols), draw.choice([30.0, 100.0, 300.0])
    x = reference.outlier_tensor(rows, cols, channel, draw.getrandbits(32), factor)
    said = f"recipe_sqnr(x) on a drawn {rows} x {cols} tensor, channel {channel} x {factor:g}"
    with telling(said):
        got = call(learner, "recipe_sqnr", x)
    why = judge_sqnr(got, reference.recipe_sqnr(x), said)
    assert why is None, f"{why} {SEEN}"
