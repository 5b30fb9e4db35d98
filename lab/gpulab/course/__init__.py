"""The course model: manifest, lessons as mindmap trees, claims, progress.

UI-free by design: nothing here imports Textual, CuPy, NVML or Jupyter, so the
CLI, the TUI, the book and the grader can all use it cheaply. The lesson parser
(markdown-it-py, PyYAML) loads on first use, so the app's first screen, which
needs only the manifest, does not pay for it.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

from gpulab.course.catalog import Course, SearchHit, find_course_dir, load_course
from gpulab.course.claims import Claim, load_claims
from gpulab.course.manifest import ExerciseEntry, LessonEntry, Manifest, load_manifest
from gpulab.course.problems import CourseError, Problem
from gpulab.course.progress import ExerciseRecord, LessonState, Progress, ProgressStore
from gpulab.state import state_dir

if TYPE_CHECKING:
    from gpulab.course.frontmatter import FrontMatter
    from gpulab.course.lesson import parse_lesson
    from gpulab.course.outline import outline
    from gpulab.course.tree import Lesson, Node, Note

_LAZY = {
    "FrontMatter": "gpulab.course.frontmatter",
    "Lesson": "gpulab.course.lesson",
    "Node": "gpulab.course.lesson",
    "Note": "gpulab.course.lesson",
    "parse_lesson": "gpulab.course.lesson",
    "outline": "gpulab.course.outline",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(module), name)
    globals()[name] = value
    return value


__all__ = [
    "Claim",
    "Course",
    "CourseError",
    "ExerciseEntry",
    "ExerciseRecord",
    "FrontMatter",
    "Lesson",
    "LessonEntry",
    "LessonState",
    "Manifest",
    "Node",
    "Note",
    "Problem",
    "Progress",
    "ProgressStore",
    "SearchHit",
    "find_course_dir",
    "load_claims",
    "load_course",
    "load_manifest",
    "outline",
    "parse_lesson",
    "state_dir",
]
