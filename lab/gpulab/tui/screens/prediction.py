"""`m` on a claim: a modal that asks for the learner's prediction before the probe runs.

Predicting first is the point: the learner commits to a number, then sees how
far the machine is from it. Enter measures with the prediction, escape
measures without one. A typo shows an error under the field and keeps what was
typed.
"""

from __future__ import annotations

import math
from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, Static

from gpulab.course import Claim

__all__ = ["PredictionScreen", "parse_prediction"]


def parse_prediction(text: str, unit: str) -> float:
    """The number the learner typed, in the claim's unit.

    Accepts Python's number syntax ("650", "4.8", "1e3", "1_000") and the
    claim's unit after it ("650 cycles"). Raises `ValueError` with a message
    for the learner.
    """
    raw = text.strip()
    if unit and raw.endswith(unit):
        raw = raw[: -len(unit)].strip()
    if not raw:
        raise ValueError("Type a number first, or press escape to measure without predicting.")
    try:
        value = float(raw)
    except ValueError:
        raise ValueError(f"{text.strip()!r} is not a number: type a number in {unit}, "
                         "e.g. 12.5 or 1e3.") from None
    if not math.isfinite(value):
        raise ValueError("Type a finite number.")
    return value


class PredictionScreen(ModalScreen[float | None]):
    """Ask for a prediction of a claim's value; dismiss with it, or None to skip."""

    HELP_GROUP: ClassVar[str] = "Prediction"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "skip", "Measure without predicting"),
        Binding("enter", "predict", "Measure with this prediction", show=False),
    ]

    def __init__(self, claim: Claim) -> None:
        super().__init__()
        self.claim = claim

    def compose(self) -> ComposeResult:
        claim = self.claim
        question = Text(claim.statement, style="bold")
        question.append("\n\nWhat will the ")
        question.append(claim.probe, style="bold")
        question.append(f" probe measure on this machine, in {claim.unit}?")
        question.append(f"\nThe spec says {claim.expected} for {claim.device}.", style="dim")
        with Vertical(id="prediction-box"):
            yield Static(question, id="prediction-question")
            yield Input(placeholder=f"your prediction, in {claim.unit}", id="prediction-input")
            yield Static(id="prediction-error")

    def on_mount(self) -> None:
        box = self.query_one("#prediction-box")
        box.border_title = f"Predict · {self.claim.id}"
        box.border_subtitle = "enter measure · esc measure without predicting"
        self.query_one(Input).focus()

    def on_input_changed(self, event: Input.Changed) -> None:
        self.query_one("#prediction-error", Static).update("")
        self.query_one(Input).remove_class("-invalid")

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.action_predict()

    def action_predict(self) -> None:
        field = self.query_one(Input)
        try:
            value = parse_prediction(field.value, self.claim.unit)
        except ValueError as exc:
            self.query_one("#prediction-error", Static).update(Text(str(exc), style="bold red"))
            field.add_class("-invalid")
            field.focus()
            return
        self.dismiss(value)

    def action_skip(self) -> None:
        self.dismiss(None)
