"""The screen shown when the course itself cannot be read."""

from __future__ import annotations

from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Center, VerticalScroll
from textual.widgets import Footer, Header

from gpulab.course import CourseError
from gpulab.tui.screens.base import LabScreen
from gpulab.tui.widgets import ErrorPanel

__all__ = ["FatalScreen"]


class FatalScreen(LabScreen):
    """The course's manifest or claims are unreadable: say where and why, then quit."""

    HELP_GROUP = "Course error"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("q,escape", "app.quit", "Quit"),
    ]

    def __init__(self, error: CourseError) -> None:
        super().__init__()
        self.error = error
        self.title = "gpulab"
        self.sub_title = "course error"

    def compose(self) -> ComposeResult:
        yield Header()
        with VerticalScroll(id="fatal-body"), Center():
            yield ErrorPanel(
                "gpulab cannot read the course.",
                self.error.problems,
                advice="Fix the file named above (or set GPULAB_COURSE_DIR to a course "
                "folder), then start gpulab again. Press q to quit.",
                id="fatal-error",
            )
        yield Footer()
