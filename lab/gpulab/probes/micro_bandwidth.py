"""Bandwidth microbenchmarks: HBM copies, access strides, occupancy, host-device copies.

`hbm_bandwidth` sets an SM copy kernel against cudaMemcpy on the same
buffers in the same run; `stride_sweep` reads at strides of 1-32 words to
show what coalescing is worth; `occupancy_bandwidth` copies with fewer and
fewer resident warps per SM; `pcie_bandwidth` copies between host and
device from pinned and pageable memory, against the PCIe link's rate.

The pure helpers at the top (buffer sizes, sector overfetch, PCIe rates,
occupancy arithmetic, GB/s) need no GPU; the probes import CuPy and NumPy
only when they run. How every microbenchmark checks, times and reports its
work is described in `gpulab.probes.micro_common`.
"""

from __future__ import annotations

import functools
import importlib
import os
from collections.abc import Callable

from gpulab.probes.cuda import CudaDevice, nvml_device
from gpulab.probes.micro_common import (
    GiB,
    MiB,
    _check_equal,
    _full_grid,
    _median_ms,
    _Outcome,
    _pow2_ceil,
    _pow2_floor,
    _prop,
    _run,
    _watch,
    _WrongResult,
    ratio,
)
from gpulab.probes.model import ProbeResult, Reading, Table
from gpulab.probes.nvml_session import pynvml_module

__all__ = [
    "gb_per_s",
    "hbm_bandwidth",
    "occupancy_bandwidth",
    "occupancy_blocks",
    "occupancy_smem",
    "pcie_bandwidth",
    "pcie_bytes",
    "pcie_link_gb_per_s",
    "scaled_bytes",
    "sector_overfetch",
    "stride_sweep",
]


# ---------------------------------------------------------------------------
# Pure helpers: no GPU needed, tested exactly.
# ---------------------------------------------------------------------------


def gb_per_s(nbytes: float, ms: float) -> float:
    """Bytes per millisecond as GB/s (10^9 bytes per second)."""
    return nbytes / (ms * 1e-3) / 1e9


