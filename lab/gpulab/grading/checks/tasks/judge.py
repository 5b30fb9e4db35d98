"""How the kernel tasks judge a launch as a careful judge would (GPU MODE's harness does this).

- **Guard zones** on both sides of every output (and every input): GUARD
  floats holding a NaN with a payload of their own, compared bit for bit
  after each launch, so a write just past either end shows as an overrun
  even when the value written is itself a NaN. Reading an input's guard gives
  NaN, which spreads into whatever the kernel computes from it.
- **Fresh inputs for every launch**, timed launches included: a new draw of
  the task's random generator each time, into freshly NaN-filled outputs, and
  the expected result computed from the inputs *before* the launch (a kernel
  that writes into its inputs cannot make itself right).
- **Every launch checked**: `time_each` times launches one at a time between
  a pair of CUDA events, after an L2 flush outside the timed interval, and
  the task checks the output of each (warm-up included); the time reported is
  the median.
- **Schedules that differ**: `repeat_case` runs a case several times, on
  fresh data, rotating through several grids where the exercise allows them,
  each launch beside a trusted busy kernel on another stream that takes issue
  slots on every SM unevenly, so that a race between the warps of a block
  gets its chance to show.

CuPy is imported when a helper needs it.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from gpulab.grading.checks.tasks.common import cupy, launch, numpy, synchronize

__all__ = [
    "GUARD",
    "IN_GUARD",
    "OUT_GUARD",
    "ROUNDS",
    "Busy",
    "Contender",
    "guarded",
    "overrun",
    "repeat_case",
    "summary",
    "time_each",
]

GUARD = 4096  # floats on each side: 16 KiB, so views stay 256-byte aligned
OUT_GUARD = 0x7FC05A5A  # a NaN with a payload: guards around an output
IN_GUARD = 0x7FC0A5A5  # another: guards around an input (a copy past its end shows)
ROUNDS = 11  # timed launches per contender, after one warm-up round
BUDGET_S = 25.0  # fewer rounds (at least MIN_ROUNDS) when a round is slow
MIN_ROUNDS = 3
BUSY_CYCLES = 200_000  # about 0.1 ms at 2 GHz: longer than a small case's launch

_TRUSTED = r"""
extern "C" __global__ void flush_write(float4* __restrict__ buffer, unsigned long long n4,
                                       float value)
{
    const unsigned long long step = (unsigned long long)gridDim.x * blockDim.x;
    for (unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
         i < n4; i += step)
        buffer[i] = make_float4(value, value, value, value);
}

extern "C" __global__ void flush_read(const float4* __restrict__ buffer, unsigned long long n4,
                                      float* __restrict__ sink)
{
    const unsigned long long step = (unsigned long long)gridDim.x * blockDim.x;
    float acc = 0.0f;
    for (unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
         i < n4; i += step) {
        const float4 v = buffer[i];
        acc += v.x + v.y + v.z + v.w;
    }
    if (acc == -1.0f)           // never: keeps the loads
        sink[0] = acc;
}

extern "C" __global__ void busy(long long cycles, float* __restrict__ sink)
{
    const long long start = clock64();
    float x = threadIdx.x * 1e-3f;
    while (clock64() - start < cycles) {
#pragma unroll 16
        for (int k = 0; k < 64; ++k)
            x = fmaf(x, 0.999f, 1e-3f);
    }
    if (x == -1.0f)
        sink[0] = x;
}
"""
_MODULE: list[Any] = []


def _trusted(name: str) -> Any:
    cp = cupy()
    if not _MODULE:
        _MODULE.append(cp.RawModule(code=_TRUSTED, options=("--std=c++17",)))
    return _MODULE[0].get_function(name)


def guarded(
    size: int,
    *,
    guard: int = OUT_GUARD,
    fill: float = float("nan"),
    dtype: Any = None,
    tail: int = GUARD,
) -> tuple[Any, Any]:
    """A buffer of GUARD + size + `tail` 4-byte words, and the view of `size` between the guards.

    The guards hold the bit pattern `guard`; the view holds `fill` (NaN: an
    element never written stays NaN). A task whose likely mistake writes far
    past the end asks for a longer `tail`, so that the mistake shows as an
    overrun rather than as a fault or a silent write into another buffer.
    """
    cp = cupy()
    buffer = cp.empty(GUARD + size + tail, dtype=cp.float32 if dtype is None else dtype)
    buffer.view(cp.uint32).fill(guard)
    view = buffer[GUARD : GUARD + size]
    view.fill(fill)
    return buffer, view


def overrun(buffer: Any, view: Any, guard: int = OUT_GUARD) -> dict[str, int]:
    """Guard words around `view` (from `guarded`) that were changed (bit for bit):
    ``overrun`` in all, ``overrun_before`` of them before its start."""
    cp = cupy()
    words = buffer.view(cp.uint32)
    before = int(cp.count_nonzero(words[:GUARD] != guard))
    after = int(cp.count_nonzero(words[GUARD + view.size :] != guard))
    return {"overrun": before + after, "overrun_before": before}


class Busy:
    """A trusted kernel that keeps every SM busy beside the learner's, on a stream of its own."""

    def __init__(self) -> None:
        cp = cupy()
        self.stream = cp.cuda.Stream(non_blocking=True)
        props = cp.cuda.runtime.getDeviceProperties(cp.cuda.Device().id)
        self.blocks = 2 * int(props["multiProcessorCount"])
        self.sink = cp.zeros(1, dtype=cp.float32)
        self.function = _trusted("busy")

    def start(self) -> None:
        """Enqueue the busy kernel on its stream: three warps per block, two blocks per SM,
        so that the four schedulers of an SM get unequal shares of it."""
        np = numpy()
        with self.stream:
            self.function((self.blocks,), (96,), (np.int64(BUSY_CYCLES), self.sink))

    def wait(self) -> None:
        self.stream.synchronize()


