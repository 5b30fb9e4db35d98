"""NVML: what the NVIDIA driver says about each GPU, recorded and replayable.

- `inventory()` and `sample()` are the NVML probes: what changes rarely (name,
  UUID, versions, memory, PCIe, modes, ECC, power limits) and what changes
  all the time (utilisation, clocks, power, temperature, clock-event reasons,
  processes) (`_probes`, `_sample`).
- `Sampler` polls one GPU on a background thread while a benchmark runs and
  gives its `Telemetry`, and with ``keep=True`` every `Sample` (`_telemetry`).
- `nvml_session(backend)` starts NVML and yields a `Session` that calls it and
  turns answers into readings; `NvmlUnavailable` says why NVML cannot be used
  here (`_session`). `pynvml_module()` is the one place gpulab imports
  pynvml, the recorder aside.
- `decode_clock_event_reasons`, `compute_mode_name`, `cuda_version_text` and
  `pstate_name` word NVML's numbers as nvidia-smi does (`_decode`).
- `Recorder` wraps pynvml and writes every answer down; `Replay` serves such a
  recording as a pynvml stand-in, so the same code runs on a machine without
  a GPU against a real GPU's answers (`_record`); the command that records a
  machine is `gpulab.probes.machine_record`, above this package and the
  topology probe.

Every NVML call goes through a *backend*: an object with pynvml's functions,
by default the real `pynvml` module, imported only when a session starts
(never when this package is imported). To record a machine:

    python -m gpulab.probes.nvml OUT.json
"""

from gpulab.probes.nvml._decode import (
    COMPUTE_MODES,
    compute_mode_name,
    cuda_version_text,
    decode_clock_event_reasons,
    pstate_name,
)
from gpulab.probes.nvml._probes import inventory
from gpulab.probes.nvml._record import (
    FORMAT,
    Handle,
    Recorder,
    Replay,
    ReplayMismatch,
    from_plain,
    to_plain,
)
from gpulab.probes.nvml._sample import process_name, sample
from gpulab.probes.nvml._session import (
    MissingFunction,
    NvmlUnavailable,
    Session,
    no_gpu_text,
    nvml_session,
    pynvml_module,
)
from gpulab.probes.nvml._telemetry import Sample, Sampler

__all__ = [
    "COMPUTE_MODES",
    "FORMAT",
    "Handle",
    "MissingFunction",
    "NvmlUnavailable",
    "Recorder",
    "Replay",
    "ReplayMismatch",
    "Sample",
    "Sampler",
    "Session",
    "compute_mode_name",
    "cuda_version_text",
    "decode_clock_event_reasons",
    "from_plain",
    "inventory",
    "no_gpu_text",
    "nvml_session",
    "process_name",
    "pstate_name",
    "pynvml_module",
    "sample",
    "to_plain",
]
