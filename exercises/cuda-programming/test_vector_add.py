"""Checks of the vector-add exercise (lesson: CUDA programming).

Your kernel is CUDA C text and your launch configuration is numbers: the
checks fetch both from your notebook and hand them to gpulab's kernel worker,
a separate process that runs none of your Python. It refuses a source that
breaks the rules of kernel answers (the notebook states them), compiles it,
fills the inputs with random values it keeps to itself, new ones for every
launch (the output starts as NaN, so unwritten elements show, with guard zones
on both sides, so writes out of bounds show), launches your kernel, compares
with its own ``a + b``, and times your kernel launch by launch against a
trusted grid-stride kernel in the same run, checking every launch. Where
compute-sanitizer can run, its memcheck looks for bad accesses too.
"""

from __future__ import annotations

import random
from typing import Any

import pytest

from gpulab.grading.checks.gpu import (
    device_facts,
    new_seed,
    run_kernel,
    sanitize_kernel,
    sanitizer_missing,
)

SIZES = (1, 31, 33, 1000, 1_000_003)
SMALL_GRID = {"blocks": 2, "threads": 64}       # 128 threads for 100,003 elements
SMALL_GRID_N = 100_003
TIMED_N = 2**26 + 7                             # not a multiple of any block size
LARGE = (2**24, 2**26, 2**28)                   # "large": the grid must not grow any more
SPEED = 0.7                                     # of a trusted grid-stride kernel, same run
REPEAT = 10                                     # launches of the repeated case


def config_problem(config: Any, n: int) -> str | None:
    """What is wrong with a launch configuration, or None."""
    if not isinstance(config, dict) or set(config) != {"blocks", "threads"}:
        return f"launch_config({n}, ...) returned {config!r}: expected a dict with exactly " \
               "the keys 'blocks' and 'threads'"
    blocks, threads = config["blocks"], config["threads"]
    if not all(isinstance(v, int) and not isinstance(v, bool) for v in (blocks, threads)):
        return f"launch_config({n}, ...) returned {config!r}: blocks and threads must be " \
               "plain ints (not floats or NumPy numbers)"
    if not 32 <= threads <= 1024 or threads % 32:
        return f"launch_config({n}, ...) gives {threads} threads per block: use whole warps " \
               "(a multiple of 32), at most 1024"
    if blocks < 1:
        return f"launch_config({n}, ...) gives {blocks} blocks: a grid needs at least one"
    return None


def passed(case: dict[str, Any]) -> bool:
    return case["wrong"] == 0 and case["overrun"] == 0


def shape(config: dict[str, Any]) -> str:
    """A grid in words: "2 blocks of 64 threads"."""
    blocks = config.get("blocks")
    return f"{blocks} block{'' if blocks == 1 else 's'} of {config.get('threads')} threads"


def describe(case: dict[str, Any]) -> str:
    """A teaching message for a case with wrong elements, or writes out of bounds."""
    n, where = case["n"], f"{case['label']}: with {shape(case['config'])}"
    if case["overrun"]:
        if case.get("overrun_before"):
            return (f"{where}, your kernel wrote {case['overrun_before']} float(s) just before "
                    "c[0] (the checks keep a guard zone on both sides of c): can an index be "
                    "negative?")
        return (f"{where}, your kernel wrote {case['overrun']} float(s) just past the end of c, "
                f"at index {n} and after (the checks keep a guard zone there, so a write out "
                "of bounds shows even when it does not crash): is every access guarded so "
                "that no thread reaches index n?")
    if case["untouched"]:
        return (f"{where}, {case['untouched']} of {n} elements were never written (first at "
                f"index {case['first_wrong']['index']}): does every thread keep going, by "
                "blockDim.x * gridDim.x, until it passes n?")
    first = case["first_wrong"]
    return (f"{where}, {case['wrong']} of {n} elements are wrong; c[{first['index']}] is "
            f"{first['got']} but a + b is {first['want']}: is every element read and written at "
            "the same index i?")


def describe_repeated(case: dict[str, Any]) -> str:
    """A teaching message for a case run several times, one launch of which went wrong."""
    return (f"launch {case['failed_at']} of {case['launches']} went wrong "
            f"({case['failed_launches']} in all, each on fresh inputs): {describe(case)}")


def findings(learner: Any, cases: list[dict[str, Any]], timed_n: int | None) -> dict[str, Any]:
    """Run the learner's kernel on `cases` (and a timed run) in the kernel worker."""
    sm_count = device_facts()["sm_count"]
    params: dict[str, Any] = {"seed": new_seed(), "cases": cases}
    if timed_n:
        params["timed"] = {"n": timed_n, "config": learner.call("launch_config", timed_n,
                                                                sm_count)}
    return run_kernel("vector_add", learner.call("vector_add_source"), params)


