"""A card for one claim: what it states, the spec, what was measured, and the verdict; and
the figures its probe feeds (f on the lesson draws them)."""

from __future__ import annotations

from rich.console import RenderableType
from rich.style import Style
from rich.table import Table
from rich.text import Text
from textual.message import Message
from textual.reactive import reactive
from textual.widgets import Static

from gpulab.course import Claim
from gpulab.course.verdict import Verdict, judge
from gpulab.tui.figures import FIGURE_BADGE, fed_by
from gpulab.tui.measure import ClaimState, Outcome, distance_text
from gpulab.tui.text import CLAIM_BADGE

__all__ = ["NOT_MEASURED", "VERDICT_STYLES", "ClaimCard"]

NOT_MEASURED = "not measured yet — press m"
VERDICT_STYLES = {
    "agrees": "bold green",
    "differs": "bold red",
    "other_device": "yellow",
    "not_comparable": "yellow",
    "not_measured": "dim",
}
"""How each kind of verdict is coloured."""


class ClaimCard(Static):
    """The claim's statement, spec, device and source; then measured, verdict, prediction.

    "measured" only ever shows a value measured on this machine (this session,
    or the learner's last saved measurement, with its device and date). A
    reading recorded on gpulab's own H200 appears on its own line, labelled
    "recorded on <machine>, <date>, not this machine", and only when the probe
    cannot run here; a prediction made then is shown against that recording,
    with how far off it was, and never graded.
    """

    state: reactive[ClaimState] = reactive(ClaimState, always_update=True, layout=True)
    """What the card shows beyond the claim: measuring, this session's outcome, the last
    saved measurement, why it cannot be measured here. The app sets it."""

    class Shown(Message):
        """A card was mounted and wants its state (the app answers)."""

        def __init__(self, card: ClaimCard) -> None:
            super().__init__()
            self.card = card

    def __init__(self, claim: Claim, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.claim = claim
        self.border_title = f"{CLAIM_BADGE} claim {claim.id}"

    def on_mount(self) -> None:
        self.post_message(self.Shown(self))

    def render(self) -> RenderableType:
        claim, state = self.claim, self.state
        grid = Table.grid(padding=(0, 1), expand=True)
        grid.add_column(style="dim", no_wrap=True)
        grid.add_column(ratio=1)
        grid.add_row(Text("states"), Text(claim.statement, style="bold"))
        spec = Text(claim.expected, style="bold")
        if claim.tolerance:
            spec.append(f"  (agrees within ±{claim.tolerance * 100:g} %)", style="dim")
        grid.add_row(Text("spec"), spec)
        grid.add_row(Text("device"), Text(claim.device))
        if claim.convention:
            grid.add_row(Text("counts"), Text(claim.convention, style="italic"))
        grid.add_row(
            Text("source"), Text(claim.source, style=Style(underline=True, link=claim.source))
        )
        grid.add_row(Text("probe"), Text(claim.probe, style="bold"))
        figures = fed_by(claim.probe)
        if figures:
            drawn = Text(f"{FIGURE_BADGE} " + "; ".join(f.title for f in figures))
            drawn.append("  (f opens the figures)", style="dim")
            grid.add_row(Text("figure" if len(figures) == 1 else "figures"), drawn)
        for label, text in self._rows(state):
            grid.add_row(Text(label), text)
        return grid

    def _rows(self, state: ClaimState) -> list[tuple[str, Text]]:
        rows: list[tuple[str, Text]] = []
        outcome = state.outcome
        if state.measuring:
            rows.append(
                (
                    "measured",
                    Text(f"measuring… ({self.claim.probe} is running)", style="bold yellow italic"),
                )
            )
        elif outcome is not None and not outcome.cannot_run:
            rows += self._outcome_rows(outcome, state.predicted)
        elif state.missing:
            rows.append(
                ("measured", Text(f"cannot be measured here: {state.missing}", style="yellow"))
            )
        elif state.last is not None:
            rows += self._last_rows(state)
        else:
            rows.append(("measured", Text(NOT_MEASURED, style="dim italic")))
        if state.missing:
            rows.append(("recorded", self._recorded(state.recorded)))
            rows.extend(("also", self._recorded(other)) for other in state.also)
            if outcome is not None and outcome.cannot_run and state.predicted is not None:
                rows.append(("predicted", self._against_recording(state.predicted, state.recorded)))
            elif outcome is None and state.guess is not None:
                guess = self._against_recording(state.guess.predicted, state.recorded)
                guess.append(f"  (your last prediction, {state.guess.at[:10]})", style="dim")
                rows.append(("predicted", guess))
        return rows

    def _outcome_rows(self, outcome: Outcome, predicted: float | None) -> list[tuple[str, Text]]:
        result = outcome.result
        rows: list[tuple[str, Text]] = []
        if outcome.verdict is None:
            style = "bold red" if result.status == "error" else "yellow"
            rows.append(("measured", Text(outcome.problem, style=style)))
        else:
            assert outcome.reading is not None
            measured = Text(outcome.reading.shown, style="bold")
            measured.append(f"  on {result.device or 'this machine'}, just now", style="dim")
            rows.append(("measured", measured))
            rows.append(("verdict", _verdict(outcome.verdict)))
        if predicted is not None:
            rows.append(("predicted", self._prediction(predicted, outcome.measured)))
        return rows

    def _last_rows(self, state: ClaimState) -> list[tuple[str, Text]]:
        last = state.last
        assert last is not None and last.measured is not None
        unit = self.claim.unit
        measured = Text(f"{last.measured:.4g} {unit}", style="bold")
        measured.append(
            f"  on {last.device or 'this machine'}, {last.at[:10]} "
            "(your last measurement; m measures again)",
            style="dim",
        )
        verdict = judge(self.claim, last.measured, unit, last.device)
        return [
            ("measured", measured),
            ("verdict", _verdict(verdict)),
            ("predicted", self._prediction(last.predicted, last.measured)),
        ]

    def _prediction(self, predicted: float, measured: float | None) -> Text:
        text = Text(f"{predicted:g} {self.claim.unit}", style="bold cyan")
        if measured is None:
            text.append("  (nothing measured to compare it with)", style="dim")
        else:
            text.append(f"  {distance_text(predicted, measured, self.claim.unit)}")
        return text

    def _against_recording(self, predicted: float, recorded: Outcome | None) -> Text:
        """A prediction of the recorded reading: how far off it was; never a verdict."""
        text = Text(f"{predicted:g} {self.claim.unit}", style="bold cyan")
        if recorded is None or recorded.measured is None or recorded.result.recorded is None:
            text.append("  (nothing measured or recorded to compare it with)", style="dim")
            return text
        machine = recorded.result.device or recorded.result.recorded.machine
        text.append(
            f"  {distance_text(predicted, recorded.measured, self.claim.unit, 'recorded')}"
            f" on {machine}"
        )
        text.append(" · not graded", style="dim")
        return text

    def _recorded(self, recorded: Outcome | None) -> Text:
        if recorded is None:
            return Text("no recorded reading for this probe in this copy", style="dim italic")
        where = recorded.result.recorded.label if recorded.result.recorded else "recorded"
        text = Text(f"{where}, not this machine: ", style="italic")
        if recorded.reading is None or recorded.reading.status != "ok" or recorded.verdict is None:
            text.append(recorded.problem, style="dim")
            return text
        text.append(_in_claim_unit(recorded, self.claim.unit), style="bold")
        text.append(" — ")
        text.append_text(_verdict(recorded.verdict, self.claim.unit))
        return text


def _in_claim_unit(outcome: Outcome, unit: str) -> str:
    """The reading in the claim's unit, and as the probe gave it when that differs."""
    reading = outcome.reading
    assert reading is not None
    if outcome.measured is None or reading.unit.strip() == unit.strip():
        return reading.shown
    return f"{outcome.measured:.4g} {unit} ({reading.shown})"


def _verdict(verdict: Verdict, unit: str = "") -> Text:
    """The verdict in words; with `unit`, without the value it starts with (shown already)."""
    text = verdict.text
    if unit and verdict.measured is not None:
        text = text.removeprefix(f"{verdict.measured:.4g} {unit}: ")
    return Text(text, style=VERDICT_STYLES.get(verdict.kind, ""))
