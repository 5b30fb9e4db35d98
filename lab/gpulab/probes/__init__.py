"""Probes: measure the machine. System state from /proc and /sys, the GPU through
NVML and CUDA, and microbenchmarks of its memory and arithmetic.

Every probe returns a `ProbeResult` (see `gpulab.probes.model`); `run_probe`
runs one by name (`gpulab.probes.registry`). Modules that need NVML or CuPy
import them only when a probe that needs them runs.

The probes live in sub-packages, each with its public names in `__all__` and
its modules private (`_name.py`): `system` (/proc and /sys), `nvml` (the
driver's view, telemetry, recording and replay), `topology` (how the GPUs
reach each other and the CPUs) and `micro` (the microbenchmarks). Beside
them: `cuda` (CUDA device properties and the door to the device), `device`
(which GPUs are here and their state), `readiness` (what can run here and
why not), `doctor`, `container_image`, `render`, `recorded` (the H200's
readings shipped in `recorded/`) and `saved` (the learner's own results, kept
for the machine that measured them).
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
