"""The gpulab app: built by `make_app`, started by `run_app` (``gpulab`` with no arguments).

`GpulabApp` is one Textual `App` composed of parts, each a plain object made
with the app (as Textual's own `App` holds its `WorkerManager` and `Animator`):

- `gpulab.tui.learner.Learner`: the learner's progress saved and taken in, their
  workspace, their checks, and whether this machine has a GPU;
- `gpulab.tui.results.SavedResults`: their probe results saved and read back,
  and the figures drawn from them;
- `gpulab.tui.claims.Claims`: this session's claim measurements and the cards
  that show them;
- `gpulab.tui.navigation.Navigator`: which screen opens above which.

The state the screens draw is the app's own: reactive attributes (`progress`,
`workspace`, `gpu_here`, `checking`, `exercise_states`, `measured`) that
screens read as `lab` (a `gpulab.tui.lab.Lab`) and watch. Screens never call the app:
they post the messages of `gpulab.tui.messages` (`OpenLesson`,
`CheckExercise`, `MeasureClaim`, ...), and the ``on_*`` handlers here hand the
work to a part. A part's thread worker reports back by message too
(`ExerciseChecked`, `ClaimMeasured`, ...), and its handler sits here beside
the one that started the work: a check is started, recorded and shown in
three lines of this module.

First paint comes first: only the course map's own modules are imported when
the app is built; the other screens, the lesson parser, the probes and the
workspace's sync load or run after the map is drawn.
"""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING, Any, ClassVar

from textual import events
from textual.app import App
from textual.binding import Binding, BindingType
from textual.reactive import var
from textual.screen import Screen
from textual.theme import Theme

from gpulab.course import Course, CourseError, Progress, ProgressStore, load_course
from gpulab.course.workspace import Workspace, WorkspaceError
from gpulab.tui.claims import Claims
from gpulab.tui.clipboard import in_tmux, to_tmux
from gpulab.tui.commands import (
    DayCommands,
    ExerciseCommands,
    FigureCommands,
    GpuCommands,
    LessonCommands,
    ThemeCommands,
)
from gpulab.tui.lab import ExerciseStates, Lab
from gpulab.tui.learner import POLL_INTERVAL, Learner
from gpulab.tui.messages import (
    CheckExercise,
    ClaimMeasured,
    ExerciseChecked,
    FindGpu,
    FoldsChanged,
    GpuFound,
    HintRevealed,
    LessonOpened,
    MeasureClaim,
    NodeVisited,
    OpenExercise,
    OpenFigures,
    OpenGpu,
    OpenLesson,
    OpenNextExercise,
    OpenSearch,
    ProbeReadiness,
    ResultNotSaved,
    SavedResultsRead,
    ShowMap,
    TreeWidthChanged,
    WorkspaceSynced,
)
from gpulab.tui.navigation import Navigator
from gpulab.tui.results import SavedResults
from gpulab.tui.state import Keeper

if TYPE_CHECKING:
    from gpulab.course import ExerciseEntry
    from gpulab.course.progress import ExerciseRecord
    from gpulab.figures import FigureData
    from gpulab.tui.figures import Measured
    from gpulab.tui.screens import ExerciseScreen
    from gpulab.tui.screens.gpu import GpuScreen
    from gpulab.tui.screens.prediction import PredictionScreen
    from gpulab.tui.widgets import ClaimCard

__all__ = ["GpulabApp", "make_app", "run_app"]

DARK, LIGHT = "textual-dark", "textual-light"


