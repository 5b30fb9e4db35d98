"""The course's figures as the app draws them: whose data, where each is placed, which a
claim's probe feeds.

`FigureSource` builds a figure's `FigureData` (`gpulab.figures.build_figure`)
from the learner's own results (`GpulabApp.measured`: those saved on this
machine, and this session's) when they hold every probe the figure needs, else
from gpulab's recording of its H200; the data says which in its `source`.
What stays the same all session (the recording, specs.toml, the H200 baseline
beside the lessons) is read once, and a figure is built again only when the
learner's results change.

Nothing here draws: `gpulab.tui.widgets.figure_view` draws `FigureData` with
plotext, and only that module imports it, when a figure is first shown.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from gpulab.figures import FIGURES, Figure, FigureData, Inputs, build_figure, load_baseline

if TYPE_CHECKING:
    from gpulab.course import Course
    from gpulab.probes import ProbeResult

__all__ = [
    "FIGURE_BADGE",
    "FigureSource",
    "Measured",
    "fed_by",
    "placements",
    "runs_yours",
    "source_line",
]

FIGURE_BADGE = "▦"
"""The mark of a figure, in the figures list, on a node pane and on a claim card."""

Measured = Mapping[str, "ProbeResult"]
"""The learner's own probe results on this machine (saved, and this session's), by probe
name."""


class FigureSource:
    """Builds the course's figures from the learner's results or the recording, and keeps
    each until those results change."""

    def __init__(self, course: Course | None) -> None:
        self.course = course
        self._inputs: Inputs | None = None
        self._built: dict[str, tuple[Measured, FigureData]] = {}

    def inputs(self, own: Measured) -> Inputs:
        """What a figure may be drawn from: the recording, specs.toml and the baseline (read
        once), and the learner's results `own`."""
        if self._inputs is None:
            from gpulab.course import CourseError
            from gpulab.probes.recorded import recorded_results

            specs = baseline = None
            if self.course is not None:
                try:
                    specs = self.course.specs
                except CourseError:
                    specs = None  # `gpulab dev lint-lessons` says what is wrong with it
                baseline = load_baseline(self.course.manifest.path.parent)
            self._inputs = Inputs(recorded=recorded_results(), specs=specs, baseline=baseline)
        return Inputs(self._inputs.recorded, own, self._inputs.specs, self._inputs.baseline)

    def data(self, figure_id: str, own: Measured) -> FigureData:
        """The figure `figure_id` drawn from `own` where it covers it, else the recording."""
        kept = self._built.get(figure_id)
        if kept is None or kept[0] is not own:  # the app replaces `own` when it changes
            kept = (own, build_figure(FIGURES[figure_id], self.inputs(own)))
            self._built[figure_id] = kept
        return kept[1]


def fed_by(probe: str) -> list[Figure]:
    """The figures that the probe `probe` feeds (those that need its result), in course
    order."""
    return [f for f in FIGURES.values() if probe in f.probes]


def placements(course: Course) -> dict[str, list[str]]:
    """The lessons that place each figure, by figure id, in course order (a lesson that
    cannot be read places none)."""
    from gpulab.course import CourseError

    found: dict[str, list[str]] = {figure_id: [] for figure_id in FIGURES}
    for entry in course.entries:
        try:
            lesson = course.lesson(entry.id)
        except CourseError:
            continue
        for node in lesson.root.walk():
            for mark in node.figures:
                lessons = found.setdefault(mark.id, [])
                if entry.id not in lessons:
                    lessons.append(entry.id)
    return found


def runs_yours(figure_id: str) -> str:
    """The command that measures the learner's own GPU for a figure ("" for the baseline's)."""
    probes = FIGURES[figure_id].probes
    return f"gpulab probe run {' '.join(probes)}" if probes else ""


def source_line(data: FigureData) -> str:
    """Whose data a figure shows, and how to draw it from the learner's own GPU."""
    if not data.source:
        return ""
    line = f"Data: {data.source}."
    command = runs_yours(data.id) if data.id in FIGURES else ""
    if command and not data.source.startswith("your GPU"):
        line += f" `{command}` on a GPU draws it from yours."
    return line
