"""The app's learner half: the state the screens show, and the work that changes it.

`LearnerApp` is the layer of `GpulabApp` that owns what every screen shows of
the learner: their progress, their workspace (their notebooks, made by
``gpulab init``), whether this machine has an NVIDIA GPU, which exercises are
being checked, and, from those, where they stand on each exercise.
Each is a reactive attribute; screens read them through their typed `app`
and `watch` the ones they draw. Screens never change them: they post the
messages of `gpulab.tui.messages`, and the handlers here change the state
(`LessonOpened`, `NodeVisited`, `FoldsChanged`, `HintRevealed`,
`TreeWidthChanged`, `CheckExercise`, and `FindGpu` in its base).

The progress is saved a second after the last change, at once where a change
must not be lost (a hint, a check, a prediction), whenever the screen changes,
and on exit. What ``gpulab check`` and the notebook's check save meanwhile is
taken in when the screen changes, when the terminal gets the focus back, and
about once a second (one ``stat`` when nothing changed).

Checks run in a thread worker of the app, never two of one exercise at once;
the result is recorded in the progress (per workspace). When the app starts
with a workspace, the workspace is brought up to date with the course in a
thread, after first paint, and the learner hears what changed.

Its base, `gpulab.tui.gpu_here.GpuHereApp`, finds out whether this machine has
a GPU (`gpu_here`): once, in a thread, when a screen first lists a GPU exercise
(`FindGpu`). Below that, `gpulab.tui.results.ResultsApp` keeps the learner's own
probe results (`measured`: those saved on this machine, and this session's,
which it saves), so that figures (`figure`) are drawn from their GPU once it
has measured what a figure needs, and from gpulab's recording of its H200 until
then.

Nothing here imports a screen, so screens can name this class (`textual.getters.app`)
without an import cycle.
"""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING, Any

from rich.text import Text
from textual import events
from textual.message import Message
from textual.reactive import var
from textual.screen import Screen
from textual.timer import Timer

from gpulab.course.progress import Progress
from gpulab.course.workspace import Workspace, WorkspaceError
from gpulab.timestamps import utc_now
from gpulab.tui.gpu_here import GpuHereApp
from gpulab.tui.messages import (
    CheckExercise,
    FoldsChanged,
    HintRevealed,
    LessonOpened,
    NodeVisited,
    TreeWidthChanged,
)
from gpulab.tui.text import exercise_state as state_of

if TYPE_CHECKING:
    from pathlib import Path

    from gpulab.course import Course, ExerciseEntry
    from gpulab.course.progress import ExerciseRecord
    from gpulab.course.workspace import SyncReport
    from gpulab.grading.checks.runner import CheckReport
    from gpulab.tui.state import Keeper

__all__ = ["NO_WORKSPACE", "POLL_INTERVAL", "SAVE_DELAY", "ExerciseStates", "LearnerApp"]

SAVE_DELAY = 1.0
"""Seconds after the last change before the progress is written."""

POLL_INTERVAL = 1.0
"""Seconds between two looks for progress saved by others (``gpulab check``)."""

NO_WORKSPACE = (
    "You have no workspace yet: in a shell, `gpulab init` copies the exercises "
    "into ./gpulab-exercises (or `gpulab init DIR` into a folder you choose); "
    "gpulab then finds it by itself."
)
"""What to do before an exercise can be opened, checked or watched."""

ExerciseStates = dict[str, Text]
"""Where the learner stands on each exercise, by name (see `gpulab.tui.text.exercise_state`)."""


