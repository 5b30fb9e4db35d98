"""What a grading run has to do: the jobs, and the grades that need no run. Pure.

`plan` turns what the intake found, each exercise's checks hash and worth,
and the grades the gradebook already holds into:

- one `Job` per learner and exercise whose notebook is new, changed, graded
  under other checks, or has no grade yet (a `partial` or `not-run` grade is
  no grade: it runs again);
- a settled grade for each exercise a learner handed in no notebook for
  ("missing") or one that cannot be graded ("invalid", with the intake's
  reason);
- the count of grades kept as they are (``--regrade`` keeps none).

It reads no file and writes nothing: `gpulab.grading.classrun.grade` stores what it
returns, `gpulab.grading.classrun.run` runs the jobs.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from gpulab.course.manifest import ExerciseEntry
from gpulab.grading.classrun.run import Job
from gpulab.grading.gradebook import StoredGrade
from gpulab.grading.gradebook.verdict import UNGRADED, ExerciseGrade
from gpulab.grading.intake import LearnerSubmission

__all__ = ["Plan", "Settled", "plan"]


@dataclass(frozen=True)
class Settled:
    """A grade that needs no run, for `slug`, under the checks `checks_hash`."""

    slug: str
    grade: ExerciseGrade
    checks_hash: str


@dataclass(frozen=True)
class Plan:
    jobs: list[Job] = field(default_factory=list)
    settled: list[Settled] = field(default_factory=list)
    reused: int = 0


def plan(
    learners: Sequence[LearnerSubmission],
    entries: Sequence[ExerciseEntry],
    *,
    hashes: Mapping[str, str],
    maxima: Mapping[str, float],
    stored: Mapping[tuple[str, str], StoredGrade],
    guards: Mapping[bool, tuple[str, ...]],
) -> Plan:
    """The run's jobs and settled grades, learner by learner in the intake's order and
    exercise by exercise in `entries`' order.

    `hashes` and `maxima` give each exercise's checks hash and worth; `stored`
    the gradebook's grades by (slug, exercise) (empty for ``--regrade``);
    `guards` the isolation a job runs under, by whether it is a GPU job (a GPU
    job that runs without a GPU falls back to ``guards[False]``)."""
    jobs: list[Job] = []
    settled: list[Settled] = []
    reused = 0
    for learner in learners:
        for entry in entries:
            name = entry.name
            notebook_hash = learner.hashes.get(name, "")
            before = stored.get((learner.slug, name))
            if (
                before is not None
                and before.notebook_hash == notebook_hash
                and before.checks_hash == hashes[name]
                and before.kind not in UNGRADED
            ):
                reused += 1
            elif name in learner.notebooks:
                jobs.append(
                    Job(
                        learner.slug,
                        entry,
                        learner.notebooks[name],
                        notebook_hash,
                        hashes[name],
                        maxima[name],
                        guards[entry.gpu],
                        guards[False],
                    )
                )
            else:
                problem = learner.problems.get(name)
                settled.append(
                    Settled(
                        learner.slug,
                        ExerciseGrade(
                            name,
                            "invalid" if problem else "missing",
                            0.0,
                            maxima[name],
                            problem or "no notebook was handed in",
                            notebook_hash=notebook_hash,
                        ),
                        hashes[name],
                    )
                )
    return Plan(jobs, settled, reused)
