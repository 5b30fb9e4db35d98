"""The table of contents beside every page: the lessons by day, their exercises, the rest.

Built once per book from the manifest, in teaching order. Every link is
relative to the book's root; the templates put the page's own ``root`` before
it and mark the link of the page being shown.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from gpulab.course.catalog import Course

__all__ = ["TocDay", "TocLink", "contents"]


@dataclass(frozen=True)
class TocLink:
    """One entry: its title, its page (relative to the book's root), what lies under it."""

    title: str
    href: str
    gpu: bool = False
    children: tuple[TocLink, ...] = ()


@dataclass(frozen=True)
class TocDay:
    """The lessons of one day of the plan, each with its exercises under it."""

    day: int
    lessons: tuple[TocLink, ...]


def contents(course: Course) -> tuple[TocDay, ...]:
    """The course's lessons grouped by day in teaching order, each lesson once."""
    seen: set[str] = set()
    days: list[TocDay] = []
    for day, entries in course.days():
        lessons: list[TocLink] = []
        for entry in entries:
            if entry.id in seen:
                continue
            seen.add(entry.id)
            exercises = tuple(
                TocLink(e.name, f"exercises/{e.name}.html", e.gpu)
                for e in course.exercises(entry.id)
            )
            lessons.append(TocLink(entry.title, f"lessons/{entry.id}.html", children=exercises))
        if lessons:
            days.append(TocDay(day, tuple(lessons)))
    return tuple(days)