class LearnerApp(GpuHereApp):
    """The learner's state for the screens, and the handlers that change it (see the module's
    docstring)."""

    progress: var[Progress] = var(Progress, init=False)
    """The learner's progress, as the keeper loaded it. Only the app's own handlers change
    it (screens ask by message), in place, and then call `progress_changed`."""
    workspace: var[Workspace | None] = var(None, init=False)
    """The learner's workspace (their notebooks), or None before ``gpulab init``."""
    checking: var[frozenset[str]] = var(frozenset(), init=False)
    """The names of the exercises whose checks are running now."""
    exercise_states: var[ExerciseStates] = var(dict, init=False)
    """Where the learner stands on each exercise, as every list of exercises shows it
    ("checking…" while its checks run); set from the progress, the workspace, `gpu_here`
    and `checking` whenever one changes."""

    class ExerciseChecked(Message):
        """An exercise's checks finished (posted from the checks' thread)."""

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

    def __init__(
        self,
        course: Course | None,
        keeper: Keeper,
        workspace: Workspace | None,
        has_gpu: bool | None,
        nvml_backend: Any,
    ) -> None:
        super().__init__()
        self.course = course
        """The course, or None when it cannot be read (the app then shows why)."""
        self.keeper = keeper
        """Loads and saves the progress, and keeps the app's look (the tree's width)."""
        self.nvml_backend = nvml_backend
        """What NVML calls go through: None for the real library, or a stand-in with
        pynvml's functions (a `gpulab.probes.nvml.Replay` in tests)."""
        self.set_reactive(LearnerApp.progress, keeper.progress)
        self.set_reactive(LearnerApp.workspace, workspace)
        self.set_reactive(LearnerApp.gpu_here, has_gpu)
        self.set_reactive(LearnerApp.exercise_states, self._states())
        self._save_timer: Timer | None = None

    # A computed reactive (`compute_exercise_states`) would call its watchers on every
    # read, so a screen that reads the states while drawing them would loop: the states
    # are set instead, and their watchers run only when they differ.
    def watch_progress(self) -> None:
        self.exercise_states = self._states()

    def watch_workspace(self) -> None:
        self.exercise_states = self._states()

    def watch_gpu_here(self) -> None:
        self.exercise_states = self._states()

    def watch_checking(self) -> None:
        self.exercise_states = self._states()

    def _states(self) -> ExerciseStates:
        if self.course is None:
            return {}
        return {
            exercise.name: Text("checking…", style="italic")
            if exercise.name in self.checking
            else state_of(exercise, self.exercise_record(exercise), self.gpu_here)
            for exercise in self.course.exercises()
        }

    def on_mount(self) -> None:
        self.screen_change_signal.subscribe(self, self._screen_changed)
        self.set_interval(POLL_INTERVAL, self._look_for_saved, name="look for saved progress")

    def on_unmount(self) -> None:
        self.save_progress()

    def on_app_focus(self, event: events.AppFocus) -> None:
        # `gpulab init`, or a check in the notebook or the shell, while we were away
        self.find_workspace()
        self._take_in_saved()

    def _screen_changed(self, screen: Screen[Any]) -> None:
        """A screen was opened, left or returned to: save what was read there, take in
        what was saved elsewhere, and look for a workspace made meanwhile."""
        self.find_workspace()
        self._take_in_saved()
        self.save_progress()

    # -- the progress ----------------------------------------------------------------------
    def progress_changed(self, *, now: bool = False) -> None:
        """The progress was changed (in place): tell its watchers, and save it a second
        after the last change, or `now`."""
        self.keeper.changed()
        self.mutate_reactive(LearnerApp.progress)
        if now:
            self.save_progress()
        elif self._save_timer is None:
            self._save_timer = self.set_timer(SAVE_DELAY, self.save_progress)
        else:
            self._save_timer.reset()

    def save_progress(self) -> None:
        """Write the progress now, if it changed; a failure is shown, not raised."""
        if self._save_timer is not None:
            self._save_timer.stop()
            self._save_timer = None
        problem = self.keeper.save()
        if problem is not None and self.is_running:
            self.notify(problem, title="Progress", severity="error", timeout=10)

    def _take_in_saved(self) -> None:
        """Take in exercise results and hints that others saved (``gpulab check``)."""
        if self.keeper.sync():
            self.mutate_reactive(LearnerApp.progress)

    def _look_for_saved(self) -> None:
        if self.keeper.file_changed() and self.keeper.sync():
            self.mutate_reactive(LearnerApp.progress)

    def on_lesson_opened(self, event: LessonOpened) -> None:
        self.progress.last_lesson = event.lesson_id
        self.progress_changed()

    def on_node_visited(self, event: NodeVisited) -> None:
        self.progress.lesson(event.lesson_id).selected = event.key
        self.progress.visit(event.lesson_id, event.key)
        self.progress_changed()

    def on_folds_changed(self, event: FoldsChanged) -> None:
        self.progress.lesson(event.lesson_id).expanded = event.expanded
        self.progress_changed()

    def on_hint_revealed(self, event: HintRevealed) -> None:
        self.progress.hints[event.exercise] = event.revealed
        self.progress_changed(now=True)

    def on_tree_width_changed(self, event: TreeWidthChanged) -> None:
        self.keeper.tree_width = event.percent

    # -- the workspace -----------------------------------------------------------------------
    def sync_workspace(self) -> None:
        """Bring the workspace up to date with the course, in a thread (nothing without one)."""
        if self.workspace is None or self.course is None:
            return
        self.run_worker(
            partial(self._sync, self.workspace, self.course),
            thread=True,
            group="sync-workspace",
            exit_on_error=False,
            description="bring the workspace up to date",
        )

    def _sync(self, workspace: Workspace, course: Course) -> None:
        try:
            report = workspace.sync(course)
        except WorkspaceError as exc:
            self.post_message(self.WorkspaceSynced(None, str(exc)))
            return
        self.post_message(self.WorkspaceSynced(report))

    def on_learner_app_workspace_synced(self, event: WorkspaceSynced) -> None:
        if event.problem:
            self.notify(event.problem, title="Your workspace", severity="error", timeout=15)
            return
        if event.report is not None and event.report.anything:
            self.notify("\n".join(event.report.lines()), title="Your workspace", timeout=15)
            # notebooks came or went: whatever lists exercises draws them again
            self.mutate_reactive(LearnerApp.exercise_states)

    def find_workspace(self) -> bool:
        """Take up a workspace made since the app started (``gpulab init`` in a shell); True
        when one was found now."""
        if self.workspace is not None:
            return False
        from gpulab.course.workspace import current_workspace

        try:
            found = current_workspace()
        except WorkspaceError:
            return False
        self.workspace = found
        return found is not None

    def notebook_of(self, exercise: ExerciseEntry) -> Path | None:
        """The learner's notebook of an exercise, in the workspace; None without one."""
        return self.workspace.notebook(exercise) if self.workspace is not None else None

    # -- where the learner stands ------------------------------------------------------------
    def exercise_record(self, exercise: ExerciseEntry) -> ExerciseRecord | None:
        """The last check of the exercise in the learner's workspace, if any."""
        if self.workspace is None:
            return None
        return self.progress.exercises(self.workspace.key).get(exercise.name)

    def next_unfinished(self, after: str | None = None) -> ExerciseEntry | None:
        """The first exercise not passed yet, in teaching order (the lessons'), after `after`
        (wrapping round; from the start when None). GPU exercises are passed over on a
        machine known to have no GPU; None when nothing is left."""
        if self.course is None:
            return None
        lessons = [entry.id for entry in self.course.entries]
        exercises = sorted(
            self.course.exercises(),
            key=lambda e: lessons.index(e.lesson) if e.lesson in lessons else len(lessons),
        )
        names = [e.name for e in exercises]
        start = names.index(after) + 1 if after in names else 0
        for exercise in exercises[start:] + exercises[:start]:
            if exercise.name == after or (exercise.gpu and self.gpu_here is False):
                continue
            record = self.exercise_record(exercise)
            if record is None or not record.passed:
                return exercise
        return None

    # -- checks --------------------------------------------------------------------------------
    def is_checking(self, name: str) -> bool:
        """Whether the checks of exercise `name` are running now."""
        return name in self.checking

    def on_check_exercise(self, event: CheckExercise) -> None:
        self.check_exercise(event.exercise)

    def check_exercise(self, exercise: ExerciseEntry) -> bool:
        """Run an exercise's checks on the learner's notebook in a thread and record the
        result; False (and nothing started) while a check of it is still running."""
        if exercise.name in self.checking:
            return False
        self.checking = self.checking | {exercise.name}
        self.run_worker(
            partial(self._run_checks, exercise),
            thread=True,
            group="check",
            exit_on_error=False,
            description=f"check {exercise.name}",
        )
        return True

    def _run_checks(self, exercise: ExerciseEntry) -> None:
        from gpulab.grading.checks.runner import CheckReport
        from gpulab.grading.learn.check import judge

        notebook = self.notebook_of(exercise)
        report = (
            judge(exercise, notebook)
            if notebook is not None
            else CheckReport(exercise.name, exercise.notebook, "error", NO_WORKSPACE)
        )
        at = utc_now()
        self.post_message(self.ExerciseChecked(exercise, report, at))

    def record_check(self, exercise: ExerciseEntry, report: CheckReport, at: str) -> None:
        """Keep a finished check's outcome in the progress (if it judged the workspace's own
        notebook), and mark the exercise as checked no more."""
        from gpulab.grading.learn.record import record_report

        if record_report(report, exercise, self.workspace, self.progress, at) is not None:
            self.progress_changed(now=True)
        self.checking = self.checking - {exercise.name}
