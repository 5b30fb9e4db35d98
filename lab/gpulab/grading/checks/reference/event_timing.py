"""The event-timing checks' own timing of the exercise's kernel, in the checks' process.

The exercise times one memory-bound kernel, ``y = factor * x`` over two float
buffers, with `factor` compiled into its source (so each new factor is a new
kernel, compiled by NVRTC at its first launch). The checks time the same
kernel, launched the same way on buffers of the same size, right after the
learner's function returned: `own_events_ms` (CUDA events after a warm-up, many
launches between one pair, the median of the repeats), `own_host_naive_ms`
(``perf_counter`` around one launch, no synchronisation: the launch call
only), `own_host_synced_ms` (a host timer with a synchronisation on each side)
and `own_cold_ms` (one event pair around the first launch of a kernel never
launched before: its compilation and loading included). The warm timings use one
factor, `TRUSTED_FACTOR`; the first launch, a fresh one. The buffers' size comes
from the GPU's own free memory (`elements`). CuPy is imported lazily; only the
checks call these, the learner writes their own.
"""

from __future__ import annotations

import importlib
import random
import statistics
import time
from typing import Any

__all__ = [
    "FRACTION",
    "KERNEL_SOURCE",
    "THREADS",
    "elements",
    "elements_for",
    "fresh_factor",
    "gbs",
    "own_cold_ms",
    "own_events_ms",
    "own_host_naive_ms",
    "own_host_synced_ms",
]

# The setup cell of the exercise holds the same text (a test compares the two): `FACTOR` is
# replaced by the factor, written as a float literal.
KERNEL_SOURCE = r"""
extern "C" __global__ void scale(const float* __restrict__ x, float* __restrict__ y,
                                 unsigned long long n)
{
    const float factor = FACTOR;
    const unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
    for (unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
         i < n; i += stride)
        y[i] = factor * x[i];
}
"""
THREADS = 256  # threads per block; one element per thread (blocks = ceil(n / THREADS))
FRACTION = 32  # each of the two buffers takes 1/FRACTION of the GPU's free memory
STEP = 2**18  # floats: buffers are whole MiB
MIN_ELEMENTS, MAX_ELEMENTS = 2**20, 2**30
WARM_UP = 3  # untimed launches before any timing
TRUSTED_FACTOR = 1.25  # the factor of the checks' warm timings (compiled once, then cached)

_RANDOM = random.Random()  # seeded from the OS: fresh factors in every run
_NVRTC_LOADED: list[bool] = []  # whether this process has compiled a kernel yet
_BUFFERS: dict[int, tuple[Any, Any]] = {}
_KERNELS: dict[str, Any] = {}


def elements_for(free_bytes: int, fraction: int = FRACTION) -> int:
    """Floats per buffer on a GPU with `free_bytes` free: 1/`fraction` of it, in whole MiB,
    at least 2**20 and at most 2**30 floats. On an 80 GB GPU that is about 2.5 GB a buffer,
    so one launch moves about 5 GB: a millisecond or two at HBM speed."""
    n = free_bytes // fraction // 4 // STEP * STEP
    return max(MIN_ELEMENTS, min(MAX_ELEMENTS, n))


def _cupy() -> Any:
    return importlib.import_module("cupy")


def elements(fraction: int = FRACTION) -> int:
    """`elements_for` this GPU's free memory now."""
    free, _total = _cupy().cuda.Device().mem_info
    return elements_for(int(free), fraction)


def fresh_factor() -> float:
    """A factor no kernel of this run has had: its kernel is compiled at its first launch."""
    return 0.5 + _RANDOM.random()


def gbs(n: int, ms: float) -> float:
    """GB/s of one launch over n floats in `ms` milliseconds: n floats read and n written,
    each byte counted once, 1 GB = 1e9 bytes."""
    return (4 * n + 4 * n) / (ms / 1e3) / 1e9


def _buffers(n: int) -> tuple[Any, Any]:
    """x (n random floats) and y (n floats), kept for the last n asked for."""
    if n not in _BUFFERS:
        cp = _cupy()
        _BUFFERS.clear()
        cp.get_default_memory_pool().free_all_blocks()
        _BUFFERS[n] = (cp.random.random(n, dtype=cp.float32), cp.empty(n, dtype=cp.float32))
    return _BUFFERS[n]


def _kernel(factor: float) -> Any:
    key = repr(float(factor))
    if key not in _KERNELS:
        source = KERNEL_SOURCE.replace("FACTOR", f"{float(factor)!r}f")
        _KERNELS[key] = _cupy().RawKernel(source, "scale")  # compiled at its first launch
    return _KERNELS[key]


def _launch(factor: float, n: int) -> None:
    cp = _cupy()
    x, y = _buffers(n)
    _kernel(factor)(((n + THREADS - 1) // THREADS,), (THREADS,), (x, y, cp.uint64(n)))


def _warm(factor: float, n: int) -> None:
    for _ in range(WARM_UP):
        _launch(factor, n)
    _cupy().cuda.Device().synchronize()


def own_events_ms(n: int, launches: int, repeats: int) -> float:
    """Milliseconds per launch: CUDA events around `launches` launches, after a warm-up; the
    median of `repeats` such timings."""
    cp = _cupy()
    factor = TRUSTED_FACTOR
    _warm(factor, n)
    start, end = cp.cuda.Event(), cp.cuda.Event()
    per_launch = []
    for _ in range(repeats):
        start.record()
        for _ in range(launches):
            _launch(factor, n)
        end.record()
        end.synchronize()
        per_launch.append(float(cp.cuda.get_elapsed_time(start, end)) / launches)
    return float(statistics.median(per_launch))


def own_host_naive_ms(n: int, repeats: int) -> float:
    """Milliseconds that ``perf_counter`` reads around one launch with no synchronisation
    inside (the median of `repeats`, the GPU left idle before each): the launch call only."""
    device = _cupy().cuda.Device()
    factor = TRUSTED_FACTOR
    _warm(factor, n)
    samples = []
    for _ in range(repeats):
        began = time.perf_counter()
        _launch(factor, n)
        samples.append((time.perf_counter() - began) * 1e3)
        device.synchronize()  # outside the timing: the next launch finds the GPU idle
    return float(statistics.median(samples))


def own_host_synced_ms(n: int, launches: int, repeats: int) -> float:
    """Milliseconds per launch that ``perf_counter`` reads around `launches` launches with a
    synchronisation before and after (the median of `repeats`)."""
    device = _cupy().cuda.Device()
    factor = TRUSTED_FACTOR
    _warm(factor, n)
    per_launch = []
    for _ in range(repeats):
        device.synchronize()
        began = time.perf_counter()
        for _ in range(launches):
            _launch(factor, n)
        device.synchronize()
        per_launch.append((time.perf_counter() - began) * 1e3 / launches)
    return float(statistics.median(per_launch))


def own_cold_ms(n: int) -> float:
    """Milliseconds between one pair of events around the first launch of a kernel this
    process never launched (its compilation and module loading included). The first call
    in a process compiles another new kernel first, so that loading NVRTC itself is not
    counted (a kernel CuPy finds in its disk cache is loaded without NVRTC)."""
    cp = _cupy()
    if not _NVRTC_LOADED:
        _warm(fresh_factor(), n)
        _NVRTC_LOADED.append(True)
    _warm(TRUSTED_FACTOR, n)  # the buffers made, the clocks up
    factor = fresh_factor()
    start, end = cp.cuda.Event(), cp.cuda.Event()
    start.record()
    _launch(factor, n)
    end.record()
    end.synchronize()
    return float(cp.cuda.get_elapsed_time(start, end))
