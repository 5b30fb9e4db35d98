"""What the microbenchmarks share: running a probe on the device, telemetry, checks, units.

The microbenchmarks measure the GPU's memory hierarchy and arithmetic here:
`micro_bandwidth` (HBM, access strides, occupancy, host-device copies),
`micro_latency` (pointer chase, shared-memory latency and bank conflicts)
and `micro_compute` (warp divergence, FP32 peak, matmul). They work alike.

Each probe runs small CUDA C kernels (`gpulab.kernels`) or library calls,
checks that they computed the right thing (a copy equals its source, a chase
ends where the cycle says, a matmul matches a float64 reference), and times
them with CUDA events after a warm-up, reporting the median of several
repeats. Each reading states its unit and how it counts; where a ceiling can
be measured in the same run (cudaMemcpy for copies) it is. NVML telemetry
(SM clock, power, temperature, clock-event reasons) is recorded while the
timed part runs. Sizes are scaled from the device's memory and L2 so that a
probe takes a few seconds on an H200 and still fits a small GPU.

A wrong result makes the probe's status `error`: a fast wrong kernel
measures nothing.

This module holds what all three use: the byte units, `ratio` and the
power-of-two helpers (pure, no GPU needed), and the package-internal running
of a probe: `_run` opens the device, runs the probe's body and turns any
failure into a result; `_watch` records telemetry; `_check_equal`,
`_median_ms`, `_full_grid` and `_prop` are the checks and small helpers
every body uses. CuPy and NumPy are imported only when a probe runs.
"""

from __future__ import annotations

import contextlib
import math
import statistics
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from gpulab.probes.cuda import CudaDevice, nvml_device, open_device
from gpulab.probes.model import ProbeResult, Reading, Table, Telemetry, summarise
from gpulab.probes.nvml_session import pynvml_module

__all__ = ["GiB", "KiB", "MiB", "ratio"]

KiB, MiB, GiB = 1 << 10, 1 << 20, 1 << 30


# ---------------------------------------------------------------------------
# Pure helpers: no GPU needed, tested exactly.
# ---------------------------------------------------------------------------


def ratio(numerator: float, denominator: float) -> float:
    """numerator / denominator, rounded to 4 significant digits; NaN for a zero denominator."""
    if denominator == 0:
        return math.nan
    return float(f"{numerator / denominator:.4g}")


def _pow2_floor(n: int) -> int:
    return 1 << (max(n, 1).bit_length() - 1)


def _pow2_ceil(n: int) -> int:
    return 1 << max(n - 1, 0).bit_length()


# ---------------------------------------------------------------------------
# Running a probe: device, telemetry, checks, errors.
# ---------------------------------------------------------------------------


class _WrongResult(Exception):
    """A kernel or library call computed the wrong thing."""


@dataclass
class _Outcome:
    message: str
    readings: list[Reading] = field(default_factory=list)
    tables: list[Table] = field(default_factory=list)
    telemetry: Telemetry | None = None


@dataclass
class _Watch:
    telemetry: Telemetry = field(default_factory=lambda: Telemetry(samples=0))


@contextlib.contextmanager
def _watch(device: CudaDevice) -> Iterator[_Watch]:
    """Record NVML telemetry while the block runs (none without NVML or the sampler)."""
    watch = _Watch()
    try:
        from gpulab.probes.telemetry import Sampler
    except ImportError:
        yield watch
        return
    with Sampler(_nvml_index(device)) as sampler:
        yield watch
    try:
        watch.telemetry = sampler.telemetry
    except Exception:  # telemetry is context, not the measurement: keep the result without it
        watch.telemetry = Telemetry(samples=0)


def _nvml_index(device: CudaDevice) -> int:
    """NVML's index of the CUDA device (they can differ), or the CUDA index without NVML."""
    with nvml_device(device) as handle:
        if handle is not None:
            try:
                pynvml = pynvml_module()

                return int(pynvml.nvmlDeviceGetIndex(handle))
            except Exception:  # fall back to the CUDA index
                pass
    return device.index


def _run(probe: str, title: str, body: Callable[[CudaDevice], _Outcome]) -> ProbeResult:
    device = open_device(probe, title)
    if isinstance(device, ProbeResult):
        return device
    try:
        outcome = body(device)
    except _WrongResult as exc:
        return ProbeResult(probe, title, "error", f"wrong result, nothing measured: {exc}",
                           device=device.name)
    except Exception as exc:  # a probe turns any failure into a result
        return ProbeResult(probe, title, "error",
                           f"the measurement failed: {type(exc).__name__}: {exc}",
                           device=device.name)
    finally:
        _release(device.cupy)
    return ProbeResult(probe, title, summarise(outcome.readings), outcome.message,
                       readings=tuple(outcome.readings), tables=tuple(outcome.tables),
                       telemetry=outcome.telemetry, device=device.name)


def _release(cupy: Any) -> None:
    """Give CuPy's cached device and pinned memory back, so the next probe has room."""
    with contextlib.suppress(Exception):
        cupy.cuda.get_current_stream().synchronize()
        cupy.get_default_memory_pool().free_all_blocks()
        cupy.get_default_pinned_memory_pool().free_all_blocks()


def _prop(device: CudaDevice, key: str) -> int:
    return int(device.props[key])


def _check_equal(cupy: Any, got: Any, want: Any, what: str) -> None:
    if not bool(cupy.array_equal(got, want)):
        raise _WrongResult(f"{what}: the output differs from the expected data")


def _median_ms(samples: Sequence[float]) -> float:
    return float(statistics.median(samples))


def _full_grid(device: CudaDevice, threads: int) -> int:
    """Blocks of `threads` that fill every SM to its thread limit, in one wave."""
    return _prop(device, "multiProcessorCount") * (
        _prop(device, "maxThreadsPerMultiProcessor") // threads)
