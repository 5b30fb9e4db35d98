"""What every full screen of the app shares: the app, typed, and its place in the help."""

from __future__ import annotations

from typing import ClassVar

from textual.screen import Screen

from gpulab.tui.lab import Lab, as_lab

__all__ = ["LabScreen"]


class LabScreen(Screen[None]):
    """A full screen of gpulab; `HELP_GROUP` names it in the help screen.

    A screen reads the learner's state from `lab` (and watches what it draws);
    it changes nothing there: it posts a message of `gpulab.tui.messages`, which
    bubbles up to the app.
    """

    HELP_GROUP: ClassVar[str] = ""

    @property
    def lab(self) -> Lab:
        """The running app as gpulab's state (read it, watch it); `app` is its Textual side."""
        return as_lab(self.app)
