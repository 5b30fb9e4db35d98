"""The app's claim half: measuring claims in this session, and telling their cards.

`ClaimsApp` is the layer of `GpulabApp` that owns this session's claim
measurements (`board`, a `gpulab.tui.measure.ClaimBoard`). A claim card that
is mounted asks for its state (`ClaimCard.Shown`); `MeasureClaim` runs the
claim's probe in a thread worker of the app, so leaving the lesson does not
lose its result, and every claim card on screen is told when its claim
changes. What a probe's result says this machine lacks (no GPU, no driver, no
CuPy) is noted from every result that comes in, the GPU screen's and the
prediction screen's included, and a result that ran is kept for the figures
(`LearnerApp.keep_result`).

Probes and NVML are imported only when a card first needs them.
"""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING

from textual.message import Message

from gpulab.course import Claim
from gpulab.timestamps import utc_now
from gpulab.tui.learner import LearnerApp
from gpulab.tui.messages import MeasureClaim

if TYPE_CHECKING:
    from gpulab.probes import ProbeResult
    from gpulab.tui.measure import ClaimBoard
    from gpulab.tui.screens.gpu import GpuScreen
    from gpulab.tui.screens.prediction import PredictionScreen
    from gpulab.tui.widgets import ClaimCard

__all__ = ["ClaimsApp"]


class ClaimsApp(LearnerApp):
    """This session's claim measurements, and the handlers that make and show them."""

    class ClaimMeasured(Message):
        """A claim's probe finished (posted from the probe's thread)."""

        def __init__(
            self, claim: Claim, result: ProbeResult, predicted: float | None, at: str
        ) -> None:
            super().__init__()
            self.claim = claim
            self.result = result
            self.predicted = predicted
            self.at = at

    class ProbeReadiness(Message):
        """Whether a claim's probe can run here (`result` None) or why not (its result)."""

        def __init__(self, probe: str, result: ProbeResult | None) -> None:
            super().__init__()
            self.probe = probe
            self.result = result

    _board: ClaimBoard | None = None
    _asked: frozenset[str] = frozenset()  # what each kind of probe needs, asked of this machine

    @property
    def board(self) -> ClaimBoard:
        """This session's claim measurements (made on first use)."""
        if self._board is None:
            from gpulab.tui.measure import ClaimBoard

            self._board = ClaimBoard()
        return self._board

    def on_claim_card_shown(self, event: ClaimCard.Shown) -> None:
        claim = event.card.claim
        event.card.state = self.board.state(claim, self.progress.predictions)
        self._ask_readiness(claim.probe)

    def _ask_readiness(self, probe: str) -> None:
        """Find out once, in a thread, whether this kind of probe can run here, so that a card
        says why not (and shows the H200's reading) before the learner presses m."""
        from gpulab.tui.measure import probe_needs

        needs = probe_needs(probe)
        if needs in ("", "host") or needs in self._asked:
            return
        self._asked = self._asked | {needs}

        def ask() -> None:
            from gpulab.tui.measure import find_out

            try:
                found = find_out(probe, self.nvml_backend)
            except Exception:  # not knowing is an answer: the card waits for m
                found = None
            self.post_message(self.ProbeReadiness(probe, found))

        self.run_worker(
            ask,
            thread=True,
            group="readiness",
            exit_on_error=False,
            description=f"can {probe} run here",
        )

    def on_claims_app_probe_readiness(self, event: ProbeReadiness) -> None:
        if event.result is not None:
            self._learn(event.result, event.probe)

    def on_gpu_screen_inventoried(self, event: GpuScreen.Inventoried) -> None:
        self._learn(event.result)
        self.keep_result(event.result)

    def on_prediction_screen_found_out(self, event: PredictionScreen.FoundOut) -> None:
        if event.cannot is not None:
            self._learn(event.cannot)

    def _learn(self, result: ProbeResult, probe: str = "") -> None:
        """Note what a probe's result says this machine lacks, and redraw the cards of the
        claims it concerns (those of `probe`, and those that cannot be measured here)."""
        self.board.note(result)
        if probe and self.course is not None:
            for claim in self.course.claims.values():
                if claim.probe == probe or self.board.missing(claim):
                    self._refresh_cards(claim)

    def on_measure_claim(self, event: MeasureClaim) -> None:
        self.measure(event.claim, event.predicted)

    def measure(self, claim: Claim, predicted: float | None) -> None:
        """Run a claim's probe in a thread; its card shows "measuring…" until it is done.

        `predicted` is the learner's prediction in the claim's unit (None: no
        prediction); with one, the outcome is saved to the progress.
        """
        if self.board.is_measuring(claim.id):
            self.notify(f"{claim.id} is being measured already.", timeout=3)
            return
        at = utc_now()
        self.board.start(claim.id)
        self._refresh_cards(claim)
        self.run_worker(
            partial(self._run_claim_probe, claim, predicted, at),
            thread=True,
            group="measure",
            exit_on_error=False,
            description=f"measure {claim.id} with {claim.probe}",
        )

    def _run_claim_probe(self, claim: Claim, predicted: float | None, at: str) -> None:
        from gpulab.tui.measure import run_probe_for

        result = run_probe_for(claim.probe, self.nvml_backend)
        self.post_message(self.ClaimMeasured(claim, result, predicted, at))

    def on_claims_app_claim_measured(self, event: ClaimMeasured) -> None:
        claim, predicted = event.claim, event.predicted
        outcome = self.board.finish(claim, event.result, predicted)
        self.keep_result(event.result)
        if predicted is not None:
            self.progress.predictions.append(self.board.prediction(claim, predicted, event.at))
            self.progress_changed(now=True)
        self._refresh_cards(claim)
        if outcome.verdict is not None:
            self.notify(
                outcome.verdict.text,
                title=f"Measured {claim.id}",
                timeout=5,
                severity="warning" if outcome.verdict.kind == "differs" else "information",
            )
        else:
            self.notify(
                outcome.problem,
                title=f"{claim.id}: not measured",
                timeout=5,
                severity="warning",
                markup=False,
            )

    def _refresh_cards(self, claim: Claim) -> None:
        from gpulab.tui.widgets import ClaimCard

        state = self.board.state(claim, self.progress.predictions)
        for screen in self.screen_stack:
            for card in screen.query(ClaimCard):
                if card.claim.id == claim.id:
                    card.state = state
