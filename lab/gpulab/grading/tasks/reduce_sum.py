"""Task `reduce_sum`: ``reduce_sum(const float* x, float* out, unsigned long long n)``.

The kernel adds ``x[0] + ... + x[n - 1]`` into ``out[0]``, which is zeroed
before every launch (each block adds its partial sum with one atomicAdd).

params: ``seed``; ``cases``, a list of ``{"label", "n", "config"}``; optional
``timed``, ``{"n", "config"}``. Every case gets fresh inputs: random floats in
[-1, 1) plus a few positive *spikes* at secret positions (always the first and
the last element, one among the last four, one among the last 1024, the rest
anywhere). Each spike has its own size and is far larger than the tolerance,
so a sum that misses any one or two of them, or counts one twice, stands out
from rounding and says which. The floats right after ``x[n - 1]`` are NaN: a
kernel that adds a value from past the end gets NaN.

Returns per case the kernel's sum (``got``), the float64 reference (``want``),
their difference (``error``), the ``tolerance`` (RTOL x sum |x| + ATOL: a
float32 sum in any order stays far inside it), sum |x| and the spikes
(``index``, ``value``). For ``timed``: milliseconds and GB/s of input read
(4 bytes per element) of the kernel and of ``cupy.sum`` on the same array in
the same run (timed before and after the kernel, averaged), their ratio, and
the comparison of one more launch's sum, as for a case.
"""

from __future__ import annotations

from typing import Any

from gpulab.grading.tasks.common import (
    compile_kernel,
    cupy,
    launch,
    numpy,
    plain,
    synchronize,
    time_ms,
)

__all__ = ["RTOL", "run"]

KERNEL = "reduce_sum"
RTOL = 1e-5             # of sum |x|: float32 rounding in any order stays far below
ATOL = 1e-3
GUARD = 4096            # NaN floats after x[n - 1]
SPIKE_FLOOR = 1000.0    # a spike is never smaller than this
# Spike sizes, in units of the smallest: 1 + k / 50 with k from a Sidon set (all pairwise
# sums differ), so one missing spike, or any two, leave a deficit that names them.
SPIKE_STEPS = tuple(1 + k / 50 for k in (0, 1, 3, 7, 12, 20, 30, 44))
SPIKE_MARGIN = 20.0     # the smallest spike is this many tolerances
TIMED_ITERS = 20        # launches between one pair of events (hides launch overhead)


def run(source: str, params: dict[str, Any]) -> dict[str, Any]:
    cp, np = cupy(), numpy()
    kernel = compile_kernel(source, KERNEL)
    seed = int(params["seed"])
    rng = cp.random.default_rng(seed)
    host = np.random.default_rng(seed)
    out: dict[str, Any] = {"cases": []}
    for case in params["cases"]:
        n = int(case["n"])
        what = f"{case.get('label', 'n')} (n = {n:,})"
        x, facts = _input(n, rng, host)
        total = cp.zeros(1, dtype=cp.float32)
        launch(kernel, case["config"], (x, total, np.uint64(n)), what)
        synchronize(what)
        out["cases"].append({"label": case.get("label", ""), "n": n, "config": case["config"],
                             **_compare(total, facts)})
    timed = params.get("timed")
    if timed:
        n = int(timed["n"])
        what = f"the timed run (n = {n:,})"
        x, facts = _input(n, rng, host)
        total = cp.zeros(1, dtype=cp.float32)
        args = (x, total, np.uint64(n))
        before = time_ms(lambda: cp.sum(x), iters=TIMED_ITERS)
        ms = time_ms(lambda: launch(kernel, timed["config"], args, what), iters=TIMED_ITERS)
        synchronize(what)
        after = time_ms(lambda: cp.sum(x), iters=TIMED_ITERS)
        total.fill(0)                       # the timed launches added into it: start again
        launch(kernel, timed["config"], args, what)
        synchronize(what)
        reference_ms = (before + after) / 2
        gigabytes = 4 * n / 1e9
        out["timed"] = {"n": n, "config": timed["config"], "ms": ms,
                        "gbs": gigabytes / (ms * 1e-3), "reference": "cupy.sum",
                        "reference_ms": reference_ms,
                        "reference_gbs": gigabytes / (reference_ms * 1e-3),
                        "ratio": reference_ms / ms, **_compare(total, facts)}
    return out


def _input(n: int, rng: Any, host: Any) -> tuple[Any, dict[str, Any]]:
    """x (n floats, NaN after its end) and what the comparison needs to know about it."""
    cp, np = cupy(), numpy()
    buffer = cp.full(n + GUARD, cp.nan, dtype=cp.float32)
    x = buffer[:n]                          # a view from the buffer's start: 256-byte aligned
    x[...] = rng.random(n, dtype=cp.float32) * 2 - 1
    base_abs = float(cp.sum(cp.abs(x), dtype=cp.float64))
    draws = [0, n - 1, n - 1 - int(host.integers(0, min(4, n))),
             n - 1 - int(host.integers(0, min(1024, n)))]
    draws += [int(host.integers(0, n)) for _ in range(len(SPIKE_STEPS) - len(draws))]
    positions = list(dict.fromkeys(draws))  # in order, without repeats (n may be tiny)
    steps = host.permutation(np.array(SPIKE_STEPS[:len(positions)]))
    # The smallest spike is SPIKE_MARGIN tolerances, counting the spikes' own share of sum |x|.
    size = SPIKE_MARGIN * (RTOL * base_abs + ATOL) / (1 - SPIKE_MARGIN * RTOL * sum(SPIKE_STEPS))
    size = max(SPIKE_FLOOR, size)
    values = [float(np.float32(size * step)) for step in steps]
    x[cp.asarray(positions, dtype=cp.int64)] = cp.asarray(values, dtype=cp.float32)
    sum_abs = float(cp.sum(cp.abs(x), dtype=cp.float64))
    facts = {"want": float(cp.sum(x, dtype=cp.float64)), "sum_abs": sum_abs,
             "tolerance": RTOL * sum_abs + ATOL,
             "spikes": [{"index": i, "value": v} for i, v in zip(positions, values, strict=True)]}
    return x, facts


def _compare(total: Any, facts: dict[str, Any]) -> dict[str, Any]:
    got = float(total[0])
    return {"got": plain(got), "error": plain(got - facts["want"]), **facts}
