"""An exercise's tiered hints, revealed one at a time."""

from __future__ import annotations

from rich.console import RenderableType
from rich.text import Text
from textual.reactive import reactive
from textual.widgets import Static

__all__ = ["HintList"]


class HintList(Static):
    """The hints revealed so far, and how many remain; it grows as hints are revealed."""

    revealed: reactive[int] = reactive(0, layout=True)
    """How many hints are shown, gentlest first."""

    def __init__(self, hints: tuple[str, ...], revealed: int = 0, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.hints = hints
        self.set_reactive(HintList.revealed, min(max(revealed, 0), len(hints)))

    def validate_revealed(self, value: int) -> int:
        return min(max(value, 0), len(self.hints))

    def render(self) -> RenderableType:
        text = Text()
        total = len(self.hints)
        for number, hint in enumerate(self.hints[: self.revealed], start=1):
            text.append(f"Hint {number} of {total}  ", style="bold yellow")
            text.append(hint)
            text.append("\n\n")
        left = total - self.revealed
        if left:
            what = "hint" if left == 1 else "hints"
            gentler = "the next, stronger one" if self.revealed else "the gentlest first"
            text.append(f"{left} {what} left: press h to reveal {gentler}.", style="dim")
        else:
            text.append("No more hints: you have seen them all.", style="dim")
        return text
