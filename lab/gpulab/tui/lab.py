"""What the app is to its screens, widgets, palette and parts: `Lab`, a typing protocol.

The app (`gpulab.tui.app.GpulabApp`) imports its parts and opens its screens,
so none of them may import it back (`tests/test_import_cycles.py` counts
imports under TYPE_CHECKING too). They name `Lab` instead: the learner's state
that the app keeps as reactive attributes, and the two questions screens ask
of it (`figure`, `exercise_record`). A screen reads these through
`LabScreen.lab`; the Textual side of the same object stays `app`. mypy checks
in `gpulab.tui.app` that the app is a `Lab`.

This module imports nothing of the app's but `gpulab.tui.state` and
`gpulab.tui.figures`, which import nothing of it either.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

from rich.text import Text

if TYPE_CHECKING:
    from textual.app import App

    from gpulab.course import Course, ExerciseEntry
    from gpulab.course.progress import ExerciseRecord, Progress
    from gpulab.course.workspace import Workspace
    from gpulab.figures import FigureData
    from gpulab.tui.figures import Measured
    from gpulab.tui.state import Keeper

__all__ = ["ExerciseStates", "Lab", "as_lab", "changed_in_place"]

ExerciseStates = dict[str, Text]
"""Where the learner stands on each exercise, by name (see `gpulab.tui.text.exercise_state`)."""


class Lab(Protocol):
    """The running app as gpulab's screens and the app's parts see it."""

    course: Course | None
    """The course, or None when it cannot be read."""
    keeper: Keeper
    """Loads and saves the progress, and keeps the app's look."""
    nvml_backend: Any
    """What NVML calls go through: None for the real library, or a stand-in (tests)."""
    progress: Progress
    """The learner's progress; changed in place by the app's handlers only."""
    workspace: Workspace | None
    """The learner's workspace, or None before ``gpulab init``."""
    gpu_here: bool | None
    """Whether this machine has an NVIDIA GPU: None until known."""
    checking: frozenset[str]
    """The exercises whose checks are running now."""
    exercise_states: ExerciseStates
    """Where the learner stands on each exercise, as every list of exercises shows it."""
    measured: Measured
    """The learner's own probe results on this machine, by probe."""

    def figure(self, figure_id: str) -> FigureData:
        """A figure, drawn from the learner's results where they cover it."""
        ...

    def exercise_record(self, exercise: ExerciseEntry) -> ExerciseRecord | None:
        """The last check of an exercise in the learner's workspace, if any."""
        ...


def as_lab(app: App[Any]) -> Lab:
    """The running app as a `Lab` (it is one: `gpulab.tui.app` has mypy check it)."""
    lab: Lab = app  # type: ignore[assignment]  # Textual's App type knows nothing of gpulab
    return lab


def changed_in_place(app: App[Any], name: str) -> None:
    """Tell the watchers of the app's reactive attribute `name` that its value, changed in
    place, is new."""
    app.mutate_reactive(getattr(type(app), name))
