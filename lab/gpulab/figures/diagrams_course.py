"""A diagram of the course itself: the sixty days, gpulab's written ones, and what each follows.

Drawn from the course, not from a machine: the days and lessons from
course.toml (and its `plan_days`), what each gpulab day covers of the source
plan from the roadmap lesson's table "gpulab day | lesson | what it covers of
the plan" ("plan day N", "gpulab's phase: NAME" for a phase of gpulab's own, or
anything else for gpulab's own days within the plan's phase), and the later
phases with their proposed day ranges from its table "phase | gpulab days
(proposed)". Edit those tables and the diagram follows.
"""

from __future__ import annotations

import re
from itertools import groupby

from gpulab.course.problems import CourseError
from gpulab.figures.diagram_data import Diagram, Facts
from gpulab.figures.diagram_model import Box, Drawing, Link
from gpulab.figures.model import Missing

__all__ = ["COURSE_DIAGRAMS", "ROADMAP", "markdown_table"]

ROADMAP = "roadmap"
"""The lesson whose tables the timeline reads."""

_RANGE = re.compile(r"days?\s+(\d+)\s*[-–]\s*(\d+)")
_PLAN_DAY = re.compile(r"plan day (\d+)")
_OWN_PHASE = re.compile(r"gpulab's phase: ([^|(]+)")


def markdown_table(markdown: str) -> list[list[str]]:
    """The rows of a Markdown table as lists of cell texts, the header first, without the
    line of dashes under it."""
    rows = []
    for line in markdown.strip().splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if all(re.fullmatch(r":?-+:?", c) for c in cells):
            continue
        rows.append(cells)
    return rows


def _tables(f: Facts) -> list[list[list[str]]]:
    try:
        lesson = f.course.lesson(ROADMAP)
    except CourseError:
        raise Missing(f"the course has no readable {ROADMAP} lesson") from None
    return [
        markdown_table(note.markdown)
        for node in lesson.root.walk()
        for note in node.notes
        if note.kind == "table"
    ]


def _find(tables: list[list[list[str]]], *header: str) -> list[list[str]]:
    for rows in tables:
        if rows and all(any(h in cell.lower() for cell in rows[0]) for h in header):
            return rows[1:]
    raise Missing(
        f"the {ROADMAP} lesson has no table with the columns " + ", ".join(repr(h) for h in header)
    )


def _days(first: int, last: int) -> str:
    return f"day {first}" if first == last else f"days {first}–{last}"


def _timeline(f: Facts) -> Drawing:
    course = f.course
    tables = _tables(f)
    covers: dict[int, str] = {}
    for row in _find(tables, "gpulab day", "covers"):
        day = re.search(r"\d+", row[0])
        if day:
            found, phase = _PLAN_DAY.search(row[-1]), _OWN_PHASE.search(row[-1])
            covers[int(day.group())] = (
                f"plan day {found.group(1)}"
                if found
                else phase.group(1).strip()
                if phase
                else "gpulab's own"
            )
    lessons = sorted(course.entries, key=lambda e: e.day)
    last = lessons[-1].day
    missing = sorted({e.day for e in lessons} - set(covers))
    if missing:
        raise Missing(
            f"the {ROADMAP} lesson's day table lacks gpulab day " + ", ".join(map(str, missing))
        )
    groups = []
    for what, run in groupby(lessons, key=lambda e: covers[e.day]):
        entries = list(run)
        first, end = entries[0].day, entries[-1].day
        groups.append(
            Box(
                _days(first, end).capitalize(),
                (*(e.id for e in entries), what),
                role="source" if _PLAN_DAY.fullmatch(what) else "own",
                span=end - first + 1,
            )
        )
    phases = [
        Box(
            _days(1, last).capitalize(),
            ("gpulab's lessons: the machine",),
            role="own",
            key="lessons",
            span=last,
        )
    ]
    start = last + 1
    for name, days in _find(tables, "phase", "gpulab days"):
        found = _RANGE.search(days)
        if found is None:
            raise Missing(f"the {ROADMAP} lesson gives {name!r} no day range ({days!r})")
        low, high = int(found.group(1)), int(found.group(2))
        if low != start:
            raise Missing(
                f"the {ROADMAP} lesson's phase {name!r} starts on day {low}, "
                f"not on day {start}, after the one before it"
            )
        phases.append(
            Box(
                _days(low, high).capitalize(),
                (name, "proposed"),
                role="proposed",
                span=high - low + 1,
            )
        )
        start = high + 1
    plan = course.manifest.plan_days
    if start - 1 != plan:
        raise Missing(
            f"the {ROADMAP} lesson's phases end on day {start - 1}, and "
            f"course.toml's plan_days is {plan}"
        )
    root = Box(
        "",
        children=(
            Box(f"The {plan} days", children=tuple(phases), layout="row"),
            Box(
                f"{_days(1, last).capitalize()}, lesson by lesson",
                children=tuple(groups),
                layout="row",
                key="detail",
            ),
        ),
    )
    return Drawing(
        root,
        (Link("lessons", "detail", "in detail"),),
        sources=("course.toml and the roadmap lesson's tables",),
    )


COURSE_DIAGRAMS = (
    Diagram(
        "course-timeline",
        "The sixty days: gpulab's lessons and its proposed outline",
        "gpulab's first nine days teach the plan's first phase: its days 1 to 3 as the "
        "source gives them, then gpulab's own days on the CUDA stack, the managed device, "
        "programming and measuring. Days 10 to 18 are gpulab's second phase, kernels and "
        "compilers. The later phases and their day ranges are gpulab's own proposal "
        "(dashed), not the source plan's schedule.",
        _timeline,
    ),
)
