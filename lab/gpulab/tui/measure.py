"""Claims measured in this session: run a claim's probe, judge the reading, remember it.

`run_probe_for` runs a claim's probe (through the app's NVML backend for the
NVML probes, and for the diagnosis of a CUDA probe that cannot run, so tests
and demos can replay a recording); `find_out` says, without running it,
whether a probe can run here. `outcome_of` turns a probe result into what it
says about one claim: the reading, its verdict, or why there is none.
`ClaimBoard` is the app's memory of the session: which claims are being
measured, the latest outcome of each, and what this machine lacks (no GPU, no
driver, no CuPy) as far as the probes have found; `ClaimBoard.state` gives a
claim card everything it shows, and `ClaimBoard.prediction` what the progress
keeps of a prediction.

Where a claim's probe cannot run here, a card shows the reading recorded on
gpulab's own H200 instead, always labelled as such, and a prediction is
compared with that recording (never graded: it says how far off it was).

Probes, NVML and the recorded results are imported only when they are
needed, never before the app's first paint.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import msgspec

from gpulab.course import Claim
from gpulab.course.progress import Prediction
from gpulab.course.units import conversions
from gpulab.course.verdict import Verdict, judge

if TYPE_CHECKING:
    from gpulab.probes.model import ProbeResult, Reading

__all__ = [
    "ClaimBoard",
    "ClaimState",
    "Outcome",
    "distance_text",
    "find_out",
    "gpu_present",
    "in_claim_unit",
    "other_recordings",
    "outcome_of",
    "probe_needs",
    "recorded_outcome",
    "run_probe_for",
]

CANNOT_RUN = ("no_gpu", "unavailable")
"""Result statuses that mean the probe cannot run on this machine at all."""

_NVML_PROBES = {"nvml_inventory": "inventory", "nvml_sample": "sample"}


def run_probe_for(name: str, nvml_backend: Any = None) -> ProbeResult:
    """Run a probe by name; blocking, so call it from a thread worker.

    With an NVML backend (a `Replay` in tests), the NVML probes ask it instead
    of the real library, and so does the diagnosis of a CUDA probe that cannot
    run. Any failure comes back as an `error` result, never a traceback.
    """
    from gpulab.probes import ProbeResult, UnknownProbe, run_probe

    try:
        if nvml_backend is not None and probe_needs(name) == "cuda":
            why = find_out(name, nvml_backend)
            if why is not None:
                return why
        if nvml_backend is not None and name in _NVML_PROBES:
            from gpulab.probes import nvml

            start = time.perf_counter()
            try:
                result: ProbeResult = getattr(nvml, _NVML_PROBES[name])(nvml_backend)
            except Exception as exc:  # a probe's failure must become a result
                result = ProbeResult(
                    name, name, "error", f"the probe failed: {type(exc).__name__}: {exc}"
                )
            return msgspec.structs.replace(result, seconds=time.perf_counter() - start)
        return run_probe(name)
    except UnknownProbe:
        return ProbeResult(
            name,
            name,
            "error",
            f"there is no probe named {name!r}: `gpulab probe list` shows the ones that exist",
        )


def gpu_present(nvml_backend: Any = None) -> bool | None:
    """Whether this machine has an NVIDIA GPU; blocking, so call it from a thread worker.

    The probes' door to the GPUs answers (`gpulab.probes.device.present`): NVML
    through the backend when one is given (a `Replay` in tests), else the PCI
    bus in sysfs, which needs no driver and imports nothing heavy. None when it
    cannot tell.
    """
    from gpulab.probes.device import present

    return present(nvml_backend)


def find_out(name: str, nvml_backend: Any = None) -> ProbeResult | None:
    """Why probe `name` cannot run on this machine (the result it would give), or None when
    it can; blocking (NVML starts, CuPy is imported), so call it from a thread worker."""
    from gpulab.probes import get_probe
    from gpulab.probes.cuda import cannot_run

    info = get_probe(name)
    return cannot_run(info.needs, nvml_backend, probe=info.name, title=info.title)


def probe_needs(name: str) -> str:
    """What a probe needs to run: "host", "nvml", "cuda"; "" for an unknown probe."""
    from gpulab.probes import PROBES

    return next((p.needs for p in PROBES if p.name == name), "")


@dataclass(frozen=True)
class Outcome:
    """What one probe result says about one claim."""

    result: ProbeResult
    reading: Reading | None = None
    verdict: Verdict | None = None  # None when there is no number to judge
    measured: float | None = None  # the reading in the claim's unit
    problem: str = ""  # why there is no verdict

    @property
    def cannot_run(self) -> bool:
        """The probe could not run here at all (no GPU, no driver, no CuPy)."""
        return self.result.status in CANNOT_RUN


def outcome_of(claim: Claim, result: ProbeResult) -> Outcome:
    """Find the claim's reading in a probe result and judge it against the claim."""
    if result.status in (*CANNOT_RUN, "error"):
        return Outcome(result, problem=result.message)
    if not claim.reading:
        return Outcome(
            result, problem=f"the {claim.probe} probe's result has no reading for this claim yet"
        )
    reading = result.reading(claim.reading)
    if reading is None:
        return Outcome(
            result, problem=f"the {claim.probe} probe returned no reading {claim.reading!r}"
        )
    if reading.status != "ok":
        why = f": {reading.detail}" if reading.detail else ""
        return Outcome(result, reading, problem=f"{reading.label}: {reading.shown}{why}")
    value = reading.value
    if isinstance(value, bool) or not isinstance(value, int | float):
        return Outcome(
            result, reading, problem=f"{reading.label} is {reading.shown}, not a number to compare"
        )
    verdict = judge(claim, float(value), reading.unit, result.device)
    measured = verdict.measured
    if measured is None:
        measured = in_claim_unit(claim, float(value), reading.unit)
    return Outcome(result, reading, verdict, measured)


