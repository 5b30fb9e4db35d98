"""Task `copy_floats`: ``copy_floats(const float* src, float* dst, unsigned long long n)``.

params: ``seed``; ``cases``, a list of ``{"label", "n", "config"}`` (with
``"configs"``, ``"repeat"`` and ``"busy"`` as `judge.repeat_case` reads
them); optional ``timed``, ``{"n", "config"}``; or ``sanitize`` (the kernel
under compute-sanitizer). Every launch copies fresh random floats into a
``dst`` filled with NaN (elements the kernel never wrote stay NaN), with
GUARD more words on both sides of ``dst`` and of ``src``: a guard word of
``dst`` that changed was written past one of its ends. Returns per case the
mismatch against ``src`` as it was before the launch (exact: a copy moves
bits), ``overrun`` (guard floats written in all) and ``overrun_before``.

For ``timed``: the kernel against ``cudaMemcpyAsync`` device-to-device of the
same 4n bytes, launch by launch in turn, each on fresh buffers after an L2
flush, every one of the kernel's copies checked. GB/s count bytes read + bytes
written, 8 per float, the convention of CUDA's bandwidthTest; ``ratio`` is
memcpy's median time over the kernel's; ``wrong``, ``untouched`` and
``overrun`` are the first wrong launch's (or the last), with how many were.
"""

from __future__ import annotations

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

__all__ = ["RULES", "run"]

KERNEL = "copy_floats"
RULES = Rules("coalescing")


def run(source: str, params: dict[str, Any]) -> dict[str, Any]:
    return run_task(source, params, TASK)


def _prepare(rng: Any, n: int) -> dict[str, Any]:
    cp = cupy()
    _, src = judge.guarded(n, guard=judge.IN_GUARD)  # views 16 KiB in: float4-aligned
    src[...] = rng.random(n, dtype=cp.float32)
    dst_buffer, dst = judge.guarded(n)
    return {"n": n, "src": src, "want": src.copy(), "dst": dst, "dst_buffer": dst_buffer}


def _launch(kernel: Any, config: Any, work: dict[str, Any], what: str) -> None:
    np = numpy()
    launch(kernel, config, (work["src"], work["dst"], np.uint64(work["n"])), what)


def _check(work: dict[str, Any]) -> dict[str, Any]:
    found = {
        **mismatch(work["dst"], work["want"]),
        **judge.overrun(work["dst_buffer"], work["dst"]),
    }
    found["ok"] = not found["wrong"] and not found["overrun"]
    return found


def _timed(kernel: Any, n: int, config: Any, rng: Any) -> dict[str, Any]:
    cp = cupy()
    what = f"the timed run (n = {n:,})"
    runtime = cp.cuda.runtime
    nbytes = 4 * n

    def memcpy(work: dict[str, Any]) -> None:
        runtime.memcpyAsync(
            work["dst"].data.ptr,
            work["src"].data.ptr,
            nbytes,
            runtime.memcpyDeviceToDevice,
            cp.cuda.get_current_stream().ptr,
        )

    timing = judge.time_each(
        {
            "yours": judge.Contender(
                lambda: _prepare(rng, n), lambda work: _launch(kernel, config, work, what), _check
            ),
            "memcpy": judge.Contender(lambda: _prepare(rng, n), memcpy),
        },
        what,
    )
    ms = timing["ms"]
    gigabytes = 2 * nbytes / 1e9  # read + written
    return {
        "n": n,
        "config": config,
        "ms": ms["yours"],
        "gbs": gigabytes / (ms["yours"] * 1e-3),
        "reference": "cudaMemcpyAsync device-to-device",
        "reference_ms": ms["memcpy"],
        "reference_gbs": gigabytes / (ms["memcpy"] * 1e-3),
        "ratio": ms["memcpy"] / ms["yours"],
        **judge.summary(timing["checks"]["yours"]),
    }


def _plain_args(np: Any, rng: Any, case: dict[str, Any]) -> tuple[Any, ...]:
    n = int(case["n"])
    return (rng.random(n, dtype=np.float32), np.full(n, np.nan, dtype=np.float32), np.uint64(n))


TASK = Task(
    name="copy_floats",
    kernel=KERNEL,
    rules=RULES,
    plain_args=_plain_args,
    size=lambda case: {"n": int(case["n"])},
    what=lambda case, size: f"{case.get('label', 'n')} (n = {size['n']:,})",
    draws=lambda seed: cupy().random.default_rng(seed),
    prepare=lambda rng, size: _prepare(rng, size["n"]),
    launch=_launch,
    check=_check,
    timed=lambda kernel, rng, timed: _timed(kernel, int(timed["n"]), timed["config"], rng),
)
