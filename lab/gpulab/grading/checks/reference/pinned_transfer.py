"""The pinned-transfer checks' own answers: sizes, the curve's model, the link, and copies.

The pure part needs no GPU and is what the CPU checks compare with:
`size_ladder` (powers of two between two sizes, within what the machine can
afford), `fit_latency_bandwidth` (t = a + n/B by least squares on relative
errors), `half_peak_size` (n½), `link_gbs` (a PCIe link's rate per direction,
the `pcie_bandwidth` probe's table), and `gpu_numa_node` (a GPU's node from
sysfs under a root folder, from its local CPUs where the firmware gave none).

The measuring part times host-device copies the way the `pcie_bandwidth`
probe does: cudaMemcpyAsync on one stream between CUDA events
(`gpulab.kernels.launch.time_ms`), after a warm-up, the median of several
repeats, each byte counted once. `own_transfer_gbs` copies from (or into) a
fresh pinned buffer (cudaHostAlloc, as the learner is asked to) or a touched
pageable one, optionally with this thread pinned to some CPUs. For comparing
NUMA nodes, where placement must be beyond doubt, `own_pinned_on_node` pins
this thread to a node's CPUs, touches a fresh anonymous mapping there,
registers it with CUDA (cudaHostRegister) and reports where its pages landed
(`page_nodes`, the move_pages system call). Only the checks call these; the
learner writes their own. CuPy and NumPy are imported when a copy is timed,
never on import.
"""

from __future__ import annotations

import contextlib
import ctypes
import importlib
import math
import mmap
import os
import platform
import statistics
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from gpulab.kernels import launch
from gpulab.probes.micro import KiB, MiB, gb_per_s, pcie_link_gb_per_s

__all__ = [
    "DIRECTIONS",
    "bus_id",
    "check_bytes",
    "copies_between_events",
    "cuda_bus",
    "fit_latency_bandwidth",
    "gpu_numa_node",
    "half_peak_size",
    "link_gbs",
    "node_cpus",
    "own_curve",
    "own_link_gbs",
    "own_pinned_on_node",
    "own_transfer_gbs",
    "page_nodes",
    "size_ladder",
]

DIRECTIONS = ("h2d", "d2h")
NODE_DIR = "sys/devices/system/node"
PCI_DIR = "sys/bus/pci/devices"
REPEATS = {True: 5, False: 3}  # timed repeats: pinned, pageable (slower, steadier in time)
_MOVE_PAGES = {"x86_64": 279, "aarch64": 239}  # the move_pages system call's number


# ---------------------------------------------------------------------------
# Pure answers: no GPU needed.
# ---------------------------------------------------------------------------


def size_ladder(lo: int, hi: int, limit: int) -> list[int]:
    """Every power of two n with lo <= n <= hi and n <= limit, ascending ([] if none)."""
    top = min(hi, limit)
    sizes, n = [], 1
    while n <= top:
        if n >= lo:
            sizes.append(n)
        n *= 2
    return sizes


def fit_latency_bandwidth(sizes: Sequence[float], seconds: Sequence[float]) -> tuple[float, float]:
    """(a in microseconds, B in GB/s) of t = a + n/B, least squares on relative errors.

    Each equation a + n_i s = t_i is divided by t_i, so that a 4 KiB copy of 5 µs
    weighs as much as a 1 GiB copy of 20 ms; the 2x2 normal equations are solved
    with n in units of the largest size, for a well-scaled system.
    """
    scale = max(sizes)
    rows = [(1 / t, n / scale / t) for n, t in zip(sizes, seconds, strict=True)]
    s11 = sum(p * p for p, _ in rows)
    s12 = sum(p * q for p, q in rows)
    s22 = sum(q * q for _, q in rows)
    r1, r2 = sum(p for p, _ in rows), sum(q for _, q in rows)
    det = s11 * s22 - s12 * s12
    a = (r1 * s22 - r2 * s12) / det
    slope = (s11 * r2 - s12 * r1) / det / scale  # seconds per byte
    return a * 1e6, (1 / slope / 1e9 if slope > 0 else math.inf)


def half_peak_size(sizes: Sequence[int], gbs: Sequence[float]) -> int:
    """n½: the smallest size whose bandwidth reaches half the largest on the curve."""
    half = max(gbs) / 2
    return min(n for n, rate in zip(sizes, gbs, strict=True) if rate >= half)


def link_gbs(generation: int, width: int) -> float | None:
    """A PCIe link's data rate per direction in GB/s, after line encoding: Gen1-5 only
    (the lesson's table), None for any other generation or a width that is no width."""
    if generation not in (1, 2, 3, 4, 5):
        return None
    return pcie_link_gb_per_s(generation, width)


