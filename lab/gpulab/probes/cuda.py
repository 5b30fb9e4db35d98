"""CUDA device properties, and the way every CUDA probe reaches the GPU.

`properties()` reads what the CUDA runtime says about the current device: SM
count, thread, block, register and shared-memory limits, L2, memory and
clocks. Reading keys are the `cudaDeviceProp` field names
("multiProcessorCount", "l2CacheSize"), so a claim can name the field it
checks.

CUDA 13 removed `clockRate` and `memoryClockRate` from `cudaDeviceProp`; the
clocks are read with `cudaDeviceGetAttribute` (cudaDevAttrClockRate = 13,
cudaDevAttrMemoryClockRate = 36) and, where that fails, from NVML's maximum
clocks. Each clock reading says which way was used.

`open_device` is the one door to the GPU for this module and for the
microbenchmarks (`gpulab.probes.micro`). When there is no usable device it
says why, in the order of `gpulab.probes.readiness`: no NVIDIA driver or GPU
first (a `no_gpu` result in NVML's words, whatever CuPy's state), then a
missing or broken CuPy (`unavailable`, with the pip command for the driver's
CUDA version), then a CUDA runtime that finds no device (`no_gpu`).
`cannot_run(needs)` gives that reason for probes with any need ("nvml" asks only
the driver; "cuda" opens the device); `cannot_run_here` for every kind of need.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from gpulab.probes.model import ProbeResult, Reading, summarise
from gpulab.probes.nvml import pynvml_module
from gpulab.probes.readiness import NEEDS, Driver, cupy_missing_text, driver, install_advice
from gpulab.probes.registry import title_of

__all__ = [
    "CudaDevice",
    "cannot_run",
    "cannot_run_here",
    "nvml_device",
    "open_device",
    "properties",
]

_ATTR_CLOCK_RATE = 13  # cudaDevAttrClockRate, kHz
_ATTR_MEMORY_CLOCK_RATE = 36  # cudaDevAttrMemoryClockRate, kHz


@dataclass(frozen=True)
class CudaDevice:
    """The GPU a CUDA probe runs on: CuPy itself, the device index, name and properties."""

    cupy: Any
    index: int
    name: str
    props: Mapping[str, Any]


@dataclass(frozen=True)
class _NoDevice:
    """Why CuPy gave no device: "missing", "broken", "none" (no device) or "runtime"."""

    kind: str
    detail: str = ""


def open_device(probe: str, title: str, *, nvml_backend: Any = None) -> CudaDevice | ProbeResult:
    """The current CUDA device, or the result that says why there is none.

    NVML (through `nvml_backend`, the real pynvml by default) is asked only when
    there is no device, to tell a machine without a driver from one without CuPy.
    """
    found = _device()
    if isinstance(found, CudaDevice):
        return found
    return _why_not(probe, title, found, driver(nvml_backend))


def _device() -> CudaDevice | _NoDevice:
    if importlib.util.find_spec("cupy") is None:
        return _NoDevice("missing")
    try:
        cupy = importlib.import_module("cupy")
    except Exception as exc:  # a broken CuPy install fails in many ways
        return _NoDevice("broken", f"{type(exc).__name__}: {exc}")
    try:
        count = int(cupy.cuda.runtime.getDeviceCount())
        if count == 0:
            return _NoDevice("none")
        index = int(cupy.cuda.Device().id)
        props = cupy.cuda.runtime.getDeviceProperties(index)
    except Exception as exc:  # no driver, no device, a driver too old: all "no GPU"
        return _NoDevice("runtime", str(exc))
    name = props.get("name", b"")
    name = name.decode(errors="replace") if isinstance(name, bytes) else str(name)
    return CudaDevice(cupy, index, name, props)


def _why_not(probe: str, title: str, missing: _NoDevice, found: Driver) -> ProbeResult:
    """The first thing missing: the driver (as NVML says), then CuPy, then a device."""
    if found.status == "no_gpu":
        return ProbeResult(probe, title, "no_gpu", found.message)
    if missing.kind == "missing":
        return ProbeResult(probe, title, "unavailable", cupy_missing_text(found))
    if missing.kind == "broken":
        return ProbeResult(
            probe,
            title,
            "unavailable",
            f"CuPy is installed but does not load ({missing.detail}): "
            f"reinstall it: {install_advice(found)}",
        )
    if missing.kind == "none":
        listed = (
            f", although the NVIDIA driver lists {found.gpus} (is CUDA_VISIBLE_DEVICES "
            "set to none of them?)"
            if found.gpus
            else ""
        )
        return ProbeResult(
            probe, title, "no_gpu", f"no NVIDIA GPU found by the CUDA runtime{listed}"
        )
    return ProbeResult(
        probe,
        title,
        "no_gpu",
        f"no usable NVIDIA GPU or driver found: the CUDA runtime says {missing.detail}",
    )


@contextlib.contextmanager
def nvml_device(device: CudaDevice) -> Iterator[Any]:
    """The NVML handle of a CUDA device (matched by PCI bus id), or None without NVML."""
    try:
        pynvml = pynvml_module()

        pynvml.nvmlInit()
    except Exception:  # no NVML library or no driver: the caller falls back
        yield None
        return
    try:
        try:
            bus_id = device.cupy.cuda.runtime.deviceGetPCIBusId(device.index)
            handle = pynvml.nvmlDeviceGetHandleByPciBusId(bus_id.encode())
        except Exception:  # an NVML error means "no handle", not a failed probe
            handle = None
        yield handle
    finally:
        with contextlib.suppress(Exception):
            pynvml.nvmlShutdown()


# (cudaDeviceProp field, label, unit, detail); values are read as the runtime gives them.
_FIELDS: tuple[tuple[str, str, str, str], ...] = (
    ("multiProcessorCount", "streaming multiprocessors", "SMs", ""),
    ("warpSize", "warp size", "threads", ""),
    ("maxThreadsPerBlock", "threads per block, at most", "threads", ""),
    ("maxThreadsPerMultiProcessor", "resident threads per SM, at most", "threads", ""),
    ("maxBlocksPerMultiProcessor", "resident blocks per SM, at most", "blocks", ""),
    ("regsPerMultiprocessor", "registers per SM", "registers", "32-bit registers"),
    ("regsPerBlock", "registers per block, at most", "registers", "32-bit registers"),
    ("sharedMemPerMultiprocessor", "shared memory per SM", "bytes", ""),
    (
        "sharedMemPerBlock",
        "shared memory per block, static",
        "bytes",
        "what a block gets without opting in",
    ),
    (
        "sharedMemPerBlockOptin",
        "shared memory per block, opt-in",
        "bytes",
        "the most a block can get after cudaFuncSetAttribute",
    ),
    ("reservedSharedMemPerBlock", "shared memory the system reserves per block", "bytes", ""),
    ("l2CacheSize", "L2 cache", "bytes", ""),
    ("persistingL2CacheMaxSize", "L2 that can be set aside for persisting accesses", "bytes", ""),
    ("totalGlobalMem", "device memory", "bytes", "as the CUDA runtime reports it"),
    ("memoryBusWidth", "memory bus width", "bits", ""),
    (
        "asyncEngineCount",
        "copy engines",
        "engines",
        "copies that can overlap kernels, per direction",
    ),
)


def properties() -> ProbeResult:
    """What the CUDA runtime reports about the current device, field by field."""
    probe = "cuda_properties"
    title = title_of(probe)
    device = open_device(probe, title)
    if isinstance(device, ProbeResult):
        return device
    try:
        readings = _readings(device)
    except Exception as exc:  # a probe turns any failure into a result
        return ProbeResult(
            probe,
            title,
            "error",
            f"reading the device properties failed: {type(exc).__name__}: {exc}",
            device=device.name,
        )
    sms = device.props.get("multiProcessorCount", "?")
    l2 = device.props.get("l2CacheSize", 0)
    return ProbeResult(
        probe,
        title,
        summarise(readings),
        f"{device.name}: compute capability {_capability(device.props)}, "
        f"{sms} SMs, {l2 / 2**20:.0f} MiB L2",
        readings=tuple(readings),
        device=device.name,
    )


def _capability(props: Mapping[str, Any]) -> str:
    return f"{props.get('major', '?')}.{props.get('minor', '?')}"


def _readings(device: CudaDevice) -> list[Reading]:
    props = device.props
    readings = [
        Reading("name", "device name", device.name),
        Reading(
            "computeCapability",
            "compute capability",
            _capability(props),
            detail="cudaDeviceProp major.minor",
        ),
    ]
    for key, label, unit, detail in _FIELDS:
        if key in props:
            readings.append(Reading(key, label, int(props[key]), unit, detail=detail))
        else:
            readings.append(
                Reading.not_supported(
                    key, label, "this CUDA runtime's cudaDeviceProp has no such field"
                )
            )
    threads, warp = props.get("maxThreadsPerMultiProcessor"), props.get("warpSize")
    if threads and warp:
        readings.insert(
            6,
            Reading(
                "maxWarpsPerMultiProcessor",
                "resident warps per SM, at most",
                int(threads) // int(warp),
                "warps",
                detail="maxThreadsPerMultiProcessor / warpSize",
            ),
        )
    regs = props.get("regsPerMultiprocessor")
    if regs:
        readings.insert(
            10,
            Reading(
                "registerFilePerMultiprocessor",
                "register file per SM",
                int(regs) * 4,
                "bytes",
                detail="regsPerMultiprocessor x 4 bytes (32-bit registers)",
            ),
        )
    for key, label in (
        ("maxGridSize", "grid size, at most (x × y × z)"),
        ("maxThreadsDim", "block shape, at most (x × y × z)"),
    ):
        if key in props:
            readings.append(
                Reading(
                    key,
                    label,
                    " × ".join(str(v) for v in props[key]),
                    "blocks" if key == "maxGridSize" else "threads",
                )
            )
    readings.extend(_clocks(device))
    return readings


def _clocks(device: CudaDevice) -> list[Reading]:
    """SM and memory clocks: cudaDeviceGetAttribute first, NVML's maximum clocks after."""
    runtime = device.cupy.cuda.runtime
    wanted = (
        ("clockRate", "SM clock, maximum", _ATTR_CLOCK_RATE, "cudaDevAttrClockRate"),
        (
            "memoryClockRate",
            "memory clock, maximum",
            _ATTR_MEMORY_CLOCK_RATE,
            "cudaDevAttrMemoryClockRate",
        ),
    )
    readings: list[Reading] = []
    missing: list[tuple[str, str, str]] = []
    for key, label, attribute, attr_name in wanted:
        try:
            khz = int(runtime.deviceGetAttribute(attribute, device.index))
        except Exception as exc:  # removed or unsupported attribute: try NVML
            missing.append((key, label, f"{attr_name} failed ({exc})"))
            continue
        if khz <= 0:
            missing.append((key, label, f"{attr_name} reported {khz}"))
            continue
        readings.append(
            Reading(
                key,
                label,
                khz / 1000,
                "MHz",
                detail=f"cudaDeviceGetAttribute({attr_name}), reported in kHz, shown in MHz",
            )
        )
    if missing:
        readings.extend(_nvml_clocks(device, missing))
    return readings