def repeat_case(
    case: dict[str, Any], once: Callable[[Any, bool], dict[str, Any]], busy: Busy | None
) -> dict[str, Any]:
    """Run a case ``case.get("repeat", 1)`` times; the first failing launch's result, or the last.

    Each call of ``once(config, beside_busy)`` makes fresh inputs, launches
    once and returns its findings with ``"ok"``. The configurations rotate
    through ``case["configs"]`` if given (else ``case["config"]``); with
    ``case["busy"]`` each launch runs beside the busy kernel. Adds
    ``launches`` and ``failed_launches`` (and ``failed_at``, 1-based).
    """
    configs = case.get("configs") or [case["config"]]
    repeat = max(1, int(case.get("repeat", 1)))
    beside = bool(case.get("busy")) and busy is not None
    kept: dict[str, Any] | None = None
    failed = 0
    try:
        for number in range(repeat):
            result = once(configs[number % len(configs)], beside)
            if not result["ok"]:
                failed += 1
                if kept is None or kept["ok"]:
                    kept = {**result, "failed_at": number + 1}
            elif kept is None or kept["ok"]:
                kept = result
    finally:
        if busy is not None:
            busy.wait()
    assert kept is not None
    return {**kept, "launches": repeat, "failed_launches": failed}


@dataclass(frozen=True)
class Contender:
    """One kernel (or library call) in a timed comparison.

    `prepare` makes fresh inputs and NaN-filled outputs (untimed) and returns
    them; `enqueue` enqueues the one launch that is timed; `check`, if given,
    judges that launch's output and returns findings with ``"ok"``.
    """

    prepare: Callable[[], Any]
    enqueue: Callable[[Any], object]
    check: Callable[[Any], dict[str, Any]] | None = None


def time_each(
    contenders: dict[str, Contender], what: str, *, rounds: int = ROUNDS
) -> dict[str, Any]:
    """Time launches one at a time, interleaved round by round, each on fresh inputs.

    Before every launch the L2 is flushed (a buffer twice its size written,
    then another read), outside the timed interval. A warm-up round runs
    first (checked, not timed); if a round takes long, fewer follow (at least
    MIN_ROUNDS, within about BUDGET_S seconds). Returns
    ``ms`` (median per contender), ``samples`` and ``checks`` (every checked
    launch's findings, per contender that has a check).
    """
    cp = cupy()
    flush = _flush()
    samples: dict[str, list[float]] = {name: [] for name in contenders}
    checks: dict[str, list[dict[str, Any]]] = {
        name: [] for name, contender in contenders.items() if contender.check
    }
    total = rounds + 1
    number = 0
    while number < total:
        began = time.monotonic()
        for name, contender in contenders.items():
            state = contender.prepare()
            flush()
            start, end = cp.cuda.Event(), cp.cuda.Event()
            start.record()
            contender.enqueue(state)
            end.record()
            synchronize(what if name == "yours" else f"{what}, {name}")
            if number:
                samples[name].append(float(cp.cuda.get_elapsed_time(start, end)))
            if contender.check:
                checks[name].append(contender.check(state))
            del state
        if number == 1:  # the first timed round says how many fit
            took = time.monotonic() - began
            total = 1 + max(MIN_ROUNDS, min(rounds, int(BUDGET_S / max(took, 1e-3))))
        number += 1
    return {
        "ms": {name: float(statistics.median(values)) for name, values in samples.items()},
        "samples": samples,
        "checks": checks,
    }


def summary(results: list[dict[str, Any]]) -> dict[str, Any]:
    """The checked launches of a contender in a few numbers, with the first failing one."""
    bad = [number for number, result in enumerate(results) if not result["ok"]]
    first = results[bad[0]] if bad else results[-1]
    return {
        **first,
        "launches": len(results),
        "failed_launches": len(bad),
        **({"failed_at": bad[0] + 1} if bad else {}),
    }


def _flush() -> Callable[[], None]:
    """A function that evicts the L2: writes a buffer of twice its size, then reads another."""
    cp, np = cupy(), numpy()
    props = cp.cuda.runtime.getDeviceProperties(cp.cuda.Device().id)
    l2 = int(props.get("l2CacheSize") or 64 * 2**20)
    n4 = (2 * l2) // 16 + 1
    written = cp.empty(4 * n4, dtype=cp.float32)
    read = cp.zeros(4 * n4, dtype=cp.float32)
    sink = cp.zeros(1, dtype=cp.float32)
    blocks = 4 * int(props["multiProcessorCount"])
    config = {"blocks": blocks, "threads": 256}
    write_fn, read_fn = _trusted("flush_write"), _trusted("flush_read")
    counter = [0.0]

    def flush() -> None:
        counter[0] += 1.0
        launch(write_fn, config, (written, np.uint64(n4), np.float32(counter[0])), "L2 flush")
        launch(read_fn, config, (read, np.uint64(n4), sink), "L2 flush")

    return flush
