"""Where a course's files are: the one place their paths are derived.

A course is a folder (a checkout, or the copy a wheel ships under
gpulab/_course/) laid out as::

    lessons/course.toml                       the manifest
    lessons/<lesson>.md                       a lesson
    exercises/<lesson>/<name>.ipynb           an exercise's released notebook
    exercises/<lesson>/test_<name_>.py        its visible checks
    solutions/<lesson>/<name>.ipynb           its solution (a checkout only)
    solutions/<lesson>/test_<name_>_hidden.py its hidden checks (a checkout only)

where `<name_>` is the exercise's name with ``-`` written ``_``. Everything that
needs one of these asks `CoursePaths`; nothing else walks ``.parent`` up from
a file to find another. `INSTALLED` is where a wheel puts its copy of the course.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

__all__ = ["INSTALLED", "CoursePaths", "installed"]

INSTALLED = Path(__file__).resolve().parent.parent / "_course"
"""Where an installed gpulab keeps its course (gpulab/_course/ in site-packages); a
checkout has no such folder."""


def installed(path: Path) -> bool:
    """Whether `path` lies in the course an installed gpulab ships: read by learners, never
    edited, so its files are no place to send them."""
    return path.resolve().is_relative_to(INSTALLED)


@dataclass(frozen=True)
class CoursePaths:
    """The paths of one course, from its root folder."""

    root: Path

    @classmethod
    def of_manifest(cls, manifest: Path) -> CoursePaths:
        """The course whose lessons/course.toml is `manifest`."""
        return cls(manifest.parent.parent)

    @classmethod
    def of_lesson(cls, lesson: Path) -> CoursePaths:
        """The course a lesson file (lessons/<lesson>.md) belongs to."""
        return cls(lesson.parent.parent)

    @classmethod
    def of_notebook(cls, notebook: Path) -> CoursePaths:
        """The course an exercise's released notebook (exercises/<lesson>/<name>.ipynb)
        belongs to."""
        return cls(notebook.parent.parent.parent)

    @classmethod
    def of_hidden_checks(cls, hidden: Path) -> CoursePaths:
        """The course a hidden check file (solutions/<lesson>/...) belongs to."""
        return cls(hidden.parent.parent.parent)

    @property
    def installed(self) -> bool:
        """Whether this is the course an installed gpulab ships (see `installed`)."""
        return installed(self.root)

    @property
    def lessons(self) -> Path:
        return self.root / "lessons"

    @property
    def manifest(self) -> Path:
        return self.lessons / "course.toml"

    @property
    def exercises(self) -> Path:
        return self.root / "exercises"

    @property
    def solutions(self) -> Path:
        return self.root / "solutions"

    def notebook(self, lesson: str, name: str) -> Path:
        """An exercise's released notebook."""
        return self.exercises / lesson / f"{name}.ipynb"

    def visible_checks(self, lesson: str, name: str) -> Path:
        return self.exercises / lesson / f"test_{name.replace('-', '_')}.py"

    def solution(self, lesson: str, name: str) -> Path:
        return self.solutions / lesson / f"{name}.ipynb"

    def hidden_checks(self, lesson: str, name: str) -> Path:
        return self.solutions / lesson / f"test_{name.replace('-', '_')}_hidden.py"
