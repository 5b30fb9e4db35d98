"""Planning a grading run (`gpulab.grading.classrun.plan`): pure, so every rule is shown on data."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpulab.course import load_course
from gpulab.course.manifest import ExerciseEntry
from gpulab.grading.classrun.plan import plan
from gpulab.grading.gradebook import StoredGrade
from gpulab.grading.intake import LearnerSubmission

GUARDS = {False: ("cpu guards",), True: ("gpu guards",)}


@pytest.fixture(scope="module")
def entries() -> list[ExerciseEntry]:
    by_name = {e.name: e for e in load_course().exercises()}
    assert not by_name["roofline"].gpu and by_name["vector-add"].gpu
    return [by_name["roofline"], by_name["vector-add"]]


def _learner(
    slug: str, notebooks: dict[str, str], problems: dict[str, str] | None = None
) -> LearnerSubmission:
    """`notebooks`: exercise -> the notebook's hash."""
    return LearnerSubmission(
        slug,
        slug,
        {e: Path(f"work/{slug}/{e}.ipynb") for e in notebooks},
        dict(notebooks),
        problems or {},
        Path("class") / slug,
    )


def _plan(
    entries: list[ExerciseEntry],
    learners: list[LearnerSubmission],
    stored: dict[tuple[str, str], StoredGrade] | None = None,
):
    hashes = {e.name: f"checks-{e.name}" for e in entries}
    maxima = {"roofline": 21.0, "vector-add": 12.0}
    return plan(learners, entries, hashes=hashes, maxima=maxima, stored=stored or {}, guards=GUARDS)


def test_every_notebook_handed_in_is_a_job_in_order(entries: list[ExerciseEntry]) -> None:
    planned = _plan(
        entries,
        [_learner("b", {"vector-add": "h1", "roofline": "h2"}), _learner("a", {"roofline": "h3"})],
    )
    assert [
        (j.slug, j.entry.name, j.notebook_hash, j.checks_hash, j.possible) for j in planned.jobs
    ] == [
        ("b", "roofline", "h2", "checks-roofline", 21.0),
        ("b", "vector-add", "h1", "checks-vector-add", 12.0),
        ("a", "roofline", "h3", "checks-roofline", 21.0),
    ]
    cpu, gpu = planned.jobs[0], planned.jobs[1]
    assert (cpu.guards, cpu.cpu_guards) == (("cpu guards",), ("cpu guards",))
    assert (gpu.guards, gpu.cpu_guards) == (("gpu guards",), ("cpu guards",))
    assert planned.reused == 0
    assert [(s.slug, s.grade.exercise, s.grade.kind) for s in planned.settled] == [
        ("a", "vector-add", "missing")
    ]


def test_missing_and_invalid_are_settled_with_their_reason(entries: list[ExerciseEntry]) -> None:
    planned = _plan(entries, [_learner("a", {}, {"roofline": "two notebooks for roofline"})])
    assert planned.jobs == []
    grades = [
        (
            s.grade.exercise,
            s.grade.kind,
            s.grade.earned,
            s.grade.possible,
            s.grade.message,
            s.checks_hash,
        )
        for s in planned.settled
    ]
    assert grades == [
        ("roofline", "invalid", 0.0, 21.0, "two notebooks for roofline", "checks-roofline"),
        ("vector-add", "missing", 0.0, 12.0, "no notebook was handed in", "checks-vector-add"),
    ]


@pytest.mark.parametrize(
    ("stored", "runs"),
    [
        (
            StoredGrade("h1", "checks-roofline", "right"),
            False,
        ),  # the same notebook, the same checks
        (StoredGrade("h1", "checks-roofline", "wrong"), False),
        (StoredGrade("h1", "checks-roofline", "timeout"), False),
        (StoredGrade("h0", "checks-roofline", "right"), True),  # the learner handed in again
        (StoredGrade("h1", "older-checks", "right"), True),  # the checks changed
        (StoredGrade("h1", "checks-roofline", "partial"), True),  # no grade yet: run again
        (StoredGrade("h1", "checks-roofline", "not-run"), True),
    ],
)
def test_a_stored_grade_is_kept_only_if_nothing_changed(
    entries: list[ExerciseEntry], stored: StoredGrade, runs: bool
) -> None:
    planned = _plan(entries[:1], [_learner("a", {"roofline": "h1"})], {("a", "roofline"): stored})
    assert [j.slug for j in planned.jobs] == (["a"] if runs else [])
    assert planned.reused == (0 if runs else 1)
    assert planned.settled == []


def test_a_notebook_taken_back_is_missing_not_its_old_grade(entries: list[ExerciseEntry]) -> None:
    planned = _plan(
        entries[:1],
        [_learner("a", {})],
        {("a", "roofline"): StoredGrade("h1", "checks-roofline", "right")},
    )
    assert [(s.grade.kind, s.grade.notebook_hash) for s in planned.settled] == [("missing", "")]
    assert planned.reused == 0
