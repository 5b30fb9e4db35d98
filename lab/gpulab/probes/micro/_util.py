"""What NVML's "GPU utilisation" measures: one thread on one SM reads as busy.

`util_one_thread` samples `nvmlDeviceGetUtilizationRates().gpu` while the
GPU is idle, then while a kernel of one thread in one block (`spin.cu`)
spins for a few seconds. NVML defines the figure as the share of the last
sample period in which any kernel was running, so the spin reads about
100 % although it keeps one SM of many busy with one warp. Where the GPU has
GPU Performance Monitoring (GPM, Hopper and newer), the same seconds are
read with GPM's SM utilisation and SM occupancy, which count SMs and warps
and so tell the two apart.

NVML's sample period is up to a second (it depends on the product), so the
first second after the launch, whose window still holds idle time, is not
sampled. How the microbenchmarks check, time and report their work is
described in `gpulab.probes.micro`.
"""

from __future__ import annotations

import contextlib
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from gpulab.probes.cuda import CudaDevice, nvml_device
from gpulab.probes.micro._common import Outcome, WrongResult, measure, prop, watch_telemetry
from gpulab.probes.model import ProbeResult, Reading, Table
from gpulab.probes.nvml import pynvml_module

__all__ = ["SETTLE_S", "SPIN_S", "util_one_thread"]

SPIN_S = 4.0  # how long the one-thread kernel runs
SETTLE_S = 1.25  # NVML's window (up to 1 s) must hold no idle time before sampling
EVERY_S = 0.25  # how often NVML is sampled
IDLE_S = 1.25  # quiet time before the idle samples, after the warm-up launch
_LABEL = "NVML GPU utilisation"
_CONVENTION = (
    "nvmlDeviceGetUtilizationRates().gpu: percent of the sample period in which "
    "one or more kernels ran"
)


def util_one_thread() -> ProbeResult:
    """NVML's GPU utilisation and GPM's SM counters while a <<<1, 1>>> kernel spins."""
    return measure("util_one_thread", _util_one_thread)


def _samples(read: Callable[[], int], start: float, until: float) -> list[tuple[float, int]]:
    """(seconds since `start`, reading) every EVERY_S from now until `until` (monotonic)."""
    rows: list[tuple[float, int]] = []
    tick = time.monotonic()
    while tick < until:
        time.sleep(max(0.0, tick - time.monotonic()))
        rows.append((round(time.monotonic() - start, 2), read()))
        tick += EVERY_S
    return rows


@dataclass
class _Gpm:
    """Two GPM samples around the spin and the SM counters between them."""

    pynvml: Any
    handle: Any
    samples: list[Any]
    why_not: str = ""

    @classmethod
    def open(cls, pynvml: Any, handle: Any) -> _Gpm:
        try:
            if not pynvml.nvmlGpmQueryDeviceSupport(handle).isSupportedDevice:
                return cls(pynvml, handle, [], "this GPU has no GPM (Hopper and newer have it)")
            return cls(pynvml, handle, [pynvml.nvmlGpmSampleAlloc(), pynvml.nvmlGpmSampleAlloc()])
        except Exception as exc:  # an old driver or library: report why, keep the probe
            return cls(pynvml, handle, [], f"GPM is not available: {exc}")

    def take(self, which: int) -> None:
        if self.samples and not self.why_not:
            try:
                self.pynvml.nvmlGpmSampleGet(self.handle, self.samples[which])
            except Exception as exc:
                self.why_not = f"nvmlGpmSampleGet failed: {exc}"

    def metrics(self, ids: tuple[int, ...]) -> list[float | str]:
        """Each metric's value, or why it could not be read."""
        if self.why_not or not self.samples:
            return [self.why_not or "no GPM samples"] * len(ids)
        pynvml = self.pynvml
        query = pynvml.c_nvmlGpmMetricsGet_t()
        query.version = pynvml.NVML_GPM_METRICS_GET_VERSION
        query.numMetrics = len(ids)
        query.sample1, query.sample2 = self.samples
        for slot, metric in enumerate(ids):
            query.metrics[slot].metricId = metric
        try:
            pynvml.nvmlGpmMetricsGet(query)
        except Exception as exc:
            return [f"nvmlGpmMetricsGet failed: {exc}"] * len(ids)
        return [
            float(query.metrics[slot].value)
            if query.metrics[slot].nvmlReturn == 0
            else f"NVML return code {query.metrics[slot].nvmlReturn}"
            for slot in range(len(ids))
        ]

    def close(self) -> None:
        for sample in self.samples:
            # freeing is best effort; the process ends soon anyway
            with contextlib.suppress(Exception):
                self.pynvml.nvmlGpmSampleFree(sample)


