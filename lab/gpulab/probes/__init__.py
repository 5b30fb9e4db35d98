"""Probes: measure the machine. System state from /proc and /sys, the GPU through
NVML and CUDA, and microbenchmarks of its memory and arithmetic.

Every probe returns a `ProbeResult` (see `gpulab.probes.model`); `run_probe`
runs one by name. Modules that need NVML or CuPy import them only when a
probe that needs them runs.
"""

from gpulab.probes.model import ProbeResult, Reading, Recorded, Table, Telemetry
from gpulab.probes.registry import PROBES, ProbeInfo, UnknownProbe, get_probe, run_probe

__all__ = [
    "PROBES",
    "ProbeInfo",
    "ProbeResult",
    "Reading",
    "Recorded",
    "Table",
    "Telemetry",
    "UnknownProbe",
    "get_probe",
    "run_probe",
]
