"""Task `reduce_sum`: ``reduce_sum(const float* x, float* out, unsigned long long n)``.

The kernel adds ``x[0] + ... + x[n - 1]`` into ``out[0]``, which is zeroed
before every launch (each block adds its partial sum with one atomicAdd).
The exercise asks for the learner's own tree, so library reductions are
refused before compiling (`RULES`).

params: ``seed``; ``cases``, a list of ``{"label", "n", "config"}`` (with
``"configs"``, ``"repeat"`` and ``"busy"`` as `judge.repeat_case` reads
them); optional ``timed``, ``{"n", "config"}``; or ``sanitize`` (the kernel
under compute-sanitizer). Every launch gets fresh inputs: random floats in
[-1, 1) plus a few positive *spikes* at secret positions (always the first
and the last element, one among the last four, one among the last 1024, the
rest anywhere). Each spike has its own size and is far larger than the
tolerance, so a sum that misses any one or two of them, or counts one twice,
stands out from rounding and says which. The floats right before ``x[0]``
and after ``x[n - 1]`` are NaN: a kernel that adds a value from outside x
gets NaN. ``out[0]`` has guard zones too (``out_overrun``: floats written
around it).

Returns per case the kernel's sum (``got``), the float64 reference (``want``),
their difference (``error``), the ``tolerance`` (RTOL x sum |x| + ATOL: a
float32 sum in any order stays far inside it), sum |x| and the spikes
(``index``, ``value``). For ``timed``: the median milliseconds and GB/s of
input read (4 bytes per element) of the kernel and of ``cupy.sum``, launch by
launch in turn, each on fresh inputs after an L2 flush, their ratio, and the
comparison of the first wrong launch's sum (or the last), as for a case, with
how many of the launches were wrong.
"""

from __future__ import annotations

from typing import Any

from gpulab.grading.checks.tasks import judge
from gpulab.grading.checks.tasks.common import (
    cupy,
    launch,
    numpy,
    plain,
)
from gpulab.grading.checks.tasks.rules import Rules
from gpulab.grading.checks.tasks.task import Task, run_task

__all__ = ["RTOL", "RULES", "run"]

KERNEL = "reduce_sum"
RULES = Rules(
    "reduction",
    (
        (
            r"\b(cub|thrust|cooperative_groups|cg)\s*::",
            "the exercise asks for your own tree: no library code (cub::, thrust::, cooperative "
            "groups); use __shfl_down_sync, shared memory and atomicAdd",
        ),
        (
            r"\b__reduce_\w+_sync\b",
            "the exercise asks for your own tree: no __reduce_*_sync intrinsics; use "
            "__shfl_down_sync",
        ),
    ),
)
RTOL = 1e-5  # of sum |x|: float32 rounding in any order stays far below
ATOL = 1e-3
SPIKE_FLOOR = 1000.0  # a spike is never smaller than this
# Spike sizes, in units of the smallest: 1 + k / 50 with k from a Sidon set (all pairwise
# sums differ), so one missing spike, or any two, leave a deficit that names them.
SPIKE_STEPS = tuple(1 + k / 50 for k in (0, 1, 3, 7, 12, 20, 30, 44))
SPIKE_MARGIN = 20.0  # the smallest spike is this many tolerances


def run(source: str, params: dict[str, Any]) -> dict[str, Any]:
    return run_task(source, params, TASK)


def _timed(kernel: Any, rng: Any, host: Any, n: int, config: Any) -> dict[str, Any]:
    cp = cupy()
    what = f"the timed run (n = {n:,})"
    timing = judge.time_each(
        {
            "yours": judge.Contender(
                lambda: _prepare(n, rng, host),
                lambda work: _launch(kernel, config, work, what),
                _compare,
            ),
            "cupy.sum": judge.Contender(
                lambda: _prepare(n, rng, host), lambda work: cp.sum(work["x"])
            ),
        },
        what,
    )
    ms = timing["ms"]
    gigabytes = 4 * n / 1e9
    return {
        "n": n,
        "config": config,
        "ms": ms["yours"],
        "gbs": gigabytes / (ms["yours"] * 1e-3),
        "reference": "cupy.sum",
        "reference_ms": ms["cupy.sum"],
        "reference_gbs": gigabytes / (ms["cupy.sum"] * 1e-3),
        "ratio": ms["cupy.sum"] / ms["yours"],
        **judge.summary(timing["checks"]["yours"]),
    }


