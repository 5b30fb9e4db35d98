"""Device-memory bandwidth microbenchmarks: HBM copies, access strides, occupancy.

`hbm_bandwidth` sets an SM copy kernel against cudaMemcpy on the same
buffers in the same run; `stride_sweep` reads at strides of 1-32 words to
show what coalescing is worth; `occupancy_bandwidth` copies with fewer and
fewer resident warps per SM. Host-device copies are in `_pcie`.

The pure helpers at the top (buffer sizes, sector overfetch, occupancy
arithmetic, GB/s) need no GPU; the probes import CuPy and NumPy
only when they run. How every microbenchmark checks, times and reports its
work is described in `gpulab.probes.micro`.
"""

from __future__ import annotations

import functools

from gpulab.probes.cuda import CudaDevice
from gpulab.probes.micro._common import (
    GiB,
    MiB,
    Outcome,
    WrongResult,
    check_equal,
    full_grid,
    measure,
    median_ms,
    pow2_ceil,
    pow2_floor,
    prop,
    ratio,
    watch_telemetry,
)
from gpulab.probes.model import ProbeResult, Reading, Table

__all__ = [
    "gb_per_s",
    "hbm_bandwidth",
    "occupancy_bandwidth",
    "occupancy_blocks",
    "occupancy_smem",
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
    size = pow2_floor(min(total_mem // share, cap))
    floor = pow2_ceil(8 * l2_bytes)
    if size < floor <= total_mem // 4:
        size = floor
    return size


def sector_overfetch(stride: int) -> int:
    """Bytes the memory moves per useful byte when reading every `stride`-th 4-byte word.

    Memory moves 32-byte sectors (8 words): a stride of 8 words or more
    brings a whole sector for each useful word.
    """
    return min(stride, 8)


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
# Bandwidth: HBM, strides, occupancy
# ---------------------------------------------------------------------------

_READ_WRITE = "bytes read + bytes written"


def hbm_bandwidth() -> ProbeResult:
    """An SM copy kernel against cudaMemcpy device-to-device: same buffers, same run."""
    return measure("hbm_bandwidth", "HBM bandwidth", _hbm_bandwidth)


def _copy_configs(device: CudaDevice, n: int) -> list[tuple[str, int, int]]:
    """(kernel, threads per block, blocks) for a copy of `n` float4 values.

    The grid-stride copy as one full wave (every SM filled to its thread
    limit), and the tiled copy (one float4 per thread, a block for every
    tile) at three block sizes. On the project's H200 the tiled copy matched
    cudaMemcpy and the one-wave loop reached about 0.93 of it; the table
    keeps every row and the best is reported.
    """
    sms = prop(device, "multiProcessorCount")
    per_sm = prop(device, "maxThreadsPerMultiProcessor")
    configs = [("copy_float4", 256, sms * max(1, per_sm // 256))]
    for threads in (128, 256, 512):
        if threads <= prop(device, "maxThreadsPerBlock"):
            configs.append(("copy_float4_tiles", threads, -(-n // threads)))
    return configs


def _hbm_bandwidth(device: CudaDevice) -> Outcome:
    from gpulab.kernels import launch

    cp = device.cupy
    runtime = cp.cuda.runtime
    nbytes = scaled_bytes(prop(device, "totalGlobalMem"), prop(device, "l2CacheSize"),
                          share=16, cap=4 * GiB)
    src = cp.arange(nbytes // 4, dtype=cp.uint32)
    dst = cp.empty_like(src)

    def memcpy() -> None:
        runtime.memcpyAsync(dst.data.ptr, src.data.ptr, nbytes, runtime.memcpyDeviceToDevice,
                            cp.cuda.get_current_stream().ptr)

    def timed_memcpy() -> list[float]:
        dst.fill(0)
        samples = launch.time_ms(memcpy, iters=5, repeats=5)
        check_equal(cp, dst, src, "cudaMemcpy device-to-device")
        return samples

    rows: list[tuple[str, int, int, float]] = []
    with watch_telemetry(device) as watch:
        memcpy_ms = timed_memcpy()
        for variant, threads, blocks in _copy_configs(device, nbytes // 16):
            dst.fill(0)
            run = functools.partial(launch.copy, variant, src, dst, blocks=blocks,
                                    threads=threads)
            ms = median_ms(launch.time_ms(run, iters=5, repeats=5))
            check_equal(cp, dst, src, f"{variant} ({blocks} blocks of {threads} threads)")
            rows.append((variant, threads, blocks, round(gb_per_s(2 * nbytes, ms), 1)))
        memcpy_ms += timed_memcpy()
    memcpy_gbs = gb_per_s(2 * nbytes, median_ms(memcpy_ms))
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
    return Outcome(f"SM copy {best:.0f} GB/s, cudaMemcpy {memcpy_gbs:.0f} GB/s "
                   f"({_READ_WRITE})", readings, [table], watch.telemetry)


STRIDES = (1, 2, 4, 8, 16, 32)


def stride_sweep() -> ProbeResult:
    """Useful read bandwidth at strides of 1-32 words: what coalescing is worth."""
    return measure("stride_sweep", "Access stride sweep", _stride_sweep)


def _stride_sweep(device: CudaDevice) -> Outcome:
    from gpulab.kernels import launch

    cp = device.cupy
    nbytes = scaled_bytes(prop(device, "totalGlobalMem"), prop(device, "l2CacheSize"),
                          share=16, cap=4 * GiB)
    src = cp.arange(nbytes // 4, dtype=cp.uint32)
    threads = 256
    blocks = full_grid(device, threads)
    partial = cp.empty(blocks * threads, dtype=cp.uint32)
    useful: dict[int, float] = {}
    with watch_telemetry(device) as watch:
        for stride in STRIDES:
            run = functools.partial(launch.read_strided, src, stride, partial, blocks=blocks,
                                    threads=threads)
            ms = median_ms(launch.time_ms(run, iters=3, repeats=5))
            used = src[: src.size // stride * stride : stride]
            want = int(cp.sum(used, dtype=cp.uint64)) % (1 << 32)
            got = int(cp.sum(partial, dtype=cp.uint64)) % (1 << 32)
            if got != want:
                raise WrongResult(f"stride {stride}: the kernel summed {got}, the reference "
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
    return Outcome(f"stride 1: {base:.0f} GB/s useful; stride 32: {useful[32]:.0f} GB/s "
                   f"({useful[32] / base:.1%})", readings, [table], watch.telemetry)


def occupancy_bandwidth() -> ProbeResult:
    """Copy bandwidth as the resident warps per SM fall from the maximum to a sixteenth."""
    return measure("occupancy_bandwidth", "Occupancy and bandwidth", _occupancy_bandwidth)


def _occupancy_bandwidth(device: CudaDevice) -> Outcome:
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
    nbytes = scaled_bytes(prop(device, "totalGlobalMem"), prop(device, "l2CacheSize"),
                          share=16, cap=2 * GiB)
    src = cp.arange(nbytes // 4, dtype=cp.uint32)
    dst = cp.empty_like(src)
    sms = prop(device, "multiProcessorCount")
    rows: list[tuple[int, int, int, int, str, float]] = []
    with watch_telemetry(device) as watch:
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
            ms = median_ms(launch.time_ms(run, iters=3, repeats=5))
            check_equal(cp, dst, src, f"copy_float4 at {k} blocks per SM")
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
    return Outcome(f"full occupancy {full or 0:.0f} GB/s, quarter {quarter or 0:.0f} GB/s "
                   f"({_READ_WRITE})", readings, [table], watch.telemetry)
