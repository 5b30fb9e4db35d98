"""The course's diagrams as the app builds them: from gpulab's recording, specs.toml and
the course.

A diagram (`gpulab.figures.diagrams`) shows the structure of gpulab's H200 and of
the software around it; unlike a plot it is never redrawn from the learner's own
results, so it is built once per course and kept (`diagrams_of`). Nothing here draws:
`gpulab.tui.widgets.diagram_view` draws `DiagramData` with Rich.
"""

from __future__ import annotations

from typing import TYPE_CHECKING
from weakref import WeakKeyDictionary

from gpulab.figures.diagram_data import DiagramInputs, build_diagram
from gpulab.figures.diagrams import DIAGRAMS

if TYPE_CHECKING:
    from gpulab.course import Course
    from gpulab.figures.diagram_model import DiagramData

__all__ = ["DIAGRAM_BADGE", "DiagramSource", "diagrams_of", "is_diagram"]

DIAGRAM_BADGE = "◇"
"""The mark of a diagram, in the figures list and on a node pane."""


def is_diagram(figure_id: str) -> bool:
    """Whether a placed figure id names a diagram rather than a plot."""
    return figure_id in DIAGRAMS


class DiagramSource:
    """Builds each of the course's diagrams once, from the recording, specs.toml and the
    course."""

    def __init__(self, course: Course | None) -> None:
        self.course = course
        self._built: dict[str, DiagramData] = {}

    def inputs(self) -> DiagramInputs:
        from gpulab.course import CourseError
        from gpulab.probes.recorded import recorded_results

        specs = None
        if self.course is not None:
            try:
                specs = self.course.specs
            except CourseError:
                specs = None  # `gpulab dev lint-lessons` says what is wrong with it
        return DiagramInputs(recorded=recorded_results(), specs=specs, course=self.course)

    def data(self, diagram_id: str) -> DiagramData:
        """The diagram `diagram_id`, built on first use."""
        if diagram_id not in self._built:
            self._built[diagram_id] = build_diagram(DIAGRAMS[diagram_id], self.inputs())
        return self._built[diagram_id]


_SOURCES: WeakKeyDictionary[Course, DiagramSource] = WeakKeyDictionary()


def diagrams_of(course: Course | None) -> DiagramSource:
    """The diagrams of `course`, built once and kept as long as the course is."""
    if course is None:
        return DiagramSource(None)
    found = _SOURCES.get(course)
    if found is None:
        found = _SOURCES[course] = DiagramSource(course)
    return found
