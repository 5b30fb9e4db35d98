"""The gpulab app: built by `make_app`, started by `run_app` (``gpulab`` with no arguments).

The app owns the course and the learner's progress; screens get both when they
are made and send `ProgressChanged` up when they change the progress. The app
saves a second after the last change, at once when a screen is left, a hint
is revealed or a prediction is measured, and on exit.

It also owns this session's claim measurements (`board`): a probe runs in a
thread worker of the app, so leaving the lesson does not lose its result, and
every claim card on screen is told when its claim changes. Exercise checks run
the same way: the result is recorded in the progress and every screen that
lists exercises is told (`LabScreen.exercises_changed`). Whether this machine
has an NVIDIA GPU (`gpu_here`) is found out once, in a thread, when a screen
first lists a GPU exercise.
"""

from __future__ import annotations

import datetime as dt
from functools import partial
from typing import TYPE_CHECKING, Any, ClassVar

from rich.text import Text
from textual import events
from textual.app import App
from textual.binding import Binding, BindingType
from textual.dom import DOMNode
from textual.message import Message
from textual.screen import Screen
from textual.theme import Theme
from textual.timer import Timer

from gpulab.course import (
    Claim,
    Course,
    CourseError,
    ExerciseEntry,
    ProgressStore,
    SearchHit,
    load_course,
)
from gpulab.course.progress import Prediction
from gpulab.tui.commands import (
    DayCommands,
    ExerciseCommands,
    GpuCommands,
    LessonCommands,
    ThemeCommands,
)
from gpulab.tui.measure import ClaimBoard, gpu_present, run_probe_for
from gpulab.tui.messages import ProgressChanged
from gpulab.tui.screens import (
    CourseMapScreen,
    ExerciseScreen,
    FatalScreen,
    GpuScreen,
    HelpScreen,
    LessonScreen,
    PredictionScreen,
    SearchScreen,
)
from gpulab.tui.screens.base import LabScreen
from gpulab.tui.state import Keeper
from gpulab.tui.text import exercise_state as state_of
from gpulab.tui.widgets import ClaimCard, CourseTree, MindmapTree

if TYPE_CHECKING:
    from subprocess import Popen

    from gpulab.grading.runner import CheckReport
    from gpulab.probes.model import ProbeResult

__all__ = ["GpulabApp", "make_app", "run_app"]

DARK, LIGHT = "textual-dark", "textual-light"
SAVE_DELAY = 1.0
"""Seconds after the last change before the progress is written."""

HELP_GROUPS: list[tuple[str, list[type[DOMNode]]]] = [
    ("Course map", [CourseMapScreen, CourseTree]),
    ("Lesson", [LessonScreen, MindmapTree]),
    ("Exercise", [ExerciseScreen]),
    ("GPU", [GpuScreen]),
    ("Predicting a claim", [PredictionScreen]),
    ("Search", [SearchScreen]),
    ("Help", [HelpScreen]),
    ("Course error", [FatalScreen]),
]
"""The screens (and their main widget) whose keys the help screen lists."""


