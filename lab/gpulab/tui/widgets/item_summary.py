"""The course map's side panel: what the highlighted day, lesson or exercise holds."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.console import Group, RenderableType
from rich.text import Text
from textual.widgets import Static

from gpulab.course.paths import CoursePaths
from gpulab.tui.text import problem_text, progress_bar

if TYPE_CHECKING:
    from gpulab.course import ExerciseEntry, Lesson, LessonEntry, Problem

__all__ = ["ItemSummary"]


class ItemSummary(Static):
    """A short description of the map item under the cursor."""

    def show_day(self, day: int, entries: list[LessonEntry]) -> None:
        """Summarise a day: its lessons."""
        text = Text(f"Day {day}\n\n", style="bold")
        for entry in entries:
            text.append("• ")
            text.append(entry.title)
            text.append("\n")
        text.append("\nenter folds or unfolds the day", style="dim")
        self.border_title = f"Day {day}"
        self.update(text)

    def show_lesson(
        self,
        entry: LessonEntry,
        lesson: Lesson | None,
        problems: tuple[Problem, ...],
        fraction: float,
        exercises: list[ExerciseEntry],
        states: dict[str, Text] | None = None,
    ) -> None:
        """Summarise a lesson: objectives, progress and exercises, or why it is broken."""
        self.border_title = f"Day {entry.day} · lesson"
        head = Text(entry.title, style="bold")
        head.append("\n")
        parts: list[RenderableType] = [head]
        if problems:
            broken = Text("✗ this lesson cannot be opened\n\n", style="bold red")
            broken.append_text(problem_text(problems, CoursePaths.of_lesson(entry.path).root))
            parts.append(broken)
        elif lesson is not None:
            body = Text()
            body.append_text(progress_bar(fraction, 12))
            body.append(" read\n\n", style="dim")
            body.append("Objectives\n", style="bold")
            for objective in lesson.front.objectives:
                body.append(f"• {objective}\n")
            claims = sum(len(node.claims) for node in lesson.nodes)
            body.append(
                f"\n{_count(len(lesson.nodes), 'node')} · {_count(claims, 'claim')}", style="dim"
            )
            parts.append(body)
        if exercises:
            tail = Text("\nExercises\n", style="bold")
            for exercise in exercises:
                tail.append(f"✎ {exercise.name}  ")
                tail.append(
                    "needs GPU" if exercise.gpu else "CPU",
                    style="yellow" if exercise.gpu else "green",
                )
                state = (states or {}).get(exercise.name)
                if state is not None:
                    tail.append(" · ", style="dim")
                    tail.append_text(state)
                tail.append("\n")
            parts.append(tail)
        parts.append(Text("\nenter opens the lesson", style="dim"))
        self.update(Group(*parts))

    def show_exercise(
        self, exercise: ExerciseEntry, lesson_title: str, hints_seen: int, state: Text | None = None
    ) -> None:
        """Summarise an exercise: its lesson, GPU need, limit, hints and where the learner is."""
        self.border_title = "exercise"
        text = Text(f"✎ {exercise.name}\n\n", style="bold")
        text.append(f"lesson      {lesson_title}\n")
        text.append("runs on     ")
        text.append(
            "needs GPU" if exercise.gpu else "CPU", style="yellow" if exercise.gpu else "green"
        )
        text.append(f"\ntime limit  {exercise.time_limit} s\n")
        text.append(f"hints       {hints_seen} of {len(exercise.hints)} seen\n")
        text.append("status      ")
        text.append_text(state or Text("not started"))
        text.append("\n")
        text.append("\nenter opens the exercise", style="dim")
        self.update(text)


def _count(number: int, noun: str) -> str:
    return f"{number} {noun}" + ("" if number == 1 else "s")
