"""Hidden checks of the warp-divergence exercise: inputs the notebook does not show.

Every check draws its inputs from a seed made for each run (gpulab.grading.checks.draws)
and written nowhere the learner sees. Without a GPU: `pattern` at random sizes,
`paths_per_warp` on random masks with up to six paths, `predicted_slowdown` on
random masks with random costs and random work done together, each compared
with the checks' own model. On a GPU: the kernel on random sizes, masks
(random lanes, random whole warps, random repeating masks), constants and step
counts, lane by lane; and secret masks timed with the trusted kernel (a random
number of random lanes out of every warp, random whole warps, random threads
after a random amount of work done together), which the learner's model must
predict. Every secret timed mask splits every warp or none, so that each SM
partition gets the same share of split warps and the per-warp model holds.
"""

from __future__ import annotations

import random
from types import ModuleType
from typing import Any

import pytest

from gpulab.grading.checks.draws import SEEN, rng, telling
from gpulab.grading.checks.gpu import run_kernel
from gpulab.grading.checks.pytest_plugin import visible_checks
from gpulab.grading.checks.reference import warp_divergence as ref


def _visible() -> ModuleType:
    """The visible checks' module (one copy of the helpers for both files)."""
    return visible_checks(__file__)


_V = _visible()
WARP = ref.WARP
check_pattern, random_mask, slowdown_hint = _V.check_pattern, _V.random_mask, _V.slowdown_hint
constants, describe_case, describe_mask = _V.constants, _V.describe_case, _V.describe_mask
is_number, model_problems = _V.is_number, _V.model_problems
PERIOD = 32 * WARP  # secret timed masks repeat every 32 warps


# -- no GPU ------------------------------------------------------------------------------------
@pytest.mark.points(1)
def test_secret_sizes(learner: Any) -> None:
    """pattern at sizes drawn for this run"""
    draw = rng("test_secret_sizes")
    with telling("pattern at drawn sizes"):
        for name in ref.PATTERNS:
            check_pattern(learner, name, draw.randrange(1, 3000))


@pytest.mark.points(1)
def test_secret_masks_paths(learner: Any) -> None:
    """paths_per_warp on random masks, with up to six paths"""
    draw = rng("test_secret_masks_paths")
    for _ in range(12):
        mask = random_mask(draw, draw.randrange(1, 700), paths=draw.randrange(2, 7))
        with telling("paths_per_warp on a drawn mask"):
            got = learner.call("paths_per_warp", mask)
        want = ref.paths_per_warp(mask)
        assert got == want, (
            f"paths_per_warp for {describe_mask(mask, 'a drawn mask')} is wrong for at least "
            "one warp: count the distinct paths each warp of 32 threads takes (the last warp "
            f"may be partial) {SEEN}")


@pytest.mark.points(2)
def test_secret_masks_slowdown(learner: Any) -> None:
    """predicted_slowdown on random masks, costs and work done together"""
    draw = rng("test_secret_masks_slowdown")
    for _ in range(12):
        mask = random_mask(draw, draw.randrange(1, 700))
        cost_a, cost_b = round(draw.uniform(0.2, 5), 3), round(draw.uniform(0.2, 5), 3)
        uniform = draw.choice((0.0, round(draw.uniform(0, 30), 2)))
        with telling("predicted_slowdown on a drawn mask"):
            got = learner.call("predicted_slowdown", mask, cost_a, cost_b, uniform)
        want = ref.predicted_slowdown(mask, cost_a, cost_b, uniform)
        call = (f"predicted_slowdown for {describe_mask(mask, 'a drawn mask')}, cost_a = "
                f"{cost_a}, cost_b = {cost_b}, uniform = {uniform}")
        assert is_number(got), f"{call} returned {got!r:.80}: expected a number"
        assert abs(got - want) <= 1e-6 * abs(want), (
            f"{call} returned {got:.4g}, {'less' if got < want else 'more'} than the per-warp "
            f"model gives: {slowdown_hint(mask, uniform, got, want)} {SEEN}")


