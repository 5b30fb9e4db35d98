"""The GPUs a grading run may give GPU jobs, each checked through NVML after every job.

Each GPU gets a lane of its own (`gpulab.grading.run`): one job at a time,
taken from a queue all lanes share, so the jobs spread over the GPUs as they
come free. After each job NVML must show the GPU as it was before the run (no
new process, memory back) within `recovery_s`; a GPU that does not recover is
taken out of rotation, its lane stops and the other GPUs go on with the queue.
"""

from __future__ import annotations

import importlib
import time
from collections.abc import Sequence

from gpulab.errors import GpulabError

__all__ = ["GpuPool", "GpuPoolError", "visible_gpus"]


class GpuPoolError(GpulabError):
    """A GPU given to the run that NVML cannot read: which, and what this machine has."""


class GpuPool:
    """The GPUs GPU jobs may use, each with the state NVML showed before the run."""

    def __init__(self, gpus: Sequence[str], recovery_s: float) -> None:
        self.gpus = list(dict.fromkeys(gpus))
        self.recovery_s = recovery_s
        self.baseline: dict[str, tuple[set[int], int]] = {}
        for gpu in self.gpus:
            state = _gpu_state(gpu)
            if state is None:
                have = visible_gpus()
                raise GpuPoolError(f"--gpus {','.join(self.gpus)}: NVML cannot read GPU {gpu}; "
                                   + (f"this machine's GPUs are {', '.join(have)}" if have
                                      else "this machine has no NVIDIA GPU NVML can read"))
            self.baseline[gpu] = state

    def after_job(self, gpu: str) -> str:
        """Wait until NVML shows `gpu` as before the run: "" when it does, else why it is
        taken out of rotation."""
        before_pids, before_used = self.baseline[gpu]
        deadline = time.monotonic() + self.recovery_s
        state = _gpu_state(gpu)
        while state is not None:
            pids, used = state
            if pids <= before_pids and used <= before_used + 64 * 2**20:
                return ""
            if time.monotonic() > deadline:
                break
            time.sleep(0.2)
            state = _gpu_state(gpu)
        if state is None:
            return "NVML cannot read this GPU any more: taken out of rotation"
        extra = sorted(state[0] - before_pids)
        return (f"did not recover within {self.recovery_s:g} s after a job "
                f"(processes {extra or 'none new'}, "
                f"{(state[1] - before_used) / 2**20:.0f} MiB more in use): "
                "taken out of rotation")


def _gpu_state(gpu: str) -> tuple[set[int], int] | None:
    """(compute process ids, memory used in bytes) of GPU `gpu` (an index), via NVML."""
    try:
        pynvml = importlib.import_module("pynvml")
        pynvml.nvmlInit()
        try:
            handle = pynvml.nvmlDeviceGetHandleByIndex(int(gpu))
            pids = {p.pid for p in pynvml.nvmlDeviceGetComputeRunningProcesses(handle)}
            used = int(pynvml.nvmlDeviceGetMemoryInfo(handle).used)
            return pids, used
        finally:
            pynvml.nvmlShutdown()
    except Exception:  # NVML's errors are many classes; any means "cannot tell"
        return None


def visible_gpus() -> list[str]:
    """The indices of the NVIDIA GPUs NVML sees here; none where gpulab finds no usable GPU."""
    from gpulab.grading.gpu import gpu_missing

    if gpu_missing():
        return []
    try:
        pynvml = importlib.import_module("pynvml")
        pynvml.nvmlInit()
        try:
            count = pynvml.nvmlDeviceGetCount()
        finally:
            pynvml.nvmlShutdown()
    except Exception:  # as above
        return []
    return [str(i) for i in range(count)]
