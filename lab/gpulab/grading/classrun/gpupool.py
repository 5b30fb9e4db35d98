"""The GPUs a grading run may give GPU jobs, each checked through NVML after every job.

Each GPU gets a lane of its own (`gpulab.grading.classrun.run`): one job at a time,
taken from a queue all lanes share, so the jobs spread over the GPUs as they
come free. After each job NVML must show the GPU as it was before the run (no
new process, memory back) within `recovery_s`; a GPU that does not recover is
taken out of rotation, its lane stops and the other GPUs go on with the queue.

NVML is asked through the probes' door to the GPUs (`gpulab.probes.device`),
one session for the pool's life; a backend (a replay of a recorded GPU) can
stand in for the driver, which is how the recovery rules are tested without
a GPU.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from contextlib import ExitStack
from typing import Any

from gpulab.errors import GpulabError
from gpulab.probes.device import Gpus, GpuState, open_gpus
from gpulab.probes.device import gpus as nvml_gpus
from gpulab.probes.nvml import NvmlUnavailable

__all__ = ["GpuPool", "GpuPoolError", "visible_gpus"]

# Memory a GPU may hold beyond its state before the run and still count as recovered
# (the driver's own bookkeeping moves a little).
SLACK_BYTES = 64 * 2**20
POLL_S = 0.2


class GpuPoolError(GpulabError):
    """A GPU given to the run that NVML cannot read: which, and what this machine has."""


class GpuPool:
    """The GPUs GPU jobs may use, each with the state NVML showed before the run.

    Holds one NVML session (through `backend`, the real pynvml by default) until
    `close`."""

    def __init__(
        self, gpus: Sequence[str], recovery_s: float, *, backend: Any = None, poll_s: float = POLL_S
    ) -> None:
        self.gpus = list(dict.fromkeys(gpus))
        self.recovery_s = recovery_s
        self.poll_s = poll_s
        self.baseline: dict[str, GpuState] = {}
        self._stack = ExitStack()
        try:
            self._nvml: Gpus = self._stack.enter_context(open_gpus(backend))
        except NvmlUnavailable as exc:
            raise GpuPoolError(
                f"--gpus {','.join(self.gpus)}: NVML cannot read GPU "
                f"{self.gpus[0]}; this machine has no NVIDIA GPU NVML can read "
                f"({exc.reason})"
            ) from None
        for gpu in self.gpus:
            state = self._nvml.state(gpu)
            if state is None:
                have = self._nvml.indices()
                self.close()
                raise GpuPoolError(
                    f"--gpus {','.join(self.gpus)}: NVML cannot read GPU {gpu}; "
                    + (
                        f"this machine's GPUs are {', '.join(have)}"
                        if have
                        else "this machine has no NVIDIA GPU NVML can read"
                    )
                )
            self.baseline[gpu] = state

    def close(self) -> None:
        """End the pool's NVML session."""
        self._stack.close()

    def __enter__(self) -> GpuPool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def after_job(self, gpu: str) -> str:
        """Wait until NVML shows `gpu` as before the run: "" when it does, else why it is
        taken out of rotation."""
        before = self.baseline[gpu]
        deadline = time.monotonic() + self.recovery_s
        state = self._nvml.state(gpu)
        while state is not None:
            if state.pids <= before.pids and state.used_bytes <= before.used_bytes + SLACK_BYTES:
                return ""
            if time.monotonic() > deadline:
                break
            time.sleep(self.poll_s)
            state = self._nvml.state(gpu)
        if state is None:
            return "NVML cannot read this GPU any more: taken out of rotation"
        extra = sorted(state.pids - before.pids)
        return (
            f"did not recover within {self.recovery_s:g} s after a job "
            f"(processes {extra or 'none new'}, "
            f"{(state.used_bytes - before.used_bytes) / 2**20:.0f} MiB more in use): "
            "taken out of rotation"
        )


def visible_gpus(backend: Any = None) -> list[str]:
    """The indices of the NVIDIA GPUs NVML sees here; none where gpulab finds no usable GPU
    (no driver, no CuPy, no device: `gpulab.grading.checks.gpu.gpu_missing`)."""
    from gpulab.grading.checks.gpu import gpu_missing

    if backend is None and gpu_missing():
        return []
    return nvml_gpus(backend)