# -- on a GPU ---------------------------------------------------------------------------------
def secret_cases(draw: random.Random) -> list[dict[str, Any]]:
    name = draw.choice(ref.PATTERNS)
    masks: list[tuple[str, Any]] = [
        ("random lanes on path B", {"random": round(draw.uniform(0.05, 0.95), 3)}),
        ("random whole warps on path B", {"warps": round(draw.uniform(0.2, 0.8), 3)}),
        ("a random repeating mask", [draw.randrange(2) for _ in range(draw.randrange(1, 97))]),
        (f"the pattern {name!r}", name),
    ]
    cases = []
    for label, mask in masks:
        n = draw.randrange(1, 20_000)
        cases.append({"label": label, "n": n, "mask": mask,
                      "uniform_iters": draw.choice((0, draw.randrange(1, 60))),
                      "iters": draw.randrange(1, 200), **constants(draw)})
    cases.append({"label": "random lanes on path B, many steps", "n": draw.randrange(1000, 5000),
                  "mask": {"random": 0.5}, "uniform_iters": draw.randrange(0, 500),
                  "iters": draw.randrange(1000, 3000), **constants(draw)})
    return cases


@pytest.mark.gpu
@pytest.mark.points(2)
def test_kernel_on_secret_masks(learner: Any) -> None:
    """two_paths on drawn sizes, masks, constants and step counts"""
    draw = rng("test_kernel_on_secret_masks")
    params = {"seed": draw.getrandbits(63), "cases": secret_cases(draw)}
    found = run_kernel("two_paths", learner.call("kernel_source"), params)
    bad = [case for case in found["cases"] if not case["ok"]]
    assert not bad, f"{describe_case(bad[0])} {SEEN}"


def secret_masks(draw: random.Random) -> dict[str, tuple[list[int], int, str]]:
    """Masks of PERIOD threads, each splitting every warp or none: name -> (mask, prefix,
    label)."""
    out_lanes = draw.randrange(1, 16)
    lanes_out: list[int] = []
    for _ in range(PERIOD // WARP):
        chosen = set(draw.sample(range(WARP), out_lanes))
        lanes_out += [int(lane in chosen) for lane in range(WARP)]
    whole_warps = [path for _ in range(PERIOD // WARP) for path in [draw.randrange(2)] * WARP]
    share = draw.uniform(0.3, 0.7)
    threads = [int(draw.random() < share) for _ in range(PERIOD)]
    for start in range(0, PERIOD, WARP):  # make sure each warp splits
        threads[start], threads[start + 1] = 0, 1
    prefix = draw.randrange(1, 5)
    return {
        "lanes_out": (lanes_out, 0, f"{out_lanes} random lanes of every warp on path B"),
        "whole_warps": (whole_warps, 0, "random whole warps on path B"),
        "threads": (threads, prefix, f"random threads on path B after {prefix} steps together "
                                     "for each step apart"),
    }


@pytest.mark.gpu
@pytest.mark.points(2)
def test_model_on_secret_masks(learner: Any) -> None:
    """predicted_slowdown predicts the GPU on masks drawn for this run"""
    draw = rng("test_model_on_secret_masks")
    masks = secret_masks(draw)
    prefixes = {prefix for _, prefix, _ in masks.values() if prefix}
    timed: dict[str, tuple[ref.MaskSpec, int]] = {
        "uniform": ("uniform", 0),
        "all_b": ("all_b", 0),
        **{name: (mask, prefix) for name, (mask, prefix, _) in masks.items()},
    }
    # the model check divides a mask with work done together by the uniform launch with the
    # same work ("uniform_tenth" in the visible checks' naming)
    (prefix,) = prefixes
    timed["uniform_tenth"] = ("uniform", prefix)
    trusted = ref.own_times(timed)
    with telling("predicted_slowdown on drawn masks"):
        problems = model_problems(
            learner,
            {name: (mask, prefix) for name, (mask, prefix, _) in masks.items()},
            trusted,
            {name: label for name, (_, _, label) in masks.items()},
        )
    assert not problems, "; ".join(problems) + f" {SEEN}"
