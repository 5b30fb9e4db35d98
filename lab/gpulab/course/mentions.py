"""A lesson's exercises as the course has them: nothing promised that does not exist.

Under a lesson's "Exercises" (or "Exercise") heading each item names one
exercise in inline code: ``- `vector-add`: a grid-stride vector add``. The name
must be an exercise of this lesson in course.toml, and every exercise
course.toml gives this lesson must be there (a lesson with no such heading
lists none, and is not checked for them). An exercise the course means to
add but has not is written ``- `pointer-chase` (planned): ...``, and a planned
name must not be in course.toml (drop the mark when it lands). Anywhere in the
lesson, ```gpulab check NAME``` must name an exercise that exists.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

from gpulab.course.manifest import ExerciseEntry
from gpulab.course.problems import Problem
from gpulab.course.tree import Lesson

__all__ = ["check_exercise_mentions", "listed_exercises", "unlisted_exercises"]

_ITEM = re.compile(r"^`([A-Za-z0-9_.-]+)`(\s*\(planned\))?\s*:")
_CHECK = re.compile(r"gpulab check ([A-Za-z0-9_.-]+)")
_HEADINGS = ("Exercise", "Exercises")


def check_exercise_mentions(lesson: Lesson, exercises: Sequence[ExerciseEntry]) -> list[Problem]:
    """Problems with the exercises `lesson` lists or names, against course.toml's."""
    problems: list[Problem] = []
    by_name = {e.name: e for e in exercises}
    own = [e.name for e in exercises if e.lesson == lesson.id]
    listed: set[str] = set()
    lists = [
        n
        for n in lesson.nodes
        if n.kind == "heading" and n.level == 2 and n.text.strip() in _HEADINGS
    ]
    for heading in lists:
        for item in heading.children:
            if item.kind != "item":
                continue
            found = _ITEM.match(item.label)
            if found is None:
                continue
            name, planned = found.group(1), bool(found.group(2))
            entry = by_name.get(name)
            if planned:
                if entry is not None:
                    problems.append(
                        Problem(
                            lesson.path,
                            item.line,
                            f"exercise {name!r} is marked planned but course.toml has it",
                            'drop "(planned)"',
                        )
                    )
                    listed.add(name)
                continue
            if entry is None:
                problems.append(
                    Problem(
                        lesson.path,
                        item.line,
                        f"no exercise named {name!r} in course.toml",
                        f"add it to course.toml, or mark it as not there yet: - `{name}` "
                        "(planned): ...",
                    )
                )
            elif entry.lesson != lesson.id:
                problems.append(
                    Problem(
                        lesson.path,
                        item.line,
                        f"exercise {name!r} belongs to the lesson {entry.lesson!r} in course.toml",
                        "list it under that lesson's Exercises",
                    )
                )
            else:
                listed.add(name)
    if lists:
        for name in own:
            if name not in listed:
                problems.append(
                    Problem(
                        lesson.path,
                        lists[0].line,
                        f"course.toml's exercise {name!r} of this lesson is not listed here",
                        f"add - `{name}`: ... under this heading",
                    )
                )
    for number, line in enumerate(lesson.path.read_text(encoding="utf-8").splitlines(), 1):
        for found in _CHECK.finditer(line):
            if found.group(1) not in by_name:
                problems.append(
                    Problem(
                        lesson.path,
                        number,
                        f"`gpulab check {found.group(1)}` names no exercise in course.toml",
                        "name an exercise that exists, or say it is planned",
                    )
                )
    return problems


def listed_exercises(lesson: Lesson) -> set[str]:
    """The exercises `lesson` lists under its Exercises heading (planned ones aside)."""
    return {
        found.group(1)
        for heading in lesson.nodes
        if heading.kind == "heading" and heading.level == 2 and heading.text.strip() in _HEADINGS
        for item in heading.children
        if item.kind == "item"
        if (found := _ITEM.match(item.label)) and not found.group(2)
    }


def unlisted_exercises(
    manifest: Path, exercises: Sequence[ExerciseEntry], listed: set[str]
) -> list[Problem]:
    """A problem, at its course.toml line, for each exercise no lesson lists."""
    return [
        Problem(
            manifest,
            entry.line,
            f"exercise {entry.name!r} is listed under no lesson's Exercises heading",
            f"add - `{entry.name}`: ... under ## Exercises in {entry.lesson}.md",
        )
        for entry in exercises
        if entry.name not in listed
    ]
