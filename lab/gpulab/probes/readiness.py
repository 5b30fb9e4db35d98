"""What this machine can run, and the one true reason when it cannot.

A probe needs the host (always there), NVML (the NVIDIA driver's library and a
GPU it lists) or CUDA (all of that, and CuPy, loaded, with a device). When
something is missing, the reason given is the first missing thing in that
order, so a machine without an NVIDIA driver is never told to install CuPy:

1. no NVML library, no driver loaded, no GPU listed: "no NVIDIA GPU found:
   <why>", in the NVML probes' own words (`gpulab.probes.nvml.no_gpu_text`);
2. a driver but no CuPy: "CuPy is not installed: …", with the pip command for
   the CUDA version the driver supports, which NVML tells (`cupy_missing_text`);
3. CuPy, but no usable device: the CUDA runtime's words
   (`gpulab.probes.cuda.open_device`).

`driver()` asks NVML through a backend (the real pynvml by default, or a
`gpulab.probes.nvml.Replay`). `gpulab.probes.cuda.cannot_run(needs)` puts these
together into the result that says why probes with those needs cannot run here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from gpulab.probes.nvml import NvmlUnavailable, cuda_version_text, no_gpu_text, nvml_session

__all__ = [
    "NEEDS",
    "Driver",
    "cupy_missing_text",
    "driver",
    "install_advice",
]

NEEDS = {"host": "Linux", "nvml": "NVIDIA driver", "cuda": "GPU + CuPy"}
"""What each kind of probe needs, as people say it."""

_EXTRAS = (12, 13)  # gpulab's extras: cuda12, cuda13 (pyproject.toml)


@dataclass(frozen=True)
class Driver:
    """What NVML says about the NVIDIA driver here."""

    status: Literal["ok", "no_gpu", "unavailable"]
    reason: str = ""  # why NVML cannot be used ("" when it can)
    cuda_version: str = ""  # the newest CUDA the driver supports, "13.0" ("" if unknown)
    gpus: int = 0  # GPUs the driver lists

    @property
    def message(self) -> str:
        """Why there is no GPU to use, in the NVML probes' words ("" when there is)."""
        return no_gpu_text(self.reason) if self.status == "no_gpu" else self.reason


def driver(backend: Any = None) -> Driver:
    """Ask NVML whether a driver and a GPU are here; blocking (NVML starts)."""
    try:
        with nvml_session(backend) as session:
            raw = session.value("nvmlSystemGetCudaDriverVersion")
            version = cuda_version_text(raw) if isinstance(raw, int) and raw > 0 else ""
            return Driver("ok", cuda_version=version, gpus=session.count)
    except NvmlUnavailable as exc:
        return Driver("no_gpu" if exc.status == "no_gpu" else "unavailable", exc.reason)
    except Exception as exc:  # a backend's own failure: NVML cannot tell us anything
        return Driver("unavailable", f"NVML could not be asked: {type(exc).__name__}: {exc}")


def cupy_missing_text(found: Driver) -> str:
    """CuPy is missing but a driver is here (or NVML cannot tell): say how to install it."""
    return f"CuPy is not installed: {install_advice(found)}"


def install_advice(found: Driver) -> str:
    """How to install the CuPy that matches the driver's CUDA version, as NVML reports it."""
    version = found.cuda_version
    major = int(version.split(".")[0]) if version[:1].isdigit() else 0
    if major in _EXTRAS:
        return (
            f"pip install 'gpulab[cuda{major}]', the CuPy built for the CUDA {version} "
            "that the NVIDIA driver here supports"
        )
    if major > max(_EXTRAS):
        newest = max(_EXTRAS)
        return (
            f"pip install 'gpulab[cuda{newest}]': the NVIDIA driver here supports CUDA "
            f"{version}, which runs CUDA {newest} programs too"
        )
    if major:
        oldest = min(_EXTRAS)
        return (
            f"update the NVIDIA driver (it supports only CUDA {version}, and gpulab's CuPy "
            f"needs CUDA {oldest} or newer), then pip install 'gpulab[cuda{oldest}]'"
        )
    return (
        "pip install 'gpulab[cuda12]' or 'gpulab[cuda13]', whichever matches the CUDA "
        "version nvidia-smi reports"
    )
