"""The gpulab app: built by `make_app`, started by `run_app` (``gpulab`` with no arguments).

Screens never call the app: they post the messages of `gpulab.tui.messages`
(`OpenLesson`, `ShowMap`, `MeasureClaim`, ...), and the ``on_*`` handlers here
open the screens and start the work. State goes the other way: the learner
half (`LearnerApp`) keeps the progress, the workspace, the GPU flag and the
exercise states as reactive attributes that the screens watch, and runs the
checks. This half opens the screens (the learner half imports none), and owns this
session's claim measurements (`board`): a probe runs in a thread worker of the
app, so leaving the lesson does not lose its result, and every claim card on
screen is told when its claim changes.

First paint comes first: only the course map's own modules are imported when
the app is built; the other screens, the lesson parser, the probes and the
workspace's sync load or run after the map is drawn.
"""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING, Any, ClassVar

from textual.app import App
from textual.binding import Binding, BindingType
from textual.dom import DOMNode
from textual.message import Message
from textual.screen import Screen
from textual.theme import Theme

from gpulab.course import Claim, Course, CourseError, ProgressStore, SearchHit, load_course
from gpulab.course.workspace import Workspace, WorkspaceError
from gpulab.timestamps import utc_now
from gpulab.tui.commands import (
    DayCommands,
    ExerciseCommands,
    GpuCommands,
    LessonCommands,
    ThemeCommands,
)
from gpulab.tui.learner import LearnerApp
from gpulab.tui.messages import (
    MeasureClaim,
    OpenExercise,
    OpenGpu,
    OpenLesson,
    OpenNextExercise,
    OpenSearch,
    ShowMap,
)
from gpulab.tui.screens.course_map import CourseMapScreen, MapTarget
from gpulab.tui.screens.fatal import FatalScreen
from gpulab.tui.state import Keeper

if TYPE_CHECKING:
    from gpulab.probes.model import ProbeResult
    from gpulab.tui.measure import ClaimBoard
    from gpulab.tui.screens.gpu import GpuScreen
    from gpulab.tui.screens.prediction import PredictionScreen
    from gpulab.tui.widgets import ClaimCard

__all__ = ["GpulabApp", "help_sections", "make_app", "run_app"]

DARK, LIGHT = "textual-dark", "textual-light"


def help_sections() -> list[tuple[str, list[type[DOMNode]]]]:
    """The screens (and their main widget) whose keys the help screen lists."""
    from gpulab.tui.screens import (
        ExerciseScreen,
        GpuScreen,
        HelpScreen,
        LessonScreen,
        PredictionScreen,
        SearchScreen,
    )
    from gpulab.tui.widgets import CourseTree, MindmapTree

    return [
        ("Course map", [CourseMapScreen, CourseTree]),
        ("Lesson", [LessonScreen, MindmapTree]),
        ("Exercise", [ExerciseScreen]),
        ("GPU", [GpuScreen]),
        ("Predicting a claim", [PredictionScreen]),
        ("Search", [SearchScreen]),
        ("Help", [HelpScreen]),
        ("Course error", [FatalScreen]),
    ]


