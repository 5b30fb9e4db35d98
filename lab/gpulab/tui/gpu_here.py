"""Whether this machine has an NVIDIA GPU, found out once, in a thread, when first asked.

`GpuHereApp` is the base of `gpulab.tui.learner.LearnerApp`, on
`gpulab.tui.results.ResultsApp`. It keeps `gpu_here` (None until known), which
the learner layer reads to tell where the learner stands on a GPU exercise. A
screen that first lists a GPU exercise posts `FindGpu`; the app then asks NVML,
through its backend (a `Replay` in tests), in a thread worker, and reports back
by message (`GpuFound`). NVML is imported only then, never before first paint.
"""

from __future__ import annotations

from textual.message import Message
from textual.reactive import var

from gpulab.tui.messages import FindGpu
from gpulab.tui.results import ResultsApp

__all__ = ["GpuHereApp"]


class GpuHereApp(ResultsApp):
    """Whether this machine has an NVIDIA GPU (see the module's docstring)."""

    gpu_here: var[bool | None] = var(None, init=False)
    """Whether this machine has an NVIDIA GPU: None until known (see `FindGpu`)."""

    class GpuFound(Message):
        """Whether this machine has an NVIDIA GPU is known (None: it could not be told)."""

        def __init__(self, present: bool | None) -> None:
            super().__init__()
            self.present = present

    def __init__(self) -> None:
        super().__init__()
        self._finding_gpu = False

    # -- the GPU -------------------------------------------------------------------------------
    def on_find_gpu(self, event: FindGpu) -> None:
        self.find_gpu()

    def find_gpu(self) -> None:
        """Find out, once and in a thread, whether this machine has an NVIDIA GPU."""
        if self.gpu_here is not None or self._finding_gpu:
            return
        self._finding_gpu = True
        self.run_worker(
            self._find_gpu,
            thread=True,
            group="find-gpu",
            exit_on_error=False,
            description="look for an NVIDIA GPU",
        )

    def _find_gpu(self) -> None:
        from gpulab.tui.measure import gpu_present

        try:
            present = gpu_present(self.nvml_backend)
        except Exception:  # not knowing is an answer: the lists show no GPU verdict
            present = None
        self.post_message(self.GpuFound(present))

    def on_gpu_here_app_gpu_found(self, event: GpuFound) -> None:
        self.gpu_here = event.present
