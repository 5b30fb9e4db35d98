"""A panel that says what is wrong with course content and how to fix it."""

from __future__ import annotations

from pathlib import Path

from rich.console import RenderableType
from rich.text import Text
from textual.widgets import Static

from gpulab.course import Problem
from gpulab.tui.text import problem_text

__all__ = ["ErrorPanel"]


class ErrorPanel(Static):
    """A headline, then every problem as ``file:line  message`` and its hint."""

    def __init__(
        self,
        headline: str,
        problems: tuple[Problem, ...] | list[Problem],
        *,
        root: Path | None = None,
        advice: str = "",
        id: str | None = None,
    ) -> None:
        super().__init__(id=id)
        self.headline = headline
        self.problems = tuple(problems)
        self.root = root
        self.advice = advice
        self.border_title = "✗ error"

    def render(self) -> RenderableType:
        text = Text(self.headline, style="bold red")
        text.append("\n\n")
        text.append_text(problem_text(self.problems, self.root))
        if self.advice:
            text.append("\n\n")
            text.append(self.advice, style="dim")
        return text