def learner_cases(learner: Any, sizes: tuple[int, ...]) -> list[dict[str, Any]]:
    sm_count = device_facts()["sm_count"]
    cases = []
    for n in sizes:
        config = learner.call("launch_config", n, sm_count)
        problem = config_problem(config, n)
        assert problem is None, problem
        cases.append({"label": f"n = {n:,}", "n": n, "config": config})
    return cases


def repeated_case(learner: Any) -> dict[str, Any]:
    """A secret size launched REPEAT times on fresh inputs, beside a busy kernel, with your
    grid and with grids of 1, 3, SMs - 1 and 2 SMs + 1 blocks of your block size."""
    sm_count = device_facts()["sm_count"]
    n = random.SystemRandom().randrange(10**5, 10**6) | 1
    (own,) = learner_cases(learner, (n,))
    threads = own["config"]["threads"]
    grids = [own["config"], *({"blocks": blocks, "threads": threads}
                              for blocks in (1, 3, max(1, sm_count - 1), 2 * sm_count + 1))]
    return {"label": f"n = {n:,}, launched {REPEAT} times", "n": n, "configs": grids,
            "repeat": REPEAT, "busy": True}


@pytest.fixture(scope="module")
def run(learner: Any) -> dict[str, Any]:
    cases = learner_cases(learner, SIZES)
    cases.append({"label": "a grid of 2 blocks of 64 threads", "n": SMALL_GRID_N,
                  "config": SMALL_GRID})
    cases.append(repeated_case(learner))
    return findings(learner, cases, TIMED_N)


@pytest.mark.points(2)
def test_launch_config(learner: Any) -> None:
    """launch_config: whole warps, at least one block, a grid that stops growing."""
    for n in (1, 31, 1000, *LARGE):
        problem = config_problem(learner.call("launch_config", n, 132), n)
        assert problem is None, problem
    grids = {n: learner.call("launch_config", n, 132)["blocks"] for n in LARGE}
    assert len(set(grids.values())) == 1, (
        f"for 132 SMs your grid grows with n: {grids}. With a grid-stride loop a larger "
        "array needs more rounds, not more blocks: cap the blocks at a few per SM")
    tiny = learner.call("launch_config", 1, 132)
    assert tiny["blocks"] == 1, (
        f"for n = 1 you launch {tiny['blocks']} blocks: all but one have nothing to do")


@pytest.mark.gpu
@pytest.mark.points(4)
def test_edge_sizes(run: dict[str, Any]) -> None:
    """Right on n = 1, 31, 33, 1000 and 1,000,003 with your own configuration."""
    for case in run["cases"][:len(SIZES)]:
        assert passed(case), describe(case)


@pytest.mark.gpu
@pytest.mark.points(2)
def test_grid_stride(run: dict[str, Any]) -> None:
    """Still right when the grid is far smaller than the array."""
    case = run["cases"][len(SIZES)]
    assert passed(case), describe(case)


@pytest.mark.gpu
@pytest.mark.points(1)
def test_repeated_launches(run: dict[str, Any]) -> None:
    """Right on every one of 10 launches with fresh inputs, other grids and a busy GPU."""
    case = run["cases"][len(SIZES) + 1]
    assert passed(case), describe_repeated(case)


@pytest.mark.gpu
@pytest.mark.points(2)
def test_speed(run: dict[str, Any]) -> None:
    """At least 0.7 of a trusted kernel's bandwidth on 2^26 + 7 elements, in the same run."""
    timed = run["timed"]
    assert passed(timed), (
        f"the timed run (n = {TIMED_N:,}) went wrong on {timed['failed_launches']} of its "
        f"{timed['launches']} launches, each on fresh inputs, so its speed does not count: "
        + describe({**timed, "label": "the timed run"}))
    assert timed["ratio"] >= SPEED, (
        f"your kernel moved {timed['gbs']:.0f} GB/s, {timed['reference']} "
        f"{timed['reference_gbs']:.0f} GB/s in the same run (read + written; each the median "
        f"of launches timed one by one): {timed['ratio']:.2f} of it, {SPEED} needed. Do "
        "neighbouring threads read neighbouring elements (a grid-stride loop, not a chunk "
        "per thread), and does the grid keep every SM busy?")


@pytest.mark.points(1)
def test_sanitizer(learner: Any) -> None:
    """compute-sanitizer's memcheck finds no access out of bounds (skipped where it cannot run)."""
    missing = sanitizer_missing()
    if missing:
        pytest.skip(missing)
    cases = learner_cases(learner, (1000, 4099))
    cases.append({"label": "n = 33, one warp", "n": 33, "config": {"blocks": 1, "threads": 32}})
    verdict = sanitize_kernel("vector_add", learner.call("vector_add_source"), cases,
                              ("memcheck",), timeout=100)
    if verdict.skipped:
        pytest.skip(verdict.skipped)
    assert verdict.problem is None, verdict.problem
