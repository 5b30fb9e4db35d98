"""Small helpers for TOML files: error positions and the line of a key.

`tomllib` reports positions only inside its error message and keeps none for
values, so the course loaders use these to point authors at the right line.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

from gpulab.course.problems import CourseError

__all__ = ["line_of_key", "line_of_value", "toml_error"]

_AT_LINE = re.compile(r"\(at line (\d+), column (\d+)\)")


def toml_error(path: Path, exc: tomllib.TOMLDecodeError) -> CourseError:
    """Turn a TOML syntax error into a `CourseError` at its line."""
    message = str(exc)
    match = _AT_LINE.search(message)
    line = int(match.group(1)) if match else None
    message = _AT_LINE.sub("", message).strip()
    return CourseError.at(path, line, f"TOML syntax error: {message}", "fix the TOML syntax")


def line_of_key(text: str, key: str) -> int | None:
    """Line of the `[key]` table header (or `key =` assignment) in TOML text."""
    pattern = re.compile(
        rf"^[ \t]*(\[\s*\"?{re.escape(key)}\"?\s*\]|\"?{re.escape(key)}\"?\s*=)", re.MULTILINE
    )
    match = pattern.search(text)
    return text.count("\n", 0, match.start()) + 1 if match else None


def line_of_value(text: str, field: str, value: str, occurrence: int = 1) -> int | None:
    """Line of the `occurrence`-th `field = "value"` assignment in TOML text."""
    pattern = re.compile(
        rf"^[ \t]*{re.escape(field)}\s*=\s*[\"']{re.escape(value)}[\"']", re.MULTILINE
    )
    for n, match in enumerate(pattern.finditer(text), start=1):
        if n == occurrence:
            return text.count("\n", 0, match.start()) + 1
    return None
