"""Checks of the matmul-dtypes exercise (lesson: Tensor Cores).

`tflops` and `padded_shape` are compared with the checks' own arithmetic. For
`time_matmul` the checks time the same cuBLAS product themselves, in this
process, right after your function returned (a warm-up, then five products
between two CUDA events, the median of five such pairs): your time must agree
within 35 %; both figures and your prediction go into your feedback.

Your kernel is CUDA C text and your launch configuration is numbers: the checks
fetch both from your notebook and hand them to gpulab's kernel worker, a
separate process that runs none of your Python. It refuses a source that
breaks the rules of kernel answers (the notebook states them), compiles it,
fills A and B with random FP16 values in [-1, 1) that it keeps to itself, new
ones for every launch (C starts as NaN, with guard zones on both sides, so
unwritten elements and writes past the ends both show), launches your kernel,
and compares with a float64 product of the same values: an element passes
when it is within 8 * sqrt(K) float32 roundings of the sum of the magnitudes
of its K products, which FP32 sums in any order meet and FP16 sums do not. On
n x n x n it times your kernel launch by launch against cuBLAS on the same
product (cublasGemmEx, FP16 in, FP32 out), in the same run, checking every
launch. The checks' own timings and arithmetic are in
`gpulab.grading.checks.reference.matmul_dtypes`.
"""

from __future__ import annotations

import math
import random
from typing import Any

import pytest

from gpulab.grading.checks.gpu import new_seed, run_kernel
from gpulab.grading.checks.reference.matmul_dtypes import (
    DTYPES,
    NAMES,
    not_supported,
    own_matmul_ms,
    padded,
    side,
    tflops,
)

SPEED = 0.1  # of cuBLAS FP16, same product, same run
AGREE = 0.35  # your time within this fraction of the checks' own
ACCUMULATION = 4e-3  # worst error / magnitudes below this: rounding, not a wrong element
MAX_THREADS = 1024

SMALL = ((1, 1, 1), (16, 16, 16), (17, 33, 19), (31, 15, 47))
TILES = ((128, 128, 128), (256, 384, 512))
RAGGED = ((128, 128, 137), (128, 128, 136), (130, 128, 128), (128, 133, 128), (100, 257, 129))
THIN = ((1, 1000, 300), (1000, 3, 77), (7, 9, 4099))
LONG_K = ((64, 64, 8192), (96, 80, 16411))
REPEATED = (1280, 1280, 777)
REPEAT = 8


# -- numbers ---------------------------------------------------------------------------------
def number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def close(got: Any, want: float) -> bool:
    return number(got) and math.isclose(got, want, rel_tol=1e-9)


# -- launch configurations -------------------------------------------------------------------
def config_problem(config: Any, m: int, n: int, k: int) -> str | None:
    """What is wrong with hgemm_config(M, N, K), or None."""
    call = f"hgemm_config({m}, {n}, {k})"
    if (
        not isinstance(config, dict)
        or not {"grid", "block"} <= set(config)
        or set(config) - {"grid", "block", "shared_mem"}
    ):
        return (
            f"{call} returned {config!r:.120}: expected a dict with the keys 'grid' and "
            "'block' (and, for dynamic shared memory, 'shared_mem')"
        )
    for key in ("grid", "block"):
        value = config[key]
        items = value if isinstance(value, list) else [value]
        if not 1 <= len(items) <= 3 or not all(
            isinstance(v, int) and not isinstance(v, bool) and v >= 1 for v in items
        ):
            return (
                f"{call} gives {key} = {value!r:.80}: a positive plain int or a list of one "
                "to three (not floats or NumPy numbers)"
            )
    block = config["block"]
    threads = math.prod(block if isinstance(block, list) else [block])
    if threads > MAX_THREADS or threads % 32:
        return (
            f"{call} gives blocks of {threads} threads: WMMA works by whole warps (a "
            f"multiple of 32), at most {MAX_THREADS}"
        )
    shared = config.get("shared_mem", 0)
    if not isinstance(shared, int) or isinstance(shared, bool) or shared < 0:
        return f"{call} gives shared_mem = {shared!r:.40}: a number of bytes, or leave it out"
    return None


