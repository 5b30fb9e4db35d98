"""The learner's side of the app: their progress saved, their workspace, their checks.

`Learner` is one of the parts the app (`gpulab.tui.app.GpulabApp`) is composed
of. What the screens draw of the learner is the app's: reactive attributes
(`progress`, `workspace`, `gpu_here`, `checking` and, from those,
`exercise_states`) that screens read as `lab` (`gpulab.tui.lab.Lab`) and watch.
`Learner` does the work that changes them, called from the app's handlers:

- The progress is saved a second after the last change (`changed`), at once
  where a change must not be lost (a hint, a check, a prediction), whenever
  the screen changes, and on exit (`save`). What ``gpulab check`` and the
  notebook's check save meanwhile is taken in (`take_in_saved`) when the
  screen changes, when the terminal gets the focus back, and about once a
  second (one ``stat`` when nothing changed).
- Checks run in a thread worker of the app (`check`), never two of one
  exercise at once; the result (`ExerciseChecked`) is recorded in the progress
  (per workspace) by `record`, which the app calls before it shows the report.
- When the app starts with a workspace, the workspace is brought up to date
  with the course in a thread (`sync_workspace`), after first paint, and the
  learner hears what changed (`synced`); a workspace made later by
  ``gpulab init`` is taken up when found (`find_workspace`).
- Whether this machine has an NVIDIA GPU is found out once, in a thread, when
  a screen first lists a GPU exercise (`find_gpu`).
"""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING, Any

from rich.text import Text

from gpulab.course.workspace import WorkspaceError
from gpulab.timestamps import utc_now
from gpulab.tui.lab import ExerciseStates, as_lab, changed_in_place
from gpulab.tui.messages import ExerciseChecked, GpuFound, WorkspaceSynced
from gpulab.tui.text import exercise_state as state_of

if TYPE_CHECKING:
    from pathlib import Path

    from textual.app import App
    from textual.timer import Timer

    from gpulab.course import Course, ExerciseEntry
    from gpulab.course.progress import ExerciseRecord
    from gpulab.course.workspace import Workspace

__all__ = ["NO_WORKSPACE", "POLL_INTERVAL", "SAVE_DELAY", "Learner"]

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