def bus_id(value: Any) -> str:
    """A PCI address as sysfs writes it: four-digit domain, lower case (0000:3b:00.0)."""
    text = value.decode() if isinstance(value, bytes) else str(value)
    domain, bus, rest = text.strip().lower().split(":")
    return f"{int(domain, 16):04x}:{bus}:{rest}"


def _cpus(text: str) -> set[int]:
    cpus: set[int] = set()
    for item in text.strip().split(","):
        if item.strip():
            first, _, last = item.strip().partition("-")
            cpus.update(range(int(first), int(last or first) + 1))
    return cpus


def node_cpus(root: str = "/") -> dict[int, list[int]]:
    """Each NUMA node's CPUs under `root`, by node number ({} without NUMA in sysfs)."""
    folder = Path(root, NODE_DIR)
    if not folder.is_dir():
        return {}
    numbers = sorted(
        int(entry.name[4:])
        for entry in folder.iterdir()
        if entry.name.startswith("node") and entry.name[4:].isdigit()
    )
    return {n: sorted(_cpus((folder / f"node{n}" / "cpulist").read_text())) for n in numbers}


def gpu_numa_node(bus: str, root: str = "/") -> int | None:
    """The NUMA node of the PCI device `bus` (any spelling) under `root`: its numa_node,
    or where that is -1 the one node whose CPUs its local_cpulist touches; None if that
    is no single node. ValueError where sysfs has no such device."""
    device = Path(root, PCI_DIR, bus_id(bus))
    if not device.is_dir():
        raise ValueError(f"no PCI device {bus_id(bus)} under {root}")
    node = int((device / "numa_node").read_text())
    if node >= 0:
        return node
    local = _cpus((device / "local_cpulist").read_text())
    near = [n for n, cpus in node_cpus(root).items() if local & set(cpus)]
    return near[0] if len(near) == 1 else None


# ---------------------------------------------------------------------------
# This machine
# ---------------------------------------------------------------------------


def _cupy() -> Any:
    return importlib.import_module("cupy")


def _available_host_bytes() -> int:
    """MemAvailable of /proc/meminfo: what can be had without swapping."""
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemAvailable:"):
            return int(line.split()[1]) * KiB
    return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")


