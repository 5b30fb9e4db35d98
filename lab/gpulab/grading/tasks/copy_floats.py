"""Task `copy_floats`: ``copy_floats(const float* src, float* dst, unsigned long long n)``.

params: ``seed``; ``cases``, a list of ``{"label", "n", "config"}``; optional
``timed``, ``{"n", "config"}``. Every case copies fresh random floats into a
``dst`` filled with NaN (elements the kernel never wrote stay NaN), followed
in memory by GUARD more NaN floats: any of those that changed were written
past ``dst[n - 1]``. Returns per case the mismatch against ``src`` (exact: a
copy moves bits) and ``overrun``, the number of floats written past the end.

For ``timed``: the kernel against ``cudaMemcpyAsync`` device-to-device of the
same 4n bytes between the same buffers, in the same run (the memcpy timed
before and after the kernel, averaged). GB/s count bytes read + bytes
written, 8 per float, the convention of CUDA's bandwidthTest; ``ratio`` is
memcpy's time over the kernel's. ``wrong`` and ``untouched`` check the last
timed copy.
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

__all__ = ["run"]

KERNEL = "copy_floats"
GUARD = 4096            # NaN floats after dst[n - 1]
TIMED_ITERS = 20        # copies between one pair of events (hides launch overhead)


def run(source: str, params: dict[str, Any]) -> dict[str, Any]:
    cp, np = cupy(), numpy()

    kernel = compile_kernel(source, KERNEL)
    rng = cp.random.default_rng(int(params["seed"]))
    out: dict[str, Any] = {"cases": []}
    for case in params["cases"]:
        n = int(case["n"])
        what = f"{case.get('label', 'n')} (n = {n:,})"
        src = rng.random(n, dtype=cp.float32)
        buffer = cp.full(n + GUARD, cp.nan, dtype=cp.float32)
        dst = buffer[:n]                    # from the buffer's start: 256-byte aligned
        launch(kernel, case["config"], (src, dst, np.uint64(n)), what)
        synchronize(what)
        overrun = int(cp.count_nonzero(~cp.isnan(buffer[n:])))
        out["cases"].append({"label": case.get("label", ""), "n": n, "config": case["config"],
                             "overrun": overrun, **mismatch(dst, src)})
    timed = params.get("timed")
    if timed:
        out["timed"] = _timed(kernel, int(timed["n"]), timed["config"], rng)
    return out


def _timed(kernel: Any, n: int, config: Any, rng: Any) -> dict[str, Any]:
    cp, np = cupy(), numpy()

    what = f"the timed run (n = {n:,})"
    runtime = cp.cuda.runtime
    src = rng.random(n, dtype=cp.float32)
    dst = cp.empty_like(src)
    nbytes = 4 * n

    def memcpy() -> None:
        runtime.memcpyAsync(dst.data.ptr, src.data.ptr, nbytes, runtime.memcpyDeviceToDevice,
                            cp.cuda.get_current_stream().ptr)

    before = time_ms(memcpy, iters=TIMED_ITERS)
    dst.fill(cp.nan)                        # so that the check below sees only the kernel's work
    ms = time_ms(lambda: launch(kernel, config, (src, dst, np.uint64(n)), what),
                 iters=TIMED_ITERS)
    synchronize(what)
    check = mismatch(dst, src)
    after = time_ms(memcpy, iters=TIMED_ITERS)
    reference_ms = (before + after) / 2
    gigabytes = 2 * nbytes / 1e9            # read + written
    return {"n": n, "config": config, "ms": ms, "gbs": gigabytes / (ms * 1e-3),
            "reference": "cudaMemcpyAsync device-to-device", "reference_ms": reference_ms,
            "reference_gbs": gigabytes / (reference_ms * 1e-3), "ratio": reference_ms / ms,
            "wrong": check["wrong"], "untouched": check["untouched"]}
