"""Measuring claims in this session, and telling their cards.

`Claims` is one of the parts the app (`gpulab.tui.app.GpulabApp`) is composed
of. It owns this session's claim measurements (`board`, a
`gpulab.tui.measure.ClaimBoard`). A claim card that is mounted asks for its
state (`ClaimCard.Shown`, handed to `shown`); `MeasureClaim` runs the claim's
probe in a thread worker of the app (`measure`), so leaving the lesson does not
lose its result, and every claim card on screen is told when its claim changes
(`measured`). What a probe's result says this machine lacks (no GPU, no
driver, no CuPy) is noted from every result that comes in (`learn`), the GPU
screen's and the prediction screen's included; the app keeps a result that ran
for the figures (`gpulab.tui.results.SavedResults.keep`).

Probes and NVML are imported only when a card first needs them.
"""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING, Any

from gpulab.timestamps import utc_now
from gpulab.tui.lab import as_lab
from gpulab.tui.messages import ClaimMeasured, ProbeReadiness

if TYPE_CHECKING:
    from textual.app import App

    from gpulab.course import Claim
    from gpulab.probes import ProbeResult
    from gpulab.tui.measure import ClaimBoard
    from gpulab.tui.widgets import ClaimCard

__all__ = ["Claims"]


class Claims:
    """This session's claim measurements, made in threads and shown on the claims' cards
    (see the module's docstring); one per app."""

    def __init__(self, app: App[Any]) -> None:
        self._app = app
        self._lab = as_lab(app)
        self._board: ClaimBoard | None = None
        self._asked: frozenset[str] = frozenset()  # what each kind of probe needs, asked here

    @property
    def board(self) -> ClaimBoard:
        """This session's claim measurements (made on first use)."""
        if self._board is None:
            from gpulab.tui.measure import ClaimBoard

            self._board = ClaimBoard()
        return self._board

    def shown(self, card: ClaimCard) -> None:
        """A card was mounted: give it its claim's state, and find out whether its probe can
        run here."""
        card.state = self.board.state(card.claim, self._lab.progress.predictions)
        self._ask_readiness(card.claim.probe)

    def _ask_readiness(self, probe: str) -> None:
        """Find out once, in a thread, whether this kind of probe can run here, so that a card
        says why not (and shows the H200's reading) before the learner presses m."""
        from gpulab.tui.measure import probe_needs

        needs = probe_needs(probe)
        if needs in ("", "host") or needs in self._asked:
            return
        self._asked = self._asked | {needs}
        self._app.run_worker(
            partial(self._readiness, probe),
            thread=True,
            group="readiness",
            exit_on_error=False,
            description=f"can {probe} run here",
        )

    def _readiness(self, probe: str) -> None:
        from gpulab.tui.measure import find_out

        try:
            found = find_out(probe, self._lab.nvml_backend)
        except Exception:  # not knowing is an answer: the card waits for m
            found = None
        self._app.post_message(ProbeReadiness(probe, found))

    def learn(self, result: ProbeResult, probe: str = "") -> None:
        """Note what a probe's result says this machine lacks, and redraw the cards of the
        claims it concerns (those of `probe`, and those that cannot be measured here)."""
        self.board.note(result)
        course = self._lab.course
        if probe and course is not None:
            for claim in course.claims.values():
                if claim.probe == probe or self.board.missing(claim):
                    self._refresh_cards(claim)

    def measure(self, claim: Claim, predicted: float | None) -> None:
        """Run a claim's probe in a thread (`ClaimMeasured` when done); its card shows
        "measuring…" until then.

        `predicted` is the learner's prediction in the claim's unit (None: no
        prediction); with one, the outcome is saved to the progress.
        """
        if self.board.is_measuring(claim.id):
            self._app.notify(f"{claim.id} is being measured already.", timeout=3)
            return
        self.board.start(claim.id)
        self._refresh_cards(claim)
        self._app.run_worker(
            partial(self._run_probe, claim, predicted, utc_now()),
            thread=True,
            group="measure",
            exit_on_error=False,
            description=f"measure {claim.id} with {claim.probe}",
        )

    def _run_probe(self, claim: Claim, predicted: float | None, at: str) -> None:
        from gpulab.tui.measure import run_probe_for

        result = run_probe_for(claim.probe, self._lab.nvml_backend)
        self._app.post_message(ClaimMeasured(claim, result, predicted, at))

    def measured(self, event: ClaimMeasured) -> bool:
        """A claim's probe finished: keep its prediction in the progress, tell its cards, and
        say what was found; True when the progress changed (the app saves it at once)."""
        app, claim, predicted = self._app, event.claim, event.predicted
        outcome = self.board.finish(claim, event.result, predicted)
        if predicted is not None:
            self._lab.progress.predictions.append(self.board.prediction(claim, predicted, event.at))
        self._refresh_cards(claim)
        if outcome.verdict is not None:
            app.notify(
                outcome.verdict.text,
                title=f"Measured {claim.id}",
                timeout=5,
                severity="warning" if outcome.verdict.kind == "differs" else "information",
            )
        else:
            app.notify(
                outcome.problem,
                title=f"{claim.id}: not measured",
                timeout=5,
                severity="warning",
                markup=False,
            )
        return predicted is not None

    def _refresh_cards(self, claim: Claim) -> None:
        from gpulab.tui.widgets import ClaimCard

        state = self.board.state(claim, self._lab.progress.predictions)
        for screen in self._app.screen_stack:
            for card in screen.query(ClaimCard):
                if card.claim.id == claim.id:
                    card.state = state
