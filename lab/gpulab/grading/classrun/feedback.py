"""What a grading run hands back: one feedback page per learner, and the LMS gradebook CSV.

`write_feedback` writes one learner's grades as a self-contained HTML page and
as Markdown (`feedback_markdown` is what the Markdown file holds);
`write_grades_csv` writes every learner's points as a CSV an LMS imports
(Canvas-style, with a "Points possible" row).

Much of what is shown comes from the learner: their name, their values in
the checks' messages, their tracebacks. The HTML is rendered with autoescape
on, the Markdown escapes every character that could make markup
(`gpulab.grading.classrun.markdown_text`), and the CSV defuses cells a spreadsheet would
run as a formula (`gpulab.grading.classrun.csv_cells`). Every such text is
shown `plain` and cut to a length, as the gradebook stores it, whoever hands
the grades in.

Hidden checks are shown as one total per exercise ("hidden checks: 7/10
points") with their names, never one by one: the learner's code sees every
argument of a hidden check, so a pass or fail per check would let it fail a
later check on purpose and read one bit per check back from the page. Their
titles and messages are never shown; the instructor's gradebook keeps them
per check.
"""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from gpulab.errors import GpulabError
from gpulab.files import atomic_write
from gpulab.grading.classrun.csv_cells import cell as _cell
from gpulab.grading.classrun.markdown_text import md_block as _md_block
from gpulab.grading.classrun.markdown_text import md_cell as _md_cell
from gpulab.grading.classrun.markdown_text import md_inline as _md_inline
from gpulab.grading.gradebook.verdict import (
    UNGRADED,
    CheckRow,
    ExerciseGrade,
    Kind,
    LearnerGrades,
    plain,
)
from gpulab.grading.intake.names import MAX_NAME
from gpulab.grading.pages import environment

__all__ = [
    "NOT_RUN_NOTE",
    "FeedbackError",
    "feedback_markdown",
    "write_feedback",
    "write_grades_csv",
]

TEMPLATE = "feedback.html.j2"

# What each Kind means, in the learner's words.
VERDICTS: Mapping[Kind, str] = {
    "right": "all checks passed",
    "wrong": "some checks failed",
    "timeout": "ran out of time",
    "crashed": "your code crashed the process",
    "gpu-fault": "a CUDA error in your kernel",
    "invalid": "could not be graded",
    "missing": "not handed in",
    "partial": "checked without a GPU: the GPU checks were not run",
    "not-run": "not run by the grader",
}

# In the points row of grades.csv when some cell is blank because the grader did not run it.
NOT_RUN_NOTE = "blank: not run by the grader, or only its checks that need no GPU (no grade, not 0)"


class FeedbackError(GpulabError):
    """Feedback or a gradebook that cannot be written: which learner or file, and why."""


@dataclass(frozen=True)
class _Check:
    """A visible check: hidden ones are only ever part of `_Hidden`."""

    status: str  # passed / failed / skipped
    points: str  # "1/2"
    title: str  # the check's title, or its name
    message: str


@dataclass(frozen=True)
class _Hidden:
    """An exercise's hidden checks as one total: nothing here tells one check from another."""

    total: str  # "7/10 points": earned, of the points of those that ran
    detail: str  # the rest of the sentence: their names in the order they ran, and
    # the points of those that did not run here, if any


@dataclass(frozen=True)
class _Exercise:
    name: str
    kind: Kind
    verdict: str
    points: str  # "3/5"
    message: str
    checks: tuple[_Check, ...]
    hidden: _Hidden | None
    # the visible checks' measurements: what, predicted, yours, the check's, compared
    measured: tuple[tuple[str, str, str, str, str], ...] = ()


@dataclass(frozen=True)
class _Page:
    """One learner's feedback, as the templates show it: every number already in words."""

    title: str
    learner: str
    run_at: str
    exercises: tuple[_Exercise, ...]
    guards: tuple[str, ...]
    total: str  # "7/10"


def write_feedback(
    grades: LearnerGrades, folder: Path, *, title: str, run_at: str, maxima: Mapping[str, float]
) -> tuple[Path, Path]:
    """Write `folder/<slug>.html` and `folder/<slug>.md` for one learner; return both paths.

    `maxima` gives an exercise's points where the grade has none to say
    (a missing or invalid notebook is graded out of 0).
    """
    page = _page(grades, title=title, run_at=run_at, maxima=maxima)
    name = _file_name(grades)
    html = environment().get_template(TEMPLATE).render(page=page)
    html_path, md_path = folder / f"{name}.html", folder / f"{name}.md"
    _write(html_path, html)
    _write(md_path, _markdown(page))
    return html_path, md_path


