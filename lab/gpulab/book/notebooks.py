"""Exercise notebooks as HTML fragments, always from the student copy.

nbconvert's ``basic`` template gives the cells alone: no page around them,
no CSS and no script from a CDN (the ``lab`` and ``classic`` templates load
require.js and MathJax from the web), so the book's own stylesheet styles
them and nothing loads from outside. nbconvert is imported on first use.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from gpulab.course.manifest import ExerciseEntry
from gpulab.course.problems import CourseError, Problem

__all__ = ["NotebookRenderer"]

# A notebook links a lesson by its path from exercises/<lesson>/: ../../lessons/numa.md
_LESSON_HREF = re.compile(r'href="(?:\.\./)*lessons/([a-z0-9][a-z0-9-]*)\.md(#[^"]*)?"')


class NotebookRenderer:
    """Renders exercise notebooks; one nbconvert exporter serves them all.

    Links to lesson files become links to the lesson pages of `lesson_ids`.
    """

    def __init__(self, lesson_ids: Iterable[str] = ()) -> None:
        self._exporter: Any = None
        self._lessons = set(lesson_ids)

    def render(self, entry: ExerciseEntry, manifest: Path) -> str:
        """The student notebook of `entry` as HTML; `CourseError` if it cannot be read."""
        notebook = entry.notebook
        if "solutions" in notebook.parts or notebook.parent.parent.name != "exercises":
            raise CourseError.at(manifest, entry.line,
                                 f"exercise {entry.name!r}: {notebook} is not a student notebook",
                                 "the book shows exercises/<lesson>/<name>.ipynb only")
        if not notebook.is_file():
            raise CourseError.at(manifest, entry.line,
                                 f"exercise {entry.name!r}: its notebook "
                                 f"exercises/{entry.lesson}/{notebook.name} does not exist",
                                 "run `gpulab dev build` to generate it from its solution")
        import nbformat

        reader: Any = nbformat  # it has no type hints
        try:
            nb = reader.read(notebook, as_version=4)
            body, _ = self._get_exporter().from_notebook_node(nb)
        except Exception as exc:  # nbformat and nbconvert raise many kinds
            raise CourseError([Problem(notebook, None,
                                       f"cannot render the notebook: {type(exc).__name__}: "
                                       f"{exc}", "open it in JupyterLab and save it again")]
                              ) from None
        return _LESSON_HREF.sub(self._lesson_link, str(body))

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