def in_claim_unit(claim: Claim, value: float, unit: str) -> float | None:
    """`value` `unit` in the claim's unit, None when the units are of different kinds.

    A size converts two ways (decimal and binary MB); the one nearer the claim's figure
    is taken, as the verdict takes it.
    """
    candidates = conversions(value, unit, claim.unit) if unit.strip() else [value]
    if not candidates:
        return None
    if claim.value is not None:
        low = high = claim.value
    elif claim.min is not None and claim.max is not None:
        low, high = claim.min, claim.max
    else:
        return candidates[0]
    return min(candidates, key=lambda c: (max(low - c, c - high, 0.0), abs(c - (low + high) / 2)))


def distance_text(predicted: float, measured: float, unit: str, what: str = "measured") -> str:
    """How far a prediction was from the measurement (or from what `what` names, "recorded")."""
    if predicted == measured:
        return f"exactly the {what} value"
    if measured == 0:
        side = "above" if predicted > measured else "below"
        return f"{abs(predicted - measured):.4g} {unit} {side} the {what} 0 {unit}"
    relative = (predicted - measured) / abs(measured)
    side = "above" if relative > 0 else "below"
    if abs(relative) < 0.005:
        return f"within 0.5 % of the {what} {measured:.4g} {unit}"
    if abs(relative) >= 10:
        return f"{predicted / measured:.3g}× the {what} {measured:.4g} {unit}"
    return f"{abs(relative) * 100:.0f} % {side} the {what} {measured:.4g} {unit}"


@dataclass(frozen=True)
class ClaimState:
    """Everything a claim card shows beyond the claim itself."""

    measuring: bool = False
    outcome: Outcome | None = None  # this session's latest run
    predicted: float | None = None  # the prediction made for that run
    last: Prediction | None = None  # the learner's last saved measurement
    missing: str = ""  # why the probe cannot run here, if known
    recorded: Outcome | None = None  # a recorded run, shown only when it cannot run here
    guess: Prediction | None = None  # the last saved prediction of the recorded value
    also: tuple[Outcome, ...] = ()  # the other recordings (the H100's), shown beside it


