"""The app's learner half: progress, workspace, checks, states, and what to do next.

`LearnerApp` is the layer of `GpulabApp` that keeps the learner's progress
(saved a second after the last change, at once when a screen asks, and on
exit) and knows their workspace (their notebooks, made by ``gpulab init``).
Checks run in a thread worker of the app, never two of one exercise at once;
the result is recorded in the progress (per workspace) and every screen that
lists exercises is told (`LabScreen.exercises_changed`). When the app starts
with a workspace, the workspace is brought up to date with the course in a
thread, after first paint, and the learner hears what changed. Whether this machine has an NVIDIA
GPU (`gpu_here`) is found out once, in a thread, when a screen first lists a
GPU exercise.
"""

from __future__ import annotations

import datetime as dt
from functools import partial
from typing import TYPE_CHECKING, Any

from rich.text import Text
from textual.app import App
from textual.message import Message
from textual.timer import Timer

from gpulab.course.workspace import WorkspaceError
from gpulab.tui.messages import ProgressChanged
from gpulab.tui.screens.base import LabScreen
from gpulab.tui.text import exercise_state as state_of

if TYPE_CHECKING:
    from pathlib import Path

    from gpulab.course import Course, ExerciseEntry
    from gpulab.course.progress import ExerciseRecord
    from gpulab.course.workspace import SyncReport, Workspace
    from gpulab.grading.runner import CheckReport
    from gpulab.tui.state import Keeper

__all__ = ["NO_WORKSPACE", "SAVE_DELAY", "LearnerApp"]

SAVE_DELAY = 1.0
"""Seconds after the last change before the progress is written."""

NO_WORKSPACE = ("You have no workspace yet: in a shell, `gpulab init` copies the exercises "
                "into ./gpulab-exercises (or `gpulab init DIR` into a folder you choose); "
                "gpulab then finds it by itself.")
"""What to do before an exercise can be opened, checked or watched."""


