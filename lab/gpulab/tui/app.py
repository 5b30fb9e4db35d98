"""The gpulab app: built by `make_app`, started by `run_app` (``gpulab`` with no arguments).

Screens never call the app: they post the messages of `gpulab.tui.messages`
(`OpenLesson`, `ShowMap`, `MeasureClaim`, ...), and the app's ``on_*`` handlers
open the screens and start the work. The app is built in layers. At the
base, `gpulab.tui.results.ResultsApp` keeps the learner's probe results (saved
ones of this machine, loaded after first paint, and this session's) and the
figures drawn from them; `gpulab.tui.gpu_here.GpuHereApp` finds out, after
first paint, whether this machine has a GPU; the learner layer
(`gpulab.tui.learner.LearnerApp`)
keeps the progress, the workspace, the GPU flag and the exercise states as
reactive attributes that the screens watch, and runs the checks; the claim
layer (`gpulab.tui.claims.ClaimsApp`) measures claims and tells their cards;
this top layer opens the screens (the others import none).

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
from textual.screen import Screen
from textual.theme import Theme

from gpulab.course import Course, CourseError, ProgressStore, SearchHit, load_course
from gpulab.course.workspace import Workspace, WorkspaceError
from gpulab.tui.claims import ClaimsApp
from gpulab.tui.clipboard import in_tmux, to_tmux
from gpulab.tui.commands import (
    DayCommands,
    ExerciseCommands,
    FigureCommands,
    GpuCommands,
    LessonCommands,
    ThemeCommands,
)
from gpulab.tui.learner import LearnerApp
from gpulab.tui.messages import (
    OpenExercise,
    OpenFigures,
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
    from gpulab.tui.screens import ExerciseScreen

__all__ = ["GpulabApp", "help_sections", "make_app", "run_app"]

DARK, LIGHT = "textual-dark", "textual-light"


def help_sections() -> list[tuple[str, list[type[DOMNode]]]]:
    """The screens (and their main widget) whose keys the help screen lists."""
    from gpulab.tui.screens import (
        ExerciseScreen,
        FiguresScreen,
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
        ("Figures", [FiguresScreen]),
        ("GPU", [GpuScreen]),
        ("Predicting a claim", [PredictionScreen]),
        ("Search", [SearchScreen]),
        ("Help", [HelpScreen]),
        ("Course error", [FatalScreen]),
    ]


class GpulabApp(ClaimsApp):
    """The course map, lessons, exercises, figures, the GPU, search and help, over one
    course."""

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
        self.jupyterlab_url = ""
        """The address (with its token) of the last notebook opened in JupyterLab, if any:
        the server runs on when the app ends, and `farewell` says where."""

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
            self.notify(
                f"{exercise.name}: {self.exercise_states[exercise.name].plain}",
                title="Checked",
                timeout=5,
            )

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

    def on_open_figures(self, event: OpenFigures) -> None:
        self.open_figures(event.figure_id)

    def open_figures(self, figure_id: str | None = None) -> None:
        """Show the figures above the current screen, at a figure if given (the one shown
        already is moved to it)."""
        from gpulab.tui.screens import FiguresScreen

        if self.course is None:
            return
        if isinstance(self.screen, FiguresScreen):
            if figure_id is not None:
                self.screen.select(figure_id)
            return
        self.push_screen(FiguresScreen(self.course, figure_id))

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
        self._show(LessonScreen(self.course, lesson_id, key, tree_width=self.keeper.tree_width))

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
        here = (
            next((e for e in self.course.exercises() if e.name == after), None)
            if self.course is not None
            else None
        )
        record = self.exercise_record(here) if here is not None else None
        if here is not None and (record is None or not record.passed):
            message = "This is the last exercise you have not passed yet."
        else:
            message = "Every exercise is passed. Well done!"
        if self.gpu_here is False:
            message += " (Those that need an NVIDIA GPU wait for a machine with one.)"
        self.notify(message, title="Next exercise", timeout=6)

    def show_map(
        self, *, day: int | None = None, lesson: str | None = None, exercise: str | None = None
    ) -> None:
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
