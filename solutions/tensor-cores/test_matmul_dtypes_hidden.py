"""Hidden checks of matmul-dtypes: random shapes, timings at another size, more kernel shapes.

`tflops` and `padded_shape` on random shapes; `time_matmul` at half the side the
visible checks use, in FP16 and FP32; the kernel on one-row, one-column and
long-K products and a large secret size; and the speed check again on a
non-square product. Expected values come from the checks' own arithmetic and
timing (`gpulab.grading.checks.reference.matmul_dtypes`), messages from the visible
checks' helpers.
"""

from __future__ import annotations

import random
from typing import Any

import pytest

from gpulab.grading.checks.pytest_plugin import visible_checks
from gpulab.grading.checks.reference.matmul_dtypes import own_matmul_ms, padded, side, tflops

visible = visible_checks(__file__)


@pytest.mark.points(1)
def test_tflops_random(learner: Any) -> None:
    """tflops on random shapes and times"""
    draw = random.SystemRandom()
    for _ in range(20):
        m, n, k = (draw.randrange(1, 20_000) for _ in range(3))
        ms = draw.uniform(0.001, 500.0)
        got = learner.call("tflops", m, n, k, ms)
        want = tflops(m, n, k, ms)
        assert visible.close(got, want), (
            f"tflops({m}, {n}, {k}, {ms}) returned {got!r}, want {want:.6g} (2 m n k FLOPs)"
        )


@pytest.mark.points(1)
def test_padded_shape_random(learner: Any) -> None:
    """padded_shape on random shapes and multiples"""
    draw = random.SystemRandom()
    for _ in range(30):
        m, n, k = (draw.randrange(1, 100_000) for _ in range(3))
        multiple = draw.choice((2, 4, 8, 16, 32, 64, 128, 3, 7))
        got = learner.call("padded_shape", m, n, k, multiple)
        want = padded(m, n, k, multiple)
        assert isinstance(got, list | tuple) and tuple(got) == want, (
            f"padded_shape({m}, {n}, {k}, {multiple}) returned {got!r:.80}, want {want}"
        )


@pytest.mark.gpu
@pytest.mark.points(2)
def test_timings_at_another_size(learner: Any) -> None:
    """time_matmul agrees with the checks' own timing at half the side, FP16 and FP32"""
    n = side() // 2
    problems = []
    for dtype in ("fp16", "fp32"):
        got = learner.call("time_matmul", dtype, n)
        problem = visible.timing_problem(dtype, n, n, got, own_matmul_ms(dtype, n))
        if problem:
            problems.append(problem)
    assert not problems, "; ".join(problems)


@pytest.mark.gpu
@pytest.mark.points(3)
def test_hgemm_thin_long_and_secret_sizes(learner: Any) -> None:
    """Right on one-row, one-column and long-K products, and a large secret size"""
    draw = random.SystemRandom()
    secret = (
        draw.randrange(1000, 2500) | 1,
        draw.randrange(1000, 2500) | 1,
        draw.randrange(1000, 2500) | 1,
    )
    long_k = (draw.randrange(16, 64), draw.randrange(16, 64), draw.randrange(20_000, 30_000))
    # The whole 128 tile first: right there and wrong here says "the edges" (`diagnose`).
    sizes = (
        (128, 128, 128),
        (1, 4099, 1000),
        (3001, 1, 777),
        (2, 3, 5003),
        (257, 255, 1),
        (1024, 1024, 8),
        long_k,
        secret,
    )
    cases = visible.learner_cases(learner, sizes)
    cases[-2]["label"] = "a long secret K"
    cases[-1]["label"] = "a large secret size"
    message = visible.diagnose(visible.findings(learner, cases, None)["cases"])
    assert message is None, message


@pytest.mark.gpu
@pytest.mark.points(2)
def test_hgemm_speed_non_square(learner: Any) -> None:
    """At least 0.1 of cuBLAS FP16 on a non-square product (3n/4 x 5n/4 x n/2)"""
    n = side()
    shape = (3 * n // 4, 5 * n // 4, n // 2)
    timed = visible.findings(learner, [], shape)["timed"]
    assert not visible.bad(timed), (
        f"the timed run went wrong on {timed['failed_launches']} of its {timed['launches']} "
        f"launches: {visible.describe(timed)}"
    )
    assert timed["ratio"] >= visible.SPEED, visible.speed_message(timed, visible.SPEED)