def feedback_markdown(
    grades: LearnerGrades, *, title: str, run_at: str, maxima: Mapping[str, float]
) -> str:
    """One learner's feedback as Markdown: what `write_feedback` puts in the `.md` file."""
    return _markdown(_page(grades, title=title, run_at=run_at, maxima=maxima))


def write_grades_csv(
    classes: Sequence[LearnerGrades],
    exercises: Sequence[str],
    maxima: Mapping[str, float],
    path: Path,
) -> Path:
    """Write every learner's points, one row each in the order given, as a CSV for an LMS.

    Columns: Learner, Slug, one per exercise in `exercises`, Total; the
    second row holds the points possible. An exercise a learner has no grade
    for, or one the grader could not run whole (``not-run``, or ``partial``: the
    checks that need a GPU, on a grader without one), is
    left blank, which an LMS reads as "not graded", never as 0; where such a
    cell exists the points row says so in its Slug column (`NOT_RUN_NOTE`).
    A learner with no exercise graded at all has a blank Total too.
    """
    if len(set(exercises)) != len(exercises):
        twice = sorted({e for e in exercises if exercises.count(e) > 1})
        raise FeedbackError(f"{path}: exercise {twice[0]!r} is listed twice; list it once")
    possible = [_maximum(maxima, name, where=f"{path}") for name in exercises]
    rows = []
    not_run = False
    for grades in classes:
        by_name = _by_exercise(grades)
        row = [_cell(grades.learner), _cell(grades.slug)]
        total, graded = 0.0, False
        for name in exercises:
            grade = by_name.get(name)
            if grade is None or grade.kind in UNGRADED:
                not_run = not_run or grade is not None
                row.append("")
                continue
            earned = _finite(
                grade.earned, f"learner {grades.slug!r}, exercise {name!r}: earned points"
            )
            total, graded = total + earned, True
            row.append(_number(earned))
        rows.append([*row, _number(total) if graded or not exercises else ""])
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(["Learner", "Slug", *(_cell(name) for name in exercises), "Total"])
    writer.writerow(
        [
            "Points possible",
            NOT_RUN_NOTE if not_run else "",
            *map(_number, possible),
            _number(sum(possible)),
        ]
    )
    writer.writerows(rows)
    _write(path, buffer.getvalue())
    return path


def _page(grades: LearnerGrades, *, title: str, run_at: str, maxima: Mapping[str, float]) -> _Page:
    """Check the grades and turn them into the words and numbers the page shows."""
    exercises = []
    guards: dict[str, None] = {}
    earned_total = possible_total = 0.0
    for grade in grades.exercises:
        where = f"learner {grades.slug!r}, exercise {grade.exercise!r}"
        earned = _finite(grade.earned, f"{where}: earned points")
        possible = _finite(grade.possible, f"{where}: points possible")
        if possible == 0:
            possible = _maximum(maxima, grade.exercise, where=f"learner {grades.slug!r}")
        earned_total += earned
        possible_total += possible
        guards.update(dict.fromkeys(grade.guards))
        exercises.append(
            _Exercise(
                name=grade.exercise,
                kind=grade.kind,
                verdict=VERDICTS[grade.kind],
                points=f"{_number(earned)}/{_number(possible)}",
                message=plain(grade.message),
                checks=tuple(_check(row, where) for row in grade.checks if not row.hidden),
                hidden=_hidden(grade.checks, where),
                measured=_measured(grade.checks),
            )
        )
    return _Page(
        title=title,
        learner=plain(grades.learner, MAX_NAME),
        run_at=run_at,
        exercises=tuple(exercises),
        guards=tuple(guards),
        total=f"{_number(earned_total)}/{_number(possible_total)}",
    )


def _check(row: CheckRow, where: str) -> _Check:
    where = f"{where}, check {row.check!r}"
    points = (
        f"{_number(_finite(row.earned, f'{where}: earned points'))}/"
        f"{_number(_finite(row.points, f'{where}: points'))}"
    )
    return _Check(
        status=row.outcome,
        points=points,
        title=plain(row.title or row.check),
        message=plain(row.message),
    )


def _measured(rows: Sequence[CheckRow]) -> tuple[tuple[str, str, str, str, str], ...]:
    """The visible checks' measurements as the rows the page shows, every text made plain (a
    prediction in words is the learner's own text)."""
    out = []
    for row in rows:
        if row.hidden:
            continue
        for m in row.measurements:
            what, predicted, yours, trusted, compared = m.cells()
            out.append(
                (plain(what), plain(predicted, MAX_NAME), plain(yours), plain(trusted), compared)
            )
    return tuple(out)


