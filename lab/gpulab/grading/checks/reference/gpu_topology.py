"""The gpu-topology checks' own reading of this machine: NVML's labels, timed peer copies.

`own_topology` reads every GPU pair's label the way nvidia-smi topo -m prints
it (NV# from the NVLinks, else NVML's PCIe common ancestor) from a pynvml
module: the real one by default, or `gpulab.grading.checks.machines.pynvml_from` for
a recorded session. `own_copy` times cudaMemcpyPeer with CuPy, on CUDA events,
after a warm-up. Only the checks call these; the learner writes their own.
"""

from __future__ import annotations

import importlib
import statistics
from typing import Any

__all__ = ["COPY_BYTES", "bus_id", "cuda_index_by_bus", "enable_peers", "own_copy", "own_topology"]

COPY_BYTES = 256 * 2**20  # 256 MiB: long enough that the per-copy cost vanishes
TRIALS, REPEATS = 3, 4  # median of 3 timings of 4 copies each


def bus_id(value: Any) -> str:
    """A PCI address as sysfs writes it: four-digit domain, lower case (0000:3b:00.0)."""
    text = value.decode() if isinstance(value, bytes) else str(value)
    domain, bus, rest = text.strip().lower().split(":")
    return f"{int(domain, 16):04x}:{bus}:{rest}"


def _far_ends(pm: Any, handle: Any) -> list[str | None]:
    """One entry per active NVLink: the PCI address at its far end (None if NVML cannot say)."""
    ends: list[str | None] = []
    for link in range(pm.NVML_NVLINK_MAX_LINKS):
        try:
            if pm.nvmlDeviceGetNvLinkState(handle, link) != pm.NVML_FEATURE_ENABLED:
                continue
        except (pm.NVMLError_NotSupported, pm.NVMLError_InvalidArgument):
            continue  # no NVLink on this GPU, or no link with this number
        try:
            ends.append(bus_id(pm.nvmlDeviceGetNvLinkRemotePciInfo(handle, link).busId))
        except pm.NVMLError_NotSupported:
            ends.append(None)
    return ends


def _nvlinks(ends: list[list[str | None]], buses: list[str], a: int, b: int) -> int:
    """NVLinks joining GPUs a and b: direct ones (the larger side's count, in case one side
    cannot name its far ends), else the switch fabric both reach."""
    direct = max(ends[a].count(buses[b]), ends[b].count(buses[a]))
    if direct:
        return direct
    gpus = set(buses)
    return min(
        sum(1 for end in ends[a] if end not in gpus), sum(1 for end in ends[b] if end not in gpus)
    )


def _pcie_label(pm: Any, a: Any, b: Any) -> str:
    levels = {
        pm.NVML_TOPOLOGY_INTERNAL: "PIX",
        pm.NVML_TOPOLOGY_SINGLE: "PIX",
        pm.NVML_TOPOLOGY_MULTIPLE: "PXB",
        pm.NVML_TOPOLOGY_HOSTBRIDGE: "PHB",
        pm.NVML_TOPOLOGY_NODE: "NODE",
        pm.NVML_TOPOLOGY_SYSTEM: "SYS",
    }
    try:
        return levels.get(pm.nvmlDeviceGetTopologyCommonAncestor(a, b), "SYS")
    except pm.NVMLError_NotSupported:
        return "SYS"


def own_topology(pm: Any = None) -> dict[str, Any]:
    """Every GPU ("GPU<i>" for NVML's index i), each pair's label, and each GPU's PCI
    address ("buses", as `bus_id` writes it), read through `pm` (default: pynvml)."""
    if pm is None:
        from gpulab.probes.nvml import pynvml_module

        pm = pynvml_module()
    pm.nvmlInit()
    try:
        count = pm.nvmlDeviceGetCount()
        handles = [pm.nvmlDeviceGetHandleByIndex(i) for i in range(count)]
        buses = [bus_id(pm.nvmlDeviceGetPciInfo(h).busId) for h in handles]
        ends = [_far_ends(pm, h) for h in handles]
        names = [f"GPU{i}" for i in range(count)]
        links: dict[str, dict[str, str]] = {name: {} for name in names}
        for a in range(count):
            for b in range(count):
                if a != b:
                    nvlinks = _nvlinks(ends, buses, a, b)
                    links[names[a]][names[b]] = (
                        f"NV{nvlinks}" if nvlinks else _pcie_label(pm, handles[a], handles[b])
                    )
        return {"gpus": names, "links": links, "buses": buses}
    finally:
        pm.nvmlShutdown()


def _cupy() -> Any:
    return importlib.import_module("cupy")


def enable_peers(cp: Any, a: int, b: int) -> None:
    """Peer access between CUDA devices a and b, from each side that allows it."""
    rt = cp.cuda.runtime
    for dev, peer in ((a, b), (b, a)):
        if dev != peer and rt.deviceCanAccessPeer(dev, peer):
            with cp.cuda.Device(dev):
                try:
                    rt.deviceEnablePeerAccess(peer)
                except rt.CUDARuntimeError as exc:
                    if exc.status != rt.errorPeerAccessAlreadyEnabled:
                        raise


def own_copy(src: int, dst: int, nbytes: int = COPY_BYTES) -> float:
    """GB/s of cudaMemcpyPeer from CUDA device src to dst, each byte counted once."""
    cp = _cupy()
    rt = cp.cuda.runtime
    enable_peers(cp, src, dst)
    with cp.cuda.Device(dst):
        target = cp.empty(nbytes, dtype=cp.uint8)
    with cp.cuda.Device(src):
        source = cp.empty(nbytes, dtype=cp.uint8)
        source.fill(0x5A)
        stream = cp.cuda.Stream(non_blocking=True)
        start, end = cp.cuda.Event(), cp.cuda.Event()

        def copy() -> None:
            rt.memcpyPeerAsync(target.data.ptr, dst, source.data.ptr, src, nbytes, stream.ptr)

        copy()
        stream.synchronize()  # warm-up
        seconds = []
        for _ in range(TRIALS):
            start.record(stream)
            for _ in range(REPEATS):
                copy()
            end.record(stream)
            end.synchronize()
            seconds.append(cp.cuda.get_elapsed_time(start, end) / 1000 / REPEATS)
    return float(nbytes / statistics.median(seconds) / 1e9)


def cuda_index_by_bus() -> dict[str, int]:
    """CUDA's device numbers by PCI address (CUDA may number GPUs unlike NVML)."""
    rt = _cupy().cuda.runtime
    return {bus_id(rt.deviceGetPCIBusId(i)): i for i in range(int(rt.getDeviceCount()))}
