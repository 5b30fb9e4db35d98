"""The exercise screen: what the exercise asks for, and its hints on request."""

from __future__ import annotations

from typing import ClassVar

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.widgets import Footer, Header, Static

from gpulab.course import Course, ExerciseEntry
from gpulab.tui.messages import ProgressChanged
from gpulab.tui.screens.base import LabScreen
from gpulab.tui.state import Keeper
from gpulab.tui.widgets import HintList

__all__ = ["ExerciseScreen"]

COMING = ("The notebook and `gpulab check` come with the exercises issue: "
          "for now this screen lists the exercise and its hints.")


class ExerciseScreen(LabScreen):
    """One exercise: its lesson, whether it needs a GPU, its limit, its hints."""

    HELP_GROUP = "Exercise"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "back", "Map"),
        Binding("h", "hint", "Reveal a hint"),
        Binding("l", "lesson", "Open its lesson"),
    ]

    def __init__(self, course: Course, keeper: Keeper, exercise: ExerciseEntry) -> None:
        super().__init__()
        self.course = course
        self.keeper = keeper
        self.exercise = exercise
        self.title = f"Exercise {exercise.name}"
        self.sub_title = self._lesson_title()

    def compose(self) -> ComposeResult:
        yield Header()
        with VerticalScroll(id="exercise-body"):
            yield Static(self._facts(), id="exercise-facts")
            seen = self.keeper.progress.hints.get(self.exercise.name, 0)
            yield HintList(self.exercise.hints, seen, id="hints")
            yield Static(Text(COMING, style="dim italic"), id="exercise-coming")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#exercise-facts", Static).border_title = "✎ exercise"
        self.query_one(HintList).border_title = "hints"

    def _lesson_title(self) -> str:
        try:
            return self.course.entry(self.exercise.lesson).title
        except KeyError:
            return self.exercise.lesson

    def _facts(self) -> Table:
        exercise = self.exercise
        grid = Table.grid(padding=(0, 2))
        grid.add_column(style="dim", no_wrap=True)
        grid.add_column()
        grid.add_row("name", Text(exercise.name, style="bold"))
        grid.add_row("lesson", self._lesson_title())
        gpu = Text("needs an NVIDIA GPU", style="bold yellow") if exercise.gpu else Text(
            "runs on the CPU", style="green")
        grid.add_row("runs on", gpu)
        grid.add_row("time limit", f"{exercise.time_limit} s")
        grid.add_row("status", Text("not started", style="italic"))
        return grid

    def action_back(self) -> None:
        self.lab.show_map()

    def action_lesson(self) -> None:
        self.lab.open_lesson(self.exercise.lesson)

    def action_hint(self) -> None:
        hints = self.query_one(HintList)
        if hints.revealed >= len(self.exercise.hints):
            self.notify("No more hints for this exercise.", timeout=3)
            return
        hints.revealed += 1
        self.keeper.progress.hints[self.exercise.name] = hints.revealed
        self.post_message(ProgressChanged(now=True))
