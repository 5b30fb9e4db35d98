"""What every screen of the app shares: a typed handle on the app, and the exercise hook."""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar, cast

from textual.screen import Screen

if TYPE_CHECKING:
    from gpulab.tui.app import GpulabApp

__all__ = ["LabScreen"]


class LabScreen(Screen[None]):
    """A full screen of gpulab; `HELP_GROUP` names it in the help screen."""

    HELP_GROUP: ClassVar[str] = ""

    @property
    def lab(self) -> GpulabApp:
        """The running app, typed."""
        return cast("GpulabApp", self.app)

    def exercises_changed(self) -> None:
        """An exercise's state changed (a check, the GPU found): screens that list them redraw."""

    def workspace_changed(self) -> None:
        """The app has a workspace now (made by ``gpulab init`` while it ran)."""
