"""GPU-to-GPU copies: how fast, and how far away, another GPU's memory is.

For every ordered pair of GPUs (from GPU s to GPU d) `p2p_bandwidth` moves
the same buffer three ways, in the same run, and checks every copy:

- `cudaMemcpyPeerAsync`: the copy engines move the bytes, over NVLink where
  the pair has it, else over PCIe (the driver stages through host memory
  itself when the two GPUs cannot reach each other directly);
- an SM copy kernel on GPU d that reads GPU s's memory through peer access
  (copy.cu's copy_float4): every load crosses the link, every store is local;
- host-staged: GPU s to pinned host memory, then host memory to GPU d, one
  after the other: what a copy costs without peer-to-peer.

Bandwidths count each byte once, in one direction: bytes copied / time. The
latencies are a small copy's cost (4-byte `cudaMemcpyPeerAsync` calls back
to back: mostly the fixed cost of a copy, not the wire) and one thread's
dependent loads (the pointer chase of chase.cu) on GPU d through a table in
GPU s's memory, next to the same chase through GPU d's own memory. Each chase
walks one lap of 8 MiB of 128-byte lines after both GPUs' L2 caches were
flushed, so every load misses and goes to memory: local HBM, or the other
GPU's HBM across the link.

`measure_pair(cupy, s, d, nbytes)` measures one ordered pair and also runs
with s == d (a GPU with itself: the peer copy is a device-to-device copy and
the "peer" chase the local one), so the code path runs on a one-GPU machine;
the probe itself needs two GPUs. Peer access is enabled both ways for every
pair that allows it. Nothing here uses NVLink multicast.

The pure helpers (buffer size, each pair's figures, the fastest pair,
readings, the table) are in `_p2p_figures` and need no GPU; CuPy is imported
only when the probe runs.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable
from typing import Any

from gpulab.probes.cuda import CudaDevice, open_device
from gpulab.probes.micro._common import (
    MiB,
    Outcome,
    WrongResult,
    check_equal,
    measure,
    median_ms,
    watch_telemetry,
)
from gpulab.probes.micro._latency import sm_clock_mhz
from gpulab.probes.micro._p2p_figures import (
    _SMALL_COPIES,
    PairFigures,
    fastest_pair,
    p2p_bytes,
    p2p_readings,
    p2p_table,
)
from gpulab.probes.model import ProbeResult
from gpulab.probes.registry import title_of

__all__ = ["CHASE_BYTES", "measure_pair", "p2p_bandwidth"]

PROBE = "p2p_bandwidth"
CHASE_BYTES = 8 * MiB  # one lap of 65,536 lines, every load a miss after the flush
_PEER_ALREADY_ENABLED = 704  # cudaErrorPeerAccessAlreadyEnabled


# ---------------------------------------------------------------------------
# Measuring on the GPUs
# ---------------------------------------------------------------------------


def p2p_bandwidth() -> ProbeResult:
    """Copies and loads between every ordered pair of GPUs; needs two GPUs."""
    device = open_device(PROBE, title_of(PROBE))
    if isinstance(device, ProbeResult):
        return device
    count = int(device.cupy.cuda.runtime.getDeviceCount())
    if count < 2:
        return ProbeResult(
            PROBE,
            title_of(PROBE),
            "unavailable",
            f"needs two GPUs: CUDA sees {count}",
            device=device.name,
        )
    return measure(PROBE, _p2p_bandwidth)


def _p2p_bandwidth(device: CudaDevice) -> Outcome:
    cp = device.cupy
    count = int(cp.cuda.runtime.getDeviceCount())
    free = []
    for index in range(count):
        with cp.cuda.Device(index):
            free.append(int(cp.cuda.runtime.memGetInfo()[0]))
    nbytes = p2p_bytes(min(free))
    figures: dict[tuple[int, int], PairFigures] = {}
    try:
        for src in range(count):  # peer access both ways before anything is timed
            for dst in range(count):
                if src != dst:
                    _enable_peer_access(cp, src, dst)
        host = cp.cuda.alloc_pinned_memory(nbytes)
        for src in range(count):
            for dst in range(count):
                if src != dst:
                    figures[src, dst] = measure_pair(cp, src, dst, nbytes, host=host)
    finally:
        _release_all(cp, count)
    best = figures[fastest_pair(figures)]
    staged = best.staged_gbs
    peer_ns, local_ns = best.ns(best.peer_read_cycles), best.ns(best.local_read_cycles)
    latency = (
        f"; a load from GPU {best.src}'s memory takes {peer_ns:.0f} ns, from its own "
        f"{local_ns:.0f} ns"
        if peer_ns and local_ns
        else ""
    )
    return Outcome(
        f"fastest pair {best.name}: cudaMemcpyPeer {best.memcpy_gbs:.0f} GB/s, "
        f"host-staged {staged:.1f} GB/s ({best.memcpy_gbs / staged:.1f}x){latency} "
        f"(one direction, bytes counted once)",
        p2p_readings(figures),
        [p2p_table(figures)],
        best.telemetry,
    )


def _enable_peer_access(cupy: Any, src: int, dst: int) -> bool:
    """Let GPU `dst` read GPU `src`'s memory where the pair allows it; True if it can."""
    runtime = cupy.cuda.runtime
    if src == dst:
        return True
    if not runtime.deviceCanAccessPeer(dst, src):
        return False
    with cupy.cuda.Device(dst):
        try:
            runtime.deviceEnablePeerAccess(src)
        except runtime.CUDARuntimeError as exc:
            if exc.status != getattr(
                runtime, "errorPeerAccessAlreadyEnabled", _PEER_ALREADY_ENABLED
            ):
                raise
    return True


