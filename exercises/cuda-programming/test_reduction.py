"""Checks of the reduction exercise (lesson: CUDA programming).

Your kernel is CUDA C text and your launch configuration is numbers: the
checks fetch both from your notebook and hand them to gpulab's kernel worker,
a separate process that runs none of your Python. It refuses a source that
breaks the rules of kernel answers (the notebook states them: here, no library
reduction), compiles it, makes inputs it keeps to itself, new ones for every
launch (random floats in [-1, 1) with a few large "spikes" at secret places,
always including the first and the last element, and NaN right before and
after x), zeroes out[0] (with guard zones around it), launches your kernel,
and compares out[0] with its own float64 sum, within 1e-5 of sum |x|. Then it
times your kernel launch by launch against ``cupy.sum`` on 1 GiB arrays in the
same run, checking every launch. Where compute-sanitizer can run, its memcheck
and racecheck look for bad accesses and races too.
"""

from __future__ import annotations

import math
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

SIZES = (1, 31, 33, 1000)
LARGE_N = 2**26 + 4099                          # 256 MiB, and n % 4 == 3
SMALL_GRID_BLOCKS = 2                           # of your block size, for 100,003 floats
SMALL_GRID_N = 100_003
TIMED_N = 2**28 + 5                             # 1 GiB of floats: far more than the L2
REPEAT = 12                                     # launches of the repeated case
LARGE = (2**24, 2**26, 2**28)                   # "large": the grid must not grow any more
SPEED = 0.7                                     # of cupy.sum, same array, same run
CONFIG_KEYS = {"blocks", "threads", "shared_mem"}


def config_problem(config: Any, n: int) -> str | None:
    """What is wrong with a launch configuration, or None."""
    call = f"launch_config({n:,}, ...)"
    if not isinstance(config, dict) or not {"blocks", "threads"} <= set(config) <= CONFIG_KEYS:
        return f"{call} returned {config!r:.120}: expected a dict with the keys 'blocks' and " \
               "'threads' (and, if your kernel uses dynamic shared memory, 'shared_mem')"
    if not all(isinstance(v, int) and not isinstance(v, bool) for v in config.values()):
        return f"{call} returned {config!r}: every value must be a plain int (not a float or " \
               "a NumPy number)"
    blocks, threads = config["blocks"], config["threads"]
    if not 32 <= threads <= 1024 or threads % 32:
        return f"{call} gives {threads} threads per block: use whole warps (a multiple of 32, " \
               "at most 1024); warp shuffles with the full mask need all 32 lanes of every warp"
    if blocks < 1:
        return f"{call} gives {blocks} blocks: a grid needs at least one"
    if config.get("shared_mem", 0) < 0:
        return f"{call} asks for {config['shared_mem']} bytes of shared memory"
    return None


def learner_config(learner: Any, n: int, sm_count: int) -> dict[str, Any]:
    config = learner.call("launch_config", n, sm_count)
    problem = config_problem(config, n)
    assert problem is None, problem
    return config


def is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def passed(case: dict[str, Any]) -> bool:
    return is_number(case["got"]) and abs(case["error"]) <= case["tolerance"] and \
        not case.get("out_overrun")


