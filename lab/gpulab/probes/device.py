"""The one door to the GPUs: which NVIDIA GPUs are here, and what state each is in.

Everything in gpulab that needs to know this asks here: the grading run's GPU
pool (`gpulab.grading.classrun.gpupool`) and its cluster workers, and the app's "is
there a GPU" question (`gpulab.tui.measure.gpu_present`). The answers come
through an NVML session (`gpulab.probes.nvml.nvml_session`), so a backend (a
`gpulab.probes.nvml.Replay` of the recorded H200, say) can stand in for
the driver and the same code is tested on a machine without a GPU.

- `gpus(backend)`: the indices NVML lists, none where NVML cannot start;
- `open_gpus(backend)`: one session kept open, asked `state(gpu)` as often as
  needed (the pool polls it after every job), or `identity(gpu)` (which GPU it
  is: the learner's saved results are used only on the GPUs that made them);
- `present(backend)`: whether this machine has an NVIDIA GPU, from NVML when a
  backend is given, else from the PCI bus in sysfs (no driver needed).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gpulab.probes.nvml import NvmlUnavailable, nvml_session
from gpulab.probes.system import is_nvidia_gpu

__all__ = ["GpuState", "Gpus", "gpus", "open_gpus", "present"]


@dataclass(frozen=True)
class GpuState:
    """What a GPU holds now: the ids of its compute processes and its memory in use."""

    pids: frozenset[int]
    used_bytes: int


class Gpus:
    """An open NVML session, asked about GPUs by index (from `open_gpus`)."""

    def __init__(self, session: Any) -> None:
        self._session = session

    def indices(self) -> list[str]:
        """The GPUs NVML lists, as the indices CUDA_VISIBLE_DEVICES and --gpus take."""
        return [str(i) for i in range(self._session.count)]

    def state(self, gpu: str) -> GpuState | None:
        """GPU `gpu`'s processes and memory in use; None when NVML cannot read it."""
        s = self._session
        try:
            handle = s.call("nvmlDeviceGetHandleByIndex", int(gpu))
            pids = frozenset(
                int(p.pid) for p in s.call("nvmlDeviceGetComputeRunningProcesses", handle)
            )
            return GpuState(pids, int(s.call("nvmlDeviceGetMemoryInfo", handle).used))
        except Exception:  # NVML's errors are many classes (and a stand-in's); any: cannot tell
            return None

    def identity(self, gpu: str) -> tuple[str, str]:
        """GPU `gpu`'s name and NVML UUID; "" for either one NVML cannot read."""
        found: list[str] = []
        for call in ("nvmlDeviceGetName", "nvmlDeviceGetUUID"):
            try:
                answer = self._session.call(
                    call, self._session.call("nvmlDeviceGetHandleByIndex", int(gpu))
                )
            except Exception:  # as in `state`: NVML's errors are many classes; cannot tell
                answer = ""
            text = answer.decode(errors="replace") if isinstance(answer, bytes) else answer
            found.append(str(text or "").strip())
        return found[0], found[1]


@contextmanager
def open_gpus(backend: Any = None) -> Iterator[Gpus]:
    """One NVML session through `backend` (default: pynvml) for as long as the block runs.

    Raises `NvmlUnavailable` (with its status and reason) when NVML cannot start
    or lists no GPU."""
    with nvml_session(backend) as session:
        yield Gpus(session)


def gpus(backend: Any = None) -> list[str]:
    """The indices of the GPUs NVML lists; none where NVML cannot start or lists none."""
    try:
        with open_gpus(backend) as here:
            return here.indices()
    except NvmlUnavailable:
        return []


def present(backend: Any = None, *, root: Path = Path("/")) -> bool | None:
    """Whether this machine has an NVIDIA GPU; None when it cannot tell.

    With an NVML backend, NVML's answer. Otherwise the PCI bus under `root`'s
    /sys by the system probe's rule (`gpulab.probes.system.is_nvidia_gpu`), which
    needs no driver and is cheap enough to ask from the app at start."""
    if backend is not None:
        try:
            with open_gpus(backend) as here:
                return bool(here.indices())
        except NvmlUnavailable:  # no library, no driver or no GPU: none here
            return False
    folder = root / "sys/bus/pci/devices"
    try:
        devices = list(folder.iterdir())
    except OSError:
        return None
    for device in devices:
        try:
            vendor = int((device / "vendor").read_text().strip(), 16)
            if is_nvidia_gpu(vendor, int((device / "class").read_text().strip(), 16)):
                return True
        except (OSError, ValueError):
            continue
    return False
