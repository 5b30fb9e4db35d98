"""`lessons/course.toml`: the one manifest, lessons in teaching order, then exercises.

::

    [course]
    title = "..."
    plan_days = 60

    [[lessons]]
    id = "gpu-architecture"      # the file is lessons/gpu-architecture.md
    day = 3
    title = "GPU architecture"

    [[exercises]]
    name = "vector-add"          # the notebook is exercises/<lesson>/vector-add.ipynb
    lesson = "gpu-architecture"
    gpu = true
    time_limit = 120             # seconds
    hidden_points = 6            # what the hidden checks add when graded (optional)
    hints = ["first hint", "a stronger hint", "nearly the answer"]

Problems that concern one lesson (a duplicate id, a missing file) stay with
that lesson's entry so the rest of the course still opens; a manifest that
cannot be read at all raises `CourseError`.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gpulab.course.paths import CoursePaths
from gpulab.course.positions import KeyPath, line_at, toml_error, toml_lines
from gpulab.course.problems import CourseError, Problem
from gpulab.course.source import read_text

__all__ = ["ExerciseEntry", "LessonEntry", "Manifest", "load_manifest"]

_ID = re.compile(r"^[a-z0-9][a-z0-9-]*$")


FORMAT_VERSION = 1
"""The newest course format (course.toml's ``[course] format_version``) this gpulab reads: a
course written for a newer gpulab is refused with advice, never misread."""


@dataclass(frozen=True)
class LessonEntry:
    """A lesson as the manifest lists it; `problems` are the manifest's about it."""

    id: str
    day: int
    title: str
    path: Path
    line: int | None
    problems: tuple[Problem, ...] = ()


@dataclass(frozen=True)
class ExerciseEntry:
    """An exercise as the manifest lists it."""

    name: str
    lesson: str
    gpu: bool
    time_limit: int
    hints: tuple[str, ...]
    notebook: Path
    line: int | None
    hidden_points: float | None = None
    """What the hidden checks add in a grading run (None: the manifest does not say)."""


@dataclass(frozen=True)
class Manifest:
    """The whole manifest; `problems` are findings not tied to one lesson."""

    path: Path
    title: str
    plan_days: int
    lessons: tuple[LessonEntry, ...]
    exercises: tuple[ExerciseEntry, ...]
    problems: tuple[Problem, ...] = ()
    format_version: int = 1
    """The course format it is written in (`FORMAT_VERSION` is the newest this gpulab reads)."""


def load_manifest(path: Path) -> Manifest:
    """Read and check `course.toml`.

    Raises `CourseError` when the file is missing, is not TOML, or lists no
    lesson; every other problem is recorded on the manifest or its entries.
    """
    text = read_text(path)
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise toml_error(path, exc) from None
    root = CoursePaths.of_manifest(path).root
    lines = toml_lines(text)
    problems: list[Problem] = []
    course = data.get("course", {})
    if not isinstance(course, dict):
        raise CourseError.at(path, None, "[course] must be a table")
    title = course.get("title", "gpulab")
    plan_days = course.get("plan_days", 60)
    version = course.get("format_version", FORMAT_VERSION)
    if isinstance(version, bool) or not isinstance(version, int) or version < 1:
        raise CourseError.at(
            path, lines.get(("course",)), "[course] format_version must be a whole number from 1"
        )
    if version > FORMAT_VERSION:
        raise CourseError.at(
            path,
            lines.get(("course",)),
            f"this course is written in course format {version}; this gpulab "
            f"reads format {FORMAT_VERSION} and older",
            "upgrade gpulab (pip install -U gpulab)",
        )
    if not isinstance(title, str) or isinstance(plan_days, bool) or not isinstance(plan_days, int):
        raise CourseError.at(
            path,
            lines.get(("course",)),
            "[course] needs title as text and plan_days as a whole number",
        )
    raw_lessons = data.get("lessons")
    if not isinstance(raw_lessons, list) or not raw_lessons:
        raise CourseError.at(
            path,
            None,
            "the manifest lists no lessons",
            "add [[lessons]] tables with id, day and title",
        )
    lessons = _lessons(lines, path, raw_lessons)
    known = {entry.id for entry in lessons}
    exercises = _exercises(lines, path, root, data.get("exercises", []), known, problems)
    for key in sorted(set(data) - {"course", "lessons", "exercises"}):
        problems.append(
            Problem(
                path,
                lines.get((key,)),
                f"unknown table [{key}]",
                "the manifest has [course], [[lessons]] and [[exercises]]",
            )
        )
    return Manifest(
        path, title, plan_days, tuple(lessons), tuple(exercises), tuple(problems), version
    )


def _lessons(lines: dict[KeyPath, int], path: Path, raw: list[Any]) -> list[LessonEntry]:
    entries: list[LessonEntry] = []
    seen: dict[str, int | None] = {}
    for index, item in enumerate(raw, start=1):
        if not isinstance(item, dict):
            item = {}
        lesson_id = str(item.get("id", f"<lesson {index}>"))
        line = line_at(lines, ("lessons", index - 1, "id"))
        found: list[tuple[str, str]] = []
        bad = _collector(found)

        if "id" not in item:
            bad(f"lesson {index} has no id", 'add id = "some-name"')
        elif not isinstance(item["id"], str) or not _ID.match(lesson_id):
            bad(
                f"lesson id {lesson_id!r} is not lowercase letters, digits and hyphens",
                "rename it (the file name follows the id)",
            )
        if lesson_id in seen:
            first = seen[lesson_id]
            bad(
                f"duplicate lesson id {lesson_id!r}",
                f"first defined at line {first}; give each lesson its own id",
            )
        seen.setdefault(lesson_id, line)
        day = item.get("day")
        if isinstance(day, bool) or not isinstance(day, int) or day < 1:
            bad(f"lesson {lesson_id!r}: day must be a whole number from 1")
            day = 0
        title = item.get("title")
        if not isinstance(title, str) or not title.strip():
            bad(f"lesson {lesson_id!r}: title must be non-empty text")
            title = lesson_id
        file = path.parent / f"{lesson_id}.md"
        if not found and not file.is_file():
            bad(
                f"lesson {lesson_id!r}: its file {file.name} does not exist",
                f"create lessons/{file.name} or remove the entry",
            )
        problems = tuple(Problem(path, line, message, hint) for message, hint in found)
        entries.append(LessonEntry(lesson_id, day, title, file, line, problems))
    return entries


def _exercises(
    lines: dict[KeyPath, int],
    path: Path,
    root: Path,
    raw: Any,
    known: set[str],
    problems: list[Problem],
) -> list[ExerciseEntry]:
    if not isinstance(raw, list):
        problems.append(Problem(path, None, "exercises must be [[exercises]] tables"))
        return []
    entries: list[ExerciseEntry] = []
    names: set[str] = set()
    for index, item in enumerate(raw, start=1):
        if not isinstance(item, dict):
            problems.append(
                Problem(
                    path, lines.get(("exercises", index - 1)), f"exercise {index} must be a table"
                )
            )
            continue
        name = str(item.get("name", f"<exercise {index}>"))
        line = line_at(lines, ("exercises", index - 1, "name"))
        found: list[tuple[str, str]] = []
        bad = _collector(found)

        if not isinstance(item.get("name"), str) or not _ID.match(name):
            bad("name must be lowercase letters, digits and hyphens")
        if name in names:
            bad("duplicate exercise name", "give each exercise its own name")
        names.add(name)
        lesson = item.get("lesson")
        if not isinstance(lesson, str) or lesson not in known:
            bad(f"names unknown lesson {lesson!r}", "use the id of a lesson listed above")
        gpu = item.get("gpu", False)
        if not isinstance(gpu, bool):
            bad("gpu must be true or false")
        limit = item.get("time_limit", 60)
        if isinstance(limit, bool) or not isinstance(limit, int) or limit <= 0:
            bad("time_limit must be a positive number of seconds")
        hidden = item.get("hidden_points")
        if hidden is not None and (
            isinstance(hidden, bool) or not isinstance(hidden, int | float) or hidden < 0
        ):
            bad("hidden_points must be a number of points, 0 or more")
        hints = item.get("hints")
        if (
            not isinstance(hints, list)
            or not hints
            or not all(isinstance(h, str) and h.strip() for h in hints)
        ):
            bad("hints must be a list of one or more hints, gentlest first")
        if found:
            problems.extend(
                Problem(path, line, f"exercise {name!r}: {message}", hint)
                for message, hint in found
            )
            continue
        notebook = root / "exercises" / str(lesson) / f"{name}.ipynb"
        assert isinstance(hints, list)
        entries.append(
            ExerciseEntry(
                name,
                str(lesson),
                gpu,
                limit,
                tuple(hints),
                notebook,
                line,
                None if hidden is None else float(hidden),
            )
        )
    return entries


def _collector(found: list[tuple[str, str]]) -> Callable[..., None]:
    """A `bad(message, hint="")` function that appends to `found`."""

    def bad(message: str, hint: str = "") -> None:
        found.append((message, hint))

    return bad