def _where(index: int, n: int) -> str:
    """What is special about element `index` of n, and the usual reason to miss it."""
    whole = 4 * (n // 4)
    if index == n - 1 and index >= whole:
        return (f"x[n - 1], the last element, one of the n % 4 = {n % 4} floats after the last "
                "whole float4: does the last, partial stretch of the array get read? With "
                "float4 loads, finish the floats past 4 * (n / 4) one at a time")
    if index == n - 1:
        return ("x[n - 1], the last element: does the last round of the loop run? (compare "
                "with <, and against the right count: n, or n / 4 for float4s)")
    if index >= whole:
        return (f"x[{index}], one of the n % 4 = {n % 4} floats after the last whole float4: "
                "do you finish those one at a time?")
    if index == 0:
        return "x[0], the very first element: does the first thread of the first block start at 0?"
    return (f"x[{index}], an element in the middle: does every thread step by the whole grid, "
            "blockDim.x * gridDim.x, and keep going until it passes the end?")


def shape(config: dict[str, Any]) -> str:
    """A grid in words: "2 blocks of 256 threads"."""
    blocks = config.get("blocks")
    return f"{blocks} block{'' if blocks == 1 else 's'} of {config.get('threads')} threads"


def spikes_matching(spikes: list[dict[str, Any]], amount: float) -> list[dict[str, Any]]:
    """The one spike, or else the two, whose values add up to `amount`; [] if none do.

    The spikes' sizes are chosen so that the sums of any two different choices of
    one or two spikes lie at least 2 % of the smallest spike apart: a match within
    0.8 % names them.
    """
    near = 0.008 * min(spike["value"] for spike in spikes)
    for one in spikes:
        if abs(amount - one["value"]) <= near:
            return [one]
    for i, one in enumerate(spikes):
        for two in spikes[i + 1:]:
            if abs(amount - one["value"] - two["value"]) <= near:
                return [one, two]
    return []


def describe(case: dict[str, Any]) -> str:
    """A teaching message for a case whose sum is wrong."""
    n, config, got, want = case["n"], case["config"], case["got"], case["want"]
    where = f"{case['label']} with {shape(config)}"
    if case.get("out_overrun"):
        return (f"{where}: your kernel wrote {case['out_overrun']} float(s) next to out[0] "
                "(out holds one float, and the checks keep guard zones around it): does every "
                "block add its total into out[0] itself?")
    if not is_number(got):
        return (f"{where}: out[0] is {got}. The floats right before x[0] and after x[n - 1] "
                "are NaN in this check, so your kernel added a value from outside x: guard "
                "every load (i < n, or i < n / 4 for float4 loads)")
    if got == 0.0 and n < 4:
        return (f"{where}: out[0] is still 0, but the sum is {want:.7g}. With n < 4 there is "
                "no whole float4, only the leftover floats: are those added, and does one "
                "thread of the block reach atomicAdd(out, ...)?")
    if got == 0.0:
        return (f"{where}: out[0] is still 0, but the sum is {want:.7g}: no block added "
                "anything. Does one thread of every block reach atomicAdd(out, ...)? (A "
                "thread that returned early, or an if that no thread passes, never gets there)")
    error = case["error"]
    missing = spikes_matching(case["spikes"], -error)
    if len(missing) == 1:
        (spike,) = missing
        return (f"{where}: your sum is short by exactly the value at index "
                f"{spike['index']:,} ({spike['value']:.7g}), which is "
                f"{_where(spike['index'], n)}")
    if missing:
        first, last = sorted(missing, key=lambda spike: spike["index"])
        return (f"{where}: your sum is short by exactly x[{first['index']:,}] + "
                f"x[{last['index']:,}] ({first['value']:.7g} + {last['value']:.7g}), two "
                f"elements the checks made large; the later one is {_where(last['index'], n)}")
    extra = spikes_matching(case["spikes"], error)
    if len(extra) == 1:
        return (f"{where}: your sum is too large by exactly x[{extra[0]['index']:,}] "
                f"({extra[0]['value']:.7g}): that element was added twice. Do two of your "
                "loops (say, the float4 part and the leftover floats) overlap?")
    factor = got / want
    if round(factor) >= 2 and abs(factor - round(factor)) <= 0.01:
        return (f"{where}: your sum is {round(factor)} times the right one ({got:.7g} against "
                f"{want:.7g}): is atomicAdd(out, ...) done by several threads of a block, each "
                "with the block's total? Only one thread per block should add it")
    largest = max(spike["value"] for spike in case["spikes"])
    if -error > largest:
        return (f"{where}: your sum is {got:.7g}, the float64 sum {want:.7g}: short by "
                f"{-error:.4g}, more than the largest element ({largest:.4g}), so many "
                "elements were never added. Does every thread keep going, by blockDim.x * "
                "gridDim.x, until it passes the end? Does every warp's total reach the "
                "block's, and every block's reach out[0]?")
    return (f"{where}: your sum is {got:.7g}, the float64 sum {want:.7g}: off by {error:.3g}, "
            f"more than the tolerance {case['tolerance']:.3g} (1e-5 of sum |x|). Is every "
            "element read exactly once, and does every warp's total reach the block's?")


def describe_repeated(case: dict[str, Any]) -> str:
    """A teaching message for a case run several times, one launch of which went wrong."""
    text = (f"launch {case['failed_at']} of {case['launches']} went wrong "
            f"({case['failed_launches']} in all, each on fresh inputs): {describe(case)}")
    if case["failed_launches"] < case["launches"]:
        text += (". The other launches of this size were right: a sum that changes from one "
                 "launch to the next is a race. Does every thread wait at a __syncthreads() "
                 "before it reads what other warps wrote to shared memory?")
    return text


def findings(learner: Any, cases: list[dict[str, Any]], timed_n: int | None) -> dict[str, Any]:
    """Run the learner's kernel on `cases` (and a timed run) in the kernel worker."""
    params: dict[str, Any] = {"seed": new_seed(), "cases": cases}
    if timed_n:
        sm_count = device_facts()["sm_count"]
        params["timed"] = {"n": timed_n, "config": learner_config(learner, timed_n, sm_count)}
    return run_kernel("reduce_sum", learner.call("reduce_sum_source"), params)


def learner_cases(learner: Any, sizes: tuple[int, ...]) -> list[dict[str, Any]]:
    sm_count = device_facts()["sm_count"]
    return [{"label": f"n = {n:,}", "n": n, "config": learner_config(learner, n, sm_count)}
            for n in sizes]


def secret_size(low: int, high: int) -> int:
    """A random size in [low, high) that is not a power of two."""
    while True:
        n = random.SystemRandom().randrange(low, high)
        if n & (n - 1):
            return n


def repeated_case(learner: Any) -> dict[str, Any]:
    """A secret size launched REPEAT times on fresh inputs, beside a busy kernel, with your
    grid and with 1, 2, SMs - 1 and 2 SMs + 1 blocks of your block size."""
    sm_count = device_facts()["sm_count"]
    n = secret_size(10**5, 10**6)
    own = learner_config(learner, n, sm_count)
    grids = [own, *({**own, "blocks": blocks}
                    for blocks in (1, 2, max(1, sm_count - 1), 2 * sm_count + 1))]
    return {"label": f"n = {n:,}, launched {REPEAT} times", "n": n, "configs": grids,
            "repeat": REPEAT, "busy": True}


@pytest.fixture(scope="module")
def run(learner: Any) -> dict[str, Any]:
    sizes = (*SIZES, secret_size(10**5, 10**7), LARGE_N)
    cases = learner_cases(learner, sizes)
    own = learner_config(learner, SMALL_GRID_N, device_facts()["sm_count"])
    small = {**own, "blocks": SMALL_GRID_BLOCKS}
    cases.append({"label": "a small grid", "n": SMALL_GRID_N,
                  "config": small})
    cases.append(repeated_case(learner))
    return findings(learner, cases, TIMED_N)


@pytest.mark.points(1)
def test_launch_config(learner: Any) -> None:
    """launch_config: whole warps, at least one block, a grid that stops growing."""
    for n in (1, 31, 1000, *LARGE):
        problem = config_problem(learner.call("launch_config", n, 132), n)
        assert problem is None, problem
    grids = {n: learner.call("launch_config", n, 132)["blocks"] for n in LARGE}
    assert len(set(grids.values())) == 1, (
        f"for 132 SMs your grid grows with n: {grids}. With a grid-stride loop a larger "
        "array needs more rounds, not more blocks: cap the blocks at a few per SM (every "
        "block costs one atomicAdd, too)")
    tiny = learner.call("launch_config", 1, 132)
    assert tiny["blocks"] == 1, (
        f"for n = 1 you launch {tiny['blocks']} blocks: all but one have nothing to add")


@pytest.mark.gpu
@pytest.mark.points(3)
def test_small_sizes(run: dict[str, Any]) -> None:
    """Right on n = 1, 31, 33 and 1000 with your own configuration."""
    for case in run["cases"][:len(SIZES)]:
        assert passed(case), describe(case)


@pytest.mark.gpu
@pytest.mark.points(2)
def test_large_sizes(run: dict[str, Any]) -> None:
    """Right on a secret size and on 2^26 + 4099 floats with your own configuration."""
    for case in run["cases"][len(SIZES):len(SIZES) + 2]:
        assert passed(case), describe(case)


@pytest.mark.gpu
@pytest.mark.points(2)
def test_grid_stride(run: dict[str, Any]) -> None:
    """Still right when only two blocks cover 100,003 floats."""
    case = run["cases"][len(SIZES) + 2]
    assert passed(case), describe(case) + (
        ". (Your own configuration was fine on the other sizes: with only two blocks, each "
        "thread must loop over many elements)"
        if all(passed(c) for c in run["cases"][:len(SIZES) + 2]) else "")


@pytest.mark.gpu
@pytest.mark.points(1)
def test_repeated_launches(run: dict[str, Any]) -> None:
    """Right on every one of 12 launches with fresh inputs, other grids and a busy GPU."""
    case = run["cases"][len(SIZES) + 3]
    assert passed(case), describe_repeated(case)


@pytest.mark.gpu
@pytest.mark.points(2)
def test_speed(run: dict[str, Any]) -> None:
    """At least 0.7 of cupy.sum's read bandwidth on 2^28 + 5 floats, measured in the same run."""
    timed = run["timed"]
    assert passed(timed), (
        f"the timed run (2^28 + 5 floats) gave a wrong sum on {timed['failed_launches']} of "
        f"its {timed['launches']} launches, each on fresh inputs, so its speed does not "
        "count: " + describe({**timed, "label": "n = 2^28 + 5"}))
    ratio = timed["ratio"]
    mine = (f"your kernel read {timed['gbs']:.0f} GB/s, cupy.sum {timed['reference_gbs']:.0f} "
            "GB/s (each the median of launches timed one by one)")
    if ratio < 0.2:
        hint = ("That is far too slow for memory alone: are there many atomics on out[0] (one "
                "per element, or one per small block)? Let each thread add many elements in a "
                "register first, and each block add its total once")
    elif ratio < 0.5:
        hint = ("Do neighbouring threads read neighbouring elements (a grid-stride loop, not "
                "a chunk per thread), and is the grid large enough to fill every SM?")
    else:
        hint = ("Close: keep more bytes in flight: float4 loads, several independent loads "
                "per loop round, and enough resident warps per SM")
    assert ratio >= SPEED, (
        f"{mine} in the same run: {ratio:.2f} of it, {SPEED} needed. {hint}")


@pytest.mark.points(1)
def test_sanitizer(learner: Any) -> None:
    """compute-sanitizer finds no bad access and no race (skipped where it cannot run)."""
    missing = sanitizer_missing()
    if missing:
        pytest.skip(missing)
    sm_count = device_facts()["sm_count"]
    own = learner_config(learner, 100_003, sm_count)
    cases = [*learner_cases(learner, (1000, 4099)),
             {"label": "n = 100,003, two blocks", "n": 100_003, "config": {**own, "blocks": 2}}]
    verdict = sanitize_kernel("reduce_sum", learner.call("reduce_sum_source"), cases)
    if verdict.skipped:
        pytest.skip(verdict.skipped)
    assert verdict.problem is None, verdict.problem
