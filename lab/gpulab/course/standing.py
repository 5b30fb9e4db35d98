"""Where the learner stands on an exercise, in the words every list of exercises uses.

The app's map and exercise screen and `gpulab list` say the same thing of the
same record: ``passed (11/11)``, ``failing (3/11)``, ``not started``. A GPU
exercise on a machine known to have no GPU is ``needs an NVIDIA GPU`` until its
checks have run there; once they have, it shows what its checks that need no
GPU found, and that the rest need a GPU: ``failing (0/7)`` with the note
``GPU checks need a GPU`` (a pass needs every check, so it is never a pass here).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from gpulab.course.manifest import ExerciseEntry
    from gpulab.course.progress import ExerciseRecord

__all__ = ["GPU_CHECKS", "NO_GPU", "Standing", "standing"]

NO_GPU = "needs an NVIDIA GPU"
"""A GPU exercise on a machine without a GPU, whose checks have not run there."""
GPU_CHECKS = "GPU checks need a GPU"
"""The note beside a GPU exercise's result on a machine without a GPU."""


@dataclass(frozen=True)
class Standing:
    """Where the learner stands on one exercise: the `kind`, the `words` that say it, and a
    `note` that goes beside them (empty for none)."""

    kind: Literal["passed", "failing", "no-gpu", "not-started"]
    words: str
    note: str = ""

    def __str__(self) -> str:
        return f"{self.words} · {self.note}" if self.note else self.words


def standing(
    exercise: ExerciseEntry, record: ExerciseRecord | None, gpu_here: bool | None
) -> Standing:
    """The learner's standing on `exercise` from its last `record` in the workspace (None:
    never checked there), on a machine with a GPU (`gpu_here`), without, or not known."""
    no_gpu = exercise.gpu and gpu_here is False
    if record is None:
        return Standing("no-gpu", NO_GPU) if no_gpu else Standing("not-started", "not started")
    points = f"({record.earned:g}/{record.possible:g})"
    if record.passed:
        return Standing("passed", f"passed {points}")
    return Standing("failing", f"failing {points}", GPU_CHECKS if no_gpu else "")
