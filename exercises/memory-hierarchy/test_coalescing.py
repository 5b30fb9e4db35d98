"""Checks of the coalescing exercise (lesson: the GPU memory hierarchy).

Part 1 is arithmetic: the checks call your functions in a separate process and
compare them with their own count of 32-byte sectors. Part 2 is a kernel:
the checks fetch your CUDA C text and launch configuration (plain data) and
hand them to gpulab's kernel worker, a separate process that runs none of
your Python. It refuses a source that breaks the rules of kernel answers (the
notebook states them), compiles it, copies random floats, new ones for every
launch, into a destination filled with NaN with guard zones on both sides (so
unwritten elements show, and so do writes past either end), compares with the
source, and times your kernel launch by launch against cudaMemcpy
device-to-device of the same bytes in the same run, checking every launch.
Where compute-sanitizer can run, its memcheck looks for bad accesses too.
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
from gpulab.grading.checks.learner import LearnerError

LANES = 32
SECTOR = 32                                     # bytes
FLOAT = 4                                       # bytes
SIZES = (1, 3, 31, 33, 1000, 1_000_003, 2**26 + 7)
SMALL_GRID = {"blocks": 2, "threads": 128}      # 256 threads for 100,003 floats
SMALL_GRID_N = 100_003
TIMED_N = 2**28 + 3                             # 1 GiB per buffer: far more than the L2
LARGE = (2**24, 2**26, 2**28)                   # "large": the grid must not grow any more
SPEED = 0.8                                     # of cudaMemcpy, same sizes, same run
REPEAT = 10                                     # launches of the repeated case


# -- the checks' own sector count ---------------------------------------------------
def sectors(stride: int, offset: int = 0) -> int:
    """32-byte sectors touched when lane l of a warp reads float offset + l * stride."""
    return len({(offset + lane * stride) * FLOAT // SECTOR for lane in range(LANES)})


def fraction(stride: int) -> float:
    """Useful bytes over bytes moved, for a warp reading every stride-th float."""
    return LANES * FLOAT / (SECTOR * sectors(stride))


def close(got: Any, want: float) -> bool:
    return isinstance(got, int | float) and not isinstance(got, bool) and \
        math.isclose(got, want, rel_tol=1e-9)


def raised_value_error(learner: Any, function: str, *args: Any) -> tuple[bool, str]:
    """Did the call raise ValueError? And what it did instead, in words."""
    try:
        got = learner.call(function, *args)
    except LearnerError as exc:
        first = str(exc).splitlines()[0]  # "while calling f(): ValueError: message"
        what = first.split(": ", 1)[-1].rstrip(": ")
        # by the exception's type, never its text: TypeError(": ValueError") is no ValueError
        return exc.raised_as(ValueError), f"raised {what}"
    return False, f"returned {got!r}"


# -- Part 2 helpers -------------------------------------------------------------------
def config_problem(config: Any, n: int) -> str | None:
    """What is wrong with a launch configuration, or None."""
    call = f"copy_launch_config({n:,}, ...)"
    if not isinstance(config, dict) or set(config) != {"blocks", "threads"}:
        return f"{call} returned {config!r:.120}: expected a dict with exactly the keys " \
               "'blocks' and 'threads'"
    blocks, threads = config["blocks"], config["threads"]
    if not all(isinstance(v, int) and not isinstance(v, bool) for v in (blocks, threads)):
        return f"{call} returned {config!r}: blocks and threads must be plain ints (not " \
               "floats or NumPy numbers)"
    if not 32 <= threads <= 1024 or threads % 32:
        return f"{call} gives {threads} threads per block: use whole warps (a multiple of " \
               "32), at most 1024"
    if blocks < 1:
        return f"{call} gives {blocks} blocks: a grid needs at least one"
    return None


def shape(config: dict[str, Any]) -> str:
    """A grid in words: "2 blocks of 128 threads"."""
    blocks = config.get("blocks")
    return f"{blocks} block{'' if blocks == 1 else 's'} of {config.get('threads')} threads"


def describe(case: dict[str, Any]) -> str:
    """A teaching message for a case that was not copied exactly."""
    n, config = case["n"], case["config"]
    where = f"{case['label']} with {shape(config)}"
    if case.get("overrun_before"):
        return (f"{where}: {case['overrun_before']:,} floats before dst[0] were written: can "
                "an index be negative?")
    if case["overrun"]:
        return (f"{where}: {case['overrun']:,} floats past dst[n - 1] were written. Every store "
                "needs its bounds check: i < n / 4 for the float4 part (whole float4s only), "
                "i < n for the floats after it")
    first = case["first_wrong"]
    if case["untouched"]:
        index = first["index"]
        if index >= 4 * (n // 4):
            why = (f"it is one of the last n % 4 = {n % 4} floats, after the last whole float4: "
                   "copy those one at a time after the float4 loop")
        else:
            why = ("does every thread keep going, by blockDim.x * gridDim.x, until it passes "
                   "the end?")
        return (f"{where}: {case['untouched']:,} of {n:,} floats were never written (the first "
                f"at index {index:,}): {why}")
    return (f"{where}: {case['wrong']:,} of {n:,} floats are wrong; dst[{first['index']:,}] is "
            f"{first['got']} but src[{first['index']:,}] is {first['want']}: does each thread "
            "store to the same index it loaded from (a float4 index i covers floats 4i to "
            "4i + 3)?")


def passed(case: dict[str, Any]) -> bool:
    return case["wrong"] == 0 and case["overrun"] == 0


def describe_repeated(case: dict[str, Any]) -> str:
    """A teaching message for a case run several times, one launch of which went wrong."""
    return (f"launch {case['failed_at']} of {case['launches']} went wrong "
            f"({case['failed_launches']} in all, each on fresh inputs): {describe(case)}")


def findings(learner: Any, cases: list[dict[str, Any]], timed_n: int | None) -> dict[str, Any]:
    """Run the learner's kernel on `cases` (and a timed run) in the kernel worker."""
    params: dict[str, Any] = {"seed": new_seed(), "cases": cases}
    if timed_n:
        sm_count = device_facts()["sm_count"]
        config = learner.call("copy_launch_config", timed_n, sm_count)
        problem = config_problem(config, timed_n)
        assert problem is None, problem
        params["timed"] = {"n": timed_n, "config": config}
    return run_kernel("copy_floats", learner.call("copy_floats_source"), params)


