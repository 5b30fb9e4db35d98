"""What the microbenchmarks share: running a probe on the device, telemetry, checks, units.

The byte units, `ratio` and the power-of-two helpers are pure (no GPU
needed). The rest is how a probe runs, used by every module of the package:
`measure` opens the device, runs the probe's body and turns any failure into
a result; `watch_telemetry` records NVML telemetry while the timed part runs;
`check_equal`, `median_ms`, `full_grid` and `prop` are the checks and small
helpers every body uses; a body returns an `Outcome`, and raises
`WrongResult` when a kernel computed the wrong thing. CuPy and NumPy are
imported only when a probe runs.
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
from gpulab.probes.nvml import pynvml_module
from gpulab.probes.registry import title_of

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


def pow2_floor(n: int) -> int:
    """The largest power of two not above `n` (1 for n < 1)."""
    return 1 << (max(n, 1).bit_length() - 1)


def pow2_ceil(n: int) -> int:
    """The smallest power of two not below `n` (1 for n < 1)."""
    return 1 << max(n - 1, 0).bit_length()


# ---------------------------------------------------------------------------
# Running a probe: device, telemetry, checks, errors.
# ---------------------------------------------------------------------------


class WrongResult(Exception):
    """A kernel or library call computed the wrong thing."""


@dataclass
class Outcome:
    """What a probe's body found: the one-line message, readings, tables and telemetry."""

    message: str
    readings: list[Reading] = field(default_factory=list)
    tables: list[Table] = field(default_factory=list)
    telemetry: Telemetry | None = None


@dataclass
class _Watch:
    telemetry: Telemetry = field(default_factory=lambda: Telemetry(samples=0))


@contextlib.contextmanager
def watch_telemetry(device: CudaDevice) -> Iterator[_Watch]:
    """Record NVML telemetry while the block runs (none without NVML or the sampler)."""
    watch = _Watch()
    try:
        from gpulab.probes.nvml import Sampler
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


def measure(probe: str, body: Callable[[CudaDevice], Outcome]) -> ProbeResult:
    """Open the device, run `body` on it and make its `Outcome` the probe's result.

    No usable device gives the result that says why; a `WrongResult` or any
    other failure gives an `error` result. CuPy's cached memory is given back
    either way.
    """
    title = title_of(probe)
    device = open_device(probe, title)
    if isinstance(device, ProbeResult):
        return device
    try:
        outcome = body(device)
    except WrongResult as exc:
        return ProbeResult(
            probe, title, "error", f"wrong result, nothing measured: {exc}", device=device.name
        )
    except Exception as exc:  # a probe turns any failure into a result
        return ProbeResult(
            probe,
            title,
            "error",
            f"the measurement failed: {type(exc).__name__}: {exc}",
            device=device.name,
        )
    finally:
        _release(device.cupy)
    return ProbeResult(
        probe,
        title,
        summarise(outcome.readings),
        outcome.message,
        readings=tuple(outcome.readings),
        tables=tuple(outcome.tables),
        telemetry=outcome.telemetry,
        device=device.name,
    )


def _release(cupy: Any) -> None:
    """Give CuPy's cached device and pinned memory back, so the next probe has room."""
    with contextlib.suppress(Exception):
        cupy.cuda.get_current_stream().synchronize()
        cupy.get_default_memory_pool().free_all_blocks()
        cupy.get_default_pinned_memory_pool().free_all_blocks()


def prop(device: CudaDevice, key: str) -> int:
    """One of the device's CUDA properties, as an int."""
    return int(device.props[key])


def check_equal(cupy: Any, got: Any, want: Any, what: str) -> None:
    """Raise `WrongResult`, naming `what`, unless `got` equals `want` element by element."""
    if not bool(cupy.array_equal(got, want)):
        raise WrongResult(f"{what}: the output differs from the expected data")


def median_ms(samples: Sequence[float]) -> float:
    """The median of timings in milliseconds."""
    return float(statistics.median(samples))


def full_grid(device: CudaDevice, threads: int) -> int:
    """Blocks of `threads` that fill every SM to its thread limit, in one wave."""
    return prop(device, "multiProcessorCount") * (
        prop(device, "maxThreadsPerMultiProcessor") // threads
    )