class ClaimBoard:
    """This session's measurements of claims, and what the machine lacks."""

    def __init__(self) -> None:
        self._outcomes: dict[str, tuple[Outcome, float | None]] = {}
        self._measuring: set[str] = set()
        self._missing: dict[str, str] = {}

    def is_measuring(self, claim_id: str) -> bool:
        return claim_id in self._measuring

    def start(self, claim_id: str) -> None:
        """The claim's probe has started."""
        self._measuring.add(claim_id)

    def finish(self, claim: Claim, result: ProbeResult, predicted: float | None) -> Outcome:
        """The claim's probe has finished: remember what it found."""
        self._measuring.discard(claim.id)
        outcome = outcome_of(claim, result)
        self._outcomes[claim.id] = (outcome, predicted)
        self.note(result)
        return outcome

    def note(self, result: ProbeResult) -> None:
        """Learn from any probe result whether this machine can run GPU probes."""
        needs = probe_needs(result.probe)
        if result.status == "no_gpu":
            for kind in ("nvml", "cuda"):
                self._missing[kind] = result.message
        elif result.status == "unavailable" and needs:
            self._missing[needs] = result.message
        elif result.status in ("ok", "partial"):
            self._missing.pop(needs, None)

    def missing(self, claim: Claim) -> str:
        """Why the claim's probe cannot run here, as far as known ("" when not known)."""
        return self._missing.get(probe_needs(claim.probe), "")

    def prediction(self, claim: Claim, predicted: float, at: str) -> Prediction:
        """What the progress keeps of a prediction for the claim's latest run (`finish`).

        Where the probe could not run here, the prediction was of the recorded reading:
        its device is the recording's, and nothing was measured.
        """
        outcome, _ = self._outcomes[claim.id]
        device = outcome.result.device
        if outcome.cannot_run:
            recorded = recorded_outcome(claim)
            if recorded is not None and recorded.result.recorded is not None:
                device = recorded.result.device or recorded.result.recorded.machine
        verdict = outcome.verdict.kind if outcome.verdict is not None else "not_measured"
        return Prediction(
            claim=claim.id,
            predicted=predicted,
            unit=claim.unit,
            at=at,
            measured=outcome.measured,
            verdict=verdict,
            device=device,
        )

    def state(self, claim: Claim, predictions: list[Prediction]) -> ClaimState:
        """What the card of `claim` shows now."""
        outcome, predicted = self._outcomes.get(claim.id, (None, None))
        missing = self.missing(claim)
        if outcome is not None and outcome.cannot_run:
            missing = outcome.problem
        last = next(
            (p for p in reversed(predictions) if p.claim == claim.id and p.measured is not None),
            None,
        )
        recorded = recorded_outcome(claim) if missing else None
        guess = None
        if recorded is not None and recorded.result.recorded is not None:
            machine = recorded.result.device or recorded.result.recorded.machine
            guess = next(
                (
                    p
                    for p in reversed(predictions)
                    if p.claim == claim.id and p.measured is None and p.device == machine
                ),
                None,
            )
        return ClaimState(
            claim.id in self._measuring,
            outcome,
            predicted,
            last,
            missing,
            recorded,
            guess,
            other_recordings(claim) if recorded is not None else (),
        )


def other_recordings(claim: Claim) -> tuple[Outcome, ...]:
    """What the readings recorded on gpulab's other GPUs (the H100) say about the claim."""
    from gpulab.probes.recorded import recorded_runs

    found = (
        results.get(claim.probe) for name, results in recorded_runs().items() if name != "h200"
    )
    return tuple(outcome_of(claim, result) for result in found if result is not None)


def recorded_outcome(claim: Claim) -> Outcome | None:
    """What the reading recorded on gpulab's H200 says about the claim, if one ships."""
    from gpulab.probes.recorded import recorded_results

    found = recorded_results().get(claim.probe)
    return outcome_of(claim, found) if found is not None else None