def _release_all(cupy: Any, count: int) -> None:
    """Give every GPU's cached memory back, so the next probe has room."""
    for index in range(count):
        with contextlib.suppress(Exception), cupy.cuda.Device(index):
            cupy.cuda.get_current_stream().synchronize()
            cupy.get_default_memory_pool().free_all_blocks()
    with contextlib.suppress(Exception):
        cupy.get_default_pinned_memory_pool().free_all_blocks()


def _cuda_device(cupy: Any, index: int) -> CudaDevice:
    props = cupy.cuda.runtime.getDeviceProperties(index)
    name = props.get("name", b"")
    name = name.decode(errors="replace") if isinstance(name, bytes) else str(name)
    return CudaDevice(cupy, index, name, props)


def measure_pair(cupy: Any, src: int, dst: int, nbytes: int, *, host: Any = None) -> PairFigures:
    """Every figure from GPU `src` to GPU `dst`, each copy checked; src == dst is allowed.

    `nbytes` must be a multiple of 16; `host` is a pinned buffer of at least
    `nbytes` (one is allocated when not given). Raises `WrongResult` when a
    copy or a chase gives the wrong data.
    """
    from gpulab.kernels import launch

    cp, runtime = cupy, cupy.cuda.runtime
    target = _cuda_device(cp, dst)
    access = _enable_peer_access(cp, src, dst)
    host = cp.cuda.alloc_pinned_memory(nbytes) if host is None else host
    with cp.cuda.Device(src):
        source = cp.arange(nbytes // 4, dtype=cp.uint32)
        tiny_src = cp.full(1, 0x5EED, dtype=cp.uint32)
    with cp.cuda.Device(dst):
        want = cp.arange(nbytes // 4, dtype=cp.uint32)
        out = cp.empty_like(want)
        tiny_out = cp.zeros(1, dtype=cp.uint32)

    def stream() -> int:
        return int(cp.cuda.get_current_stream().ptr)

    def timed(run: Callable[[], object], what: str, repeats: int = 5, iters: int = 3) -> float:
        """Median ms per call on the current device; `out` must then equal `want`."""
        out.fill(0)
        ms = median_ms(launch.time_ms(run, iters=iters, repeats=repeats))
        with cp.cuda.Device(dst):
            check_equal(cp, out, want, f"{what}, GPU {src} → GPU {dst}")
        return ms

    with watch_telemetry(target) as watch:
        with cp.cuda.Device(dst):
            memcpy_ms = timed(
                lambda: runtime.memcpyPeerAsync(
                    out.data.ptr, dst, source.data.ptr, src, nbytes, stream()
                ),
                "cudaMemcpyPeerAsync",
            )
            kernel_ms = None
            if access:
                threads = 256
                blocks = int(target.props["multiProcessorCount"]) * (
                    int(target.props["maxThreadsPerMultiProcessor"]) // threads
                )
                kernel_ms = timed(
                    functools.partial(
                        launch.copy_pointers,
                        source.data.ptr,
                        out.data.ptr,
                        nbytes,
                        blocks=blocks,
                        threads=threads,
                    ),
                    "SM copy kernel",
                )
            small_ms = median_ms(
                launch.time_ms(
                    lambda: runtime.memcpyPeerAsync(
                        tiny_out.data.ptr, dst, tiny_src.data.ptr, src, 4, stream()
                    ),
                    iters=_SMALL_COPIES,
                    repeats=5,
                )
            )
            if int(tiny_out.get()[0]) != 0x5EED:
                raise WrongResult(
                    f"4-byte cudaMemcpyPeerAsync, GPU {src} → GPU {dst}: the word did not arrive"
                )
        with cp.cuda.Device(src):
            d2h_ms = median_ms(
                launch.time_ms(
                    lambda: runtime.memcpyAsync(
                        host.ptr, source.data.ptr, nbytes, runtime.memcpyDeviceToHost, stream()
                    ),
                    iters=1,
                    repeats=3,
                )
            )
        with cp.cuda.Device(dst):
            h2d_ms = timed(
                lambda: runtime.memcpyAsync(
                    out.data.ptr, host.ptr, nbytes, runtime.memcpyHostToDevice, stream()
                ),
                "host-staged copy",
                repeats=3,
                iters=1,
            )
        peer = _chase(cp, src, dst, seed=src * 1000 + dst) if access else None
        local = _chase(cp, dst, dst, seed=dst * 1000 + dst + 1)
    clock, how = sm_clock_mhz(target, watch.telemetry)
    gbs = functools.partial(_gb_per_s, nbytes)
    return PairFigures(
        src,
        dst,
        nbytes,
        access,
        gbs(memcpy_ms),
        None if kernel_ms is None else gbs(kernel_ms),
        gbs(d2h_ms + h2d_ms),
        small_ms * 1000,
        peer,
        local,
        clock,
        how,
        watch.telemetry,
    )


def _gb_per_s(nbytes: int, ms: float) -> float:
    return nbytes / (ms * 1e-3) / 1e9


def _chase(cupy: Any, home: int, runner: int, *, seed: int) -> float:
    """Cycles per dependent load on GPU `runner` through a table in GPU `home`'s memory.

    One lap of CHASE_BYTES of 128-byte lines, less one step (so the line it
    must end on differs from the start), after both GPUs' L2 was flushed by
    writing twice its size of other data.
    """
    from gpulab.kernels import launch

    cp = cupy
    lines = CHASE_BYTES // launch.LINE_BYTES
    steps = lines - 1
    with cp.cuda.Device(home):
        table = cp.zeros(CHASE_BYTES // 4, dtype=cp.uint32)
        order = launch.cycle_table(table, lines, seed=seed)
        start, expected = int(order[0]), int(order[steps % lines])
    for device in sorted({home, runner}):
        with cp.cuda.Device(device):
            l2 = int(cp.cuda.runtime.getDeviceProperties(device)["l2CacheSize"])
            scratch = cp.empty(max(2 * l2, 1 << 20) // 4, dtype=cp.uint32)
            scratch.fill(seed & 0xFFFF)
            cp.cuda.get_current_stream().synchronize()
            del scratch
    with cp.cuda.Device(runner):
        reached, cycles = launch.chase(table.data.ptr, start, warm_steps=0, steps=steps)
    if reached != expected:
        raise WrongResult(
            f"chase on GPU {runner} through GPU {home}'s memory ended at line "
            f"{reached}, the cycle says {expected}"
        )
    return cycles / steps