def check_bytes(share: int = 8, most: int = 256 * MiB) -> int:
    """The largest copy the checks make: a power of two, at most `most`, and at most
    1/`share` of the free GPU memory, of the host's available memory and of what a graded
    learner's worker may hold (the sandbox's memory limit); 0 if under 16 MiB."""
    from gpulab.grading.sandbox.policy import from_env

    policy = from_env()
    limits = [int(_cupy().cuda.Device().mem_info[0]), _available_host_bytes()]
    if policy is not None:
        limits.append(policy.memory_bytes)
    ladder = size_ladder(16 * MiB, most, min(limits) // share)
    return ladder[-1] if ladder else 0


def cuda_bus(device: int = 0) -> str:
    """CUDA device `device`'s PCI address, as CUDA spells it ("0000:1B:00.0")."""
    return str(_cupy().cuda.runtime.deviceGetPCIBusId(device))


def own_link_gbs(device: int = 0) -> tuple[int, int, float] | None:
    """CUDA device `device`'s PCIe link as NVML reports it (the `pcie_bandwidth` probe's
    reading: the link's maximum generation and width) and its rate per direction; None
    where NVML cannot say (an SXM board may not answer) or the generation is not Gen1-5."""
    from gpulab.probes.nvml import pynvml_module

    try:
        pm = pynvml_module()
        pm.nvmlInit()
    except Exception:  # no NVML library or driver
        return None
    try:
        handle = pm.nvmlDeviceGetHandleByPciBusId(cuda_bus(device).encode())
        generation = int(pm.nvmlDeviceGetMaxPcieLinkGeneration(handle))
        width = int(pm.nvmlDeviceGetMaxPcieLinkWidth(handle))
    except Exception:  # NotSupported, or no handle for this address
        return None
    finally:
        with contextlib.suppress(Exception):
            pm.nvmlShutdown()
    rate = link_gbs(generation, width)
    return None if rate is None else (generation, width, rate)


def page_nodes(address: int, nbytes: int, samples: int = 16) -> list[int | None]:
    """The NUMA node of `samples` pages spread over [address, address + nbytes), as the
    kernel's move_pages reports them (None for a page it cannot place: not yet touched,
    or memory a driver mapped)."""
    number = _MOVE_PAGES.get(platform.machine())
    if number is None:
        return [None] * samples
    page = mmap.PAGESIZE
    step = max(page, nbytes // samples)
    where = [(address + i * step) // page * page for i in range(samples)]
    pages = (ctypes.c_void_p * samples)(*where)
    status = (ctypes.c_int * samples)()
    libc = ctypes.CDLL(None, use_errno=True)
    done = libc.syscall(ctypes.c_long(number), 0, ctypes.c_ulong(samples), pages, None, status, 0)
    if done != 0:
        return [None] * samples
    return [node if node >= 0 else None for node in status]


# ---------------------------------------------------------------------------
# Timed copies
# ---------------------------------------------------------------------------


def copies_between_events(nbytes: int) -> int:
    """Copies timed between one pair of events: many small ones, so that recording the
    events does not count as the copy's own cost; one from 16 MiB up."""
    return max(1, min(64, 16 * MiB // max(nbytes, 1)))


def _timed_gbs(host: Any, device: Any, nbytes: int, direction: str, repeats: int) -> float:
    """GB/s of cudaMemcpyAsync between `host` and `device` (uint8 arrays), each byte once."""
    cp = _cupy()
    rt = cp.cuda.runtime
    if direction == "h2d":
        dst, src, kind = device.data.ptr, host.ctypes.data, rt.memcpyHostToDevice
    elif direction == "d2h":
        dst, src, kind = host.ctypes.data, device.data.ptr, rt.memcpyDeviceToHost
    else:
        raise ValueError(f"direction {direction!r}: 'h2d' or 'd2h'")
    with cp.cuda.Stream(non_blocking=True) as stream:
        ms = launch.time_ms(
            lambda: rt.memcpyAsync(dst, src, nbytes, kind, stream.ptr),
            iters=copies_between_events(nbytes),
            repeats=repeats,
        )
    return gb_per_s(nbytes, statistics.median(ms))


def own_transfer_gbs(
    nbytes: int, direction: str, pinned: bool, cpus: Sequence[int] | None = None
) -> float:
    """GB/s of one host-device copy of `nbytes`: `direction` "h2d" or "d2h", the host
    buffer freshly allocated pinned (cudaHostAlloc) or pageable (NumPy), every page
    touched before the timing; all of it with this thread pinned to `cpus` if given."""
    cp = _cupy()
    numpy = importlib.import_module("numpy")
    device = cp.empty(nbytes, dtype=cp.uint8)
    device.fill(0xA5)
    with _on_cpus(cpus) if cpus else contextlib.nullcontext():
        if pinned:
            memory = cp.cuda.PinnedMemoryPointer(cp.cuda.PinnedMemory(nbytes), 0)
            host = numpy.ndarray((nbytes,), numpy.uint8, buffer=memory)
        else:
            host = numpy.empty(nbytes, numpy.uint8)
        host.fill(0x5A)
        return _timed_gbs(host, device, nbytes, direction, REPEATS[pinned])


def own_curve(sizes: Sequence[int], direction: str = "h2d", pinned: bool = True) -> list[float]:
    """`own_transfer_gbs` at each size."""
    return [own_transfer_gbs(n, direction, pinned) for n in sizes]


@contextlib.contextmanager
def _on_cpus(cpus: Sequence[int]) -> Iterator[None]:
    """This thread pinned to `cpus` for the block; its CPU set restored after."""
    saved = os.sched_getaffinity(0)
    os.sched_setaffinity(0, cpus)
    try:
        yield
    finally:
        os.sched_setaffinity(0, saved)


def own_pinned_on_node(
    cpus: Sequence[int], nbytes: int, direction: str
) -> tuple[float, int | None]:
    """GB/s of a pinned copy whose host buffer was touched first by this thread pinned to
    `cpus` (one node's CPUs), and the node most of its pages landed on (None if the
    kernel cannot say)."""
    cp = _cupy()
    numpy = importlib.import_module("numpy")
    rt = cp.cuda.runtime
    device = cp.empty(nbytes, dtype=cp.uint8)
    device.fill(0xA5)
    with _on_cpus(cpus):
        # fresh private anonymous pages, none touched yet
        area = mmap.mmap(-1, nbytes, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
        if hasattr(mmap, "MADV_HUGEPAGE"):  # large pages where the kernel has them, as
            area.madvise(mmap.MADV_HUGEPAGE)  # NumPy asks for its large arrays
        host = numpy.frombuffer(area, numpy.uint8)
        try:
            host.fill(0x5A)  # first touch: the pages land on this thread's node
            found = [n for n in page_nodes(host.ctypes.data, nbytes) if n is not None]
            rt.hostRegister(host.ctypes.data, nbytes, 0)
            try:
                gbs = _timed_gbs(host, device, nbytes, direction, REPEATS[True])
            finally:
                rt.hostUnregister(host.ctypes.data)
        finally:
            del host
            with contextlib.suppress(BufferError):  # a traceback may still hold the array
                area.close()
    node = max(set(found), key=found.count) if found else None
    return gbs, node