class GpulabApp(App[None]):
    """The course map, lessons, exercises, the GPU, search and help, over one course."""

    CSS_PATH = "gpulab.tcss"
    TITLE = "gpulab"
    COMMANDS = App.COMMANDS | {LessonCommands, DayCommands, ExerciseCommands, GpuCommands,
                               ThemeCommands}
    HORIZONTAL_BREAKPOINTS = [(0, "-narrow"), (96, "-wide")]  # noqa: RUF012 - App's type
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("question_mark", "help", "Help"),
        Binding("f1", "help", "Help", show=False),
    ]

    class ClaimMeasured(Message):
        """A claim's probe finished (posted from the probe's thread)."""

        def __init__(self, claim: Claim, result: ProbeResult, predicted: float | None,
                     at: str) -> None:
            super().__init__()
            self.claim = claim
            self.result = result
            self.predicted = predicted
            self.at = at

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

    def __init__(
        self,
        course: Course | None,
        keeper: Keeper,
        *,
        error: CourseError | None = None,
        gpu: object | None = None,
        nvml_backend: Any = None,
        has_gpu: bool | None = None,
    ) -> None:
        super().__init__()
        self.course = course
        self.keeper = keeper
        self.error = error
        self.gpu = gpu
        """The GPU to probe; kept for the probes issue, not shown yet."""
        self.nvml_backend = nvml_backend
        """What NVML calls go through: None for the real library, or a stand-in with
        pynvml's functions (a `gpulab.probes.nvml_record.Replay` in tests)."""
        self.gpu_here = has_gpu
        """Whether this machine has an NVIDIA GPU: None until known (see `find_gpu`)."""
        self.board = ClaimBoard()
        self.notebook_servers: list[Popen[bytes]] = []
        """The JupyterLab servers started from this session (they outlive it)."""
        self._save_timer: Timer | None = None
        self._finding_gpu = False
        self._checking: set[str] = set()

    def get_default_screen(self) -> Screen[None]:
        if self.course is None:
            assert self.error is not None
            return FatalScreen(self.error)
        return CourseMapScreen(self.course, self.keeper)

    def on_mount(self) -> None:
        theme = self.keeper.progress.theme
        if theme in self.available_themes:
            self.theme = theme
        self.theme_changed_signal.subscribe(self, self._remember_theme)
        if self.keeper.warning:
            self.notify(self.keeper.warning, title="Progress", severity="warning", timeout=10)
        last = self.keeper.progress.last_lesson
        if self.course is not None and last in {e.id for e in self.course.entries}:
            self.push_screen(LessonScreen(self.course, self.keeper, last))

    def on_unmount(self) -> None:
        self.save_progress()

    def on_app_focus(self, event: events.AppFocus) -> None:
        if self.keeper.sync():  # a check in the notebook or the shell, while we were away
            self.exercises_changed()

    def on_progress_changed(self, event: ProgressChanged) -> None:
        self.keeper.changed()
        if event.now:
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

    def on_claim_card_shown(self, event: ClaimCard.Shown) -> None:
        event.card.state = self.board.state(event.card.claim, self.keeper.progress.predictions)

    def on_gpulab_app_claim_measured(self, event: ClaimMeasured) -> None:
        claim, predicted = event.claim, event.predicted
        outcome = self.board.finish(claim, event.result, predicted)
        if predicted is not None:
            verdict = outcome.verdict.kind if outcome.verdict is not None else "not_measured"
            self.keeper.progress.predictions.append(Prediction(
                claim=claim.id, predicted=predicted, unit=claim.unit, at=event.at,
                measured=outcome.measured, verdict=verdict, device=event.result.device))
            self.post_message(ProgressChanged(now=True))
        self._refresh_cards(claim)
        if outcome.verdict is not None:
            self.notify(outcome.verdict.text, title=f"Measured {claim.id}", timeout=5,
                        severity="warning" if outcome.verdict.kind == "differs" else "information")
        else:
            self.notify(outcome.problem, title=f"{claim.id}: not measured", timeout=5,
                        severity="warning")

    def _refresh_cards(self, claim: Claim) -> None:
        state = self.board.state(claim, self.keeper.progress.predictions)
        for screen in self.screen_stack:
            for card in screen.query(ClaimCard):
                if card.claim.id == claim.id:
                    card.state = state

    def _remember_theme(self, theme: Theme) -> None:
        if self.keeper.progress.theme != theme.name:
            self.keeper.progress.theme = theme.name
            self.post_message(ProgressChanged(now=True))

    # -- measuring claims ------------------------------------------------------
    def measure(self, claim: Claim, predicted: float | None) -> None:
        """Run a claim's probe in a thread; its card shows "measuring…" until it is done.

        `predicted` is the learner's prediction in the claim's unit (None: no
        prediction); with one, the outcome is saved to the progress.
        """
        if self.board.is_measuring(claim.id):
            self.notify(f"{claim.id} is being measured already.", timeout=3)
            return
        at = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
        self.board.start(claim.id)
        self._refresh_cards(claim)
        self.run_worker(partial(self._run_claim_probe, claim, predicted, at), thread=True,
                        group="measure", exit_on_error=False,
                        description=f"measure {claim.id} with {claim.probe}")

    def _run_claim_probe(self, claim: Claim, predicted: float | None, at: str) -> None:
        result = run_probe_for(claim.probe, self.nvml_backend)
        self.post_message(self.ClaimMeasured(claim, result, predicted, at))

    # -- exercises -------------------------------------------------------------
    def exercise_state(self, exercise: ExerciseEntry) -> Text:
        """Where the learner stands on an exercise, as every list of exercises shows it."""
        if exercise.name in self._checking:
            return Text("checking…", style="italic")
        return state_of(exercise, self.keeper.progress.exercises.get(exercise.name),
                        self.gpu_here)

    def exercises_changed(self) -> None:
        """Tell every screen that lists exercises to show their states again."""
        for screen in self.screen_stack:
            if isinstance(screen, LabScreen):
                screen.exercises_changed()

    def find_gpu(self) -> None:
        """Find out, once and in a thread, whether this machine has an NVIDIA GPU."""
        if self.gpu_here is not None or self._finding_gpu:
            return
        self._finding_gpu = True
        self.run_worker(self._find_gpu, thread=True, group="find-gpu", exit_on_error=False,
                        description="look for an NVIDIA GPU")

    def _find_gpu(self) -> None:
        try:
            present = gpu_present(self.nvml_backend)
        except Exception:  # not knowing is an answer: the lists show no GPU verdict
            present = None
        self.post_message(self.GpuFound(present))

    def on_gpulab_app_gpu_found(self, event: GpuFound) -> None:
        self.gpu_here = event.present
        self.exercises_changed()

    def is_checking(self, name: str) -> bool:
        return name in self._checking

    def check_exercise(self, exercise: ExerciseEntry) -> None:
        """Run an exercise's checks on the learner's notebook in a thread; record the result."""
        if exercise.name in self._checking:
            self.notify(f"{exercise.name} is being checked already.", timeout=3)
            return
        self._checking.add(exercise.name)
        self.exercises_changed()
        self.run_worker(partial(self._run_checks, exercise), thread=True, group="check",
                        exit_on_error=False, description=f"check {exercise.name}")

    def _run_checks(self, exercise: ExerciseEntry) -> None:
        from gpulab.grading.runner import CheckReport, run_checks

        try:
            report = run_checks(exercise)
        except Exception as exc:  # the checks' failure must become a report
            report = CheckReport(exercise.name, exercise.notebook, "error",
                                 f"the checks failed: {type(exc).__name__}: {exc}")
        at = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
        self.post_message(self.ExerciseChecked(exercise, report, at))

    def on_gpulab_app_exercise_checked(self, event: ExerciseChecked) -> None:
        from gpulab.grading.record import record_report

        exercise, report = event.exercise, event.report
        self._checking.discard(exercise.name)
        if record_report(report, self.keeper.progress, event.at) is not None:
            self.keeper.changed()
            self.save_progress()
        for screen in self.screen_stack:
            if isinstance(screen, ExerciseScreen) and screen.exercise.name == exercise.name:
                screen.show_report(report)
        self.exercises_changed()
        if not isinstance(self.screen, ExerciseScreen):
            self.notify(f"{exercise.name}: {self.exercise_state(exercise).plain}",
                        title="Checked", timeout=5)

    # -- navigation, used by screens and the command palette -----------------
    def open_gpu(self) -> None:
        """Show the GPU screen above the current one."""
        if not isinstance(self.screen, GpuScreen):
            self.push_screen(GpuScreen(self.nvml_backend))

    def _leave_gpu(self) -> None:
        while isinstance(self.screen, GpuScreen) and len(self.screen_stack) > 1:
            self.pop_screen()

    def open_lesson(self, lesson_id: str, key: str | None = None) -> None:
        """Show a lesson (at a node, if given) above the course map."""
        if self.course is None:
            return
        self._leave_gpu()
        top = self.screen
        if isinstance(top, LessonScreen) and top.lesson_id == lesson_id:
            if key is not None:
                top.reveal(key)
            return
        self._show(LessonScreen(self.course, self.keeper, lesson_id, key))

    def open_exercise(self, name: str) -> None:
        """Show an exercise above the course map."""
        if self.course is None:
            return
        self._leave_gpu()
        for exercise in self.course.exercises():
            if exercise.name == name:
                self._show(ExerciseScreen(self.course, self.keeper, exercise))
                return
        self.notify(f"There is no exercise {name!r}.", severity="warning")

    def show_map(self, *, day: int | None = None, lesson: str | None = None) -> None:
        """Return to the course map, with the cursor on a day or a lesson."""
        base = self.screen_stack[0]
        if not isinstance(base, CourseMapScreen):
            return
        target = day if day is not None else lesson
        if len(self.screen_stack) == 1:
            base.go_to(target)
            return
        base.target = target
        while len(self.screen_stack) > 1:
            self.pop_screen()

    def open_search(self, lesson_id: str | None) -> None:
        """Open the search modal; a chosen result opens its lesson at its node."""
        if self.course is None:
            return

        def jump(hit: SearchHit | None) -> None:
            if hit is not None:
                self.open_lesson(hit.lesson, hit.key)

        self.push_screen(SearchScreen(self.course, lesson_id), jump)

    def _show(self, screen: Screen[None]) -> None:
        if len(self.screen_stack) > 1:
            self.switch_screen(screen)
        else:
            self.push_screen(screen)

    # -- actions --------------------------------------------------------------
    def action_help(self) -> None:
        """Show every key of every screen."""
        if not isinstance(self.screen, HelpScreen):
            self.push_screen(HelpScreen(HELP_GROUPS))

    def action_toggle_theme(self) -> None:
        """Switch between the dark and the light theme (remembered)."""
        self.theme = LIGHT if self.current_theme.dark else DARK


def make_app(
    course: Course | None = None,
    store: ProgressStore | None = None,
    gpu: object | None = None,
    nvml_backend: Any = None,
    has_gpu: bool | None = None,
) -> GpulabApp:
    """Build the app over a course (default: the installed one) and a progress store.

    A course that cannot be read gives an app that shows why, instead of raising.
    `nvml_backend` replaces the NVML library (a recorded `Replay` in tests).
    `has_gpu` says whether the machine has an NVIDIA GPU (tests and snapshots);
    None finds out when it is first needed.
    """
    error: CourseError | None = None
    if course is None:
        try:
            course = load_course()
        except CourseError as exc:
            error = exc
    return GpulabApp(course, Keeper(store or ProgressStore()), error=error, gpu=gpu,
                     nvml_backend=nvml_backend, has_gpu=has_gpu)


def run_app() -> None:
    """Run the app in the terminal until the learner quits."""
    make_app().run()
