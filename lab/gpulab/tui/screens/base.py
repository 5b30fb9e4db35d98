"""What every full screen of the app shares: the app, typed, and its place in the help."""

from __future__ import annotations

from typing import ClassVar

from textual import getters
from textual.screen import Screen

from gpulab.tui.app import GpulabApp  # which imports no screen, so no cycle

__all__ = ["LabScreen"]


class LabScreen(Screen[None]):
    """A full screen of gpulab; `HELP_GROUP` names it in the help screen.

    A screen reads the learner's state from `app` (and watches what it draws);
    it changes nothing there: it posts a message of `gpulab.tui.messages`, which
    bubbles up to the app.
    """

    HELP_GROUP: ClassVar[str] = ""

    app = getters.app(GpulabApp)
    """The running app, typed: read its state, post it messages."""
