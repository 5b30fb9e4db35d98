"""Checks of the tiled-matmul exercise (lesson: CUDA programming).

`global_bytes` and `shared_reads_per_fma` are compared with the checks' own
arithmetic. Your kernel is CUDA C text and your launch configuration is
numbers: the checks fetch both from your notebook and hand them to gpulab's
kernel worker, a separate process that runs none of your Python. It refuses a
source that breaks the rules of kernel answers (the notebook states them),
compiles it, fills A and B with random values in [-1, 1) that it keeps to
itself, new ones for every launch (C starts as NaN, with guard zones on both
sides, so unwritten elements and writes past the ends both show), launches
your kernel, and compares with a float64 product: an element passes when it
is within 16 * sqrt(K) float32 roundings of the sum of the magnitudes of its
K products, which any order of summation meets. On 4096 x 4096 x 4096 it
times your kernel launch by launch against cupy.matmul (cuBLAS, FP32, no
TF32) in the same run, checking every launch. Where compute-sanitizer can
run, its memcheck and racecheck look for bad accesses and races too.
"""

from __future__ import annotations

import math
import random
from typing import Any

import pytest

from gpulab.grading.checks.gpu import new_seed, run_kernel, sanitize_kernel, sanitizer_missing

SMALL = ((1, 1, 1), (31, 33, 17), (33, 31, 65))
TILES = ((128, 128, 128), (100, 257, 129))      # a whole 128 tile; a ragged everything
RAGGED = ((128, 128, 137), (130, 128, 128), (128, 133, 128))   # one side ragged at a time
TIMED = (4096, 4096, 4096)
REPEATED = (1280, 1280, 777)   # a hundred blocks of 128 x 128, ragged in K
REPEAT = 8
SPEED = 0.25             # of cuBLAS FP32, same sizes, same run
MAX_THREADS = 1024


# -- the checks' own arithmetic ---------------------------------------------------------
def want_global_bytes(m: int, n: int, k: int, tile_m: int, tile_n: int) -> int:
    """Bytes of A and B a tiled kernel reads: each block reads its strips of A and B once."""
    return 4 * (math.ceil(n / tile_n) * m * k + math.ceil(m / tile_m) * n * k)


def want_reads_per_fma(thread_m: int, thread_n: int) -> float:
    """Shared-memory values a thread reads per FMA with a thread_m x thread_n block of C."""
    return (thread_m + thread_n) / (thread_m * thread_n)


def close(got: Any, want: float) -> bool:
    return isinstance(got, int | float) and not isinstance(got, bool) and \
        math.isclose(got, want, rel_tol=1e-9)


# -- launch configurations ---------------------------------------------------------------
def config_problem(config: Any, m: int, n: int, k: int) -> str | None:
    """What is wrong with launch_config(M, N, K), or None."""
    call = f"launch_config({m}, {n}, {k})"
    if not isinstance(config, dict) or not {"grid", "block"} <= set(config) or \
            set(config) - {"grid", "block", "shared_mem"}:
        return f"{call} returned {config!r:.120}: expected a dict with the keys 'grid' and " \
               "'block' (and, if your kernel uses dynamic shared memory, 'shared_mem')"
    grid, block = config["grid"], config["block"]
    for key, value in (("grid", grid), ("block", block)):
        items = value if isinstance(value, list) else [value]
        if not 1 <= len(items) <= 3 or not all(
                isinstance(v, int) and not isinstance(v, bool) and v >= 1 for v in items):
            return f"{call} gives {key} = {value!r:.80}: a positive plain int or a list of one " \
                   "to three (not floats or NumPy numbers)"
    threads = math.prod(block if isinstance(block, list) else [block])
    if threads > MAX_THREADS or threads % 32:
        return f"{call} gives blocks of {threads} threads: use whole warps (a multiple of " \
               f"32), at most {MAX_THREADS}"
    shared = config.get("shared_mem", 0)
    if not isinstance(shared, int) or isinstance(shared, bool) or shared < 0:
        return f"{call} gives shared_mem = {shared!r:.40}: a number of bytes, or leave it out"
    return None


def learner_cases(learner: Any, sizes: tuple[tuple[int, int, int], ...]) -> list[dict[str, Any]]:
    """One case per size, each with the learner's own launch configuration."""
    cases = []
    for m, n, k in sizes:
        config = learner.call("launch_config", m, n, k)
        problem = config_problem(config, m, n, k)
        assert problem is None, problem
        cases.append({"label": f"{m} x {n} x {k}", "M": m, "N": n, "K": k, "config": config})
    return cases


