"""The probes gpulab knows, by name, imported only when one runs.

Claims in the lessons name these probes; `gpulab probe list` shows them, with
which of them can run here (`gpulab.probes.cuda.cannot_run_here`), and
`gpulab probe run NAME` runs them. A probe that fails unexpectedly becomes an
`error` result with the reason, never a traceback. `exit_status` is the exit
status of a run.

Each probe's name and title are written here once: the registry imports no
probe (only `gpulab.probes.model`), so a probe's own module reads its title
from it (`title_of`).
"""

from __future__ import annotations

import importlib
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Literal

from msgspec.structs import replace

from gpulab.errors import ExitCode, GpulabError
from gpulab.probes.model import ProbeResult

__all__ = [
    "PROBES",
    "ProbeInfo",
    "UnknownProbe",
    "exit_status",
    "get_probe",
    "run_probe",
    "title_of",
]


class UnknownProbe(GpulabError):
    """A probe name that does not exist."""


@dataclass(frozen=True)
class ProbeInfo:
    """A probe's name, what it needs, what it does, and where its code is."""

    name: str
    title: str
    needs: Literal["host", "nvml", "cuda"]
    summary: str
    target: str  # "module:function", the module relative to gpulab.probes

    def function(self) -> Callable[[], ProbeResult]:
        module, _, attr = self.target.partition(":")
        loaded = importlib.import_module(f"gpulab.probes.{module}")
        func: Callable[[], ProbeResult] = getattr(loaded, attr)
        return func


PROBES: tuple[ProbeInfo, ...] = (
    ProbeInfo(
        "system",
        "System",
        "host",
        "kernel and OS, container and namespaces, cgroup limits, NUMA, CPU affinity, "
        "GPUs in sysfs, NVIDIA container files",
        "system:system",
    ),
    ProbeInfo(
        "container_image",
        "Container image",
        "host",
        "the image named by GPULAB_IMAGE run with the GPUs passed in: the GPU visible "
        "inside; driver, image CUDA, nvcc and PyTorch's CUDA agree",
        "container_image:probe",
    ),
    ProbeInfo(
        "nvml_inventory",
        "GPU inventory (NVML)",
        "nvml",
        "name, UUID, driver and CUDA versions, memory, BAR1, PCIe, compute mode, "
        "persistence, MIG, ECC and remapped rows, power limit",
        "nvml:inventory",
    ),
    ProbeInfo(
        "nvml_sample",
        "GPU live sample (NVML)",
        "nvml",
        "utilisation, clocks, P-state, power, temperature, clock-event reasons, processes",
        "nvml:sample",
    ),
    ProbeInfo(
        "gpu_topology",
        "GPU topology",
        "nvml",
        "every GPU's PCI bus id, NUMA node and local CPUs; each pair's path "
        "(nvidia-smi topo -m labels) and P2P status; NVLink links",
        "topology:gpu_topology",
    ),
    ProbeInfo(
        "cuda_properties",
        "CUDA device properties",
        "cuda",
        "SM count, L2, shared memory, registers, thread limits, clocks",
        "cuda:properties",
    ),
    ProbeInfo(
        "hbm_bandwidth",
        "HBM bandwidth",
        "cuda",
        "an SM copy kernel against cudaMemcpy device-to-device, same run",
        "micro:hbm_bandwidth",
    ),
    ProbeInfo(
        "stride_sweep",
        "Access stride sweep",
        "cuda",
        "bandwidth of reads at growing strides: what coalescing is worth",
        "micro:stride_sweep",
    ),
    ProbeInfo(
        "pcie_bandwidth",
        "Host-device copies",
        "cuda",
        "pinned and pageable host memory, both directions",
        "micro:pcie_bandwidth",
    ),
    ProbeInfo(
        "pointer_chase_latency",
        "Memory latency (pointer chase)",
        "cuda",
        "dependent loads over footprints from 16 KB to 1 GB: L1, L2 and HBM plateaus",
        "micro:pointer_chase_latency",
    ),
    ProbeInfo(
        "smem_latency",
        "Shared-memory latency",
        "cuda",
        "dependent loads in shared memory",
        "micro:smem_latency",
    ),
    ProbeInfo(
        "smem_bank_conflicts",
        "Shared-memory bank conflicts",
        "cuda",
        "time per access at strides 1, 2, 4 ... 32 and padded",
        "micro:smem_bank_conflicts",
    ),
    ProbeInfo(
        "warp_divergence",
        "Warp divergence",
        "cuda",
        "the cost of branches that split a warp",
        "micro:warp_divergence",
    ),
    ProbeInfo(
        "occupancy_bandwidth",
        "Occupancy and bandwidth",
        "cuda",
        "copy bandwidth as resident warps per SM fall",
        "micro:occupancy_bandwidth",
    ),
    ProbeInfo(
        "p2p_bandwidth",
        "GPU-to-GPU copies",
        "cuda",
        "cudaMemcpyPeer, an SM copy reading the other GPU and a host-staged copy for "
        "every pair, with small-copy and load latency (needs two GPUs)",
        "micro:p2p_bandwidth",
    ),
    ProbeInfo(
        "util_one_thread",
        "GPU utilisation of a one-thread kernel",
        "cuda",
        "NVML's GPU utilisation and GPM's SM counters while one thread spins",
        "micro:util_one_thread",
    ),
    ProbeInfo(
        "fp32_peak",
        "FP32 FMA peak",
        "cuda",
        "a kernel of independent FMAs against the datasheet peak",
        "micro:fp32_peak",
    ),
    ProbeInfo(
        "matmul_throughput",
        "Matrix multiply throughput",
        "cuda",
        "cuBLAS through CuPy in fp16, bf16, TF32 and fp32",
        "micro:matmul_throughput",
    ),
    ProbeInfo(
        "sustained_matmul",
        "Sustained matmul: clock, power and temperature",
        "cuda",
        "BF16 matmuls back to back for 20 s, timed every half second, with the SM "
        "clock, power and temperature NVML reports meanwhile",
        "micro:sustained_matmul",
    ),
)

_BY_NAME = {probe.name: probe for probe in PROBES}


def get_probe(name: str) -> ProbeInfo:
    """A probe by name; `UnknownProbe` names the ones that exist."""
    try:
        return _BY_NAME[name]
    except KeyError:
        raise UnknownProbe(
            f"no probe named {name!r}\n    hint: gpulab probe list shows "
            f"them: {', '.join(_BY_NAME)}"
        ) from None


def title_of(name: str) -> str:
    """A probe's title, as every result of it carries it."""
    return get_probe(name).title


def run_probe(name: str) -> ProbeResult:
    """Run one probe and time it; an unexpected failure becomes an error result."""
    info = get_probe(name)
    start = time.perf_counter()
    try:
        result = info.function()()
    except Exception as exc:  # a probe's own bug must not become a traceback
        result = ProbeResult(
            info.name, info.title, "error", f"the probe failed: {type(exc).__name__}: {exc}"
        )
    return replace(result, seconds=time.perf_counter() - start)


def exit_status(statuses: Iterable[str], *, every: bool = False) -> int:
    """The exit status of `gpulab probe run`: 1 when a probe failed, or when a probe named on
    the command line could not run here (no GPU, no driver, no CuPy); 0 otherwise.

    With `every` (``--all``) a probe that cannot run here is expected, not a failure.
    """
    bad = {"error"} if every else {"error", "no_gpu", "unavailable"}
    return ExitCode.FAILED if any(status in bad for status in statuses) else ExitCode.OK
