"""What a grading run decides, as plain data: per check, per exercise, per learner.

These records are what the gradebook stores and what the feedback, the CSV
and the summary are written from. They are built on the trusted side only,
from the checks' JSON report (see `gpulab.grading.checks.runner`), never from
anything the learner's code printed or returned; `verdict` sorts a report
into them.

Their text comes partly from the learner (their name, the values and
exceptions a check's message quotes, file names in a zip), so it may hold
anything a Python string can: lone surrogates that no encoder accepts,
terminal escapes, bidirectional overrides, or a megabyte. `plain` is the one
place such text is made storable and printable, and cut to a length
(`gpulab.grading.intake.names.cut`); the gradebook passes every text it stores
through it, and everything shown later is read back from there.
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

from gpulab.course.progress import Measurement
from gpulab.grading.checks.protocol import DECISIVE
from gpulab.grading.intake.names import MAX_TEXT, cut

if TYPE_CHECKING:
    from gpulab.grading.checks.runner import CheckReport

__all__ = [
    "BUSY",
    "KINDS",
    "UNGRADED",
    "CheckRow",
    "ExerciseGrade",
    "Kind",
    "LearnerGrades",
    "failure",
    "plain",
    "verdict",
]

# Why an exercise earned what it did. "right": every check passed; "wrong": a
# check failed on the learner's answer; "timeout": the learner's code used up
# its own time (`gpulab.grading.sandbox.jobtime`); "crashed": the learner's process
# ended (exit, signal, memory limit); "gpu-fault": a CUDA error in the
# learner's kernel; "invalid": the submission could not be graded (bad
# notebook, edited locked cells, two notebooks for one exercise); "missing": no
# notebook handed in; "not-run": the grader could not run it (no GPU left, an
# error in the checks or in the grader itself, a machine too busy to give the
# code its time); "partial": the checks that need no GPU were graded, those
# that need one could not run here (a GPU exercise on a grader without a GPU).
# A not-run or partial grade is no grade: the CSV leaves it blank and the next
# run tries again; a partial grade's checks still reach the learner's feedback.
Kind = Literal[
    "right", "wrong", "timeout", "crashed", "gpu-fault", "invalid", "missing", "partial", "not-run"
]
KINDS: tuple[Kind, ...] = (
    "right",
    "wrong",
    "timeout",
    "crashed",
    "gpu-fault",
    "invalid",
    "missing",
    "partial",
    "not-run",
)
BUSY = (
    "not graded: the grading machine kept the checks from the CPU for several times their "
    "time limit; the next run grades it again"
)
UNGRADED: frozenset[Kind] = frozenset({"partial", "not-run"})
"""Kinds that are no grade yet: blank in the CSV, out of the means, run again next time."""


@dataclass(frozen=True)
class CheckRow:
    """One check of one exercise for one learner."""

    check: str
    title: str
    outcome: Literal["passed", "failed", "skipped"]
    points: float
    earned: float
    message: str = ""  # the teaching message; never shown for a hidden check
    hidden: bool = False
    instructor_message: str = ""  # a hidden check's message: kept for the instructor only
    # the figures it measured beside the learner's, with their predictions (feedback shows
    # a visible check's only)
    measurements: tuple[Measurement, ...] = ()


@dataclass(frozen=True)
class ExerciseGrade:
    """One learner's grade on one exercise."""

    exercise: str
    kind: Kind
    earned: float
    possible: float
    message: str = ""  # why, for invalid / missing / not-run / crashed
    checks: tuple[CheckRow, ...] = ()
    guards: tuple[str, ...] = ()  # the isolation in force while it ran
    duration_s: float = 0.0
    notebook_hash: str = ""  # sha256 of the very bytes the checks read


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