def learner_cases(learner: Any, sizes: tuple[tuple[int, int, int], ...]) -> list[dict[str, Any]]:
    """One case per size, each with the learner's own launch configuration."""
    cases = []
    for m, n, k in sizes:
        config = learner.call("hgemm_config", m, n, k)
        problem = config_problem(config, m, n, k)
        assert problem is None, problem
        cases.append({"label": f"{m} x {n} x {k}", "M": m, "N": n, "K": k, "config": config})
    return cases


def findings(
    learner: Any, cases: list[dict[str, Any]], timed: tuple[int, int, int] | None
) -> dict[str, Any]:
    """Run the learner's kernel on `cases` (and a timed run) in the kernel worker."""
    params: dict[str, Any] = {"seed": new_seed(), "cases": cases}
    if timed:
        params["timed"] = {
            "M": timed[0],
            "N": timed[1],
            "K": timed[2],
            "config": learner.call("hgemm_config", *timed),
        }
    return run_kernel("hgemm", learner.call("hgemm_source"), params, timeout=300)


# -- teaching messages -----------------------------------------------------------------------
def bad(case: dict[str, Any]) -> bool:
    return bool(case["wrong"] or case["overrun"])


def rounding_only(case: dict[str, Any]) -> bool:
    """Every element written, none far off: the sums were rounded too coarsely."""
    worst = case.get("worst")
    return (
        bad(case)
        and not case["overrun"]
        and not case["untouched"]
        and number(worst)
        and worst < ACCUMULATION
    )


def facts(case: dict[str, Any]) -> str:
    """What is wrong in one case, and where: the first element that differs."""
    m, n, k = case["M"], case["N"], case["K"]
    where = f"M = {m}, N = {n}, K = {k}"
    if case["overrun"]:
        return f"{where}: your kernel wrote {case['overrun']} floats past the ends of C"
    first = case["first_wrong"]
    r, c = divmod(first["index"], n)
    if case["untouched"]:
        return (
            f"{where}: {case['untouched']} of {case['size']} elements of C were never "
            f"written or are NaN, the first C[{r}][{c}]"
        )
    return (
        f"{where}: {case['wrong']} of {case['size']} elements are wrong; C[{r}][{c}] is "
        f"{first['got']} but A @ B gives {first['want']}"
    )


def accumulation_message(case: dict[str, Any]) -> str:
    return (
        f"{facts(case)}. Every element is close, but not close enough: the worst is off by "
        f"{case['worst']:.1e} of the sum of the magnitudes of its {case['K']} products, the "
        "size of FP16 rounding (2^-11 = 4.9e-4 of each partial sum), where FP32 sums stay "
        "below 1e-6. The sums were kept in FP16 somewhere: the accumulator fragments, or a "
        "conversion on the way; keep them in FP32 until they are stored into C"
    )


def describe(case: dict[str, Any]) -> str:
    """What went wrong in one case, and where to look."""
    if rounding_only(case):
        return accumulation_message(case)
    if case["overrun"]:
        return (
            f"{facts(case)}: check row < M and col < N before every store; a 16 x 16 "
            "fragment that sticks out of C cannot be stored straight into it"
        )
    if case["untouched"]:
        return (
            f"{facts(case)}: does the grid cover all of C, rounded up (ceil(N / 128) "
            "across, ceil(M / 128) down), does every fragment get stored, and are loads "
            "past the end of A or B (which read NaN here) kept out of the sums?"
        )
    return (
        f"{facts(case)}. Check the indexing: A[row * K + k], B[k * N + col], "
        "C[row * N + col]; the fragment pointers and their leading dimensions; and the "
        "barriers: a stage is read only after every thread's copies into it have landed, "
        "and refilled only after every warp is done with it"
    )


