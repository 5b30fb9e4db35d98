"""Exercise notebooks as HTML fragments, always as the learner gets them.

The book never shows a learner's answers: in a course checkout, where
``solutions/`` sits beside ``exercises/``, the notebook is generated from the
solution (what `gpulab dev build` writes, and `gpulab dev check` proves equal
to the shipped one), so answers typed into ``exercises/`` stay out. Without
the solution (an installed course), it is the shipped ``exercises/`` copy.

nbconvert's ``basic`` template gives the cells alone: no page around them,
no CSS and no script from a CDN (the ``lab`` and ``classic`` templates load
require.js and MathJax from the web), so the book's own stylesheet styles
them and nothing loads from outside. The notebook's headings move two levels
down, below the exercise page's own h1 and h2, and its tables sit in the
book's scrolling box. nbconvert is imported on first use.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from gpulab.book.markdown import wrap_tables
from gpulab.course.manifest import ExerciseEntry
from gpulab.course.problems import CourseError, Problem
from gpulab.grading.checks.notebook import load_nbformat

__all__ = ["NotebookRenderer"]

# A notebook links a lesson by its path from exercises/<lesson>/: ../../lessons/numa.md
_LESSON_HREF = re.compile(r'href="(?:\.\./)*lessons/([a-z0-9][a-z0-9-]*)\.md(#[^"]*)?"')
_HEADING = re.compile(r"<(/?)h([1-6])\b", re.IGNORECASE)
HEADING_SHIFT = 2
"""How many levels the notebook's headings go down: its h1 becomes an h3."""


class NotebookRenderer:
    """Renders exercise notebooks; one nbconvert exporter serves them all.

    Links to lesson files become links to the lesson pages of `lesson_ids`.
    """

    def __init__(self, lesson_ids: Iterable[str] = ()) -> None:
        self._exporter: Any = None
        self._lessons = set(lesson_ids)

    def render(self, entry: ExerciseEntry, manifest: Path) -> str:
        """The notebook of `entry` as the learner gets it, as HTML: generated from its
        solution when there is one, else the shipped copy; `CourseError` if it cannot be."""
        notebook = entry.notebook
        if "solutions" in notebook.parts or notebook.parent.parent.name != "exercises":
            raise CourseError.at(
                manifest,
                entry.line,
                f"exercise {entry.name!r}: {notebook} is not a student notebook",
                "the book shows exercises/<lesson>/<name>.ipynb only",
            )
        if not notebook.is_file():
            raise CourseError.at(
                manifest,
                entry.line,
                f"exercise {entry.name!r}: its notebook "
                f"exercises/{entry.lesson}/{notebook.name} does not exist",
                "run `gpulab dev build` to generate it from its solution",
            )
        reader = load_nbformat()
        solution = _solution(entry)
        try:
            if solution is not None:
                from gpulab.grading.build import build_text

                nb = reader.reads(build_text(entry), as_version=4)
            else:
                nb = reader.read(notebook, as_version=4)
            body, _ = self._get_exporter().from_notebook_node(nb)
        except Exception as exc:  # nbformat, nbconvert and the build raise many kinds
            fix = (
                "run `gpulab dev check` for what is wrong with the solution"
                if solution is not None
                else "open it in JupyterLab and save it again"
            )
            raise CourseError(
                [
                    Problem(
                        solution or notebook,
                        None,
                        f"cannot render the notebook: {type(exc).__name__}: {exc}",
                        fix,
                    )
                ]
            ) from None
        html = _LESSON_HREF.sub(self._lesson_link, str(body))
        return wrap_tables(_HEADING.sub(_shift_heading, html))

    def _lesson_link(self, found: re.Match[str]) -> str:
        """A link to a lesson's file as a link to its page (exercise pages sit in exercises/)."""
        if found.group(1) not in self._lessons:
            return found.group(0)
        return f'href="../lessons/{found.group(1)}.html{found.group(2) or ""}"'

    def _get_exporter(self) -> Any:
        if self._exporter is None:
            import nbconvert

            exporters: Any = nbconvert  # it has no type hints
            self._exporter = exporters.HTMLExporter(template_name="basic")
        return self._exporter


def _solution(entry: ExerciseEntry) -> Path | None:
    """The exercise's solution notebook, when the course has it (a checkout)."""
    from gpulab.grading.build import solution_path

    path = solution_path(entry)
    return path if path.is_file() else None


def _shift_heading(found: re.Match[str]) -> str:
    level = min(int(found.group(2)) + HEADING_SHIFT, 6)
    return f"<{found.group(1)}h{level}"