def _util_one_thread(device: CudaDevice) -> Outcome:
    from gpulab.kernels import launch

    cp = device.cupy
    sms = prop(device, "multiProcessorCount")
    out = cp.zeros(2, dtype=cp.uint64)
    launch.spin_one_thread(out, ns=1_000_000)  # compiles the kernel; checked below too
    cp.cuda.get_current_stream().synchronize()
    with nvml_device(device) as handle:
        if handle is None:
            why = "NVML is not available here, so there is no utilisation to read"
            keys = (
                "gpu_util_idle",
                "gpu_util_one_thread",
                "sm_util_one_thread",
                "sm_occupancy_one_thread",
            )
            return Outcome(why, [Reading.not_supported(key, _LABEL, why) for key in keys])
        pynvml = pynvml_module()

        def gpu_util() -> int:
            return int(pynvml.nvmlDeviceGetUtilizationRates(handle).gpu)

        gpm = _Gpm.open(pynvml, handle)
        try:
            with watch_telemetry(device) as watch:
                time.sleep(IDLE_S)
                start = time.monotonic()
                idle = _samples(gpu_util, start, start + 4 * EVERY_S)
                launch.spin_one_thread(out, ns=int(SPIN_S * 1e9))
                launched = time.monotonic()
                time.sleep(SETTLE_S)
                gpm.take(0)
                busy = _samples(gpu_util, launched, launched + SPIN_S - EVERY_S)
                gpm.take(1)
                cp.cuda.get_current_stream().synchronize()
            sm_util, occupancy = gpm.metrics(
                (pynvml.NVML_GPM_METRIC_SM_UTIL, pynvml.NVML_GPM_METRIC_SM_OCCUPANCY)
            )
        finally:
            gpm.close()
    ran_ns, turns = (int(v) for v in out.get())
    if ran_ns < SPIN_S * 1e9 or turns == 0:
        raise WrongResult(
            f"the spin kernel ran {ran_ns} ns in {turns} turns, not at least {SPIN_S:g} s"
        )
    gpm_window = f"between {SETTLE_S:g} s and {SPIN_S - EVERY_S:g} s after the launch"
    one_sm = 100 / sms
    readings = [
        Reading(
            "gpu_util_idle",
            f"{_LABEL}, idle",
            statistics.median(v for _, v in idle),
            "%",
            _CONVENTION,
            detail=f"median of {len(idle)} samples {EVERY_S:g} s apart, "
            f"before the launch: {_spread(idle)}",
        ),
        Reading(
            "gpu_util_one_thread",
            f"{_LABEL}, one thread spinning",
            statistics.median(v for _, v in busy),
            "%",
            _CONVENTION,
            detail=f"median of {len(busy)} samples {EVERY_S:g} s apart, {gpm_window} "
            f"of a {SPIN_S:g} s <<<1, 1>>> kernel: {_spread(busy)}",
        ),
        _gpm_reading(
            "sm_util_one_thread",
            "GPM SM utilisation, one thread spinning",
            sm_util,
            f"NVML_GPM_METRIC_SM_UTIL: percent of SMs busy, {gpm_window}; one SM of "
            f"{sms} is {one_sm:.2f} %",
        ),
        _gpm_reading(
            "sm_occupancy_one_thread",
            "GPM SM occupancy, one thread spinning",
            occupancy,
            f"NVML_GPM_METRIC_SM_OCCUPANCY: resident warps against the "
            f"most the SMs hold, {gpm_window}",
        ),
    ]
    table = Table(
        "NVML GPU utilisation samples",
        ("phase", "seconds", "GPU utilisation"),
        tuple(("idle", t, v) for t, v in idle)
        + tuple(("one thread spinning", t, v) for t, v in busy),
        ("", "s", "%"),
    )
    busy_util = readings[1].value
    sm_text = f", GPM SM utilisation {sm_util:.2f} %" if isinstance(sm_util, float) else ""
    return Outcome(
        f"GPU utilisation {busy_util} % while one thread on one of {sms} SMs "
        f"spins (idle: {readings[0].value} %){sm_text}",
        readings,
        [table],
        watch.telemetry,
    )


def _spread(rows: list[tuple[float, int]]) -> str:
    values = [v for _, v in rows]
    return f"lowest {min(values)} %, highest {max(values)} %" if values else "no samples"


def _gpm_reading(key: str, label: str, value: float | str, convention: str) -> Reading:
    if isinstance(value, str):
        return Reading.not_supported(key, label, value)
    return Reading(
        key,
        label,
        round(value, 3),
        "%",
        convention,
        detail="two GPM samples around the same seconds as the NVML samples",
    )
