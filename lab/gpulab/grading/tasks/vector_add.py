"""Task `vector_add`: ``vector_add(const float* a, const float* b, float* c, int n)``.

params: ``seed``; ``cases``, a list of ``{"label", "n", "config"}``, each run on
fresh random inputs with ``c`` filled with NaN (so elements the kernel never
wrote show as untouched); optional ``timed``, ``{"n", "config"}``, timed against
``cupy.add`` on the same arrays in the same run. Returns per case the mismatch
against ``a + b`` (exact: one float add is exact in both), and for ``timed``
the milliseconds and GB/s (12 bytes per element: two reads, one write) of both.
"""

from __future__ import annotations

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

KERNEL = "vector_add"


def run(source: str, params: dict[str, Any]) -> dict[str, Any]:
    cp, np = cupy(), numpy()

    kernel = compile_kernel(source, KERNEL)
    rng = cp.random.default_rng(int(params["seed"]))
    out: dict[str, Any] = {"cases": []}
    for case in params["cases"]:
        n = int(case["n"])
        what = f"{case.get('label', 'n')} (n = {n})"
        a, b = rng.random(n, dtype=cp.float32), rng.random(n, dtype=cp.float32)
        c = cp.full(n, cp.nan, dtype=cp.float32)
        launch(kernel, case["config"], (a, b, c, np.int32(n)), what)
        synchronize(what)
        out["cases"].append({"label": case.get("label", ""), "n": n, "config": case["config"],
                             **mismatch(c, a + b)})
    timed = params.get("timed")
    if timed:
        n = int(timed["n"])
        what = f"the timed run (n = {n})"
        a, b = rng.random(n, dtype=cp.float32), rng.random(n, dtype=cp.float32)
        c = cp.empty(n, dtype=cp.float32)
        ms = time_ms(lambda: launch(kernel, timed["config"], (a, b, c, np.int32(n)), what))
        synchronize(what)
        check = mismatch(c, a + b)
        reference_ms = time_ms(lambda: cp.add(a, b, out=c))
        synchronize("cupy.add")
        gbs = 12 * n / 1e9
        out["timed"] = {"n": n, "config": timed["config"], "ms": ms, "gbs": gbs / (ms * 1e-3),
                        "reference": "cupy.add", "reference_ms": reference_ms,
                        "reference_gbs": gbs / (reference_ms * 1e-3),
                        "ratio": reference_ms / ms, "wrong": check["wrong"]}
    return out
