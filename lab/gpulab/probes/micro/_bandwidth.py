"""Device-memory bandwidth microbenchmarks: HBM copies and access strides.

`hbm_bandwidth` sets an SM copy kernel against cudaMemcpy on the same
buffers in the same run; `stride_sweep` reads at strides of 1-32 words to
show what coalescing is worth. Copies with fewer and fewer resident warps per
SM (`occupancy_bandwidth`) are in `_occupancy`, host-device copies in
`_pcie`; both count GB/s with `gb_per_s` from here.

The pure helpers at the top (buffer sizes, sector overfetch, GB/s) need no
GPU; the probes import CuPy and NumPy only when they run. How every
microbenchmark checks, times and reports its work is described in
`gpulab.probes.micro`.
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

__all__ = ["gb_per_s", "hbm_bandwidth", "scaled_bytes", "sector_overfetch", "stride_sweep"]


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


# ---------------------------------------------------------------------------
# Bandwidth: HBM, strides
# ---------------------------------------------------------------------------

_READ_WRITE = "bytes read + bytes written"


def hbm_bandwidth() -> ProbeResult:
    """An SM copy kernel against cudaMemcpy device-to-device: same buffers, same run."""
    return measure("hbm_bandwidth", _hbm_bandwidth)


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
    nbytes = scaled_bytes(
        prop(device, "totalGlobalMem"), prop(device, "l2CacheSize"), share=16, cap=4 * GiB
    )
    src = cp.arange(nbytes // 4, dtype=cp.uint32)
    dst = cp.empty_like(src)

    def memcpy() -> None:
        runtime.memcpyAsync(
            dst.data.ptr,
            src.data.ptr,
            nbytes,
            runtime.memcpyDeviceToDevice,
            cp.cuda.get_current_stream().ptr,
        )

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
            run = functools.partial(launch.copy, variant, src, dst, blocks=blocks, threads=threads)
            ms = median_ms(launch.time_ms(run, iters=5, repeats=5))
            check_equal(cp, dst, src, f"{variant} ({blocks} blocks of {threads} threads)")
            rows.append((variant, threads, blocks, round(gb_per_s(2 * nbytes, ms), 1)))
        memcpy_ms += timed_memcpy()
    memcpy_gbs = gb_per_s(2 * nbytes, median_ms(memcpy_ms))
    variant, threads, blocks, best = max(rows, key=lambda row: row[3])
    wave = next(row for row in rows if row[0] == "copy_float4")
    size = f"{nbytes / GiB:g} GiB" if nbytes >= GiB else f"{nbytes // MiB} MiB"
    readings = [
        Reading(
            "copy_kernel_bandwidth",
            "SM copy kernel",
            round(best, 1),
            "GB/s",
            _READ_WRITE,
            detail=f"best of {len(rows)} launch shapes: {variant}, {blocks} blocks of "
            f"{threads} threads; {size} buffers, median of 5 x 5 copies",
        ),
        Reading(
            "gridstride_copy_bandwidth",
            "grid-stride copy, one full wave",
            wave[3],
            "GB/s",
            _READ_WRITE,
            detail=f"copy_float4, {wave[2]} blocks of {wave[1]} threads "
            "(every SM full), looping over the buffer",
        ),
        Reading(
            "memcpy_bandwidth",
            "cudaMemcpy device-to-device",
            round(memcpy_gbs, 1),
            "GB/s",
            _READ_WRITE,
            detail=f"cudaMemcpyAsync on the same {size} buffers, timed before "
            "and after the kernels; median of 10 x 5 copies",
        ),
        Reading(
            "ratio",
            "copy kernel / cudaMemcpy",
            ratio(best, memcpy_gbs),
            "x",
            "copy_kernel_bandwidth / memcpy_bandwidth, same run",
        ),
    ]
    table = Table(
        "Copy kernel launch shapes",
        ("kernel", "threads per block", "blocks", "bandwidth"),
        tuple(rows),
        ("", "threads", "blocks", "GB/s"),
    )
    return Outcome(
        f"SM copy {best:.0f} GB/s, cudaMemcpy {memcpy_gbs:.0f} GB/s ({_READ_WRITE})",
        readings,
        [table],
        watch.telemetry,
    )


STRIDES = (1, 2, 4, 8, 16, 32)


def stride_sweep() -> ProbeResult:
    """Useful read bandwidth at strides of 1-32 words: what coalescing is worth."""
    return measure("stride_sweep", _stride_sweep)


def _stride_sweep(device: CudaDevice) -> Outcome:
    from gpulab.kernels import launch

    cp = device.cupy
    nbytes = scaled_bytes(
        prop(device, "totalGlobalMem"), prop(device, "l2CacheSize"), share=16, cap=4 * GiB
    )
    src = cp.arange(nbytes // 4, dtype=cp.uint32)
    threads = 256
    blocks = full_grid(device, threads)
    partial = cp.empty(blocks * threads, dtype=cp.uint32)
    useful: dict[int, float] = {}
    with watch_telemetry(device) as watch:
        for stride in STRIDES:
            run = functools.partial(
                launch.read_strided, src, stride, partial, blocks=blocks, threads=threads
            )
            ms = median_ms(launch.time_ms(run, iters=3, repeats=5))
            used = src[: src.size // stride * stride : stride]
            want = int(cp.sum(used, dtype=cp.uint64)) % (1 << 32)
            got = int(cp.sum(partial, dtype=cp.uint64)) % (1 << 32)
            if got != want:
                raise WrongResult(
                    f"stride {stride}: the kernel summed {got}, the reference {want} (mod 2^32)"
                )
            useful[stride] = gb_per_s(src.size // stride * 4, ms)
    base = useful[1]
    rows = tuple(
        (s, round(useful[s], 1), ratio(useful[s], base), sector_overfetch(s)) for s in STRIDES
    )
    convention = "useful bytes read per second: 4 bytes per word the kernel uses"
    readings = [
        Reading(
            f"stride_{s}_bandwidth",
            f"useful bandwidth at stride {s}",
            round(useful[s], 1),
            "GB/s",
            convention,
        )
        for s in (1, 2, 8, 32)
    ]
    readings += [
        Reading(
            f"stride_{s}_fraction",
            f"stride {s} / stride 1",
            ratio(useful[s], base),
            "of contiguous",
            "useful bandwidth divided by that at stride 1",
        )
        for s in (2, 8, 32)
    ]
    table = Table(
        f"Strided reads of a {nbytes // MiB} MiB buffer",
        ("stride", "useful bandwidth", "fraction of stride 1", "bytes moved per useful byte"),
        rows,
        ("4-byte words", "GB/s", "", "32-byte sectors"),
    )
    return Outcome(
        f"stride 1: {base:.0f} GB/s useful; stride 32: {useful[32]:.0f} GB/s "
        f"({useful[32] / base:.1%})",
        readings,
        [table],
        watch.telemetry,
    )