class Learner:
    """The work that changes the learner's state in the app (see the module's docstring);
    one per app."""

    def __init__(self, app: App[Any]) -> None:
        self._app = app
        self._lab = as_lab(app)
        self._save_timer: Timer | None = None
        self._finding_gpu = False

    @property
    def _course(self) -> Course | None:
        return self._lab.course

    # -- where the learner stands --------------------------------------------------------------
    def states(self) -> ExerciseStates:
        """Where the learner stands on each exercise ("checking…" while its checks run)."""
        lab = self._lab
        if lab.course is None:
            return {}
        return {
            exercise.name: Text("checking…", style="italic")
            if exercise.name in lab.checking
            else state_of(exercise, self.exercise_record(exercise), lab.gpu_here)
            for exercise in lab.course.exercises()
        }

    def exercise_record(self, exercise: ExerciseEntry) -> ExerciseRecord | None:
        """The last check of the exercise in the learner's workspace, if any."""
        workspace = self._lab.workspace
        if workspace is None:
            return None
        return self._lab.progress.exercises(workspace.key).get(exercise.name)

    def next_unfinished(self, after: str | None = None) -> ExerciseEntry | None:
        """The first exercise not passed yet, in teaching order (the lessons'), after `after`
        (wrapping round; from the start when None). GPU exercises are passed over on a
        machine known to have no GPU; None when nothing is left."""
        course = self._course
        if course is None:
            return None
        lessons = [entry.id for entry in course.entries]
        exercises = sorted(
            course.exercises(),
            key=lambda e: lessons.index(e.lesson) if e.lesson in lessons else len(lessons),
        )
        names = [e.name for e in exercises]
        start = names.index(after) + 1 if after in names else 0
        for exercise in exercises[start:] + exercises[:start]:
            if exercise.name == after or (exercise.gpu and self._lab.gpu_here is False):
                continue
            record = self.exercise_record(exercise)
            if record is None or not record.passed:
                return exercise
        return None

    # -- the progress --------------------------------------------------------------------------
    def changed(self, *, now: bool = False) -> None:
        """The progress was changed (in place): tell its watchers, and save it a second
        after the last change, or `now`."""
        self._lab.keeper.changed()
        changed_in_place(self._app, "progress")
        if now:
            self.save()
        elif self._save_timer is None:
            self._save_timer = self._app.set_timer(SAVE_DELAY, self.save)
        else:
            self._save_timer.reset()

    def save(self) -> None:
        """Write the progress now, if it changed; a failure is shown, not raised."""
        if self._save_timer is not None:
            self._save_timer.stop()
            self._save_timer = None
        problem = self._lab.keeper.save()
        if problem is not None and self._app.is_running:
            self._app.notify(problem, title="Progress", severity="error", timeout=10)

    def take_in_saved(self, *, if_file_changed: bool = False) -> None:
        """Take in exercise results and hints that others saved (``gpulab check``); with
        `if_file_changed`, only when the file changed since the last look (one ``stat``)."""
        keeper = self._lab.keeper
        if if_file_changed and not keeper.file_changed():
            return
        if keeper.sync():
            changed_in_place(self._app, "progress")

    # -- the workspace -------------------------------------------------------------------------
    def sync_workspace(self) -> None:
        """Bring the workspace up to date with the course, in a thread (nothing without one)."""
        workspace, course = self._lab.workspace, self._course
        if workspace is None or course is None:
            return
        self._app.run_worker(
            partial(self._sync, workspace, course),
            thread=True,
            group="sync-workspace",
            exit_on_error=False,
            description="bring the workspace up to date",
        )

    def _sync(self, workspace: Workspace, course: Course) -> None:
        try:
            report = workspace.sync(course)
        except WorkspaceError as exc:
            self._app.post_message(WorkspaceSynced(None, str(exc)))
            return
        self._app.post_message(WorkspaceSynced(report))

    def synced(self, event: WorkspaceSynced) -> None:
        """Tell the learner what bringing the workspace up to date changed, or why it
        could not be."""
        app = self._app
        if event.problem:
            app.notify(event.problem, title="Your workspace", severity="error", timeout=15)
            return
        if event.report is not None and event.report.anything:
            app.notify("\n".join(event.report.lines()), title="Your workspace", timeout=15)
            # notebooks came or went: whatever lists exercises draws them again
            changed_in_place(self._app, "exercise_states")

    def find_workspace(self) -> bool:
        """Take up a workspace made since the app started (``gpulab init`` in a shell); True
        when one was found now."""
        if self._lab.workspace is not None:
            return False
        from gpulab.course.workspace import current_workspace

        try:
            found = current_workspace()
        except WorkspaceError:
            return False
        self._lab.workspace = found
        return found is not None

    def notebook_of(self, exercise: ExerciseEntry) -> Path | None:
        """The learner's notebook of an exercise, in the workspace; None without one."""
        workspace = self._lab.workspace
        return workspace.notebook(exercise) if workspace is not None else None

    # -- the GPU -------------------------------------------------------------------------------
    def find_gpu(self) -> None:
        """Find out, once and in a thread, whether this machine has an NVIDIA GPU
        (`GpuFound` when known)."""
        if self._lab.gpu_here is not None or self._finding_gpu:
            return
        self._finding_gpu = True
        self._app.run_worker(
            self._find_gpu,
            thread=True,
            group="find-gpu",
            exit_on_error=False,
            description="look for an NVIDIA GPU",
        )

    def _find_gpu(self) -> None:
        from gpulab.tui.measure import gpu_present

        try:
            present = gpu_present(self._lab.nvml_backend)
        except Exception:  # not knowing is an answer: the lists show no GPU verdict
            present = None
        self._app.post_message(GpuFound(present))

    # -- checks --------------------------------------------------------------------------------
    def check(self, exercise: ExerciseEntry) -> bool:
        """Run an exercise's checks on the learner's notebook in a thread (`ExerciseChecked`
        when done); False (and nothing started) while a check of it is still running."""
        lab = self._lab
        if exercise.name in lab.checking:
            return False
        lab.checking = lab.checking | {exercise.name}
        self._app.run_worker(
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
        self._app.post_message(ExerciseChecked(exercise, report, utc_now()))

    def record(self, event: ExerciseChecked) -> None:
        """Keep a finished check's outcome in the progress (if it judged the workspace's own
        notebook, saved at once), and mark the exercise as checked no more."""
        from gpulab.grading.learn.record import record_report

        lab = self._lab
        kept = record_report(event.report, event.exercise, lab.workspace, lab.progress, event.at)
        if kept is not None:
            self.changed(now=True)
        lab.checking = lab.checking - {event.exercise.name}
