"""One live GPU reading on the GPU screen: its name, its latest value, a sparkline."""

from __future__ import annotations

from collections import deque
from typing import TYPE_CHECKING

from rich.text import Text
from textual import getters
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import Sparkline, Static

if TYPE_CHECKING:
    from gpulab.probes.model import Reading

__all__ = ["HISTORY", "SensorPanel"]

HISTORY = 120
"""Samples a sparkline keeps (two minutes at one sample a second)."""


class SensorPanel(Vertical):
    """The last `HISTORY` values of one NVML reading, newest on the right.

    `limit` (a power limit, the memory size) is shown beside the value, so a
    number has its scale. The sparkline spans the lowest to the highest value it
    holds, so the label says what that span is: a flat-looking line can still
    be a change of a few watts.
    """

    reading = getters.query_one(".sensor-value", Static)
    sparkline = getters.query_one(Sparkline)

    def __init__(self, title: str, *, limit: str = "", id: str | None = None) -> None:
        super().__init__(id=id)
        self.title = title
        self.limit = limit
        self.values: deque[float] = deque(maxlen=HISTORY)
        self.border_title = title

    def compose(self) -> ComposeResult:
        yield Static(Text("waiting for the first sample…", style="dim"), classes="sensor-value")
        yield Sparkline([], classes="sensor-line")

    def add(self, reading: Reading | None) -> None:
        """Add one sample: its value to the sparkline, its text to the label."""
        text = Text()
        if reading is None:
            text.append("not read", style="dim")
        else:
            value = reading.value
            if (
                reading.status == "ok"
                and isinstance(value, int | float)
                and not isinstance(value, bool)
            ):
                self.values.append(float(value))
            style = "bold" if reading.status == "ok" else "dim"
            text.append(reading.shown, style=style)
        if self.limit:
            text.append(f" of {self.limit}", style="dim")
        if self.values:
            unit = reading.unit if reading is not None else ""
            low, high = min(self.values), max(self.values)
            text.append(f"   range {low:.4g}–{high:.4g} {unit}".rstrip(), style="dim")
        self.reading.update(text)
        self.sparkline.data = list(self.values)
