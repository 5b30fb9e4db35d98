"""Where the screens go: which screen opens above which, and what escape returns to.

`Navigator` is one of the parts the app (`gpulab.tui.app.GpulabApp`) is
composed of. Screens never call it: they post `OpenLesson`, `OpenExercise`,
`ShowMap`, ... (`gpulab.tui.messages`), and the app's handlers call it. The
course map is always the bottom screen; a lesson or an exercise opens right
above it, in place of whatever was there (so escape returns to the map), or
`above` the current screen where the learner came from a lesson; the figures,
the GPU, search and help open above whatever is shown.

Screens are imported when first opened, never before first paint.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from gpulab.tui.lab import as_lab

if TYPE_CHECKING:
    from textual.app import App
    from textual.dom import DOMNode
    from textual.screen import Screen

    from gpulab.course import SearchHit
    from gpulab.tui.learner import Learner
    from gpulab.tui.screens.course_map import MapTarget

__all__ = ["Navigator", "help_sections"]


class Navigator:
    """Opens the app's screens (see the module's docstring); one per app."""

    def __init__(self, app: App[Any], learner: Learner) -> None:
        self._app = app
        self._lab = as_lab(app)
        self._learner = learner

    def open_lesson(self, lesson_id: str, key: str | None = None) -> None:
        """Show a lesson (at a node, if given) above the course map; a lesson already open
        below the top screen is returned to."""
        from gpulab.tui.screens import LessonScreen

        app = self._app
        if self._lab.course is None:
            return
        stack = app.screen_stack
        for depth, screen in enumerate(reversed(stack[1:])):
            if isinstance(screen, LessonScreen) and screen.lesson_id == lesson_id:
                for _ in range(depth):
                    app.pop_screen()
                if key is not None:
                    screen.reveal(key)
                return
        self._show(
            LessonScreen(self._lab.course, lesson_id, key, tree_width=self._lab.keeper.tree_width)
        )

    def open_exercise(self, name: str, *, above: bool = False) -> None:
        """Show an exercise above the course map, or `above` the current screen (escape
        then returns to it)."""
        from gpulab.course.catalog import UnknownExercise
        from gpulab.tui.screens import ExerciseScreen

        app = self._app
        if self._lab.course is None:
            return
        try:
            exercise = self._lab.course.exercise(name)
        except UnknownExercise as exc:
            first = str(exc).splitlines()[0]  # the list of every exercise is for a shell
            app.notify(first[0].upper() + first[1:] + ".", severity="warning", markup=False)
            return
        screen = ExerciseScreen(self._lab.course, exercise)
        if above:
            app.push_screen(screen)
        else:
            self._show(screen)

    def open_next_exercise(self, after: str | None = None) -> None:
        """Open the next exercise not passed yet (`Learner.next_unfinished`), or say there is
        none."""
        app = self._app
        exercise = self._learner.next_unfinished(after)
        if exercise is not None:
            self.open_exercise(exercise.name)
            return
        here = (
            next((e for e in self._lab.course.exercises() if e.name == after), None)
            if self._lab.course is not None
            else None
        )
        record = self._learner.exercise_record(here) if here is not None else None
        if here is not None and (record is None or not record.passed):
            message = "This is the last exercise you have not passed yet."
        else:
            message = "Every exercise is passed. Well done!"
        if self._lab.gpu_here is False:
            message += " (Those that need an NVIDIA GPU wait for a machine with one.)"
        app.notify(message, title="Next exercise", timeout=6)

    def show_map(
        self, *, day: int | None = None, lesson: str | None = None, exercise: str | None = None
    ) -> None:
        """Return to the course map, with the cursor on a day, a lesson or an exercise."""
        from gpulab.tui.screens.course_map import CourseMapScreen

        app = self._app
        base = app.screen_stack[0]
        if not isinstance(base, CourseMapScreen):
            return
        target: MapTarget = day if day is not None else lesson
        if exercise is not None:
            target = ("exercise", exercise)
        if len(app.screen_stack) == 1:
            base.go_to(target)
            return
        base.target = target
        while len(app.screen_stack) > 1:
            app.pop_screen()

    def open_search(self, lesson_id: str | None) -> None:
        """Open the search modal; a chosen result opens its lesson at its node."""
        from gpulab.tui.screens import SearchScreen

        if self._lab.course is None:
            return

        def jump(hit: SearchHit | None) -> None:
            if hit is not None:
                self.open_lesson(hit.lesson, hit.key)

        self._app.push_screen(SearchScreen(self._lab.course, lesson_id), jump)

    def open_figures(self, figure_id: str | None = None) -> None:
        """Show the figures above the current screen, at a figure if given (the one shown
        already is moved to it)."""
        from gpulab.tui.screens import FiguresScreen

        app = self._app
        if self._lab.course is None:
            return
        if isinstance(app.screen, FiguresScreen):
            if figure_id is not None:
                app.screen.select(figure_id)
            return
        app.push_screen(FiguresScreen(self._lab.course, figure_id))

    def open_gpu(self) -> None:
        """Show the GPU screen above the current one."""
        from gpulab.tui.screens import GpuScreen

        if not isinstance(self._app.screen, GpuScreen):
            self._app.push_screen(GpuScreen(self._lab.nvml_backend))

    def open_help(self) -> None:
        """Show every key of every screen above the current one."""
        from gpulab.tui.screens import HelpScreen

        if not isinstance(self._app.screen, HelpScreen):
            self._app.push_screen(HelpScreen(help_sections()))

    def _show(self, screen: Screen[None]) -> None:
        """Show a screen right above the course map, in place of those above it."""
        app = self._app
        while len(app.screen_stack) > 2:
            app.pop_screen()
        if len(app.screen_stack) > 1:
            app.switch_screen(screen)
        else:
            app.push_screen(screen)


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
    from gpulab.tui.screens.course_map import CourseMapScreen
    from gpulab.tui.screens.fatal import FatalScreen
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