class GpulabApp(LearnerApp):
    """The course map, lessons, exercises, the GPU, search and help, over one course."""

    CSS_PATH = "gpulab.tcss"
    TITLE = "gpulab"
    COMMANDS = App.COMMANDS | {LessonCommands, DayCommands, ExerciseCommands, GpuCommands,
                               ThemeCommands}
    HORIZONTAL_BREAKPOINTS = [(0, "-narrow"), (96, "-wide")]  # noqa: RUF012 - App's type
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("question_mark", "help", "Help"),
        Binding("f1", "help", "Help", show=False),
        Binding("q", "quit", "Quit", show=False),
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

    class ProbeReadiness(Message):
        """Whether a claim's probe can run here (`result` None) or why not (its result)."""

        def __init__(self, probe: str, result: ProbeResult | None) -> None:
            super().__init__()
            self.probe = probe
            self.result = result

    def __init__(
        self,
        course: Course | None,
        keeper: Keeper,
        *,
        error: CourseError | None = None,
        nvml_backend: Any = None,
        has_gpu: bool | None = None,
        workspace: Workspace | None = None,
    ) -> None:
        super().__init__(course, keeper, workspace, has_gpu, nvml_backend)
        self.error = error
        """Why the course cannot be read, when it cannot (`course` is None then)."""
        self._board: ClaimBoard | None = None
        self._asked: set[str] = set()    # what each kind of probe needs, asked of this machine

    @property
    def board(self) -> ClaimBoard:
        """This session's claim measurements (made on first use)."""
        if self._board is None:
            from gpulab.tui.measure import ClaimBoard

            self._board = ClaimBoard()
        return self._board

    def get_default_screen(self) -> Screen[None]:
        if self.course is None:
            assert self.error is not None
            return FatalScreen(self.error)
        return CourseMapScreen(self.course, first_run=self.keeper.first_run)

    def on_mount(self) -> None:
        theme = self.progress.theme
        if theme in self.available_themes:
            self.theme = theme
        self.theme_changed_signal.subscribe(self, self._remember_theme)
        if self.keeper.warning:
            self.notify(self.keeper.warning, title="Progress", severity="warning", timeout=10)
        last = self.progress.last_lesson
        if self.course is not None and last in {e.id for e in self.course.entries}:
            self.open_lesson(last)
        self.call_after_refresh(self.sync_workspace)

    def _remember_theme(self, theme: Theme) -> None:
        if self.progress.theme != theme.name:
            self.progress.theme = theme.name
            self.progress_changed(now=True)

    # -- measuring claims ----------------------------------------------------------------------
    def on_claim_card_shown(self, event: ClaimCard.Shown) -> None:
        claim = event.card.claim
        event.card.state = self.board.state(claim, self.progress.predictions)
        self._ask_readiness(claim.probe)

    def _ask_readiness(self, probe: str) -> None:
        """Find out once, in a thread, whether this kind of probe can run here, so that a card
        says why not (and shows the H200's reading) before the learner presses m."""
        from gpulab.tui.measure import probe_needs

        needs = probe_needs(probe)
        if needs in ("", "host") or needs in self._asked:
            return
        self._asked.add(needs)

        def ask() -> None:
            from gpulab.tui.measure import find_out

            try:
                found = find_out(probe, self.nvml_backend)
            except Exception:  # not knowing is an answer: the card waits for m
                found = None
            self.post_message(self.ProbeReadiness(probe, found))

        self.run_worker(ask, thread=True, group="readiness", exit_on_error=False,
                        description=f"can {probe} run here")

    def on_gpulab_app_probe_readiness(self, event: ProbeReadiness) -> None:
        if event.result is not None:
            self._learn(event.result, event.probe)

    def on_gpu_screen_inventoried(self, event: GpuScreen.Inventoried) -> None:
        self._learn(event.result)

    def on_prediction_screen_found_out(self, event: PredictionScreen.FoundOut) -> None:
        if event.cannot is not None:
            self._learn(event.cannot)

    def _learn(self, result: ProbeResult, probe: str = "") -> None:
        """Note what a probe's result says this machine lacks, and redraw the cards of the
        claims it concerns (those of `probe`, and those that cannot be measured here)."""
        self.board.note(result)
        if probe and self.course is not None:
            for claim in self.course.claims.values():
                if claim.probe == probe or self.board.missing(claim):
                    self._refresh_cards(claim)

    def on_measure_claim(self, event: MeasureClaim) -> None:
        self.measure(event.claim, event.predicted)

    def measure(self, claim: Claim, predicted: float | None) -> None:
        """Run a claim's probe in a thread; its card shows "measuring…" until it is done.

        `predicted` is the learner's prediction in the claim's unit (None: no
        prediction); with one, the outcome is saved to the progress.
        """
        if self.board.is_measuring(claim.id):
            self.notify(f"{claim.id} is being measured already.", timeout=3)
            return
        at = utc_now()
        self.board.start(claim.id)
        self._refresh_cards(claim)
        self.run_worker(partial(self._run_claim_probe, claim, predicted, at), thread=True,
                        group="measure", exit_on_error=False,
                        description=f"measure {claim.id} with {claim.probe}")

    def _run_claim_probe(self, claim: Claim, predicted: float | None, at: str) -> None:
        from gpulab.tui.measure import run_probe_for

        result = run_probe_for(claim.probe, self.nvml_backend)
        self.post_message(self.ClaimMeasured(claim, result, predicted, at))

    def on_gpulab_app_claim_measured(self, event: ClaimMeasured) -> None:
        claim, predicted = event.claim, event.predicted
        outcome = self.board.finish(claim, event.result, predicted)
        if predicted is not None:
            self.progress.predictions.append(self.board.prediction(claim, predicted, event.at))
            self.progress_changed(now=True)
        self._refresh_cards(claim)
        if outcome.verdict is not None:
            self.notify(outcome.verdict.text, title=f"Measured {claim.id}", timeout=5,
                        severity="warning" if outcome.verdict.kind == "differs" else "information")
        else:
            self.notify(outcome.problem, title=f"{claim.id}: not measured", timeout=5,
                        severity="warning", markup=False)

    def _refresh_cards(self, claim: Claim) -> None:
        from gpulab.tui.widgets import ClaimCard

        state = self.board.state(claim, self.progress.predictions)
        for screen in self.screen_stack:
            for card in screen.query(ClaimCard):
                if card.claim.id == claim.id:
                    card.state = state

    # -- checks --------------------------------------------------------------------------------
    def on_learner_app_exercise_checked(self, event: LearnerApp.ExerciseChecked) -> None:
        from gpulab.tui.screens import ExerciseScreen

        exercise, report = event.exercise, event.report
        self.record_check(exercise, report, event.at)
        shown = False
        for screen in self.screen_stack:
            if isinstance(screen, ExerciseScreen) and screen.exercise.name == exercise.name:
                screen.show_report(report)
                shown = shown or screen is self.screen
        if not shown:
            self.notify(f"{exercise.name}: {self.exercise_states[exercise.name].plain}",
                        title="Checked", timeout=5)

    # -- where the screens and the palette go ----------------------------------------------------
    def on_open_lesson(self, event: OpenLesson) -> None:
        self.open_lesson(event.lesson_id, event.node_key)

    def on_open_exercise(self, event: OpenExercise) -> None:
        self.open_exercise(event.name, above=event.above)

    def on_open_next_exercise(self, event: OpenNextExercise) -> None:
        self.open_next_exercise(event.after)

    def on_show_map(self, event: ShowMap) -> None:
        self.show_map(day=event.day, lesson=event.lesson, exercise=event.exercise)

    def on_open_search(self, event: OpenSearch) -> None:
        self.open_search(event.lesson_id)

    def on_open_gpu(self, event: OpenGpu) -> None:
        self.open_gpu()

    def open_gpu(self) -> None:
        """Show the GPU screen above the current one."""
        from gpulab.tui.screens import GpuScreen

        if not isinstance(self.screen, GpuScreen):
            self.push_screen(GpuScreen(self.nvml_backend))

    def open_lesson(self, lesson_id: str, key: str | None = None) -> None:
        """Show a lesson (at a node, if given) above the course map; a lesson already open
        below the top screen is returned to."""
        from gpulab.tui.screens import LessonScreen

        if self.course is None:
            return
        stack = self.screen_stack
        for depth, screen in enumerate(reversed(stack[1:])):
            if isinstance(screen, LessonScreen) and screen.lesson_id == lesson_id:
                for _ in range(depth):
                    self.pop_screen()
                if key is not None:
                    screen.reveal(key)
                return
        self._show(LessonScreen(self.course, lesson_id, key,
                                tree_width=self.keeper.tree_width))

    def open_exercise(self, name: str, *, above: bool = False) -> None:
        """Show an exercise above the course map, or `above` the current screen (escape
        then returns to it)."""
        from gpulab.tui.screens import ExerciseScreen

        if self.course is None:
            return
        for exercise in self.course.exercises():
            if exercise.name == name:
                screen = ExerciseScreen(self.course, exercise)
                if above:
                    self.push_screen(screen)
                else:
                    self._show(screen)
                return
        self.notify(f"There is no exercise {name!r}.", severity="warning")

    def open_next_exercise(self, after: str | None = None) -> None:
        """Open the next exercise not passed yet (see `next_unfinished`), or say there is none."""
        exercise = self.next_unfinished(after)
        if exercise is not None:
            self.open_exercise(exercise.name)
            return
        here = next((e for e in self.course.exercises() if e.name == after), None) \
            if self.course is not None else None
        record = self.exercise_record(here) if here is not None else None
        if here is not None and (record is None or not record.passed):
            message = "This is the last exercise you have not passed yet."
        else:
            message = "Every exercise is passed. Well done!"
        if self.gpu_here is False:
            message += " (Those that need an NVIDIA GPU wait for a machine with one.)"
        self.notify(message, title="Next exercise", timeout=6)

    def show_map(self, *, day: int | None = None, lesson: str | None = None,
                 exercise: str | None = None) -> None:
        """Return to the course map, with the cursor on a day, a lesson or an exercise."""
        base = self.screen_stack[0]
        if not isinstance(base, CourseMapScreen):
            return
        target: MapTarget = day if day is not None else lesson
        if exercise is not None:
            target = ("exercise", exercise)
        if len(self.screen_stack) == 1:
            base.go_to(target)
            return
        base.target = target
        while len(self.screen_stack) > 1:
            self.pop_screen()

    def open_search(self, lesson_id: str | None) -> None:
        """Open the search modal; a chosen result opens its lesson at its node."""
        from gpulab.tui.screens import SearchScreen

        if self.course is None:
            return

        def jump(hit: SearchHit | None) -> None:
            if hit is not None:
                self.open_lesson(hit.lesson, hit.key)

        self.push_screen(SearchScreen(self.course, lesson_id), jump)

    def _show(self, screen: Screen[None]) -> None:
        """Show a screen right above the course map, in place of those above it."""
        while len(self.screen_stack) > 2:
            self.pop_screen()
        if len(self.screen_stack) > 1:
            self.switch_screen(screen)
        else:
            self.push_screen(screen)

    # -- actions -------------------------------------------------------------------------------
    def action_help(self) -> None:
        """Show every key of every screen."""
        from gpulab.tui.screens import HelpScreen

        if not isinstance(self.screen, HelpScreen):
            self.push_screen(HelpScreen(help_sections()))

    def action_toggle_theme(self) -> None:
        """Switch between the dark and the light theme (remembered)."""
        self.theme = LIGHT if self.current_theme.dark else DARK


def make_app(
    course: Course | None = None,
    store: ProgressStore | None = None,
    nvml_backend: Any = None,
    has_gpu: bool | None = None,
    workspace: Workspace | None = None,
) -> GpulabApp:
    """Build the app over a course (default: the installed one), a progress store and the
    learner's workspace (default: the one in use, if any).

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
    if workspace is None:
        from gpulab.course.workspace import current_workspace

        try:
            workspace = current_workspace()
        except WorkspaceError:
            workspace = None        # the exercise screens say how to make one
    return GpulabApp(course, Keeper(store or ProgressStore()), error=error,
                     nvml_backend=nvml_backend, has_gpu=has_gpu, workspace=workspace)


def run_app() -> None:
    """Run the app in the terminal until the learner quits."""
    make_app().run()