def verdict(report: CheckReport) -> tuple[Kind, str, tuple[CheckRow, ...]]:
    """Sort a checks report into a kind, a message and the check rows.

    A hidden check's message goes to `CheckRow.instructor_message`, never to
    `message`: the learner's feedback shows hidden checks only as one total
    (`gpulab.grading.classrun.feedback`).
    """
    rows = tuple(
        CheckRow(
            r.check,
            r.title,
            r.outcome,
            r.points,
            r.earned,
            "" if r.hidden else r.message,
            r.hidden,
            r.message if r.hidden else "",
            tuple(r.measurements),
        )
        for r in report.results
    )
    if report.status == "invalid":
        return "invalid", report.message, rows
    if report.status == "timeout":
        return "timeout", report.message, rows
    if report.status == "error":
        return "not-run", report.message, rows
    unable = [r for r in report.results if r.needs_gpu]
    if unable and any(r.outcome != "skipped" for r in report.results):
        points = sum(r.points for r in unable)
        return (
            "partial",
            (
                f"{_points(points)} of {_points(report.possible + points)} points "
                f"were not graded here: {unable[0].message}; the checks that need "
                "no GPU were"
            ),
            rows,
        )
    if report.status == "skipped":
        return "not-run", report.message or "the checks were skipped", rows
    busy = [r for r in report.results if r.outcome == "failed" and r.kind == "busy"]
    if busy:  # a check the machine kept from the CPU: no verdict, and none on the exercise
        return "not-run", BUSY if busy[0].hidden else busy[0].message.split("\n")[0], rows
    if report.status == "passed":
        return "right", "", rows
    kinds = {r.kind for r in report.results if r.outcome == "failed"}
    for kind in DECISIVE:  # a failure that decides the kind names it too
        if kind in kinds:
            first = next(r for r in report.results if r.outcome == "failed" and r.kind == kind)
            return kind, "" if first.hidden else first.message.split("\n")[0], rows
    return "wrong", "", rows


def _points(value: float) -> str:
    return f"{value:g}"


def failure(exc: BaseException) -> str:
    """An exception as a grade's reason: its type and its message."""
    try:
        text = str(exc)
    except Exception:  # a message that cannot be made is still a failure to report
        text = ""
    name = type(exc).__name__
    return f"{name}: {text}" if text else name


# Kept as they are: line breaks and tabs (tracebacks keep their layout) and the
# Unicode spaces. Made visible: every other character str.isprintable refuses
# (C0 and C1 controls, escape sequences, bidirectional overrides, zero-width
# and other format characters, line and paragraph separators).
_KEPT = frozenset("\n\t")


def plain(text: object, limit: int = MAX_TEXT) -> str:
    """`text` made storable and printable, in at most `limit` characters: the one cleaning of
    learner text.

    Lone surrogates (which UTF-8 cannot encode, so SQLite and every file
    refuse them) become U+FFFD; a pair of surrogates becomes the character
    it stands for. CR LF becomes LF. Control and format characters are
    written out as Python escapes (ESC as ``\\x1b``, U+202E as ``\\u202e``),
    so a terminal or a browser shows them instead of obeying them. Text
    longer than `limit` ends in "… (cut: N more characters)" (`cut`); text
    already plain and within `limit` comes back as it is. Only the start of
    a long text is looked at: what is cut is never cleaned.
    """
    if not isinstance(text, str):
        text = str(text)
    more = max(len(text) - 2 * limit, 0)  # the two steps below at most halve a text
    text = text[: 2 * limit] if more else text
    if not text.isascii():
        text = text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    text = text.replace("\r\n", "\n")
    if text.replace("\n", "").replace("\t", "").isprintable():
        return cut(text, limit, more=more)
    more += max(len(text) - limit, 0)  # an escape only lengthens the character it shows
    return cut(
        [
            char
            if char in _KEPT or char.isprintable() or unicodedata.category(char) == "Zs"
            else char.encode("unicode_escape").decode("ascii")
            for char in text[:limit]
        ],
        limit,
        more=more,
    )