def _hidden(rows: Sequence[CheckRow], where: str) -> _Hidden | None:
    """The hidden checks among `rows` as one total, or None where there are none."""
    hidden = [row for row in rows if row.hidden]
    if not hidden:
        return None
    earned = possible = not_run = 0.0
    for row in hidden:
        at = f"{where}, check {row.check!r}"
        earned += _finite(row.earned, f"{at}: earned points")
        worth = _finite(row.points, f"{at}: points")
        if row.outcome == "skipped":
            not_run += worth
        else:
            possible += worth
    more = f" {_number(not_run)} more points of them were not run here." if not_run else ""
    names = ", ".join(row.check for row in hidden)
    return _Hidden(
        total=f"{_number(earned)}/{_number(possible)} points",
        detail=f" in all, shown only as a total ({names}).{more}",
    )


def _markdown(page: _Page) -> str:
    """The page as Markdown; every piece of text from the grades is escaped."""
    out = [
        f"# {_md_inline(page.title)}",
        "",
        f"Feedback for **{_md_inline(page.learner)}**, graded {_md_inline(page.run_at)}.",
        "",
    ]
    if not page.exercises:
        out += ["No exercises were graded.", ""]
    for ex in page.exercises:
        out += [f"## {_md_inline(ex.name)}: {ex.points} points, {ex.verdict}", ""]
        if ex.message:
            out += [_md_block(ex.message), ""]
        if ex.checks:
            out += ["| Status | Points | Check | Message |", "| --- | --- | --- | --- |"]
            for c in ex.checks:
                out.append(
                    f"| {c.status} | {c.points} | {_md_cell(c.title)} | {_md_cell(c.message)} |"
                )
            out.append("")
        if ex.hidden:
            out += [f"**Hidden checks: {ex.hidden.total}**{_md_inline(ex.hidden.detail)}", ""]
        if ex.measured:
            out += [
                "| Measured | Your prediction | Yours | The check's | Compared |",
                "| --- | --- | --- | --- | --- |",
                *("| " + " | ".join(_md_cell(cell) for cell in row) + " |" for row in ex.measured),
                "",
            ]
    out += ["---", "", f"**Total: {page.total} points**", ""]
    if page.guards:
        out += ["Isolation in force:", "", *(f"- {_md_inline(g)}" for g in page.guards), ""]
    else:
        out += ["Isolation in force: none recorded.", ""]
    out.append(f"Graded {_md_inline(page.run_at)}.")
    return "\n".join(out) + "\n"


def _by_exercise(grades: LearnerGrades) -> dict[str, ExerciseGrade]:
    by_name: dict[str, ExerciseGrade] = {}
    for grade in grades.exercises:
        if grade.exercise in by_name:
            raise FeedbackError(
                f"learner {grades.slug!r}: two grades for exercise "
                f"{grade.exercise!r}; a run grades each exercise once"
            )
        by_name[grade.exercise] = grade
    return by_name


def _maximum(maxima: Mapping[str, float], exercise: str, *, where: str) -> float:
    if exercise not in maxima:
        raise FeedbackError(
            f"{where}: no points possible given for exercise {exercise!r}; add it to the maxima"
        )
    return _finite(maxima[exercise], f"{where}: points possible for exercise {exercise!r}")


def _finite(value: float, what: str) -> float:
    if not math.isfinite(value) or value < 0:
        raise FeedbackError(f"{what} is {value!r}; it must be a number of at least 0")
    return float(value)


def _number(value: float) -> str:
    """Points as people write them: 3, 2.5, 0.33 (at most two decimals)."""
    value = round(value, 2) + 0.0  # + 0.0 turns -0.0 into 0.0
    if value.is_integer():
        return str(int(value))
    return f"{value:.2f}".rstrip("0")


def _file_name(grades: LearnerGrades) -> str:
    slug = grades.slug
    if not slug or slug in {".", ".."} or any(c in slug for c in "/\\\0") or slug.startswith("."):
        raise FeedbackError(
            f"learner {grades.learner!r}: slug {slug!r} is not a plain file "
            "name; use letters, digits, '-' and '_'"
        )
    return slug


def _write(path: Path, text: str) -> None:
    """Write `text` as UTF-8 with "\\n" line ends, replacing `path` only once it is whole."""
    try:
        atomic_write(path, text, mode=0o644)
    except OSError as exc:
        raise FeedbackError(f"{path}: cannot write it: {exc.strerror or exc}") from None
