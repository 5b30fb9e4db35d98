"""A lesson's YAML front matter: title, day, objectives and markmap options."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from gpulab.course.positions import yaml_lines
from gpulab.course.problems import Problem

__all__ = ["FrontMatter", "parse_front_matter"]

_KNOWN = ("title", "day", "objectives", "markmap")


@dataclass(frozen=True)
class FrontMatter:
    """gpulab's fields of a lesson; `markmap` passes through to markmap."""

    title: str
    day: int
    objectives: tuple[str, ...]
    markmap: dict[str, Any] = field(default_factory=dict)
    line: int = 1


def parse_front_matter(
    content: str, path: Path, first_line: int
) -> tuple[FrontMatter | None, list[Problem]]:
    """Parse and check the YAML between the `---` lines.

    `first_line` is the file line of the YAML's first line, so errors point
    into the file, not into the snippet.
    """
    problems: list[Problem] = []

    def bad(message: str, line: int | None = first_line, hint: str = "") -> None:
        problems.append(Problem(path, line, f"front matter: {message}", hint))

    try:
        data = yaml.safe_load(content) if content.strip() else {}
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = first_line + mark.line if mark is not None else first_line
        reason = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        bad(f"not valid YAML ({reason})", line, "fix the YAML between the --- lines")
        return None, problems
    if not isinstance(data, dict):
        bad("must be a mapping of fields", hint="write `title: ...`, `day: N`, `objectives:`")
        return None, problems

    lines = yaml_lines(content, first_line)

    def line_of(key: str) -> int:
        return lines.get((key,), first_line)

    for key in sorted(set(data) - set(_KNOWN), key=str):
        bad(f"unknown field {key!r}", line_of(str(key)), f"known fields: {', '.join(_KNOWN)}")
    title = data.get("title")
    if not isinstance(title, str) or not title.strip():
        bad("`title` must be non-empty text", line_of("title"))
    day = data.get("day")
    if isinstance(day, bool) or not isinstance(day, int) or day < 1:
        bad("`day` must be a whole number from 1", line_of("day"))
    objectives = data.get("objectives")
    if (
        not isinstance(objectives, list)
        or not objectives
        or not all(isinstance(o, str) and o.strip() for o in objectives)
    ):
        bad("`objectives` must be a list of one or more sentences", line_of("objectives"))
    markmap = data.get("markmap", {})
    if not isinstance(markmap, dict):
        bad("`markmap` must be a mapping of markmap options", line_of("markmap"))
    if problems:
        return None, problems
    assert isinstance(title, str) and isinstance(day, int) and isinstance(objectives, list)
    return FrontMatter(title.strip(), day, tuple(objectives), dict(markmap), first_line - 1), []
