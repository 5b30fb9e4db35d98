"""What a grading run decides, as plain data: per check, per exercise, per learner.

These records are what the gradebook stores and what the feedback, the CSV
and the summary are written from. They are built on the trusted side only,
from the checks' JSON report (see `gpulab.grading.runner`), never from
anything the learner's code printed or returned.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

__all__ = ["KINDS", "CheckRow", "ExerciseGrade", "Kind", "LearnerGrades"]

# Why an exercise earned what it did. "right": every check passed; "wrong": a
# check failed on the learner's answer; "timeout": the learner's code ran out
# of time; "crashed": the learner's process ended (exit, signal, memory limit);
# "gpu-fault": a CUDA error in the learner's kernel; "invalid": the
# submission could not be graded (bad notebook, edited locked cells, two
# notebooks for one exercise); "missing": no notebook handed in; "not-run":
# the grader could not run it (no GPU left, an error in the checks).
Kind = Literal["right", "wrong", "timeout", "crashed", "gpu-fault", "invalid", "missing",
               "not-run"]
KINDS: tuple[Kind, ...] = ("right", "wrong", "timeout", "crashed", "gpu-fault", "invalid",
                           "missing", "not-run")


@dataclass(frozen=True)
class CheckRow:
    """One check of one exercise for one learner."""

    check: str
    title: str
    outcome: Literal["passed", "failed", "skipped"]
    points: float
    earned: float
    message: str = ""        # the teaching message; never shown for a hidden check
    hidden: bool = False


@dataclass(frozen=True)
class ExerciseGrade:
    """One learner's grade on one exercise."""

    exercise: str
    kind: Kind
    earned: float
    possible: float
    message: str = ""                       # why, for invalid / missing / not-run / crashed
    checks: tuple[CheckRow, ...] = ()
    guards: tuple[str, ...] = ()            # the isolation in force while it ran
    duration_s: float = 0.0
    notebook_hash: str = ""


@dataclass(frozen=True)
class LearnerGrades:
    """All of one learner's grades in a run."""

    learner: str
    slug: str
    exercises: tuple[ExerciseGrade, ...] = field(default_factory=tuple)

    @property
    def earned(self) -> float:
        return sum(e.earned for e in self.exercises)

    @property
    def possible(self) -> float:
        return sum(e.possible for e in self.exercises)
