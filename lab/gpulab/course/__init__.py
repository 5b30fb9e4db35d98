"""The course model: manifest, lessons as mindmap trees, claims, progress.

UI-free by design: nothing here imports Textual, CuPy, NVML or Jupyter, so the
CLI, the TUI, the book and the grader can all use it cheaply.
"""

from __future__ import annotations

from gpulab.course.catalog import Course, SearchHit, find_course_dir, load_course
from gpulab.course.claims import Claim, load_claims
from gpulab.course.frontmatter import FrontMatter
from gpulab.course.lesson import Lesson, Node, Note, parse_lesson
from gpulab.course.manifest import ExerciseEntry, LessonEntry, Manifest, load_manifest
from gpulab.course.outline import outline
from gpulab.course.problems import CourseError, Problem
from gpulab.course.progress import LessonState, Progress, ProgressStore, state_dir

__all__ = [
    "Claim",
    "Course",
    "CourseError",
    "ExerciseEntry",
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