class GpulabApp(App[None]):
    """The course map, lessons, exercises, figures, the GPU, search and help, over one
    course (see the module's docstring)."""

    CSS_PATH = "gpulab.tcss"
    TITLE = "gpulab"
    COMMANDS = App.COMMANDS | {
        LessonCommands,
        DayCommands,
        ExerciseCommands,
        FigureCommands,
        GpuCommands,
        ThemeCommands,
    }
    HORIZONTAL_BREAKPOINTS = [(0, "-narrow"), (96, "-wide")]  # noqa: RUF012 - App's type
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("question_mark", "help", "Help"),
        Binding("f1", "help", "Help", show=False),
        Binding("q", "quit", "Quit", show=False),
    ]

    progress: var[Progress] = var(Progress, init=False)
    """The learner's progress, as the keeper loaded it. Only the app's handlers change it
    (screens ask by message), in place, and then call `Learner.changed`."""
    workspace: var[Workspace | None] = var(None, init=False)
    """The learner's workspace (their notebooks), or None before ``gpulab init``."""
    gpu_here: var[bool | None] = var(None, init=False)
    """Whether this machine has an NVIDIA GPU: None until known (see `FindGpu`)."""
    checking: var[frozenset[str]] = var(frozenset(), init=False)
    """The names of the exercises whose checks are running now."""
    exercise_states: var[ExerciseStates] = var(dict, init=False)
    """Where the learner stands on each exercise, as every list of exercises shows it
    ("checking…" while its checks run); set from the progress, the workspace, `gpu_here`
    and `checking` whenever one changes."""
    measured: var[Measured] = var(dict, init=False)
    """The learner's own probe results on this machine, by probe (those that ran, never a
    recording): saved ones and this session's; replaced, never changed in place, when one
    comes in."""

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
        super().__init__()
        self.course = course
        """The course, or None when it cannot be read (`error` says why)."""
        self.error = error
        """Why the course cannot be read, when it cannot."""
        self.keeper = keeper
        """Loads and saves the progress, and keeps the app's look (the tree's width)."""
        self.nvml_backend = nvml_backend
        """What NVML calls go through: None for the real library, or a stand-in with
        pynvml's functions (a `gpulab.probes.nvml.Replay` in tests)."""
        self.jupyterlab_url = ""
        """The address (with its token) of the last notebook opened in JupyterLab, if any:
        the server runs on when the app ends, and `farewell` says where."""
        self.learner = Learner(self)
        self.results = SavedResults(self)
        self.claims = Claims(self)
        self.navigator = Navigator(self, self.learner)
        self.set_reactive(GpulabApp.progress, keeper.progress)
        self.set_reactive(GpulabApp.workspace, workspace)
        self.set_reactive(GpulabApp.gpu_here, has_gpu)
        self.set_reactive(GpulabApp.exercise_states, self.learner.states())

    def get_default_screen(self) -> Screen[None]:
        if self.course is None:
            from gpulab.tui.screens.fatal import FatalScreen

            assert self.error is not None
            return FatalScreen(self.error)
        from gpulab.tui.screens.course_map import CourseMapScreen

        return CourseMapScreen(self.course, first_run=self.keeper.first_run)

    def on_mount(self) -> None:
        theme = self.progress.theme
        if theme in self.available_themes:
            self.theme = theme
        self.theme_changed_signal.subscribe(self, self._remember_theme)
        self.screen_change_signal.subscribe(self, self._screen_changed)
        self.set_interval(
            POLL_INTERVAL,
            partial(self.learner.take_in_saved, if_file_changed=True),
            name="look for saved progress",
        )
        if self.keeper.warning:
            self.notify(self.keeper.warning, title="Progress", severity="warning", timeout=10)
        last = self.progress.last_lesson
        if self.course is not None and last in {e.id for e in self.course.entries}:
            self.navigator.open_lesson(last)
        self.call_after_refresh(self.learner.sync_workspace)
        self.call_after_refresh(self.results.read)

    def on_unmount(self) -> None:
        self.learner.save()

    def on_app_focus(self, event: events.AppFocus) -> None:
        # `gpulab init`, or a check in the notebook or the shell, while we were away
        self.learner.find_workspace()
        self.learner.take_in_saved()

    def _screen_changed(self, screen: Screen[Any]) -> None:
        """A screen was opened, left or returned to: save what was read there, take in
        what was saved elsewhere, and look for a workspace made meanwhile."""
        self.learner.find_workspace()
        self.learner.take_in_saved()
        self.learner.save()

    def _remember_theme(self, theme: Theme) -> None:
        if self.progress.theme != theme.name:
            self.progress.theme = theme.name
            self.learner.changed(now=True)

    # A computed reactive (`compute_exercise_states`) would call its watchers on every
    # read, so a screen that reads the states while drawing them would loop: the states
    # are set instead, and their watchers run only when they differ.
    def watch_progress(self) -> None:
        self.exercise_states = self.learner.states()

    def watch_workspace(self) -> None:
        self.exercise_states = self.learner.states()

    def watch_gpu_here(self) -> None:
        self.exercise_states = self.learner.states()

    def watch_checking(self) -> None:
        self.exercise_states = self.learner.states()

    # -- what the learner did: kept in the progress --------------------------------------------
    def on_lesson_opened(self, event: LessonOpened) -> None:
        self.progress.last_lesson = event.lesson_id
        self.learner.changed()

    def on_node_visited(self, event: NodeVisited) -> None:
        self.progress.lesson(event.lesson_id).selected = event.key
        self.progress.visit(event.lesson_id, event.key)
        self.learner.changed()

    def on_folds_changed(self, event: FoldsChanged) -> None:
        self.progress.lesson(event.lesson_id).expanded = event.expanded
        self.learner.changed()

    def on_hint_revealed(self, event: HintRevealed) -> None:
        self.progress.hints[event.exercise] = event.revealed
        self.learner.changed(now=True)

    def on_tree_width_changed(self, event: TreeWidthChanged) -> None:
        self.keeper.tree_width = event.percent

    # -- checks: started, recorded, shown ------------------------------------------------------
    def on_check_exercise(self, event: CheckExercise) -> None:
        self.learner.check(event.exercise)

    def on_exercise_checked(self, event: ExerciseChecked) -> None:
        from gpulab.tui.screens import ExerciseScreen

        self.learner.record(event)
        exercise, shown = event.exercise, False
        for screen in self.screen_stack:
            if isinstance(screen, ExerciseScreen) and screen.exercise.name == exercise.name:
                screen.show_report(event.report)
                shown = shown or screen is self.screen
        if not shown:
            self.notify(
                f"{exercise.name}: {self.exercise_states[exercise.name].plain}",
                title="Checked",
                timeout=5,
            )

    def on_workspace_synced(self, event: WorkspaceSynced) -> None:
        self.learner.synced(event)

    def on_find_gpu(self, event: FindGpu) -> None:
        self.learner.find_gpu()

    def on_gpu_found(self, event: GpuFound) -> None:
        self.gpu_here = event.present

    # -- probe results and claims --------------------------------------------------------------
    def on_saved_results_read(self, event: SavedResultsRead) -> None:
        self.results.took_in(event)

    def on_result_not_saved(self, event: ResultNotSaved) -> None:
        self.results.not_saved(event)

    def on_claim_card_shown(self, event: ClaimCard.Shown) -> None:
        self.claims.shown(event.card)

    def on_probe_readiness(self, event: ProbeReadiness) -> None:
        if event.result is not None:
            self.claims.learn(event.result, event.probe)

    def on_measure_claim(self, event: MeasureClaim) -> None:
        self.claims.measure(event.claim, event.predicted)

    def on_claim_measured(self, event: ClaimMeasured) -> None:
        if self.claims.measured(event):  # a prediction was kept: saved at once
            self.learner.changed(now=True)
        self.results.keep(event.result)

    def on_gpu_screen_inventoried(self, event: GpuScreen.Inventoried) -> None:
        self.claims.learn(event.result)
        self.results.keep(event.result)

    def on_prediction_screen_found_out(self, event: PredictionScreen.FoundOut) -> None:
        if event.cannot is not None:
            self.claims.learn(event.cannot)

    # -- what the screens ask (`Lab`) ----------------------------------------------------------
    def figure(self, figure_id: str) -> FigureData:
        """A figure, drawn from the learner's results where they cover it
        (`SavedResults.figure`)."""
        return self.results.figure(figure_id)

    def exercise_record(self, exercise: ExerciseEntry) -> ExerciseRecord | None:
        """The last check of an exercise in the learner's workspace (`Learner.exercise_record`)."""
        return self.learner.exercise_record(exercise)

    # -- where the screens and the palette go --------------------------------------------------
    def on_open_lesson(self, event: OpenLesson) -> None:
        self.navigator.open_lesson(event.lesson_id, event.node_key)

    def on_open_exercise(self, event: OpenExercise) -> None:
        self.navigator.open_exercise(event.name, above=event.above)

    def on_open_next_exercise(self, event: OpenNextExercise) -> None:
        self.navigator.open_next_exercise(event.after)

    def on_show_map(self, event: ShowMap) -> None:
        self.navigator.show_map(day=event.day, lesson=event.lesson, exercise=event.exercise)

    def on_open_search(self, event: OpenSearch) -> None:
        self.navigator.open_search(event.lesson_id)

    def on_open_gpu(self, event: OpenGpu) -> None:
        self.navigator.open_gpu()

    def on_open_figures(self, event: OpenFigures) -> None:
        self.navigator.open_figures(event.figure_id)

    def action_help(self) -> None:
        """Show every key of every screen."""
        self.navigator.open_help()

    def action_toggle_theme(self) -> None:
        """Switch between the dark and the light theme (remembered)."""
        self.theme = LIGHT if self.current_theme.dark else DARK

    # -- JupyterLab and the clipboard ----------------------------------------------------------
    def on_exercise_screen_jupyter_lab_opened(self, event: ExerciseScreen.JupyterLabOpened) -> None:
        if event.url:
            self.jupyterlab_url = event.url

    def farewell(self) -> list[str]:
        """What to print once the app has left the screen: the address of the JupyterLab
        opened in it, if it still runs, on a line of its own (a terminal's or tmux's
        selection takes it whole, as it may not inside the app's box)."""
        if not self.jupyterlab_url or self.workspace is None:
            return []
        from gpulab.grading.learn.jupyter import running_server

        server = running_server(self.workspace)
        if server is None:  # stopped meanwhile (`gpulab open --stop` in a shell)
            return []
        fresh = f"token={server.token}" in self.jupyterlab_url  # not started again since
        return [
            "JupyterLab runs on for your workspace (stop it with: gpulab open --stop); its "
            "address:",
            self.jupyterlab_url if fresh else server.url(),
        ]

    def copy_to_clipboard(self, text: str) -> None:
        """Copy `text` with the terminal's clipboard sequence (OSC 52) and, inside tmux, into
        tmux's paste buffer too (`gpulab.tui.clipboard`: tmux drops OSC 52 by default)."""
        super().copy_to_clipboard(text)
        if in_tmux():
            self.run_worker(
                partial(self._copy_to_tmux, text),
                thread=True,
                group="tmux-buffer",
                exit_on_error=False,
                description="copy into tmux's paste buffer",
            )

    def _copy_to_tmux(self, text: str) -> None:
        problem = to_tmux(text)
        if problem is not None:
            self.call_from_thread(
                self.notify,
                f"tmux did not take the copy: {problem}",
                title="Copy",
                severity="warning",
                timeout=8,
            )


def _is_a_lab(app: GpulabApp) -> Lab:
    """Never called: mypy checks here that the app is what its screens and parts take it for."""
    return app


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
            workspace = None  # the exercise screens say how to make one
    return GpulabApp(
        course,
        Keeper(store or ProgressStore()),
        error=error,
        nvml_backend=nvml_backend,
        has_gpu=has_gpu,
        workspace=workspace,
    )


def run_app() -> None:
    """Run the app in the terminal until the learner quits; then print its farewell."""
    app = make_app()
    app.run()
    for line in app.farewell():
        print(line)
