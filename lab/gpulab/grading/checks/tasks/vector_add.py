"""Task `vector_add`: ``vector_add(const float* a, const float* b, float* c, int n)``.

params: ``seed``; ``cases``, a list of ``{"label", "n", "config"}`` (or
``"configs"``, several grids to rotate through, with ``"repeat"`` launches,
and ``"busy"`` to run each beside a busy kernel: `judge.repeat_case`); every
launch gets fresh random inputs and a ``c`` filled with NaN (elements never
written show as untouched), with guard zones on both sides of ``c`` and of
the inputs (a write past either end of ``c`` shows as an overrun). Optional
``timed``, ``{"n", "config"}``: the learner's kernel and a trusted grid-stride
kernel (the reference solution's code, 256 threads, at most 32 blocks per SM)
are timed launch by launch, in turn, each launch on fresh inputs after an L2
flush, and every one of the learner's launches is checked
(`judge.time_each`). ``sanitize`` runs the kernel under compute-sanitizer
instead (`gpulab.grading.checks.tasks.sanitize`).

Returns per case the mismatch against ``a + b`` (exact: one float add is exact
in both) computed before the launch, ``overrun`` (guard floats written before
or after ``c``) and ``overrun_before``; for ``timed`` the median milliseconds
and GB/s (12 bytes per element: two reads, one write) of both, their ratio,
and the findings of the learner's first wrong launch (or last) with how many
were wrong.
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

KERNEL = "vector_add"
RULES = Rules("vector-add")
TRUSTED = r"""
extern "C" __global__ void vector_add_trusted(const float* __restrict__ a,
                                              const float* __restrict__ b,
                                              float* __restrict__ c, int n)
{
    const size_t stride = (size_t)blockDim.x * gridDim.x;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < (size_t)n; i += stride)
        c[i] = a[i] + b[i];
}
"""


def trusted_config(n: int, sm_count: int) -> dict[str, int]:
    """The trusted kernel's grid: one thread per element, at most 32 blocks of 256 per SM."""
    return {"blocks": max(1, min(-(-n // 256), 32 * sm_count)), "threads": 256}


def run(source: str, params: dict[str, Any]) -> dict[str, Any]:
    return run_task(source, params, TASK)


def _prepare(rng: Any, n: int) -> dict[str, Any]:
    """Fresh inputs in guarded buffers, the expected sum, and a NaN-filled guarded c."""
    cp = cupy()
    work: dict[str, Any] = {"n": n}
    for name in ("a", "b"):
        _, work[name] = judge.guarded(n, guard=judge.IN_GUARD)
        work[name][...] = rng.random(n, dtype=cp.float32)
    work["want"] = work["a"] + work["b"]  # before the launch: from inputs it cannot change
    work["c_buffer"], work["c"] = judge.guarded(n)
    return work


def _launch(kernel: Any, config: Any, work: dict[str, Any], what: str) -> None:
    np = numpy()
    launch(kernel, config, (work["a"], work["b"], work["c"], np.int32(work["n"])), what)


def _check(work: dict[str, Any]) -> dict[str, Any]:
    found = {**mismatch(work["c"], work["want"]), **judge.overrun(work["c_buffer"], work["c"])}
    found["ok"] = not found["wrong"] and not found["overrun"]
    return found


def _timed(kernel: Any, rng: Any, n: int, config: Any) -> dict[str, Any]:
    cp = cupy()
    what = f"the timed run (n = {n:,})"
    sm_count = int(cp.cuda.runtime.getDeviceProperties(cp.cuda.Device().id)["multiProcessorCount"])
    trusted = cp.RawModule(code=TRUSTED, options=("--std=c++17",)).get_function(
        "vector_add_trusted"
    )
    ours = trusted_config(n, sm_count)
    timing = judge.time_each(
        {
            "yours": judge.Contender(
                lambda: _prepare(rng, n), lambda work: _launch(kernel, config, work, what), _check
            ),
            "trusted": judge.Contender(
                lambda: _prepare(rng, n),
                lambda work: _launch(trusted, ours, work, "trusted kernel"),
            ),
        },
        what,
    )
    ms = timing["ms"]
    gigabytes = 12 * n / 1e9
    return {
        "n": n,
        "config": config,
        "ms": ms["yours"],
        "gbs": gigabytes / (ms["yours"] * 1e-3),
        "reference": f"a trusted grid-stride kernel ({ours['blocks']} blocks of 256 threads)",
        "reference_ms": ms["trusted"],
        "reference_gbs": gigabytes / (ms["trusted"] * 1e-3),
        "ratio": ms["trusted"] / ms["yours"],
        **judge.summary(timing["checks"]["yours"]),
    }


def _plain_args(np: Any, rng: Any, case: dict[str, Any]) -> tuple[Any, ...]:
    n = int(case["n"])
    return (
        rng.random(n, dtype=np.float32),
        rng.random(n, dtype=np.float32),
        np.full(n, np.nan, dtype=np.float32),
        np.int32(n),
    )


TASK = Task(
    name="vector_add",
    kernel=KERNEL,
    rules=RULES,
    plain_args=_plain_args,
    size=lambda case: {"n": int(case["n"])},
    what=lambda case, size: f"{case.get('label', 'n')} (n = {size['n']:,})",
    draws=lambda seed: cupy().random.default_rng(seed),
    prepare=lambda rng, size: _prepare(rng, size["n"]),
    launch=_launch,
    check=_check,
    timed=lambda kernel, rng, timed: _timed(kernel, rng, int(timed["n"]), timed["config"]),
)
