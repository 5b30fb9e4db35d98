"""`m` on a claim: a modal that asks for the learner's prediction before the probe runs.

Predicting first is the point: the learner commits to a number, then sees how
far the machine is from it. Enter measures with the prediction, escape
measures without one. A typo shows an error under the field and keeps what was
typed.

Where the claim's probe cannot run on this machine (no GPU, no driver, no
CuPy: found out in a thread as the dialog opens, unless the app knows
already), the question is what gpulab's own H200 measured: the card then
compares the prediction with that recording, labelled as such. What the
dialog finds out bubbles on to the app (`FoundOut`), so every claim card of
that kind of probe can say so too.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, ClassVar

from rich.text import Text
from textual import getters
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.message import Message
from textual.screen import ModalScreen
from textual.widgets import Input, Static

from gpulab.course import Claim
from gpulab.tui.measure import find_out, probe_needs

if TYPE_CHECKING:
    from gpulab.probes.model import ProbeResult

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
        raise ValueError(
            f"{text.strip()!r} is not a number: type a number in {unit}, e.g. 12.5 or 1e3."
        ) from None
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

    class FoundOut(Message):
        """Whether the claim's probe can run here is known (`cannot`: why not, or None)."""

        def __init__(self, cannot: ProbeResult | None, recorded: str) -> None:
            super().__init__()
            self.cannot = cannot
            self.recorded = recorded  # the recording's machine ("" when none ships)

    box = getters.query_one("#prediction-box", Vertical)
    question = getters.query_one("#prediction-question", Static)
    prediction_input = getters.query_one("#prediction-input", Input)
    problem = getters.query_one("#prediction-error", Static)

    def __init__(self, claim: Claim, nvml_backend: Any = None) -> None:
        super().__init__()
        self.claim = claim
        self.nvml_backend = nvml_backend
        """What NVML calls go through (see `gpulab.tui.measure.run_probe_for`)."""
        self.here: bool | None = None
        """Whether the probe can run on this machine: None until known."""

    def compose(self) -> ComposeResult:
        with Vertical(id="prediction-box"):
            yield Static(self._question(), id="prediction-question")
            yield Input(placeholder=f"your prediction, in {self.claim.unit}", id="prediction-input")
            yield Static(id="prediction-error")

    def on_mount(self) -> None:
        box = self.box
        box.border_title = f"Predict · {self.claim.id}"
        box.border_subtitle = "enter measure · esc measure without predicting"
        self.prediction_input.focus()
        if probe_needs(self.claim.probe) in ("", "host"):
            self.here = True
            self.question.update(self._question())
            return
        self.run_worker(
            self._find_out,
            thread=True,
            group="find-out",
            exit_on_error=False,
            description=f"can {self.claim.probe} run here?",
        )

    def on_prediction_screen_found_out(self, event: FoundOut) -> None:
        # not stopped: it bubbles on to the app, which notes what this machine lacks
        self.here = event.cannot is None
        question = self._question(event.cannot.message if event.cannot else "", event.recorded)
        for field in self.query("#prediction-question").results(Static):  # gone once dismissed
            field.update(question)

    def on_input_changed(self, event: Input.Changed) -> None:
        self.problem.update("")
        self.prediction_input.remove_class("-invalid")

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.action_predict()

    def action_predict(self) -> None:
        field = self.prediction_input
        try:
            value = parse_prediction(field.value, self.claim.unit)
        except ValueError as exc:
            self.problem.update(Text(str(exc), style="bold red"))
            field.add_class("-invalid")
            field.focus()
            return
        self.dismiss(value)

    def action_skip(self) -> None:
        self.dismiss(None)

    def _find_out(self) -> None:
        """In a thread: can the claim's probe run here, and what recording ships for it."""
        from gpulab.probes.recorded import recorded_results

        cannot = find_out(self.claim.probe, self.nvml_backend)
        found = recorded_results().get(self.claim.probe)
        machine = ""
        if found is not None and found.recorded is not None:
            machine = found.device or found.recorded.machine
        self.post_message(self.FoundOut(cannot, machine))

    def _question(self, why: str = "", recorded: str = "") -> Text:
        """The question: about this machine, or, where it cannot run the probe, about the
        recording; neutral while that is not known yet."""
        claim = self.claim
        device = "any GPU" if claim.device.strip().lower() == "any" else claim.device
        question = Text(claim.statement, style="bold")
        question.append("\n\n")
        if self.here is False:
            question.append(
                f"This machine cannot run the {claim.probe} probe: {why}.\n", style="yellow"
            )
        if self.here is False and recorded:
            question.append(
                f"What do you predict it measured on gpulab's {recorded}, in {claim.unit}?"
            )
            question.append(
                "\nYou will see it beside that recording, with how far off it was (not graded).",
                style="dim",
            )
        elif self.here is False:
            question.append(
                f"What do you predict it measures on {device}, in "
                f"{claim.unit}? (This copy has no recording to compare it with.)"
            )
        else:
            where = " on this machine" if self.here else ""
            question.append("What will the ")
            question.append(claim.probe, style="bold")
            question.append(f" probe measure{where}, in {claim.unit}?")
        question.append(f"\nThe spec says {claim.expected} for {device}.", style="dim")
        return question