def diagnose(cases: list[dict[str, Any]], others: list[dict[str, Any]] | None = None) -> str | None:
    """A message for the first wrong case of `cases`, told apart by which sizes of the same
    run went wrong (`cases` and `others`, which may hold the whole 128 tile)."""
    wrong = [case for case in cases if bad(case)]
    if not wrong:
        return None
    seen = [*cases, *(others or [])]
    seen_wrong = [case for case in seen if bad(case)]
    whole = [case for case in seen if (case["M"], case["N"], case["K"]) == (128, 128, 128)]
    rounding = [case for case in wrong if rounding_only(case)]
    # FP16 sums are off on every size; an error of that size only where K is ragged is an
    # edge's stale values (seen on an H100), not the accumulator
    if rounding and (
        not whole
        or bad(whole[0])
        or any(rounding_only(case) for case in seen_wrong if case["K"] % 32 == 0)
    ):
        return accumulation_message(rounding[0])
    if not whole or bad(whole[0]) or wrong[0]["overrun"]:
        return describe(wrong[0])
    ragged_right = [
        case
        for case in seen
        if not bad(case)
        and case["K"] % 8 == 0
        and case["N"] % 8 == 0
        and (case["K"] % 32 or case["M"] % 128 or case["N"] % 128)
    ]
    if ragged_right and all(case["K"] % 8 or case["N"] % 8 for case in seen_wrong):
        return (
            f"right where K and N are multiples of 8, ragged edges included, but wrong "
            f"otherwise; {facts(wrong[0])}. Row r of A starts at byte 2 * r * K: on a "
            "16-byte boundary only when K is a multiple of 8 (B's rows: N). 16-byte copies "
            "and loads need that; read such rows half by half"
        )
    k_only = [c for c in seen_wrong if c["K"] % 32 and c["M"] % 128 == 0 and c["N"] % 128 == 0]
    if k_only:
        return (
            f"right on 128 x 128 x 128 but wrong when K is ragged (on {k_only[0]['M']} x "
            f"{k_only[0]['N']} x {k_only[0]['K']} too); {facts(wrong[0])}. The last step "
            "along K runs past the end of A's rows and B's columns: the parts of the tiles "
            "outside A and B must hold 0, so that the missing products add nothing (a chunk "
            "left unwritten keeps an older tile's values)"
        )
    return (
        f"right on 128 x 128 x 128 but wrong at the edges; {facts(wrong[0])}. Chunks past "
        "the last row of A or the last column of B must be written as zeros, and the "
        "elements of C outside it skipped when a fragment is stored"
    )


def describe_repeated(case: dict[str, Any], others: list[dict[str, Any]]) -> str:
    """A teaching message for a case run several times, one launch of which went wrong."""
    text = (
        f"launch {case['failed_at']} of {case['launches']} went wrong "
        f"({case['failed_launches']} in all, each on fresh inputs, beside a busy kernel): "
        f"{diagnose([case], others)}"
    )
    if case["failed_launches"] < case["launches"]:
        text += (
            ". The other launches of this size were right: a result that changes from one "
            "launch to the next is a race. Is every stage read only after a barrier that "
            "follows the wait for its copies, and refilled only after a barrier that every "
            "warp reaches when it is done reading it?"
        )
    return text


def speed_message(timed: dict[str, Any], speed: float) -> str:
    tf = timed["tflops"]
    return (
        f"on {timed['M']} x {timed['N']} x {timed['K']} your kernel ran at {tf['yours']:.1f} "
        f"TFLOPS, cuBLAS at {tf['cublas']:.1f} in the same run (each the median of launches "
        f"timed one by one, on fresh inputs): {timed['ratio']:.3f} of it, {speed} needed. A "
        "warp that fetches its own pieces of A and B from global memory for every fragment "
        "reads each element of A N / 16 times: the Tensor Cores wait for memory. The cure "
        "is shared memory reuse: copy a tile of A and of B into shared memory once per "
        "block, with 16-byte copies, and give each warp several accumulator fragments, so "
        "that every fragment it loads is used more than once"
    )


