"""Command palette (ctrl+p) providers: lessons, days, exercises, figures, the GPU and the
theme.

A command reads the course and the exercise states from the app (as a `Lab`)
and, when chosen, posts the app the same message a screen would (`OpenLesson`,
`ShowMap`, `OpenExercise`, `OpenFigures`, `OpenGpu`), or runs an app action.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from functools import partial

from textual.command import DiscoveryHit, Hit, Hits, Provider
from textual.message import Message

from gpulab.tui.lab import Lab, as_lab
from gpulab.tui.messages import OpenExercise, OpenFigures, OpenGpu, OpenLesson, ShowMap

__all__ = [
    "DayCommands",
    "ExerciseCommands",
    "FigureCommands",
    "GpuCommands",
    "LessonCommands",
    "ThemeCommands",
]

Command = tuple[str, str, Callable[[], object]]
"""A palette entry: its text, its help line, and what it does."""


class _LabProvider(Provider):
    """A provider whose commands are a plain list, matched fuzzily."""

    @property
    def lab(self) -> Lab:
        """The running app as gpulab's state (`Lab`)."""
        return as_lab(self.app)

    def send(self, message: Message) -> Callable[[], object]:
        """A command that posts `message` to the app."""
        return partial(self.app.post_message, message)

    def commands(self) -> Iterator[Command]:
        raise NotImplementedError

    async def discover(self) -> Hits:
        for text, help_text, action in self.commands():
            yield DiscoveryHit(text, action, help=help_text)

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        for text, help_text, action in self.commands():
            score = matcher.match(text)
            if score > 0:
                yield Hit(score, matcher.highlight(text), action, text=text, help=help_text)


class LessonCommands(_LabProvider):
    """Go to a lesson."""

    def commands(self) -> Iterator[Command]:
        course = self.lab.course
        if course is None:
            return
        for entry in course.entries:
            yield (
                f"Go to lesson: {entry.title}",
                f"day {entry.day} · {entry.id}",
                self.send(OpenLesson(entry.id)),
            )


class DayCommands(_LabProvider):
    """Go to day N on the course map."""

    def commands(self) -> Iterator[Command]:
        course = self.lab.course
        if course is None:
            return
        for day, entries in course.days():
            titles = ", ".join(e.title for e in entries)
            yield f"Go to day {day}", titles, self.send(ShowMap(day=day))


class ExerciseCommands(_LabProvider):
    """Open an exercise."""

    def commands(self) -> Iterator[Command]:
        lab = self.lab
        if lab.course is None:
            return
        states = lab.exercise_states
        for exercise in lab.course.exercises():
            where = "needs GPU" if exercise.gpu else "CPU"
            state = states[exercise.name].plain if exercise.name in states else ""
            yield (
                f"Open exercise: {exercise.name}",
                f"{exercise.lesson} · {where} · {state}",
                self.send(OpenExercise(exercise.name)),
            )


class FigureCommands(_LabProvider):
    """Open the figures, or one figure."""

    async def startup(self) -> None:
        from gpulab.figures import DIAGRAMS, FIGURES  # when the palette opens, not before

        self._titles = {figure.id: f"Figure: {figure.title}" for figure in FIGURES.values()}
        self._titles.update((d.id, f"Diagram: {d.title}") for d in DIAGRAMS.values())

    def commands(self) -> Iterator[Command]:
        if self.lab.course is None:
            return
        yield (
            "Figures",
            "every figure and diagram of the course, drawn from probe data and "
            "datasheets (key f in a lesson)",
            self.send(OpenFigures()),
        )
        for figure_id, title in self._titles.items():
            yield title, figure_id, self.send(OpenFigures(figure_id))


class GpuCommands(_LabProvider):
    """Open the GPU screen."""

    def commands(self) -> Iterator[Command]:
        yield (
            "GPU",
            "the GPU's inventory and its clocks, power and load, live (key g)",
            self.send(OpenGpu()),
        )


class ThemeCommands(_LabProvider):
    """Switch between the dark and the light theme."""

    def commands(self) -> Iterator[Command]:
        yield (
            "Toggle theme (dark/light)",
            f"now {self.app.theme}; remembered for next time",
            partial(self.app.run_action, "toggle_theme"),
        )