def learner_cases(learner: Any, sizes: tuple[int, ...]) -> list[dict[str, Any]]:
    sm_count = device_facts()["sm_count"]
    cases = []
    for n in sizes:
        config = learner.call("copy_launch_config", n, sm_count)
        problem = config_problem(config, n)
        assert problem is None, problem
        cases.append({"label": f"n = {n:,}", "n": n, "config": config})
    return cases


def repeated_case(learner: Any) -> dict[str, Any]:
    """A secret size copied REPEAT times on fresh inputs, beside a busy kernel, with your grid
    and with grids of 1, 3, SMs - 1 and 2 SMs + 1 blocks of your block size."""
    sm_count = device_facts()["sm_count"]
    n = random.SystemRandom().randrange(10**5, 10**6) | 1
    (own,) = learner_cases(learner, (n,))
    threads = own["config"]["threads"]
    grids = [own["config"], *({"blocks": blocks, "threads": threads}
                              for blocks in (1, 3, max(1, sm_count - 1), 2 * sm_count + 1))]
    return {"label": f"n = {n:,}, copied {REPEAT} times", "n": n, "configs": grids,
            "repeat": REPEAT, "busy": True}


@pytest.fixture(scope="module")
def run(learner: Any) -> dict[str, Any]:
    cases = learner_cases(learner, SIZES)
    cases.append({"label": "a small grid", "n": SMALL_GRID_N,
                  "config": SMALL_GRID})
    cases.append(repeated_case(learner))
    return findings(learner, cases, TIMED_N)


# -- Part 1: the sector model -----------------------------------------------------------
@pytest.mark.points(2)
def test_sectors_per_warp(learner: Any) -> None:
    """sectors_per_warp counts the 32-byte sectors a warp's 32 loads touch."""
    for stride in (1, 2, 3, 4, 8, 16, 32):
        got = learner.call("sectors_per_warp", stride)
        want = sectors(stride)
        assert got == want, (
            f"sectors_per_warp({stride}) returned {got!r}, but lanes 0..31 reading floats "
            f"0, {stride}, {2 * stride}, ... {31 * stride} touch {want} sectors of 32 bytes "
            f"(a sector holds 8 floats; the warp spans {31 * stride * FLOAT + FLOAT} bytes)")
    for stride, offset in ((1, 1), (1, 8), (2, 3)):
        got = learner.call("sectors_per_warp", stride, offset)
        want = sectors(stride, offset)
        assert got == want, (
            f"sectors_per_warp({stride}, offset={offset}) returned {got!r}, but floats "
            f"{offset}, {offset + stride}, ... {offset + 31 * stride} touch {want} sectors: "
            "count the sector of every lane's address, (offset + lane * stride) * 4 // 32, "
            "and the distinct ones")


