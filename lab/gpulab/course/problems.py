"""Problems found in course content, and the error that carries them.

A `Problem` is one finding with its place (file and 1-based line) and a hint
on how to fix it. Loading a lesson collects every problem it can find before
raising, so an author sees them all at once.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from gpulab.course.paths import installed
from gpulab.errors import GpulabError

__all__ = ["CourseError", "Problem"]


@dataclass(frozen=True)
class Problem:
    """One thing wrong with course content, and where it is."""

    path: Path
    line: int | None
    message: str
    hint: str = ""
    unknown: bool = False
    """A name asked for that `path` does not hold (``gpulab show nosuch``): the file is
    named only where an author may add the name, never in an installed course."""

    @property
    def where(self) -> str:
        """`file:line` (or just `file`), relative to the working folder when inside it;
        empty for an unknown name in an installed course."""
        if self.unknown and installed(self.path):
            return ""
        return self.place(Path.cwd())

    def place(self, base: Path | None) -> str:
        """`file:line` (or just `file`), the file relative to `base` when inside it."""
        shown = self.path
        if base is not None:
            with contextlib.suppress(ValueError, OSError):
                shown = self.path.resolve().relative_to(base.resolve())
        return f"{shown}:{self.line}" if self.line else str(shown)

    def __str__(self) -> str:
        where = self.where
        text = f"{where}: {self.message}" if where else self.message
        if self.hint:
            text += f"\n    hint: {self.hint}"
        return text


class CourseError(GpulabError):
    """Course content is broken; `problems` says where and how to fix it."""

    def __init__(self, problems: Iterable[Problem]) -> None:
        self.problems: tuple[Problem, ...] = tuple(problems)
        if not self.problems:
            raise ValueError("CourseError needs at least one problem")
        super().__init__("\n".join(str(p) for p in self.problems))

    @classmethod
    def at(cls, path: Path, line: int | None, message: str, hint: str = "") -> CourseError:
        """An error with a single problem."""
        return cls([Problem(path, line, message, hint)])

    @classmethod
    def unknown(cls, path: Path, message: str, hint: str = "") -> CourseError:
        """A name that `path` does not hold: the learner asked for it (see
        `Problem.unknown`)."""
        return cls([Problem(path, None, message, hint, unknown=True)])
