"""Command palette (ctrl+p) providers: lessons, days, exercises, the GPU and the theme."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from functools import partial
from typing import TYPE_CHECKING, cast

from textual.command import DiscoveryHit, Hit, Hits, Provider

if TYPE_CHECKING:
    from gpulab.tui.app import GpulabApp

__all__ = ["DayCommands", "ExerciseCommands", "GpuCommands", "LessonCommands", "ThemeCommands"]

Command = tuple[str, str, Callable[[], object]]
"""A palette entry: its text, its help line, and what it does."""


class _LabProvider(Provider):
    """A provider whose commands are a plain list, matched fuzzily."""

    @property
    def lab(self) -> GpulabApp:
        return cast("GpulabApp", self.app)

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
        lab = self.lab
        if lab.course is None:
            return
        for entry in lab.course.entries:
            yield (f"Go to lesson: {entry.title}", f"day {entry.day} · {entry.id}",
                   partial(lab.open_lesson, entry.id))


class DayCommands(_LabProvider):
    """Go to day N on the course map."""

    def commands(self) -> Iterator[Command]:
        lab = self.lab
        if lab.course is None:
            return
        for day, entries in lab.course.days():
            titles = ", ".join(e.title for e in entries)
            yield f"Go to day {day}", titles, partial(lab.show_map, day=day)


class ExerciseCommands(_LabProvider):
    """Open an exercise."""

    def commands(self) -> Iterator[Command]:
        lab = self.lab
        if lab.course is None:
            return
        for exercise in lab.course.exercises():
            where = "needs GPU" if exercise.gpu else "CPU"
            state = lab.exercise_state(exercise).plain
            yield (f"Open exercise: {exercise.name}", f"{exercise.lesson} · {where} · {state}",
                   partial(lab.open_exercise, exercise.name))


class GpuCommands(_LabProvider):
    """Open the GPU screen."""

    def commands(self) -> Iterator[Command]:
        lab = self.lab
        yield ("GPU", "the GPU's inventory and its clocks, power and load, live (key g)",
               lab.open_gpu)


class ThemeCommands(_LabProvider):
    """Switch between the dark and the light theme."""

    def commands(self) -> Iterator[Command]:
        lab = self.lab
        yield ("Toggle theme (dark/light)", f"now {lab.theme}; remembered for next time",
               lab.action_toggle_theme)