def _nvml_clocks(device: CudaDevice, missing: list[tuple[str, str, str]]) -> list[Reading]:
    readings: list[Reading] = []
    with nvml_device(device) as handle:
        for key, label, why in missing:
            if handle is None:
                readings.append(Reading.not_supported(key, label, f"{why}; NVML not available"))
                continue
            try:
                pynvml = pynvml_module()

                clock = pynvml.NVML_CLOCK_SM if key == "clockRate" else pynvml.NVML_CLOCK_MEM
                mhz = int(pynvml.nvmlDeviceGetMaxClockInfo(handle, clock))
            except Exception as exc:  # NotSupported and friends are data
                readings.append(Reading.not_supported(key, label, f"{why}; NVML: {exc}"))
                continue
            readings.append(
                Reading(
                    key,
                    label,
                    float(mhz),
                    "MHz",
                    detail=f"{why}; read from NVML's maximum clock instead",
                )
            )
    return readings


def cannot_run(
    needs: str, nvml_backend: Any = None, *, probe: str = "", title: str = ""
) -> ProbeResult | None:
    """Why probes that need `needs` cannot run here (a `no_gpu` or `unavailable` result, in
    the words the probe itself would use), or None when they can; blocking.

    "cuda" opens the device as a CUDA probe would (CuPy is imported); "nvml" starts
    NVML; "host" always runs.
    """
    probe, title = probe or needs, title or NEEDS.get(needs, needs)
    if needs == "nvml":
        found = driver(nvml_backend)
        if found.status == "ok":
            return None
        return ProbeResult(
            probe, title, "no_gpu" if found.status == "no_gpu" else "unavailable", found.message
        )
    if needs == "cuda":
        device = open_device(probe, title, nvml_backend=nvml_backend)
        return device if isinstance(device, ProbeResult) else None
    return None


def cannot_run_here(nvml_backend: Any = None) -> dict[str, ProbeResult]:
    """For each kind of need ("nvml", "cuda") that this machine cannot meet, the result that
    says why (in the order of `gpulab.probes.readiness`); blocking: NVML starts and CuPy is
    imported."""
    found: dict[str, ProbeResult] = {}
    for needs in ("nvml", "cuda"):
        why = cannot_run(needs, nvml_backend)
        if why is not None:
            found[needs] = why
    return found
