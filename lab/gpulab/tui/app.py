"""The gpulab app: built by `make_app`, started by `run_app` (``gpulab`` with no arguments).

The app owns the course and the learner's progress; screens get both when they
are made and send `ProgressChanged` up when they change the progress. The app
saves a second after the last change, at once when a screen is left or a hint
is revealed, and on exit.
"""

from __future__ import annotations

from typing import ClassVar

from textual.app import App
from textual.binding import Binding, BindingType
from textual.dom import DOMNode
from textual.screen import Screen
from textual.theme import Theme
from textual.timer import Timer

from gpulab.course import Course, CourseError, ProgressStore, SearchHit, load_course
from gpulab.tui.commands import DayCommands, ExerciseCommands, LessonCommands, ThemeCommands
from gpulab.tui.messages import ProgressChanged
from gpulab.tui.screens import (
    CourseMapScreen,
    ExerciseScreen,
    FatalScreen,
    HelpScreen,
    LessonScreen,
    SearchScreen,
)
from gpulab.tui.state import Keeper
from gpulab.tui.widgets import CourseTree, MindmapTree

__all__ = ["GpulabApp", "make_app", "run_app"]

DARK, LIGHT = "textual-dark", "textual-light"
SAVE_DELAY = 1.0
"""Seconds after the last change before the progress is written."""

HELP_GROUPS: list[tuple[str, list[type[DOMNode]]]] = [
    ("Course map", [CourseMapScreen, CourseTree]),
    ("Lesson", [LessonScreen, MindmapTree]),
    ("Exercise", [ExerciseScreen]),
    ("Search", [SearchScreen]),
    ("Help", [HelpScreen]),
    ("Course error", [FatalScreen]),
]
"""The screens (and their main widget) whose keys the help screen lists."""


class GpulabApp(App[None]):
    """The course map, lessons, exercises, search and help, over one course."""

    CSS_PATH = "gpulab.tcss"
    TITLE = "gpulab"
    COMMANDS = App.COMMANDS | {LessonCommands, DayCommands, ExerciseCommands, ThemeCommands}
    HORIZONTAL_BREAKPOINTS = [(0, "-narrow"), (96, "-wide")]  # noqa: RUF012 - App's type
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("question_mark", "help", "Help"),
        Binding("f1", "help", "Help", show=False),
    ]

    def __init__(
        self,
        course: Course | None,
        keeper: Keeper,
        *,
        error: CourseError | None = None,
        gpu: object | None = None,
    ) -> None:
        super().__init__()
        self.course = course
        self.keeper = keeper
        self.error = error
        self.gpu = gpu
        """The GPU to probe; kept for the probes issue, not shown yet."""
        self._save_timer: Timer | None = None

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

    def _remember_theme(self, theme: Theme) -> None:
        if self.keeper.progress.theme != theme.name:
            self.keeper.progress.theme = theme.name
            self.post_message(ProgressChanged(now=True))

    # -- navigation, used by screens and the command palette -----------------
    def open_lesson(self, lesson_id: str, key: str | None = None) -> None:
        """Show a lesson (at a node, if given) above the course map."""
        if self.course is None:
            return
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
) -> GpulabApp:
    """Build the app over a course (default: the installed one) and a progress store.

    A course that cannot be read gives an app that shows why, instead of raising.
    """
    error: CourseError | None = None
    if course is None:
        try:
            course = load_course()
        except CourseError as exc:
            error = exc
    return GpulabApp(course, Keeper(store or ProgressStore()), error=error, gpu=gpu)


def run_app() -> None:
    """Run the app in the terminal until the learner quits."""
    make_app().run()
