"""Task `sgemm`: ``sgemm(const float* A, const float* B, float* C, int M, int N, int K)``.

C = A @ B, all row-major FP32: A is M x K, B is K x N, C is M x N. params:
``seed``; ``cases``, a list of ``{"label", "M", "N", "K", "config"}``, each run
on fresh random inputs (uniform in [-1, 1)) with C filled with NaN (elements
never written show as untouched) and NaN guard zones on both sides (writes
past either end show as an overrun); optional ``timed``, ``{"M", "N", "K",
"config"}``, where the learner's kernel and ``cupy.matmul`` (cuBLAS, FP32:
the worker's environment carries no CUPY_TF32, so no TF32) are timed in turn
on the same arrays, round after round, in the same run.

Each result is compared with a float64 product of the same inputs. An element
is right when |C - A @ B| <= TOLERANCE * sqrt(K) * 2^-24 * (|A| @ |B|): the
scale is the sum of the magnitudes of the K products that make it, so the
test is fair to any order of summation, yet a product left out or counted
twice is far outside it. Returns per case the mismatch, and for ``timed``
each one's milliseconds and TFLOPS (2 M N K floating-point operations).
"""

from __future__ import annotations

import math
import statistics
from typing import Any

from gpulab.grading.tasks.common import (
    compile_kernel,
    cupy,
    launch,
    mismatch,
    numpy,
    synchronize,
    time_ms,
)

KERNEL = "sgemm"
GUARD = 4096            # NaN floats on each side of C, to catch writes past its ends
TOLERANCE = 16          # in units of sqrt(K) float32 roundings of the magnitude sum
ROUNDS = 5              # timing rounds; each times both contenders once


def rtol(k: int) -> float:
    """The relative tolerance (of |A| @ |B|) for a sum of k products in FP32."""
    return TOLERANCE * math.sqrt(max(k, 1)) * 2.0**-24


def _inputs(cp: Any, rng: Any, m: int, n: int, k: int) -> tuple[Any, Any]:
    a = rng.random((m, k), dtype=cp.float32) * 2 - 1
    b = rng.random((k, n), dtype=cp.float32) * 2 - 1
    return a, b


def _judge(cp: Any, c: Any, a: Any, b: Any) -> dict[str, Any]:
    """The mismatch of c against a float64 product, with the summation-order tolerance."""
    a64, b64 = a.astype(cp.float64), b.astype(cp.float64)
    want = a64 @ b64
    scale = cp.abs(a64) @ cp.abs(b64)
    del a64, b64
    return mismatch(c, want, rtol=rtol(a.shape[1]), scale=scale)


def run(source: str, params: dict[str, Any]) -> dict[str, Any]:
    cp = cupy()
    np = numpy()

    kernel = compile_kernel(source, KERNEL)
    rng = cp.random.default_rng(int(params["seed"]))
    out: dict[str, Any] = {"cases": []}
    for case in params["cases"]:
        m, n, k = int(case["M"]), int(case["N"]), int(case["K"])
        what = f"{case.get('label', 'a case')} (M = {m}, N = {n}, K = {k})"
        a, b = _inputs(cp, rng, m, n, k)
        buffer = cp.full(m * n + 2 * GUARD, cp.nan, dtype=cp.float32)
        c = buffer[GUARD:GUARD + m * n]
        launch(kernel, case["config"], (a, b, c, np.int32(m), np.int32(n), np.int32(k)), what)
        synchronize(what)
        guards = cp.concatenate([buffer[:GUARD], buffer[-GUARD:]])
        out["cases"].append({"label": case.get("label", ""), "M": m, "N": n, "K": k,
                             "config": case["config"],
                             "overrun": int(cp.count_nonzero(~cp.isnan(guards))),
                             **_judge(cp, c.reshape(m, n), a, b)})
    timed = params.get("timed")
    if timed:
        out["timed"] = _timed(cp, np, kernel, rng, timed)
    return out


def _timed(cp: Any, np: Any, kernel: Any, rng: Any, timed: dict[str, Any]) -> dict[str, Any]:
    m, n, k = int(timed["M"]), int(timed["N"]), int(timed["K"])
    what = f"the timed run (M = {m}, N = {n}, K = {k})"
    a, b = _inputs(cp, rng, m, n, k)
    c = cp.full((m, n), cp.nan, dtype=cp.float32)
    reference = cp.empty((m, n), dtype=cp.float32)
    args = (a, b, c, np.int32(m), np.int32(n), np.int32(k))

    # One launch first, timed on its own: it is checked, and it says how many
    # launches fit in the timing rounds (a slow kernel gets fewer).
    start, end = cp.cuda.Event(), cp.cuda.Event()
    start.record()
    launch(kernel, timed["config"], args, what)
    end.record()
    synchronize(what)
    first_ms = float(cp.cuda.get_elapsed_time(start, end))
    check = _judge(cp, c, a, b)
    iters = 1 if first_ms > 200 else 3 if first_ms > 20 else 10
    rounds = 1 if first_ms > 2000 else ROUNDS

    contenders = {"yours": lambda: launch(kernel, timed["config"], args, what),
                  "cublas": lambda: cp.matmul(a, b, out=reference)}
    samples: dict[str, list[float]] = {name: [] for name in contenders}
    for _ in range(rounds):       # interleaved, so a clock change hits both alike
        for name, enqueue in contenders.items():
            samples[name].append(time_ms(enqueue, iters=iters, repeats=1))
    synchronize(what)
    ms = {name: float(statistics.median(values)) for name, values in samples.items()}
    flops = 2.0 * m * n * k
    return {"M": m, "N": n, "K": k, "config": timed["config"], "wrong": check["wrong"],
            "untouched": check["untouched"], "ms": ms,
            "tflops": {name: flops / (value * 1e-3) / 1e12 for name, value in ms.items()},
            "ratio": ms["cublas"] / ms["yours"], "reference": "cupy.matmul (cuBLAS, FP32)"}
