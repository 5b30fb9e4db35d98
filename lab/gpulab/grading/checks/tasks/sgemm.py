"""Task `sgemm`: ``sgemm(const float* A, const float* B, float* C, int M, int N, int K)``.

C = A @ B, all row-major FP32: A is M x K, B is K x N, C is M x N. params:
``seed``; ``cases``, a list of ``{"label", "M", "N", "K", "config"}`` (with
``"repeat"`` and ``"busy"`` as `judge.repeat_case` reads them), every launch
on fresh random inputs (uniform in [-1, 1)) with C filled with NaN (elements
never written show as untouched) and guard zones on both sides of C and of
the inputs (writes past either end of C show as an overrun); optional
``timed``, ``{"M", "N", "K", "config"}``, where the learner's kernel and
``cupy.matmul`` (cuBLAS, FP32: the worker's environment carries no
CUPY_TF32, so no TF32) are timed launch by launch, in turn, each launch on
fresh inputs after an L2 flush, and every one of the learner's launches is
checked; or ``sanitize`` (the kernel under compute-sanitizer).

Each result is compared with a float64 product of the same inputs, computed
before the launch. An element is right when |C - A @ B| <= TOLERANCE *
sqrt(K) * 2^-24 * (|A| @ |B|): the scale is the sum of the magnitudes of the
K products that make it, so the test is fair to any order of summation, yet
a product left out or counted twice is far outside it. Returns per case the
mismatch, and for ``timed`` each one's median milliseconds and TFLOPS (2 M N
K floating-point operations), with the first wrong launch's mismatch (or the
last) and how many were wrong.
"""

from __future__ import annotations

import math
from typing import Any

from gpulab.grading.checks.tasks import judge
from gpulab.grading.checks.tasks.common import (
    cupy,
    launch,
    mismatch,
    numpy,
)
from gpulab.grading.checks.tasks.rules import Rules
from gpulab.grading.checks.tasks.task import Task, run_task

__all__ = ["RULES", "rtol", "run"]

KERNEL = "sgemm"
RULES = Rules(
    "tiled-matmul",
    (
        (
            r"\b(wmma|nvcuda|cublas\w*)\b",
            "the exercise is FP32 on the CUDA cores, written by you: no Tensor Core (wmma) or "
            "library calls",
        ),
    ),
)
TOLERANCE = 16  # in units of sqrt(K) float32 roundings of the magnitude sum


def rtol(k: int) -> float:
    """The relative tolerance (of |A| @ |B|) for a sum of k products in FP32."""
    return TOLERANCE * math.sqrt(max(k, 1)) * 2.0**-24


def run(source: str, params: dict[str, Any]) -> dict[str, Any]:
    return run_task(source, params, TASK)


def _prepare(rng: Any, m: int, n: int, k: int, *, judged: bool = True) -> dict[str, Any]:
    """Fresh A and B in guarded buffers, a NaN-filled guarded C, and (if `judged`) the float64
    product and the scale of its rounding, from the inputs as they were before the launch."""
    cp = cupy()
    work: dict[str, Any] = {"shape": (m, n, k)}
    for name, rows, cols in (("A", m, k), ("B", k, n)):
        _, flat = judge.guarded(rows * cols, guard=judge.IN_GUARD)
        flat[...] = rng.random(rows * cols, dtype=cp.float32) * 2 - 1
        work[name] = flat.reshape(rows, cols)
    if judged:
        a64, b64 = work["A"].astype(cp.float64), work["B"].astype(cp.float64)
        work["want"] = a64 @ b64
        work["scale"] = cp.abs(a64) @ cp.abs(b64)
        del a64, b64
    work["C_buffer"], flat = judge.guarded(m * n)
    work["C"] = flat.reshape(m, n)
    return work


def _launch(kernel: Any, config: Any, work: dict[str, Any], what: str) -> None:
    np = numpy()
    m, n, k = work["shape"]
    launch(
        kernel,
        config,
        (work["A"], work["B"], work["C"], np.int32(m), np.int32(n), np.int32(k)),
        what,
    )


def _check(work: dict[str, Any]) -> dict[str, Any]:
    found = {
        **mismatch(work["C"], work["want"], rtol=rtol(work["shape"][2]), scale=work["scale"]),
        **judge.overrun(work["C_buffer"], work["C"]),
    }
    found["ok"] = not found["wrong"] and not found["overrun"]
    return found


def _timed(kernel: Any, rng: Any, timed: dict[str, Any]) -> dict[str, Any]:
    cp = cupy()
    m, n, k = int(timed["M"]), int(timed["N"]), int(timed["K"])
    what = f"the timed run (M = {m}, N = {n}, K = {k})"
    config = timed["config"]

    def cublas(work: dict[str, Any]) -> None:
        cp.matmul(work["A"], work["B"], out=work["C"])

    timing = judge.time_each(
        {
            "yours": judge.Contender(
                lambda: _prepare(rng, m, n, k),
                lambda work: _launch(kernel, config, work, what),
                _check,
            ),
            "cublas": judge.Contender(lambda: _prepare(rng, m, n, k, judged=False), cublas),
        },
        what,
        rounds=9,
    )
    ms = timing["ms"]
    flops = 2.0 * m * n * k
    return {
        "M": m,
        "N": n,
        "K": k,
        "config": config,
        "ms": ms,
        "tflops": {name: flops / (value * 1e-3) / 1e12 for name, value in ms.items()},
        "ratio": ms["cublas"] / ms["yours"],
        "reference": "cupy.matmul (cuBLAS, FP32)",
        **judge.summary(timing["checks"]["yours"]),
    }


def _plain_args(np: Any, rng: Any, case: dict[str, Any]) -> tuple[Any, ...]:
    m, n, k = int(case["M"]), int(case["N"]), int(case["K"])
    a = (rng.random((m, k), dtype=np.float32) * 2 - 1).astype(np.float32)
    b = (rng.random((k, n), dtype=np.float32) * 2 - 1).astype(np.float32)
    return (a, b, np.full((m, n), np.nan, dtype=np.float32), np.int32(m), np.int32(n), np.int32(k))


TASK = Task(
    name="sgemm",
    kernel=KERNEL,
    rules=RULES,
    plain_args=_plain_args,
    size=lambda case: {"M": int(case["M"]), "N": int(case["N"]), "K": int(case["K"])},
    what=lambda case, size: (
        f"{case.get('label', 'a case')} (M = {size['M']}, N = {size['N']}, K = {size['K']})"
    ),
    draws=lambda seed: cupy().random.default_rng(seed),
    prepare=lambda rng, size: _prepare(rng, size["M"], size["N"], size["K"]),
    launch=_launch,
    check=_check,
    timed=_timed,
)