# -- timing messages -------------------------------------------------------------------------
def timing_problem(dtype: str, n: int, k: int, got: Any, want: float) -> str | None:
    """Why the learner's time differs from the checks' own, or None when they agree."""
    call = f"time_matmul({dtype!r}, {n}" + ("" if k == n else f", {k}") + ")"
    if not number(got) or got <= 0:
        return f"{call} returned {got!r:.60}: expected the milliseconds of one product"
    ratio = got / want
    if 1 / (1 + AGREE) <= ratio <= 1 + AGREE:
        return None
    said = (
        f"{call} says {got:.3f} ms ({tflops(n, n, k, got):.1f} TFLOPS), the checks timed "
        f"the same product just now at {want:.3f} ms ({tflops(n, n, k, want):.1f} TFLOPS)"
    )
    if ratio < 1 / 12:
        return (
            f"{said}: faster than the GPU can do it. The timing ended before the GPU did: "
            "a host timer around an asynchronous launch, or an end event not waited for "
            "(cp.matmul returns as soon as the product is queued)"
        )
    if ratio < 1:
        if dtype == "fp32" and ratio < 1 / 3:
            return (
                f"{said}: FP32 at a Tensor Core rate. TF32 was on: plain FP32 is the "
                "product inside tf32_mode(False)"
            )
        return (
            f"{said}: too fast by {1 / ratio:.2f} times. Is every product between the two "
            "events, and the time divided by the number of products, not more?"
        )
    if dtype == "tf32" and ratio > 3:
        return (
            f"{said}: TF32 at the FP32 rate of the CUDA cores. The product ran without TF32: "
            "float32 arrays inside tf32_mode(True)"
        )
    if dtype in ("fp16", "bf16") and ratio > 4:
        return (
            f"{said}: {NAMES[dtype]} at an FP32 rate. Were the operands {NAMES[dtype]} "
            "(float16 arrays; to_bf16 and bf16_matmul), made before the timing?"
        )
    return (
        f"{said}: slower by {ratio:.2f} times. Is the first product (cuBLAS's start-up, its "
        "choice of kernel) or the making of the inputs inside the timing? Warm up once, "
        "then time only the products, and keep the median of several repeats"
    )


# -- the kernel's run ------------------------------------------------------------------------
@pytest.fixture(scope="module")
def run(learner: Any) -> dict[str, Any]:
    draw = random.SystemRandom()
    secret = (
        draw.randrange(200, 700) | 1,
        draw.randrange(200, 700) | 1,
        draw.randrange(200, 700) | 1,
    )
    n = side()
    cases = learner_cases(learner, (*SMALL, *TILES, *RAGGED, *THIN, *LONG_K, secret, REPEATED))
    cases[-2]["label"] = "a secret size"
    cases[-1].update(
        label=f"{REPEATED[0]} x {REPEATED[1]} x {REPEATED[2]}, launched {REPEAT} times",
        repeat=REPEAT,
        busy=True,
    )
    return findings(learner, cases, (n, n, n))


def part(run: dict[str, Any], first: int, count: int) -> list[dict[str, Any]]:
    return list(run["cases"][first : first + count])


# -- the checks ------------------------------------------------------------------------------
@pytest.mark.points(1)
def test_tflops(learner: Any) -> None:
    """tflops counts 2 m n k FLOPs: a multiply-add is two"""
    for m, n, k, ms in (
        (8192, 8192, 8192, 1.5),
        (4096, 4096, 4096, 2.7),
        (1, 1, 1, 1.0),
        (1000, 3000, 500, 0.25),
        (7, 11, 13, 1e-3),
    ):
        got = learner.call("tflops", m, n, k, ms)
        want = tflops(m, n, k, ms)
        if close(got, want / 2):
            pytest.fail(
                f"tflops({m}, {n}, {k}, {ms}) returned {got!r}, half of {want:.6g}: it counts "
                "m n k FLOPs, but a multiply-add is two FLOPs (a multiply and an add), and "
                "the datasheet peaks count it that way"
            )
        assert close(got, want), (
            f"tflops({m}, {n}, {k}, {ms}) returned {got!r}, but {want:.6g}: 2 m n k "
            "floating-point operations in ms milliseconds, in units of 10^12 per second"
        )


@pytest.mark.points(1)
def test_padded_shape(learner: Any) -> None:
    """padded_shape rounds each dimension up to the multiple"""
    for m, n, k, multiple in (
        (8192, 8192, 8191, 8),
        (8192, 8192, 8192, 8),
        (1, 1, 1, 16),
        (50257, 768, 3072, 64),
        (100, 257, 129, 128),
    ):
        got = learner.call("padded_shape", m, n, k, multiple)
        want = padded(m, n, k, multiple)
        assert (
            isinstance(got, list | tuple)
            and len(got) == 3
            and all(isinstance(v, int) and not isinstance(v, bool) for v in got)
            and tuple(got) == want
        ), (
            f"padded_shape({m}, {n}, {k}, {multiple}) returned {got!r:.80}, but {want}: each "
            "dimension rounded up to the next multiple (one that is a multiple already stays), "
            "as three ints"
        )


@pytest.mark.points(1)
def test_hgemm_config(learner: Any) -> None:
    """hgemm_config: whole warps, at most 1024 threads, plain ints"""
    for m, n, k in (
        (1, 1, 1),
        (17, 33, 19),
        (128, 128, 128),
        (8192, 8192, 8192),
        (1, 5000, 3),
        (5000, 1, 3),
    ):
        problem = config_problem(learner.call("hgemm_config", m, n, k), m, n, k)
        assert problem is None, problem


