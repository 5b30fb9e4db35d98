"""Checks of the vector-add exercise (lesson: CUDA programming).

Your kernel is CUDA C text and your launch configuration is numbers: the
checks fetch both from your notebook and hand them to gpulab's kernel worker,
a separate process that runs none of your Python. It compiles the source,
fills the inputs with random values it keeps to itself (the output starts as
NaN, so unwritten elements show), launches your kernel, compares with its own
``a + b`` and times your kernel against ``cupy.add`` in the same run.
"""

from __future__ import annotations

from typing import Any

import pytest

from gpulab.grading.gpu import device_facts, new_seed, run_kernel

SIZES = (1, 31, 33, 1000, 1_000_003)
SMALL_GRID = {"blocks": 2, "threads": 64}       # 128 threads for 100,003 elements
SMALL_GRID_N = 100_003
TIMED_N = 2**26
LARGE = (2**24, 2**26, 2**28)                   # "large": the grid must not grow any more
SPEED = 0.8                                     # of cupy.add, same arrays, same run


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


def describe(case: dict[str, Any]) -> str:
    """A teaching message for a case with wrong elements."""
    n, config = case["n"], case["config"]
    shape = f"{config.get('blocks')} blocks of {config.get('threads')} threads"
    if case["untouched"]:
        return (f"{case['label']}: with {shape}, {case['untouched']} of {n} elements were never "
                f"written (first at index {case['first_wrong']['index']}): does every thread "
                "keep going, by blockDim.x * gridDim.x, until it passes n?")
    first = case["first_wrong"]
    return (f"{case['label']}: {case['wrong']} of {n} elements are wrong; c[{first['index']}] is "
            f"{first['got']} but a + b is {first['want']}: is every element read and written at "
            "the same index i?")


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


@pytest.fixture(scope="module")
def run(learner: Any) -> dict[str, Any]:
    cases = learner_cases(learner, SIZES)
    cases.append({"label": "a grid of 2 blocks of 64 threads", "n": SMALL_GRID_N,
                  "config": SMALL_GRID})
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
    for case in run["cases"][:-1]:
        assert case["wrong"] == 0, describe(case)


@pytest.mark.gpu
@pytest.mark.points(2)
def test_grid_stride(run: dict[str, Any]) -> None:
    """Still right when the grid is far smaller than the array."""
    case = run["cases"][-1]
    assert case["wrong"] == 0, describe(case)


@pytest.mark.gpu
@pytest.mark.points(2)
def test_speed(run: dict[str, Any]) -> None:
    """At least 0.8 of cupy.add's bandwidth on 2^26 elements, measured in the same run."""
    timed = run["timed"]
    assert timed["wrong"] == 0, "the timed run gave wrong results"
    assert timed["ratio"] >= SPEED, (
        f"your kernel moved {timed['gbs']:.0f} GB/s, cupy.add {timed['reference_gbs']:.0f} GB/s "
        f"in the same run ({timed['ratio']:.2f} of it; {SPEED} needed): do neighbouring "
        "threads read neighbouring elements, and does the grid keep every SM busy?")