def findings(learner: Any, cases: list[dict[str, Any]],
             timed: tuple[int, int, int] | None) -> dict[str, Any]:
    """Run the learner's kernel on `cases` (and a timed run) in the kernel worker."""
    params: dict[str, Any] = {"seed": new_seed(), "cases": cases}
    if timed:
        params["timed"] = {"M": timed[0], "N": timed[1], "K": timed[2],
                           "config": learner.call("launch_config", *timed)}
    return run_kernel("sgemm", learner.call("sgemm_source"), params)


# -- teaching messages -------------------------------------------------------------------
def facts(case: dict[str, Any]) -> str:
    """What is wrong in one case, and where: the first element that differs."""
    m, n, k = case["M"], case["N"], case["K"]
    where = f"M = {m}, N = {n}, K = {k}"
    if case["overrun"]:
        return f"{where}: your kernel wrote {case['overrun']} floats past the ends of C"
    first = case["first_wrong"]
    r, c = divmod(first["index"], n)
    if case["untouched"]:
        return (f"{where}: {case['untouched']} of {case['size']} elements of C were never "
                f"written, the first C[{r}][{c}]")
    return (f"{where}: {case['wrong']} of {case['size']} elements are wrong; C[{r}][{c}] is "
            f"{first['got']} but A @ B gives {first['want']}")


def describe(case: dict[str, Any]) -> str:
    """What went wrong in one case, and where to look."""
    if case["overrun"]:
        return (f"{facts(case)}: check row < M and col < N before every store (the last "
                "block row and column of the grid stick out of C)")
    if case["untouched"]:
        return (f"{facts(case)}: does the grid cover all of C, rounded up (ceil(N / tile "
                "width) across, ceil(M / tile height) down), and does every thread store "
                "every output it owns?")
    return (f"{facts(case)}. Check the indexing: A[row * K + k], B[k * N + col], "
            "C[row * N + col], and both barriers of the loop over K: one after the tiles are "
            "stored, one before they are overwritten")


def diagnose(cases: list[dict[str, Any]],
             others: list[dict[str, Any]] | None = None) -> str | None:
    """A message for the first wrong case, told apart by which sizes went wrong (among
    `cases`, and `others` of the same run, which may hold the whole 128 tile)."""
    bad = [case for case in cases if case["wrong"] or case["overrun"]]
    if not bad:
        return None
    whole = [case for case in [*cases, *(others or [])]
             if (case["M"], case["N"], case["K"]) == (128, 128, 128)]
    if whole and not (whole[0]["wrong"] or whole[0]["overrun"]) and not bad[0]["overrun"]:
        ragged_k = [c for c in bad if c["K"] % 8 and c["M"] % 128 == 0 and c["N"] % 128 == 0]
        if ragged_k:
            return (f"right on 128 x 128 x 128 but wrong when only K is ragged; "
                    f"{facts(ragged_k[0])}. The last step along K runs past the end of A's "
                    "rows and B's columns: load 0 for k >= K, so that the missing products "
                    "add nothing")
        return (f"right on 128 x 128 x 128 but wrong at the edges; {facts(bad[0])}. Loads "
                "past the last row of A or the last column of B must read 0 (skipping the "
                "store to shared memory instead leaves the previous tile's values there), "
                "and stores outside C must be skipped")
    return describe(bad[0])


def describe_repeated(case: dict[str, Any], others: list[dict[str, Any]]) -> str:
    """A teaching message for a case run several times, one launch of which went wrong
    (told apart, as `diagnose` does, by the `others` cases of the same run)."""
    text = (f"launch {case['failed_at']} of {case['launches']} went wrong "
            f"({case['failed_launches']} in all, each on fresh inputs, beside a busy kernel): "
            f"{diagnose([case], others)}")
    if case["failed_launches"] < case["launches"]:
        text += (". The other launches of this size were right: a result that changes from "
                 "one launch to the next is a race. Does every warp wait at a barrier before "
                 "it reads a tile others store, and before it overwrites a tile others may "
                 "still be reading?")
    return text


@pytest.fixture(scope="module")
def run(learner: Any) -> dict[str, Any]:
    draw = random.SystemRandom()
    secret = (draw.randrange(200, 700) | 1, draw.randrange(200, 700) | 1,
              draw.randrange(200, 700) | 1)
    cases = learner_cases(learner, (*SMALL, *TILES, *RAGGED, secret, REPEATED))
    cases[-2]["label"] = "a secret size"
    cases[-1].update(label=f"{REPEATED[0]} x {REPEATED[1]} x {REPEATED[2]}, launched "
                     f"{REPEAT} times", repeat=REPEAT, busy=True)
    return findings(learner, cases, TIMED)