def _prepare(n: int, rng: Any, host: Any) -> dict[str, Any]:
    """x (n floats, NaN guards on both sides), what the comparison needs to know about it,
    and out[0] = 0 with guards of its own."""
    cp, np = cupy(), numpy()
    _, x = judge.guarded(n, guard=judge.IN_GUARD)  # views 16 KiB in: float4-aligned
    x[...] = rng.random(n, dtype=cp.float32) * 2 - 1
    base_abs = float(cp.sum(cp.abs(x), dtype=cp.float64))
    draws = [
        0,
        n - 1,
        n - 1 - int(host.integers(0, min(4, n))),
        n - 1 - int(host.integers(0, min(1024, n))),
    ]
    draws += [int(host.integers(0, n)) for _ in range(len(SPIKE_STEPS) - len(draws))]
    positions = list(dict.fromkeys(draws))  # in order, without repeats (n may be tiny)
    steps = host.permutation(np.array(SPIKE_STEPS[: len(positions)]))
    # The smallest spike is SPIKE_MARGIN tolerances, counting the spikes' own share of sum |x|.
    size = SPIKE_MARGIN * (RTOL * base_abs + ATOL) / (1 - SPIKE_MARGIN * RTOL * sum(SPIKE_STEPS))
    size = max(SPIKE_FLOOR, size)
    values = [float(np.float32(size * step)) for step in steps]
    x[cp.asarray(positions, dtype=cp.int64)] = cp.asarray(values, dtype=cp.float32)
    sum_abs = float(cp.sum(cp.abs(x), dtype=cp.float64))
    out_buffer, out = judge.guarded(1, fill=0.0)
    facts = {
        "want": float(cp.sum(x, dtype=cp.float64)),
        "sum_abs": sum_abs,
        "tolerance": RTOL * sum_abs + ATOL,
        "spikes": [{"index": i, "value": v} for i, v in zip(positions, values, strict=True)],
    }
    return {"n": n, "x": x, "out": out, "out_buffer": out_buffer, "facts": facts}


def _launch(kernel: Any, config: Any, work: dict[str, Any], what: str) -> None:
    np = numpy()
    launch(kernel, config, (work["x"], work["out"], np.uint64(work["n"])), what)


def _compare(work: dict[str, Any]) -> dict[str, Any]:
    got = float(work["out"][0])
    facts = work["facts"]
    guards = judge.overrun(work["out_buffer"], work["out"])["overrun"]
    ok = abs(got - facts["want"]) <= facts["tolerance"] and not guards  # False for NaN
    return {
        "got": plain(got),
        "error": plain(got - facts["want"]),
        "out_overrun": guards,
        "ok": ok,
        **facts,
    }


def _plain_args(np: Any, rng: Any, case: dict[str, Any]) -> tuple[Any, ...]:
    n = int(case["n"])
    x = (rng.random(n, dtype=np.float32) * 2 - 1).astype(np.float32)
    return (x, np.zeros(1, dtype=np.float32), np.uint64(n))


TASK = Task(
    name="reduce_sum",
    kernel=KERNEL,
    rules=RULES,
    plain_args=_plain_args,
    size=lambda case: {"n": int(case["n"])},
    what=lambda case, size: f"{case.get('label', 'n')} (n = {size['n']:,})",
    # the device's generator for the inputs, the host's for the spikes' places and sizes
    draws=lambda seed: (cupy().random.default_rng(seed), numpy().random.default_rng(seed)),
    prepare=lambda draws, size: _prepare(size["n"], *draws),
    launch=_launch,
    check=_compare,
    timed=lambda kernel, draws, timed: _timed(kernel, *draws, int(timed["n"]), timed["config"]),
)