@pytest.mark.points(2)
def test_useful_fraction(learner: Any) -> None:
    """useful_fraction: bytes the warp uses over bytes the sectors move."""
    for stride in range(1, 33):
        got = learner.call("useful_fraction", stride)
        want = fraction(stride)
        assert close(got, want), (
            f"useful_fraction({stride}) returned {got!r}, but a warp uses 32 x 4 = 128 bytes "
            f"and its {sectors(stride)} sectors move {SECTOR * sectors(stride)}: "
            f"{want:.4g} of the bytes moved are useful")


@pytest.mark.points(1)
def test_bad_stride_is_refused(learner: Any) -> None:
    """Both functions raise ValueError for a stride below 1."""
    for function in ("sectors_per_warp", "useful_fraction"):
        ok, what = raised_value_error(learner, function, 0)
        assert ok, (f"{function}(0) {what}, but it should raise ValueError: a stride is a "
                    "whole number of floats, at least 1")


# -- Part 2: the copy kernel --------------------------------------------------------------
@pytest.mark.points(1)
def test_copy_launch_config(learner: Any) -> None:
    """copy_launch_config: whole warps, at least one block, a grid that stops growing."""
    for n in (1, 31, 1000, *LARGE):
        problem = config_problem(learner.call("copy_launch_config", n, 132), n)
        assert problem is None, problem
    grids = {n: learner.call("copy_launch_config", n, 132)["blocks"] for n in LARGE}
    assert len(set(grids.values())) == 1, (
        f"for 132 SMs your grid grows with n: {grids}. With a grid-stride loop a larger "
        "array needs more rounds, not more blocks: cap the blocks at a few per SM")


@pytest.mark.gpu
@pytest.mark.points(3)
def test_copy_sizes(run: dict[str, Any]) -> None:
    """Exact on n = 1, 3, 31, 33, 1000, 1,000,003 and 2^26 + 7, nothing written past the end."""
    for case in run["cases"][:len(SIZES)]:
        assert passed(case), describe(case)


@pytest.mark.gpu
@pytest.mark.points(2)
def test_copy_grid_stride(run: dict[str, Any]) -> None:
    """Still exact when two blocks of 128 threads copy 100,003 floats."""
    case = run["cases"][len(SIZES)]
    assert passed(case), describe(case)


@pytest.mark.gpu
@pytest.mark.points(1)
def test_copy_repeated(run: dict[str, Any]) -> None:
    """Exact on every one of 10 copies with fresh inputs, other grids and a busy GPU."""
    case = run["cases"][len(SIZES) + 1]
    assert passed(case), describe_repeated(case)


@pytest.mark.gpu
@pytest.mark.points(3)
def test_copy_speed(run: dict[str, Any]) -> None:
    """At least 0.8 of cudaMemcpy's bandwidth on 1 GiB, measured in the same run."""
    timed = run["timed"]
    assert passed(timed), (
        f"the timed run (2^28 + 3 floats) went wrong on {timed['failed_launches']} of its "
        f"{timed['launches']} copies, each on fresh inputs, so its speed does not count: "
        + describe({**timed, "label": "the timed run"}))
    ratio = timed["ratio"]
    mine = (f"your copy moved {timed['gbs']:.0f} GB/s, cudaMemcpy {timed['reference_gbs']:.0f} "
            f"GB/s (read + written; each the median of copies timed one by one) in the same "
            f"run: {ratio:.2f} of it, {SPEED} needed")
    if ratio < 0.5:
        hint = ("Do neighbouring threads read neighbouring addresses? If each thread copies a "
                "chunk of its own, a warp's 32 loads land in 32 different sectors, and most "
                "of every sector is fetched for nothing. Let thread t handle float4s t, "
                "t + G, t + 2G, ... (G = threads in the grid)")
    else:
        hint = ("The accesses are probably coalesced; now keep more bytes in flight: one "
                "float4 (16 bytes) per load instead of one float, and enough blocks to fill "
                "every SM (several per SM)")
    assert ratio >= SPEED, f"{mine}. {hint}"


@pytest.mark.points(1)
def test_copy_sanitizer(learner: Any) -> None:
    """compute-sanitizer's memcheck finds no access out of bounds (skipped where it cannot run)."""
    missing = sanitizer_missing()
    if missing:
        pytest.skip(missing)
    cases = learner_cases(learner, (1003, 4099))
    cases.append({"label": "n = 33, one warp", "n": 33, "config": {"blocks": 1, "threads": 32}})
    verdict = sanitize_kernel("copy_floats", learner.call("copy_floats_source"), cases,
                              ("memcheck",), timeout=100)
    if verdict.skipped:
        pytest.skip(verdict.skipped)
    assert verdict.problem is None, verdict.problem