@pytest.mark.gpu
@pytest.mark.points(3)
def test_dtype_throughput(learner: Any, measured: Any) -> None:
    """time_matmul agrees with the checks' own timing in FP32, TF32, FP16 and BF16"""
    n = side()
    problems = []
    for dtype in DTYPES:
        if not_supported(dtype):
            continue
        got = learner.call("time_matmul", dtype, n)
        want = own_matmul_ms(dtype, n)
        measured(
            f"{dtype}_tflops",
            label=f"{NAMES[dtype]} matmul (cuBLAS), {n} x {n} x {n}",
            unit="TFLOPS",
            yours=tflops(n, n, n, got) if number(got) and got > 0 else None,
            trusted=tflops(n, n, n, want),
            tolerance=AGREE,
        )
        problem = timing_problem(dtype, n, n, got, want)
        if problem:
            problems.append(problem)
    assert not problems, "; ".join(problems)


@pytest.mark.gpu
@pytest.mark.points(2)
def test_misaligned_k(learner: Any, measured: Any) -> None:
    """time_matmul agrees with the checks' own timing of FP16 with K = n - 1"""
    n = side()
    got = learner.call("time_matmul", "fp16", n, n - 1)
    want = own_matmul_ms("fp16", n, n - 1)
    measured(
        "fp16_k_odd_tflops",
        label=f"FP16 matmul (cuBLAS), {n} x {n} x {n - 1}: K not a multiple of 8",
        unit="TFLOPS",
        yours=tflops(n, n, n - 1, got) if number(got) and got > 0 else None,
        trusted=tflops(n, n, n - 1, want),
        tolerance=AGREE,
    )
    problem = timing_problem("fp16", n, n - 1, got, want)
    assert problem is None, problem


@pytest.mark.gpu
@pytest.mark.points(2)
def test_hgemm_small_sizes(run: dict[str, Any]) -> None:
    """Right on 1 x 1 x 1, 16 x 16 x 16, 17 x 33 x 19 and 31 x 15 x 47"""
    message = diagnose(part(run, 0, len(SMALL)), run["cases"][:-1])
    assert message is None, message


@pytest.mark.gpu
@pytest.mark.points(3)
def test_hgemm_tiles_and_edges(run: dict[str, Any]) -> None:
    """Right on whole tiles, ragged edges in M, N or K, thin and long products, a secret size"""
    cases = part(run, len(SMALL), len(TILES) + len(RAGGED) + len(THIN))
    message = diagnose([*cases, run["cases"][-2]])
    assert message is None, message


@pytest.mark.gpu
@pytest.mark.points(2)
def test_hgemm_sums_in_fp32(run: dict[str, Any]) -> None:
    """Right on K = 8192 and K = 16411: the sums are FP32 sums"""
    first = len(SMALL) + len(TILES) + len(RAGGED) + len(THIN)
    message = diagnose(part(run, first, len(LONG_K)), run["cases"][:-1])
    assert message is None, message


@pytest.mark.gpu
@pytest.mark.points(1)
def test_hgemm_repeated_launches(run: dict[str, Any]) -> None:
    """Right on every one of 8 launches with fresh inputs beside a busy kernel"""
    case = run["cases"][-1]
    assert not bad(case), describe_repeated(case, run["cases"][:-1])


@pytest.mark.gpu
@pytest.mark.points(3)
def test_hgemm_speed(run: dict[str, Any], measured: Any) -> None:
    """At least 0.1 of cuBLAS FP16 on n x n x n, in the same run"""
    timed = run["timed"]
    measured(
        "hgemm_tflops",
        label=f"your Tensor Core kernel, {timed['M']} x {timed['N']} x {timed['K']} "
        "(beside it: cuBLAS on the same product, same run)",
        unit="TFLOPS",
        yours=timed["tflops"]["yours"],
        trusted=timed["tflops"]["cublas"],
    )
    assert not bad(timed), (
        f"the timed run went wrong on {timed['failed_launches']} of its {timed['launches']} "
        f"launches, each on fresh inputs, so its speed does not count: {describe(timed)}"
    )
    assert timed["ratio"] >= SPEED, speed_message(timed, SPEED)