class LearnerApp(App[None]):
    """Workspace, checks and exercise states for the screens (see the module's docstring)."""

    class GpuFound(Message):
        """Whether this machine has an NVIDIA GPU is known (None: it could not be told)."""

        def __init__(self, present: bool | None) -> None:
            super().__init__()
            self.present = present

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

    def __init__(self, course: Course | None, keeper: Keeper, workspace: Workspace | None,
                 has_gpu: bool | None, nvml_backend: Any) -> None:
        super().__init__()
        self.course = course
        self.keeper = keeper
        self.workspace = workspace
        """The learner's workspace (their notebooks), or None before `gpulab init`."""
        self.nvml_backend = nvml_backend
        """What NVML calls go through: None for the real library, or a stand-in with
        pynvml's functions (a `gpulab.probes.nvml_record.Replay` in tests)."""
        self.gpu_here = has_gpu
        """Whether this machine has an NVIDIA GPU: None until known (see `find_gpu`)."""
        self._finding_gpu = False
        self._checking: set[str] = set()
        self._save_timer: Timer | None = None

    def on_unmount(self) -> None:
        self.save_progress()

    def on_progress_changed(self, event: ProgressChanged) -> None:
        self.keeper.changed()
        if event.now:
            self.save_progress()
        elif self._save_timer is None:
            self._save_timer = self.set_timer(SAVE_DELAY, self.save_progress)
        else:
            self._save_timer.reset()

    def on_learner_app_exercise_checked(self, event: ExerciseChecked) -> None:
        from gpulab.grading.record import record_report
        from gpulab.tui.screens.exercise import ExerciseScreen

        exercise, report = event.exercise, event.report
        self._checking.discard(exercise.name)
        if record_report(report, exercise, self.workspace, self.keeper.progress,
                         event.at) is not None:
            self.keeper.changed()
            self.save_progress()
        shown = False
        for screen in self.screen_stack:
            if isinstance(screen, ExerciseScreen) and screen.exercise.name == exercise.name:
                screen.show_report(report)
                shown = shown or screen is self.screen
        self.exercises_changed()
        if not shown:
            self.notify(f"{exercise.name}: {self.exercise_state(exercise).plain}",
                        title="Checked", timeout=5)

    def on_learner_app_gpu_found(self, event: GpuFound) -> None:
        self.gpu_here = event.present
        self.exercises_changed()

    def on_learner_app_workspace_synced(self, event: WorkspaceSynced) -> None:
        if event.problem:
            self.notify(event.problem, title="Your workspace", severity="error", timeout=15)
            return
        if event.report is not None and event.report.anything:
            self.notify("\n".join(event.report.lines()), title="Your workspace", timeout=15)
            self.exercises_changed()

    def save_progress(self) -> None:
        """Write the progress now, if it changed; a failure is shown, not raised."""
        if self._save_timer is not None:
            self._save_timer.stop()
            self._save_timer = None
        problem = self.keeper.save()
        if problem is not None and self.is_running:
            self.notify(problem, title="Progress", severity="error", timeout=10)

    # -- the workspace -----------------------------------------------------------
    def sync_workspace(self) -> None:
        """Bring the workspace up to date with the course, in a thread (nothing without one)."""
        if self.workspace is None or self.course is None:
            return
        self.run_worker(partial(self._sync, self.workspace, self.course), thread=True,
                        group="sync-workspace", exit_on_error=False,
                        description="bring the workspace up to date")

    def _sync(self, workspace: Workspace, course: Course) -> None:
        try:
            report = workspace.sync(course)
        except WorkspaceError as exc:
            self.post_message(self.WorkspaceSynced(None, str(exc)))
            return
        self.post_message(self.WorkspaceSynced(report))

    def find_workspace(self) -> bool:
        """Take up a workspace made since the app started (``gpulab init`` in a shell) and
        tell every screen; True when one was found now."""
        if self.workspace is not None:
            return False
        from gpulab.course.workspace import current_workspace

        try:
            self.workspace = current_workspace()
        except WorkspaceError:
            return False
        if self.workspace is None:
            return False
        for screen in self.screen_stack:
            if isinstance(screen, LabScreen):
                screen.workspace_changed()
        self.exercises_changed()
        return True

    def notebook_of(self, exercise: ExerciseEntry) -> Path | None:
        """The learner's notebook of an exercise, in the workspace; None without one."""
        return self.workspace.notebook(exercise) if self.workspace is not None else None

    # -- where the learner stands ------------------------------------------------
    def exercise_record(self, exercise: ExerciseEntry) -> ExerciseRecord | None:
        """The last check of the exercise in the learner's workspace, if any."""
        if self.workspace is None:
            return None
        return self.keeper.progress.exercises(self.workspace.key).get(exercise.name)

    def exercise_state(self, exercise: ExerciseEntry) -> Text:
        """Where the learner stands on an exercise, as every list of exercises shows it."""
        if exercise.name in self._checking:
            return Text("checking…", style="italic")
        return state_of(exercise, self.exercise_record(exercise), self.gpu_here)

    def exercises_changed(self) -> None:
        """Tell every screen that lists exercises to show their states again."""
        for screen in self.screen_stack:
            if isinstance(screen, LabScreen):
                screen.exercises_changed()

    def next_unfinished(self, after: str | None = None) -> ExerciseEntry | None:
        """The first exercise not passed yet, in teaching order (the lessons'), after `after`
        (wrapping round; from the start when None). GPU exercises are passed over on a
        machine known to have no GPU; None when nothing is left."""
        if self.course is None:
            return None
        lessons = [entry.id for entry in self.course.entries]
        exercises = sorted(self.course.exercises(), key=lambda e: lessons.index(e.lesson)
                           if e.lesson in lessons else len(lessons))
        names = [e.name for e in exercises]
        start = names.index(after) + 1 if after in names else 0
        for exercise in exercises[start:] + exercises[:start]:
            if exercise.name == after or (exercise.gpu and self.gpu_here is False):
                continue
            record = self.exercise_record(exercise)
            if record is None or not record.passed:
                return exercise
        return None

    def find_gpu(self) -> None:
        """Find out, once and in a thread, whether this machine has an NVIDIA GPU."""
        if self.gpu_here is not None or self._finding_gpu:
            return
        self._finding_gpu = True
        self.run_worker(self._find_gpu, thread=True, group="find-gpu", exit_on_error=False,
                        description="look for an NVIDIA GPU")

    def _find_gpu(self) -> None:
        from gpulab.tui.measure import gpu_present

        try:
            present = gpu_present(self.nvml_backend)
        except Exception:  # not knowing is an answer: the lists show no GPU verdict
            present = None
        self.post_message(self.GpuFound(present))

    # -- checks ------------------------------------------------------------------
    def is_checking(self, name: str) -> bool:
        return name in self._checking

    def check_exercise(self, exercise: ExerciseEntry) -> bool:
        """Run an exercise's checks on the learner's notebook in a thread and record the
        result; False (and nothing started) while a check of it is still running."""
        if exercise.name in self._checking:
            return False
        self._checking.add(exercise.name)
        self.exercises_changed()
        self.run_worker(partial(self._run_checks, exercise), thread=True, group="check",
                        exit_on_error=False, description=f"check {exercise.name}")
        return True

    def _run_checks(self, exercise: ExerciseEntry) -> None:
        from gpulab.grading.runner import CheckReport, run_checks

        notebook = self.notebook_of(exercise)
        try:
            if notebook is None:
                raise WorkspaceError(NO_WORKSPACE)
            report = run_checks(exercise, notebook)
        except Exception as exc:  # the checks' failure must become a report
            message = str(exc) if isinstance(exc, WorkspaceError) else \
                f"the checks failed: {type(exc).__name__}: {exc}"
            report = CheckReport(exercise.name, notebook or exercise.notebook, "error", message)
        at = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
        self.post_message(self.ExerciseChecked(exercise, report, at))