# -- the checks ----------------------------------------------------------------------------
@pytest.mark.points(2)
def test_reuse_arithmetic(learner: Any) -> None:
    """global_bytes and shared_reads_per_fma count the traffic of a tiling"""
    for m, n, k, tm, tn in ((4096, 4096, 4096, 1, 1), (4096, 4096, 4096, 16, 16),
                            (4096, 4096, 4096, 128, 128), (100, 257, 129, 128, 128),
                            (1, 1, 1, 16, 16), (1000, 3000, 500, 64, 128)):
        got = learner.call("global_bytes", m, n, k, tm, tn)
        want = want_global_bytes(m, n, k, tm, tn)
        assert close(got, want), (
            f"global_bytes({m}, {n}, {k}, {tm}, {tn}) returned {got!r}, but {want} bytes: "
            f"each of the ceil({n}/{tn}) block columns reads all {m} x {k} of A, each of the "
            f"ceil({m}/{tm}) block rows all {k} x {n} of B, 4 bytes each")
    for tm, tn in ((1, 1), (1, 4), (4, 4), (8, 8), (16, 8)):
        got = learner.call("shared_reads_per_fma", tm, tn)
        want = want_reads_per_fma(tm, tn)
        assert close(got, want), (
            f"shared_reads_per_fma({tm}, {tn}) returned {got!r}, but {want:.4g}: per step of "
            f"k a thread reads {tm} values of A and {tn} of B, and does {tm} x {tn} FMAs")


@pytest.mark.points(1)
def test_launch_config(learner: Any) -> None:
    """launch_config: whole warps, at most 1024 threads, plain ints"""
    for m, n, k in (*SMALL, *TILES, TIMED, (1, 5000, 3), (5000, 1, 3)):
        problem = config_problem(learner.call("launch_config", m, n, k), m, n, k)
        assert problem is None, problem


@pytest.mark.gpu
@pytest.mark.points(3)
def test_small_sizes(run: dict[str, Any]) -> None:
    """Right on 1 x 1 x 1, 31 x 33 x 17 and 33 x 31 x 65"""
    message = diagnose(run["cases"][:len(SMALL)], run["cases"][:-1])
    assert message is None, message


@pytest.mark.gpu
@pytest.mark.points(3)
def test_tiles_and_edges(run: dict[str, Any]) -> None:
    """Right on whole tiles, ragged edges in M, N or K, and a secret size"""
    message = diagnose(run["cases"][len(SMALL):-1])
    assert message is None, message


@pytest.mark.gpu
@pytest.mark.points(1)
def test_repeated_launches(run: dict[str, Any]) -> None:
    """Right on every one of 8 launches with fresh inputs beside a busy kernel"""
    case = run["cases"][-1]
    assert not (case["wrong"] or case["overrun"]), describe_repeated(case, run["cases"][:-1])


@pytest.mark.gpu
@pytest.mark.points(3)
def test_speed(run: dict[str, Any]) -> None:
    """At least 0.25 of cuBLAS FP32 on 4096 x 4096 x 4096, in the same run"""
    timed = run["timed"]
    assert not (timed["wrong"] or timed["overrun"]), (
        f"the timed run (4096 x 4096 x 4096) went wrong on {timed['failed_launches']} of its "
        f"{timed['launches']} launches, each on fresh inputs, so its speed does not count: "
        + describe(timed))
    tflops = timed["tflops"]
    assert timed["ratio"] >= SPEED, (
        f"your kernel ran at {tflops['yours']:.1f} TFLOPS, cuBLAS at {tflops['cublas']:.1f} "
        f"in the same run (each the median of launches timed one by one, on fresh inputs): "
        f"{timed['ratio']:.2f} of it, {SPEED} needed. A kernel with one "
        "output per thread reads two shared-memory values per FMA and is capped near an "
        "eighth of the FP32 peak; give each thread a block of outputs (8 x 8) in registers, "
        "read its A and B values once per step of k (float4 loads), and reuse each eight "
        "times")


@pytest.mark.points(1)
def test_sanitizer(learner: Any) -> None:
    """compute-sanitizer finds no bad access and no race (skipped where it cannot run)"""
    missing = sanitizer_missing()
    if missing:
        pytest.skip(missing)
    cases = learner_cases(learner, ((130, 128, 137), (33, 31, 65)))
    verdict = sanitize_kernel("sgemm", learner.call("sgemm_source"), cases)
    if verdict.skipped:
        pytest.skip(verdict.skipped)
    assert verdict.problem is None, verdict.problem
