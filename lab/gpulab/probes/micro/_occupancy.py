"""Occupancy and bandwidth: copy bandwidth as the resident warps per SM fall.

`occupancy_bandwidth` copies with fewer and fewer resident warps per SM, from
the maximum to a sixteenth, each block asking for enough dynamic shared
memory that only so many fit on an SM; its buffers are sized and its GB/s
counted as in `_bandwidth`.

The pure helpers at the top (occupancy arithmetic) need no GPU; the probe
imports CuPy and NumPy only when it runs. How every microbenchmark checks,
times and reports its work is described in `gpulab.probes.micro`.
"""

from __future__ import annotations

import functools

from gpulab.probes.cuda import CudaDevice
from gpulab.probes.micro._bandwidth import _READ_WRITE, gb_per_s, scaled_bytes
from gpulab.probes.micro._common import (
    GiB,
    Outcome,
    check_equal,
    measure,
    median_ms,
    prop,
    ratio,
    watch_telemetry,
)
from gpulab.probes.model import ProbeResult, Reading, Table

__all__ = ["occupancy_bandwidth", "occupancy_blocks", "occupancy_smem"]


# ---------------------------------------------------------------------------
# Pure helpers: no GPU needed, tested exactly.
# ---------------------------------------------------------------------------


def occupancy_smem(
    blocks_per_sm: int, smem_per_sm: int, reserved_per_block: int, optin_per_block: int
) -> int:
    """Dynamic shared memory per block that lets at most `blocks_per_sm` blocks share an SM.

    Each block also takes `reserved_per_block` bytes the system keeps; the
    result never exceeds what a block may opt in to.
    """
    return max(0, min(smem_per_sm // blocks_per_sm - reserved_per_block, optin_per_block))


def occupancy_blocks(threads: int, dynamic_smem: int, props: dict[str, int]) -> int:
    """Resident blocks per SM from the thread, block and shared-memory limits (registers aside)."""
    limit = min(
        props["maxBlocksPerMultiProcessor"], props["maxThreadsPerMultiProcessor"] // threads
    )
    if dynamic_smem:
        per_block = dynamic_smem + props.get("reservedSharedMemPerBlock", 0)
        limit = min(limit, props["sharedMemPerMultiprocessor"] // per_block)
    return limit


# ---------------------------------------------------------------------------
# Bandwidth: occupancy
# ---------------------------------------------------------------------------


def occupancy_bandwidth() -> ProbeResult:
    """Copy bandwidth as the resident warps per SM fall from the maximum to a sixteenth."""
    return measure("occupancy_bandwidth", _occupancy_bandwidth)


def _occupancy_bandwidth(device: CudaDevice) -> Outcome:
    from gpulab.kernels import function, launch

    cp = device.cupy
    props = {
        key: int(device.props[key])
        for key in (
            "maxBlocksPerMultiProcessor",
            "maxThreadsPerMultiProcessor",
            "sharedMemPerMultiprocessor",
            "sharedMemPerBlockOptin",
            "warpSize",
        )
    }
    props["reservedSharedMemPerBlock"] = int(device.props.get("reservedSharedMemPerBlock", 0))
    threads = 128
    max_warps = props["maxThreadsPerMultiProcessor"] // props["warpSize"]
    top = min(props["maxThreadsPerMultiProcessor"] // threads, props["maxBlocksPerMultiProcessor"])
    levels = [top >> i for i in range(5) if top >> i >= 1]
    kernel = function("copy", "copy_float4")
    driver = cp.cuda.driver
    smem = {
        k: occupancy_smem(
            k,
            props["sharedMemPerMultiprocessor"],
            props["reservedSharedMemPerBlock"],
            props["sharedMemPerBlockOptin"],
        )
        for k in levels
    }
    pointer = kernel.kernel.ptr  # the CUfunction behind the RawKernel
    kernel.max_dynamic_shared_size_bytes = max(smem.values())  # above 48 KB needs opting in
    kernel.preferred_shared_memory_carveout = 100  # all of L1 as shared memory
    nbytes = scaled_bytes(
        prop(device, "totalGlobalMem"), prop(device, "l2CacheSize"), share=16, cap=2 * GiB
    )
    src = cp.arange(nbytes // 4, dtype=cp.uint32)
    dst = cp.empty_like(src)
    sms = prop(device, "multiProcessorCount")
    rows: list[tuple[int, int, int, int, str, float]] = []
    with watch_telemetry(device) as watch:
        for k in levels:
            try:
                resident = int(
                    driver.occupancyMaxActiveBlocksPerMultiprocessor(pointer, threads, smem[k])
                )
                how = "CUDA occupancy API"
            except Exception:  # no occupancy API here: compute it
                resident, how = occupancy_blocks(threads, smem[k], props), "computed"
            dst.fill(0)
            run = functools.partial(
                launch.copy,
                "copy_float4",
                src,
                dst,
                blocks=sms * k,
                threads=threads,
                shared_mem=smem[k],
            )
            ms = median_ms(launch.time_ms(run, iters=3, repeats=5))
            check_equal(cp, dst, src, f"copy_float4 at {k} blocks per SM")
            warps = min(k, resident) * threads // props["warpSize"]
            rows.append((warps, k, smem[k], resident, how, round(gb_per_s(2 * nbytes, ms), 1)))
    by_warps = {row[0]: row[5] for row in rows}
    full, quarter = by_warps.get(max_warps), by_warps.get(max_warps // 4)
    readings = []
    for key, label, value, warps in (
        ("bandwidth_full_occupancy", "copy at full occupancy", full, max_warps),
        ("bandwidth_quarter_occupancy", "copy at quarter occupancy", quarter, max_warps // 4),
    ):
        if value is None:
            readings.append(
                Reading.failed(key, label, f"no launch reached {warps} resident warps per SM")
            )
        else:
            readings.append(
                Reading(
                    key,
                    label,
                    value,
                    "GB/s",
                    _READ_WRITE,
                    detail=f"{warps} resident warps per SM, one float4 per thread in flight",
                )
            )
    if full and quarter:
        readings.append(
            Reading(
                "quarter_to_full_ratio",
                "quarter / full occupancy",
                ratio(quarter, full),
                "x",
                "bandwidth at quarter occupancy / "
                "bandwidth at full occupancy, same kernel and buffers",
            )
        )
    table = Table(
        "Copy bandwidth by resident warps per SM (copy_float4, 128 threads per block)",
        (
            "warps per SM",
            "blocks per SM",
            "dynamic shared memory per block",
            "blocks that fit",
            "checked by",
            "bandwidth",
        ),
        tuple(rows),
        ("warps", "blocks", "bytes", "blocks", "", "GB/s"),
    )
    return Outcome(
        f"full occupancy {full or 0:.0f} GB/s, quarter {quarter or 0:.0f} GB/s ({_READ_WRITE})",
        readings,
        [table],
        watch.telemetry,
    )
