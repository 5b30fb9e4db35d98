"""Host-device copies: pinned and pageable host memory, both directions, against the link.

`pcie_bandwidth` copies between host and device from pinned and pageable
memory with cudaMemcpyAsync and sets the copies against the PCIe link's
rate per direction, which NVML reports. The pure helpers at the top (the
transfer size, a link's data rate) need no GPU; the probe imports CuPy and
NumPy only when it runs.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable

from gpulab.probes.cuda import CudaDevice, nvml_device
from gpulab.probes.micro._bandwidth import gb_per_s
from gpulab.probes.micro._common import (
    GiB,
    MiB,
    Outcome,
    WrongResult,
    measure,
    median_ms,
    prop,
    watch_telemetry,
)
from gpulab.probes.model import ProbeResult, Reading
from gpulab.probes.nvml import pynvml_module

__all__ = ["pcie_bandwidth", "pcie_bytes", "pcie_link_gb_per_s"]


# ---------------------------------------------------------------------------
# Pure helpers: no GPU needed, tested exactly.
# ---------------------------------------------------------------------------


def pcie_bytes(host_mem: int, device_mem: int) -> int:
    """Transfer size for the host-device probe: 1 GiB where memory is plentiful, else 256 MiB."""
    return GiB if host_mem >= 16 * GiB and device_mem >= 8 * GiB else 256 * MiB


# Per-lane PCIe data rate in GB/s after line encoding: GT/s x encoding / 8 bits.
_PCIE_LANE_GB_S = {
    1: 2.5 * 8 / 10 / 8,
    2: 5.0 * 8 / 10 / 8,
    3: 8.0 * 128 / 130 / 8,
    4: 16.0 * 128 / 130 / 8,
    5: 32.0 * 128 / 130 / 8,
    6: 64.0 * 242 / 256 / 8,
}


def pcie_link_gb_per_s(generation: int, width: int) -> float | None:
    """A PCIe link's data rate in GB/s per direction, after line encoding (None if unknown).

    Gen 3-5 use 128b/130b encoding, Gen 1-2 8b/10b, Gen 6 FLIT mode (242 of
    256 bytes carry data). Packet headers cost a further 10-20 %, so copies
    reach less than this.
    """
    lane = _PCIE_LANE_GB_S.get(generation)
    return None if lane is None or width <= 0 else round(lane * width, 2)


# ---------------------------------------------------------------------------
# The probe
# ---------------------------------------------------------------------------


def pcie_bandwidth() -> ProbeResult:
    """Host-to-device and device-to-host copies, pinned and pageable host memory."""
    return measure("pcie_bandwidth", _pcie_bandwidth)


def _pcie_bandwidth(device: CudaDevice) -> Outcome:
    cupyx = importlib.import_module("cupyx")
    numpy = importlib.import_module("numpy")

    from gpulab.kernels import launch

    cp = device.cupy
    runtime = cp.cuda.runtime
    host_mem = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    nbytes = pcie_bytes(host_mem, prop(device, "totalGlobalMem"))
    dev = cp.empty(nbytes, dtype=cp.uint8)
    pinned_src = cupyx.empty_pinned((nbytes,), dtype=numpy.uint8)
    pinned_dst = cupyx.empty_pinned((nbytes,), dtype=numpy.uint8)
    pinned_src.view(numpy.uint32)[:] = numpy.arange(nbytes // 4, dtype=numpy.uint32)
    pageable_src = numpy.array(pinned_src)  # a plain, pageable copy
    pageable_dst = numpy.zeros_like(pageable_src)  # touched, so its pages exist

    def copier(dst: int, src: int, kind: int) -> Callable[[], None]:
        return lambda: runtime.memcpyAsync(dst, src, nbytes, kind, cp.cuda.get_current_stream().ptr)

    h2d, d2h = runtime.memcpyHostToDevice, runtime.memcpyDeviceToHost
    results: dict[str, float] = {}
    with watch_telemetry(device) as watch:
        for memory, src, dst, repeats in (
            ("pinned", pinned_src, pinned_dst, 5),
            ("pageable", pageable_src, pageable_dst, 3),
        ):
            ms = launch.time_ms(
                copier(dev.data.ptr, src.ctypes.data, h2d), iters=1, repeats=repeats
            )
            results[f"h2d_{memory}"] = gb_per_s(nbytes, median_ms(ms))
            ms = launch.time_ms(
                copier(dst.ctypes.data, dev.data.ptr, d2h), iters=1, repeats=repeats
            )
            results[f"d2h_{memory}"] = gb_per_s(nbytes, median_ms(ms))
            if not numpy.array_equal(dst, pinned_src):
                raise WrongResult(f"{memory} round trip: the data copied back differs")
    convention = "each byte counted once, one direction"
    labels = {"h2d": "host to device", "d2h": "device to host"}
    readings = [
        Reading(
            f"{key}_bandwidth",
            f"{labels[key[:3]]}, {key[4:]} host memory",
            round(value, 2),
            "GB/s",
            convention,
            detail=f"{nbytes // MiB} MiB per copy, cudaMemcpyAsync, median",
        )
        for key, value in results.items()
    ]
    readings.append(_pcie_link(device))
    return Outcome(
        f"pinned: {results['h2d_pinned']:.1f} GB/s to the GPU, "
        f"{results['d2h_pinned']:.1f} GB/s back; pageable: "
        f"{results['h2d_pageable']:.1f} / {results['d2h_pageable']:.1f} GB/s",
        readings,
        [],
        watch.telemetry,
    )


def _pcie_link(device: CudaDevice) -> Reading:
    """The link's data rate per direction, the ceiling the copies are compared with."""
    key, label = "link_bandwidth", "PCIe link, per direction"
    with nvml_device(device) as handle:
        if handle is None:
            return Reading.not_supported(key, label, "NVML is not available")
        try:
            pynvml = pynvml_module()

            generation = int(pynvml.nvmlDeviceGetMaxPcieLinkGeneration(handle))
            width = int(pynvml.nvmlDeviceGetMaxPcieLinkWidth(handle))
        except Exception as exc:  # NotSupported (e.g. an SXM board without PCIe data)
            return Reading.not_supported(key, label, f"NVML: {exc}")
    rate = pcie_link_gb_per_s(generation, width)
    if rate is None:
        return Reading.not_supported(key, label, f"PCIe Gen{generation} x{width} is not known")
    return Reading(
        key,
        label,
        rate,
        "GB/s",
        "per direction, after line encoding",
        detail=f"PCIe Gen{generation} x{width} (the link's maximum, from NVML); "
        "packet overhead leaves copies 10-20 % below this",
    )
