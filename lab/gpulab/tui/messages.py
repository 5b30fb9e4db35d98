"""What the screens and the app's workers tell the app: requests named for what is asked,
events named for what happened.

A screen never calls the app. It posts one of these to itself; the message
bubbles up to the app, whose ``on_*`` handler does the work (opens a screen,
starts a worker, changes the learner's progress). State comes back down as
the app's reactive attributes, which the screens watch (see
`gpulab.tui.app.GpulabApp`). A thread worker of the app reports what it found
the same way (the last section): the handler that receives it sits in the app
beside the one that started the work.

This module imports nothing of the app's, so every screen can use it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from textual.message import Message

if TYPE_CHECKING:
    from gpulab.course import Claim, ExerciseEntry
    from gpulab.course.workspace import SyncReport
    from gpulab.grading.checks.runner import CheckReport
    from gpulab.probes import ProbeResult

__all__ = [
    "CheckExercise",
    "ClaimMeasured",
    "ExerciseChecked",
    "FindGpu",
    "FoldsChanged",
    "GpuFound",
    "HintRevealed",
    "LessonOpened",
    "MeasureClaim",
    "NodeVisited",
    "OpenExercise",
    "OpenFigures",
    "OpenGpu",
    "OpenLesson",
    "OpenNextExercise",
    "OpenSearch",
    "ProbeReadiness",
    "ResultNotSaved",
    "SavedResultsRead",
    "ShowMap",
    "TreeWidthChanged",
    "WorkspaceSynced",
]


# -- where to go --------------------------------------------------------------------------------


class OpenLesson(Message):
    """Show a lesson, at one of its nodes if `node_key` is given."""

    def __init__(self, lesson_id: str, node_key: str | None = None) -> None:
        super().__init__()
        self.lesson_id = lesson_id
        self.node_key = node_key


class OpenExercise(Message):
    """Show an exercise above the course map, or `above` the current screen (escape then
    returns to it)."""

    def __init__(self, name: str, *, above: bool = False) -> None:
        super().__init__()
        self.name = name
        self.above = above


class OpenNextExercise(Message):
    """Show the next exercise not passed yet, after `after` (from the start when None)."""

    def __init__(self, after: str | None = None) -> None:
        super().__init__()
        self.after = after


class ShowMap(Message):
    """Return to the course map, with its cursor on a day, a lesson or an exercise."""

    def __init__(
        self, *, day: int | None = None, lesson: str | None = None, exercise: str | None = None
    ) -> None:
        super().__init__()
        self.day = day
        self.lesson = lesson
        self.exercise = exercise


class OpenSearch(Message):
    """Open the search, this lesson's hits first (`lesson_id`; None: no lesson open)."""

    def __init__(self, lesson_id: str | None = None) -> None:
        super().__init__()
        self.lesson_id = lesson_id


class OpenGpu(Message):
    """Show the GPU screen above the current one."""


class OpenFigures(Message):
    """Show the figures above the current screen, at the figure `figure_id` if given (else
    at the first)."""

    def __init__(self, figure_id: str | None = None) -> None:
        super().__init__()
        self.figure_id = figure_id


# -- work for the app's workers -----------------------------------------------------------------


class MeasureClaim(Message):
    """Run a claim's probe; `predicted` is the learner's prediction in the claim's unit
    (None: measure without one)."""

    def __init__(self, claim: Claim, predicted: float | None) -> None:
        super().__init__()
        self.claim = claim
        self.predicted = predicted


class CheckExercise(Message):
    """Run an exercise's checks on the learner's saved notebook."""

    def __init__(self, exercise: ExerciseEntry) -> None:
        super().__init__()
        self.exercise = exercise


class FindGpu(Message):
    """A screen shows GPU exercises: find out (once) whether this machine has a GPU."""


# -- what the learner did (the app keeps it in the progress) ------------------------------------


class LessonOpened(Message):
    """A lesson was opened: it is the one to return to next time."""

    def __init__(self, lesson_id: str) -> None:
        super().__init__()
        self.lesson_id = lesson_id


class NodeVisited(Message):
    """The learner's cursor reached a node of a lesson."""

    def __init__(self, lesson_id: str, key: str) -> None:
        super().__init__()
        self.lesson_id = lesson_id
        self.key = key


class FoldsChanged(Message):
    """The learner folded or unfolded nodes of a lesson; `expanded` lists those unfolded."""

    def __init__(self, lesson_id: str, expanded: list[str]) -> None:
        super().__init__()
        self.lesson_id = lesson_id
        self.expanded = expanded


class HintRevealed(Message):
    """The learner revealed a hint of an exercise; `revealed` hints are shown now."""

    def __init__(self, exercise: str, revealed: int) -> None:
        super().__init__()
        self.exercise = exercise
        self.revealed = revealed


class TreeWidthChanged(Message):
    """The learner made the lesson's tree narrower or wider (`percent` of the screen)."""

    def __init__(self, percent: int) -> None:
        super().__init__()
        self.percent = percent


# -- what the app's workers found (posted from their threads) ------------------------------------


class ExerciseChecked(Message):
    """An exercise's checks finished: `report`, judged at `at`."""

    def __init__(self, exercise: ExerciseEntry, report: CheckReport, at: str) -> None:
        super().__init__()
        self.exercise = exercise
        self.report = report
        self.at = at


class WorkspaceSynced(Message):
    """The workspace was brought up to date (`report`), or could not be (`problem`)."""

    def __init__(self, report: SyncReport | None, problem: str = "") -> None:
        super().__init__()
        self.report = report
        self.problem = problem


class GpuFound(Message):
    """Whether this machine has an NVIDIA GPU is known (None: it could not be told)."""

    def __init__(self, present: bool | None) -> None:
        super().__init__()
        self.present = present


class SavedResultsRead(Message):
    """The results saved on this machine were read: `results` to use, `notes` to tell the
    learner (another machine's, a file skipped)."""

    def __init__(self, results: dict[str, ProbeResult], notes: list[str]) -> None:
        super().__init__()
        self.results = results
        self.notes = notes


class ResultNotSaved(Message):
    """A probe result could not be saved; `problem` says why."""

    def __init__(self, problem: str) -> None:
        super().__init__()
        self.problem = problem


class ClaimMeasured(Message):
    """A claim's probe finished: its `result`, with the learner's prediction (None: none)
    and when it was asked for (`at`)."""

    def __init__(self, claim: Claim, result: ProbeResult, predicted: float | None, at: str) -> None:
        super().__init__()
        self.claim = claim
        self.result = result
        self.predicted = predicted
        self.at = at


class ProbeReadiness(Message):
    """Whether a claim's probe can run here (`result` None) or why not (its result)."""

    def __init__(self, probe: str, result: ProbeResult | None) -> None:
        super().__init__()
        self.probe = probe
        self.result = result
