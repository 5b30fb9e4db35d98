"""Hidden checks of tiled-matmul: random tilings, thin and long shapes, a non-square timing.

The reuse arithmetic on random sizes and tiles; the kernel on one-row,
one-column and very long-K products and a large secret size; and the speed
check again on a non-square product. Expected values come from the visible
checks' own helpers.
"""

from __future__ import annotations

import random
from typing import Any

import pytest

from gpulab.grading.checks.pytest_plugin import visible_checks

visible = visible_checks(__file__)

NON_SQUARE = (3072, 5120, 2048)


@pytest.mark.points(1)
def test_reuse_random(learner: Any) -> None:
    """global_bytes and shared_reads_per_fma on random sizes and tiles"""
    draw = random.SystemRandom()
    for _ in range(30):
        m, n, k = (draw.randrange(1, 10_000) for _ in range(3))
        tm, tn = draw.choice((8, 16, 32, 64, 128, 256)), draw.choice((8, 16, 32, 64, 128, 256))
        got = learner.call("global_bytes", m, n, k, tm, tn)
        want = visible.want_global_bytes(m, n, k, tm, tn)
        assert visible.close(got, want), \
            f"global_bytes({m}, {n}, {k}, {tm}, {tn}) returned {got!r}, want {want}"
        tm, tn = draw.randrange(1, 17), draw.randrange(1, 17)
        got = learner.call("shared_reads_per_fma", tm, tn)
        want = visible.want_reads_per_fma(tm, tn)
        assert visible.close(got, want), \
            f"shared_reads_per_fma({tm}, {tn}) returned {got!r}, want {want:.6g}"


@pytest.mark.gpu
@pytest.mark.points(3)
def test_thin_long_and_secret_sizes(learner: Any) -> None:
    """Right on one-row, one-column and long-K products, and a large secret size"""
    draw = random.SystemRandom()
    secret = (draw.randrange(1000, 2500) | 1, draw.randrange(1000, 2500) | 1,
              draw.randrange(1000, 2500) | 1)
    # The whole 128 tile first: right there and wrong here says "the edges" (`diagnose`).
    sizes = ((128, 128, 128), (1, 4099, 1000), (3001, 1, 777), (2, 3, 5003), (257, 255, 1),
             secret)
    cases = visible.learner_cases(learner, sizes)
    cases[-1]["label"] = "a large secret size"
    message = visible.diagnose(visible.findings(learner, cases, None)["cases"])
    assert message is None, message


@pytest.mark.gpu
@pytest.mark.points(2)
def test_speed_non_square(learner: Any) -> None:
    """At least 0.25 of cuBLAS FP32 on 3072 x 5120 x 2048"""
    timed = visible.findings(learner, [], NON_SQUARE)["timed"]
    assert not (timed["wrong"] or timed["overrun"]), (
        f"the timed run went wrong on {timed['failed_launches']} of its {timed['launches']} "
        f"launches: {visible.describe(timed)}")
    assert timed["ratio"] >= visible.SPEED, (
        f"on M x N x K = 3072 x 5120 x 2048 your kernel ran at "
        f"{timed['tflops']['yours']:.1f} TFLOPS, cuBLAS at {timed['tflops']['cublas']:.1f}: "
        f"{timed['ratio']:.2f} of it, {visible.SPEED} needed")
