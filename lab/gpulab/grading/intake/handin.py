"""One learner's hand-in as the intake finds it, and settled into one notebook per exercise.

`gpulab.grading.intake` walks SUBMISSIONS and hands each learner's entries to
their `HandIn`: the notebooks offered for each exercise (`Candidate`, already
copied into the work folder or refused), what looked meant for one but was
passed over (`near`), and what the hand-in has used of its limits: the zips
opened for it (`ZipLimits.max_zips`) and the problem lines it has given
(`MAX_PROBLEMS`; the rest are counted, so no learner can flood the run's
report). `settle` then chooses, per exercise, the one notebook that stands and
moves it into place, or says why there is none.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from gpulab.grading.intake.names import clean, reason

__all__ = ["MAX_PROBLEMS", "Candidate", "HandIn", "Settled"]

MAX_PROBLEMS = 20
"""Problem lines one learner's hand-in may add to a run; one more line counts the rest."""


@dataclass
class Candidate:
    """A notebook offered for one exercise: copied to `staged`, or refused with `problem`."""

    where: str
    rank: int | None  # Canvas re-submission number; None outside the Canvas rule
    staged: Path | None = None
    sha256: str = ""
    problem: str = ""


@dataclass
class Settled:
    """What one learner hands to grading: per exercise, the copy and its hash, or why not."""

    notebooks: dict[str, Path] = field(default_factory=dict)
    hashes: dict[str, str] = field(default_factory=dict)
    problems: dict[str, str] = field(default_factory=dict)


@dataclass
class HandIn:
    """Everything found for one learner, and what the finding has used of their limits."""

    name: str  # as shown: cut to `MAX_NAME`
    slug: str  # before clashes are settled
    sources: set[str] = field(default_factory=set)
    candidates: dict[str, list[Candidate]] = field(default_factory=dict)
    near: dict[str, list[str]] = field(default_factory=dict)  # exercise -> "where: why not"
    zips: int = 0  # zips opened for this learner
    unopened: list[str] = field(default_factory=list)  # zips past `ZipLimits.max_zips`
    told: int = 0  # problem lines given
    untold: int = 0  # problem lines past `MAX_PROBLEMS`

    def problem(self, line: str, problems: list[str]) -> None:
        """Add a problem line of this hand-in to the run's `problems` while it has given fewer
        than `MAX_PROBLEMS`; count it after."""
        if self.told < MAX_PROBLEMS:
            self.told += 1
            problems.append(line)
        else:
            self.untold += 1

    def settle(self, exercises: Iterable[str], folder: Path, problems: list[str]) -> Settled:
        """Choose each exercise's notebook and move its copy to ``folder/<exercise>.ipynb``.

        What was passed over for an exercise (a look-alike, a folder, a
        notebook too deep) is the learner's problem for it when nothing else
        was handed in for it, and a problem line of the run when something was.
        An exercise with no notebook leaves no copy of an earlier run behind.
        """
        settled = Settled()
        for exercise in sorted(exercises):
            offers = _standing(self.candidates.get(exercise, []))
            near = self.near.get(exercise, [])
            if offers:
                for line in near:
                    self.problem(line, problems)
            elif near:
                settled.problems[exercise] = f"no {exercise}.ipynb: {'; '.join(near)}"
            target = folder / f"{exercise}.ipynb"
            try:
                if len(offers) == 1 and offers[0].staged is not None:
                    folder.mkdir(exist_ok=True)
                    os.replace(offers[0].staged, target)
                    settled.notebooks[exercise] = target
                    settled.hashes[exercise] = offers[0].sha256
                    continue
                if folder.is_dir():
                    target.unlink(missing_ok=True)  # no stale copy from an earlier run
            except OSError as exc:
                settled.problems[exercise] = f"{clean(target)}: cannot write it: {reason(exc)}"
                continue
            if len(offers) > 1:
                places = ", ".join(offer.where for offer in offers)
                settled.problems[exercise] = (
                    f"{len(offers)} notebooks for {exercise}: {places}; "
                    "the learner should hand in one"
                )
            elif offers:
                settled.problems[exercise] = f"{offers[0].where}: {offers[0].problem}"
        settled.problems = {k: clean(v) for k, v in settled.problems.items()}
        return settled

    def past_limits(self, max_zips: int) -> list[str]:
        """The lines that say what this hand-in held past its limits: zips not opened,
        problem lines not given."""
        lines = []
        if self.unopened:
            more = len(self.unopened) - 1
            lines.append(
                f"{self.unopened[0]}: past the {max_zips} zips one learner's hand-in may "
                "open; not opened" + (f", nor {more} more zips of {self.name}'s" if more else "")
            )
        if self.untold:
            lines.append(
                f"{self.name} ({', '.join(sorted(self.sources))}): {self.untold} more "
                "problems with this learner's hand-in, not listed"
            )
        return lines


def _standing(offers: list[Candidate]) -> list[Candidate]:
    """The offers that stand: of Canvas re-submissions only the highest number counts."""
    numbers = [offer.rank for offer in offers if offer.rank is not None]
    if not numbers:
        return offers
    return [offer for offer in offers if offer.rank is None or offer.rank == max(numbers)]