def scaled_bytes(total_mem: int, l2_bytes: int, *, share: int, cap: int) -> int:
    """A buffer size for a bandwidth test: a power of two, much larger than the L2.

    1/`share` of device memory, at most `cap`, rounded down to a power of two;
    raised to 8 × L2 (rounded up) where that is larger and still at most a
    quarter of device memory, so the data cannot be served from the cache.
    """
    size = _pow2_floor(min(total_mem // share, cap))
    floor = _pow2_ceil(8 * l2_bytes)
    if size < floor <= total_mem // 4:
        size = floor
    return size


def sector_overfetch(stride: int) -> int:
    """Bytes the memory moves per useful byte when reading every `stride`-th 4-byte word.

    Memory moves 32-byte sectors (8 words): a stride of 8 words or more
    brings a whole sector for each useful word.
    """
    return min(stride, 8)


def pcie_bytes(host_mem: int, device_mem: int) -> int:
    """Transfer size for the host-device probe: 1 GiB where memory is plentiful, else 256 MiB."""
    return GiB if host_mem >= 16 * GiB and device_mem >= 8 * GiB else 256 * MiB


# Per-lane PCIe data rate in GB/s after line encoding: GT/s x encoding / 8 bits.
_PCIE_LANE_GB_S = {1: 2.5 * 8 / 10 / 8, 2: 5.0 * 8 / 10 / 8, 3: 8.0 * 128 / 130 / 8,
                   4: 16.0 * 128 / 130 / 8, 5: 32.0 * 128 / 130 / 8, 6: 64.0 * 242 / 256 / 8}


def pcie_link_gb_per_s(generation: int, width: int) -> float | None:
    """A PCIe link's data rate in GB/s per direction, after line encoding (None if unknown).

    Gen 3-5 use 128b/130b encoding, Gen 1-2 8b/10b, Gen 6 FLIT mode (242 of
    256 bytes carry data). Packet headers cost a further 10-20 %, so copies
    reach less than this.
    """
    lane = _PCIE_LANE_GB_S.get(generation)
    return None if lane is None or width <= 0 else round(lane * width, 2)


def occupancy_smem(blocks_per_sm: int, smem_per_sm: int, reserved_per_block: int,
                   optin_per_block: int) -> int:
    """Dynamic shared memory per block that lets at most `blocks_per_sm` blocks share an SM.

    Each block also takes `reserved_per_block` bytes the system keeps; the
    result never exceeds what a block may opt in to.
    """
    return max(0, min(smem_per_sm // blocks_per_sm - reserved_per_block, optin_per_block))


def occupancy_blocks(threads: int, dynamic_smem: int, props: dict[str, int]) -> int:
    """Resident blocks per SM from the thread, block and shared-memory limits (registers aside)."""
    limit = min(props["maxBlocksPerMultiProcessor"],
                props["maxThreadsPerMultiProcessor"] // threads)
    if dynamic_smem:
        per_block = dynamic_smem + props.get("reservedSharedMemPerBlock", 0)
        limit = min(limit, props["sharedMemPerMultiprocessor"] // per_block)
    return limit


# ---------------------------------------------------------------------------
# Bandwidth: HBM, strides, occupancy, PCIe
# ---------------------------------------------------------------------------

_READ_WRITE = "bytes read + bytes written"


def hbm_bandwidth() -> ProbeResult:
    """An SM copy kernel against cudaMemcpy device-to-device: same buffers, same run."""
    return _run("hbm_bandwidth", "HBM bandwidth", _hbm_bandwidth)


def _copy_configs(device: CudaDevice, n: int) -> list[tuple[str, int, int]]:
    """(kernel, threads per block, blocks) for a copy of `n` float4 values.

    The grid-stride copy as one full wave (every SM filled to its thread
    limit), and the tiled copy (one float4 per thread, a block for every
    tile) at three block sizes. On the project's H200 the tiled copy matched
    cudaMemcpy and the one-wave loop reached about 0.93 of it; the table
    keeps every row and the best is reported.
    """
    sms = _prop(device, "multiProcessorCount")
    per_sm = _prop(device, "maxThreadsPerMultiProcessor")
    configs = [("copy_float4", 256, sms * max(1, per_sm // 256))]
    for threads in (128, 256, 512):
        if threads <= _prop(device, "maxThreadsPerBlock"):
            configs.append(("copy_float4_tiles", threads, -(-n // threads)))
    return configs


def _hbm_bandwidth(device: CudaDevice) -> _Outcome:
    from gpulab.kernels import launch

    cp = device.cupy
    runtime = cp.cuda.runtime
    nbytes = scaled_bytes(_prop(device, "totalGlobalMem"), _prop(device, "l2CacheSize"),
                          share=16, cap=4 * GiB)
    src = cp.arange(nbytes // 4, dtype=cp.uint32)
    dst = cp.empty_like(src)

    def memcpy() -> None:
        runtime.memcpyAsync(dst.data.ptr, src.data.ptr, nbytes, runtime.memcpyDeviceToDevice,
                            cp.cuda.get_current_stream().ptr)

    def timed_memcpy() -> list[float]:
        dst.fill(0)
        samples = launch.time_ms(memcpy, iters=5, repeats=5)
        _check_equal(cp, dst, src, "cudaMemcpy device-to-device")
        return samples

    rows: list[tuple[str, int, int, float]] = []
    with _watch(device) as watch:
        memcpy_ms = timed_memcpy()
        for variant, threads, blocks in _copy_configs(device, nbytes // 16):
            dst.fill(0)
            run = functools.partial(launch.copy, variant, src, dst, blocks=blocks,
                                    threads=threads)
            ms = _median_ms(launch.time_ms(run, iters=5, repeats=5))
            _check_equal(cp, dst, src, f"{variant} ({blocks} blocks of {threads} threads)")
            rows.append((variant, threads, blocks, round(gb_per_s(2 * nbytes, ms), 1)))
        memcpy_ms += timed_memcpy()
    memcpy_gbs = gb_per_s(2 * nbytes, _median_ms(memcpy_ms))
    variant, threads, blocks, best = max(rows, key=lambda row: row[3])
    wave = next(row for row in rows if row[0] == "copy_float4")
    size = f"{nbytes / GiB:g} GiB" if nbytes >= GiB else f"{nbytes // MiB} MiB"
    readings = [
        Reading("copy_kernel_bandwidth", "SM copy kernel", round(best, 1), "GB/s", _READ_WRITE,
                detail=f"best of {len(rows)} launch shapes: {variant}, {blocks} blocks of "
                       f"{threads} threads; {size} buffers, median of 5 x 5 copies"),
        Reading("gridstride_copy_bandwidth", "grid-stride copy, one full wave", wave[3], "GB/s",
                _READ_WRITE, detail=f"copy_float4, {wave[2]} blocks of {wave[1]} threads "
                                    "(every SM full), looping over the buffer"),
        Reading("memcpy_bandwidth", "cudaMemcpy device-to-device", round(memcpy_gbs, 1), "GB/s",
                _READ_WRITE, detail=f"cudaMemcpyAsync on the same {size} buffers, timed before "
                                    "and after the kernels; median of 10 x 5 copies"),
        Reading("ratio", "copy kernel / cudaMemcpy", ratio(best, memcpy_gbs), "x",
                "copy_kernel_bandwidth / memcpy_bandwidth, same run"),
    ]
    table = Table("Copy kernel launch shapes", ("kernel", "threads per block", "blocks",
                                                "bandwidth"),
                  tuple(rows), ("", "threads", "blocks", "GB/s"))
    return _Outcome(f"SM copy {best:.0f} GB/s, cudaMemcpy {memcpy_gbs:.0f} GB/s "
                    f"({_READ_WRITE})", readings, [table], watch.telemetry)


STRIDES = (1, 2, 4, 8, 16, 32)


def stride_sweep() -> ProbeResult:
    """Useful read bandwidth at strides of 1-32 words: what coalescing is worth."""
    return _run("stride_sweep", "Access stride sweep", _stride_sweep)


def _stride_sweep(device: CudaDevice) -> _Outcome:
    from gpulab.kernels import launch

    cp = device.cupy
    nbytes = scaled_bytes(_prop(device, "totalGlobalMem"), _prop(device, "l2CacheSize"),
                          share=16, cap=4 * GiB)
    src = cp.arange(nbytes // 4, dtype=cp.uint32)
    threads = 256
    blocks = _full_grid(device, threads)
    partial = cp.empty(blocks * threads, dtype=cp.uint32)
    useful: dict[int, float] = {}
    with _watch(device) as watch:
        for stride in STRIDES:
            run = functools.partial(launch.read_strided, src, stride, partial, blocks=blocks,
                                    threads=threads)
            ms = _median_ms(launch.time_ms(run, iters=3, repeats=5))
            used = src[: src.size // stride * stride : stride]
            want = int(cp.sum(used, dtype=cp.uint64)) % (1 << 32)
            got = int(cp.sum(partial, dtype=cp.uint64)) % (1 << 32)
            if got != want:
                raise _WrongResult(f"stride {stride}: the kernel summed {got}, the reference "
                                   f"{want} (mod 2^32)")
            useful[stride] = gb_per_s(src.size // stride * 4, ms)
    base = useful[1]
    rows = tuple((s, round(useful[s], 1), ratio(useful[s], base), sector_overfetch(s))
                 for s in STRIDES)
    convention = "useful bytes read per second: 4 bytes per word the kernel uses"
    readings = [Reading(f"stride_{s}_bandwidth", f"useful bandwidth at stride {s}",
                        round(useful[s], 1), "GB/s", convention) for s in (1, 2, 8, 32)]
    readings += [Reading(f"stride_{s}_fraction", f"stride {s} / stride 1", ratio(useful[s], base),
                         "of contiguous", "useful bandwidth divided by that at stride 1")
                 for s in (2, 8, 32)]
    table = Table(f"Strided reads of a {nbytes // MiB} MiB buffer",
                  ("stride", "useful bandwidth", "fraction of stride 1",
                   "bytes moved per useful byte"), rows,
                  ("4-byte words", "GB/s", "", "32-byte sectors"))
    return _Outcome(f"stride 1: {base:.0f} GB/s useful; stride 32: {useful[32]:.0f} GB/s "
                    f"({useful[32] / base:.1%})", readings, [table], watch.telemetry)


def occupancy_bandwidth() -> ProbeResult:
    """Copy bandwidth as the resident warps per SM fall from the maximum to a sixteenth."""
    return _run("occupancy_bandwidth", "Occupancy and bandwidth", _occupancy_bandwidth)


def _occupancy_bandwidth(device: CudaDevice) -> _Outcome:
    from gpulab.kernels import function, launch

    cp = device.cupy
    props = {key: int(device.props[key]) for key in
             ("maxBlocksPerMultiProcessor", "maxThreadsPerMultiProcessor",
              "sharedMemPerMultiprocessor", "sharedMemPerBlockOptin", "warpSize")}
    props["reservedSharedMemPerBlock"] = int(device.props.get("reservedSharedMemPerBlock", 0))
    threads = 128
    max_warps = props["maxThreadsPerMultiProcessor"] // props["warpSize"]
    top = min(props["maxThreadsPerMultiProcessor"] // threads, props["maxBlocksPerMultiProcessor"])
    levels = [top >> i for i in range(5) if top >> i >= 1]
    kernel = function("copy", "copy_float4")
    driver = cp.cuda.driver
    smem = {k: occupancy_smem(k, props["sharedMemPerMultiprocessor"],
                              props["reservedSharedMemPerBlock"],
                              props["sharedMemPerBlockOptin"]) for k in levels}
    pointer = kernel.kernel.ptr                     # the CUfunction behind the RawKernel
    kernel.max_dynamic_shared_size_bytes = max(smem.values())    # above 48 KB needs opting in
    kernel.preferred_shared_memory_carveout = 100                # all of L1 as shared memory
    nbytes = scaled_bytes(_prop(device, "totalGlobalMem"), _prop(device, "l2CacheSize"),
                          share=16, cap=2 * GiB)
    src = cp.arange(nbytes // 4, dtype=cp.uint32)
    dst = cp.empty_like(src)
    sms = _prop(device, "multiProcessorCount")
    rows: list[tuple[int, int, int, int, str, float]] = []
    with _watch(device) as watch:
        for k in levels:
            try:
                resident = int(driver.occupancyMaxActiveBlocksPerMultiprocessor(
                    pointer, threads, smem[k]))
                how = "CUDA occupancy API"
            except Exception:  # no occupancy API here: compute it
                resident, how = occupancy_blocks(threads, smem[k], props), "computed"
            dst.fill(0)
            run = functools.partial(launch.copy, "copy_float4", src, dst, blocks=sms * k,
                                    threads=threads, shared_mem=smem[k])
            ms = _median_ms(launch.time_ms(run, iters=3, repeats=5))
            _check_equal(cp, dst, src, f"copy_float4 at {k} blocks per SM")
            warps = min(k, resident) * threads // props["warpSize"]
            rows.append((warps, k, smem[k], resident, how, round(gb_per_s(2 * nbytes, ms), 1)))
    by_warps = {row[0]: row[5] for row in rows}
    full, quarter = by_warps.get(max_warps), by_warps.get(max_warps // 4)
    readings = []
    for key, label, value, warps in (
            ("bandwidth_full_occupancy", "copy at full occupancy", full, max_warps),
            ("bandwidth_quarter_occupancy", "copy at quarter occupancy", quarter,
             max_warps // 4)):
        if value is None:
            readings.append(Reading.failed(key, label, f"no launch reached {warps} resident "
                                                       "warps per SM"))
        else:
            readings.append(Reading(key, label, value, "GB/s", _READ_WRITE,
                                    detail=f"{warps} resident warps per SM, one float4 per "
                                           "thread in flight"))
    if full and quarter:
        readings.append(Reading("quarter_to_full_ratio", "quarter / full occupancy",
                                ratio(quarter, full), "x", "bandwidth at quarter occupancy / "
                                "bandwidth at full occupancy, same kernel and buffers"))
    table = Table("Copy bandwidth by resident warps per SM (copy_float4, 128 threads per block)",
                  ("warps per SM", "blocks per SM", "dynamic shared memory per block",
                   "blocks that fit", "checked by", "bandwidth"),
                  tuple(rows), ("warps", "blocks", "bytes", "blocks", "", "GB/s"))
    return _Outcome(f"full occupancy {full or 0:.0f} GB/s, quarter {quarter or 0:.0f} GB/s "
                    f"({_READ_WRITE})", readings, [table], watch.telemetry)


def pcie_bandwidth() -> ProbeResult:
    """Host-to-device and device-to-host copies, pinned and pageable host memory."""
    return _run("pcie_bandwidth", "Host-device copies", _pcie_bandwidth)


def _pcie_bandwidth(device: CudaDevice) -> _Outcome:
    cupyx = importlib.import_module("cupyx")
    numpy = importlib.import_module("numpy")

    from gpulab.kernels import launch

    cp = device.cupy
    runtime = cp.cuda.runtime
    host_mem = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    nbytes = pcie_bytes(host_mem, _prop(device, "totalGlobalMem"))
    dev = cp.empty(nbytes, dtype=cp.uint8)
    pinned_src = cupyx.empty_pinned((nbytes,), dtype=numpy.uint8)
    pinned_dst = cupyx.empty_pinned((nbytes,), dtype=numpy.uint8)
    pinned_src.view(numpy.uint32)[:] = numpy.arange(nbytes // 4, dtype=numpy.uint32)
    pageable_src = numpy.array(pinned_src)          # a plain, pageable copy
    pageable_dst = numpy.zeros_like(pageable_src)   # touched, so its pages exist

    def copier(dst: int, src: int, kind: int) -> Callable[[], None]:
        return lambda: runtime.memcpyAsync(dst, src, nbytes, kind,
                                           cp.cuda.get_current_stream().ptr)

    h2d, d2h = runtime.memcpyHostToDevice, runtime.memcpyDeviceToHost
    results: dict[str, float] = {}
    with _watch(device) as watch:
        for memory, src, dst, repeats in (("pinned", pinned_src, pinned_dst, 5),
                                          ("pageable", pageable_src, pageable_dst, 3)):
            ms = launch.time_ms(copier(dev.data.ptr, src.ctypes.data, h2d), iters=1,
                                repeats=repeats)
            results[f"h2d_{memory}"] = gb_per_s(nbytes, _median_ms(ms))
            ms = launch.time_ms(copier(dst.ctypes.data, dev.data.ptr, d2h), iters=1,
                                repeats=repeats)
            results[f"d2h_{memory}"] = gb_per_s(nbytes, _median_ms(ms))
            if not numpy.array_equal(dst, pinned_src):
                raise _WrongResult(f"{memory} round trip: the data copied back differs")
    convention = "each byte counted once, one direction"
    labels = {"h2d": "host to device", "d2h": "device to host"}
    readings = [Reading(f"{key}_bandwidth", f"{labels[key[:3]]}, {key[4:]} host memory",
                        round(value, 2), "GB/s", convention,
                        detail=f"{nbytes // MiB} MiB per copy, cudaMemcpyAsync, median")
                for key, value in results.items()]
    readings.append(_pcie_link(device))
    return _Outcome(f"pinned: {results['h2d_pinned']:.1f} GB/s to the GPU, "
                    f"{results['d2h_pinned']:.1f} GB/s back; pageable: "
                    f"{results['h2d_pageable']:.1f} / {results['d2h_pageable']:.1f} GB/s",
                    readings, [], watch.telemetry)


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
    return Reading(key, label, rate, "GB/s", "per direction, after line encoding",
                   detail=f"PCIe Gen{generation} x{width} (the link's maximum, from NVML); "
                          "packet overhead leaves copies 10-20 % below this")
