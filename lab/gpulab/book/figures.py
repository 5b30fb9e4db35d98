"""The book's figures: each placed figure as an inline SVG ``<figure>`` with its caption.

The book is built from gpulab's recording of its H200 (`gpulab.probes.recorded`)
and its H200 baseline run, never from the machine that builds it, so every
caption says whose data it shows ("NVIDIA H200, gpulab's recording of …") and
names the probe that measures the reader's own GPU. A placed id may also name a
diagram (`gpulab.figures.diagrams`: an SM, the memory ladder, a server, a
software stack, the course's days), drawn the same way from the recording,
specs.toml and the course, its caption saying where its facts come from.

The SVG goes inline, not into a file under assets/: inline it takes the page's
colours (the light and dark themes, print) through CSS custom properties, which
an ``<img>`` cannot see; its text stays text that the browser's find reaches;
and the page loads nothing more. A figure is drawn once per build and reused
wherever it is placed; a second placement on one page gets its own ids.
"""

from __future__ import annotations

import html
from typing import TYPE_CHECKING

from gpulab.figures import FIGURES, Inputs, build_figure, load_baseline
from gpulab.figures.diagram_data import DiagramInputs, build_diagram
from gpulab.figures.diagrams import DIAGRAMS
from gpulab.figures.svg import render_svg

if TYPE_CHECKING:
    from gpulab.course.catalog import Course
    from gpulab.course.tree import FigureMark
    from gpulab.figures import FigureData
    from gpulab.figures.diagram_model import DiagramData
    from gpulab.probes.model import ProbeResult

__all__ = ["BookFigures", "figure_anchor"]


def figure_anchor(figure_id: str, placement: int = 1) -> str:
    """The HTML id of a placed figure: ``figure-roofline``, then ``figure-roofline-2``."""
    return f"figure-{figure_id}" + (f"-{placement}" if placement > 1 else "")


class BookFigures:
    """Draws the course's figures from the recording, each once, and places them."""

    def __init__(self, course: Course, recorded: dict[str, ProbeResult]) -> None:
        self.inputs = Inputs(
            recorded=recorded,
            specs=course.specs,
            baseline=load_baseline(course.manifest.path.parent),
        )
        self.diagram_inputs = DiagramInputs(recorded=recorded, specs=course.specs, course=course)
        self._data: dict[str, FigureData] = {}
        self._diagrams: dict[str, DiagramData] = {}
        self._svg: dict[tuple[str, str], str] = {}

    def data(self, figure_id: str) -> FigureData:
        if figure_id not in self._data:
            self._data[figure_id] = build_figure(FIGURES[figure_id], self.inputs)
        return self._data[figure_id]

    def page(self) -> PagePlacer:
        """A placer for one page, which keeps the ids of its figures apart."""
        return PagePlacer(self)

    def diagram(self, diagram_id: str) -> DiagramData:
        if diagram_id not in self._diagrams:
            self._diagrams[diagram_id] = build_diagram(DIAGRAMS[diagram_id], self.diagram_inputs)
        return self._diagrams[diagram_id]

    def svg(self, figure_id: str, prefix: str) -> str:
        key = (figure_id, prefix)
        if key not in self._svg:
            if figure_id in DIAGRAMS:
                from gpulab.figures.diagram_svg import render_diagram_svg

                drawn = render_diagram_svg(self.diagram(figure_id), id_prefix=prefix)
            else:
                drawn = render_svg(self.data(figure_id), id_prefix=prefix)
            self._svg[key] = drawn
        return self._svg[key]

    def caption_text(self, figure_id: str) -> str:
        """The title and caption as plain text, for the search index (a diagram's words
        too)."""
        if figure_id in DIAGRAMS:
            diagram = self.diagram(figure_id)
            words = diagram.text().replace("\n", " ")
            return f"{diagram.title}. {diagram.caption} {words}".strip()
        data = self.data(figure_id)
        return f"{data.title}. {data.caption}"


class PagePlacer:
    """Places figures on one page: the HTML of each, with ids unique on the page."""

    def __init__(self, figures: BookFigures) -> None:
        self.figures = figures
        self.placed: dict[str, int] = {}

    def __call__(self, mark: FigureMark) -> str:
        figure_id = mark.id
        count = self.placed[figure_id] = self.placed.get(figure_id, 0) + 1
        anchor = figure_anchor(figure_id, count)
        if figure_id in DIAGRAMS:
            return self._diagram(figure_id, anchor)
        data = self.figures.data(figure_id)
        title = html.escape(data.title)
        if not data.drawable:
            return (
                f'<figure class="probe-figure missing" id="{anchor}">'
                f'<figcaption><span class="figure-title">{title}</span>: not drawn: '
                f"{html.escape(data.missing)}</figcaption></figure>\n"
            )
        svg = self.figures.svg(figure_id, f"{anchor}-")
        notes = "".join(f" {html.escape(n)}." for n in data.notes)
        probes = FIGURES[figure_id].probes
        yours = (
            f" <code>gpulab probe run {html.escape(' '.join(probes))}</code> measures yours."
            if probes
            else ""
        )
        return (
            f'<figure class="probe-figure" id="{anchor}">\n{svg}'
            f'<figcaption><span class="figure-title">{title}.</span> '
            f"{html.escape(data.caption)}{notes} — "
            f'<span class="figure-source">{html.escape(data.source)}</span>.{yours}'
            "</figcaption></figure>\n"
        )

    def _diagram(self, diagram_id: str, anchor: str) -> str:
        data = self.figures.diagram(diagram_id)
        title = html.escape(data.title)
        if not data.drawable:
            return (
                f'<figure class="probe-figure diagram missing" id="{anchor}">'
                f'<figcaption><span class="figure-title">{title}</span>: not drawn: '
                f"{html.escape(data.missing)}</figcaption></figure>\n"
            )
        svg = self.figures.svg(diagram_id, f"{anchor}-")
        notes = "".join(f" {html.escape(n)}." for n in data.notes)
        return (
            f'<figure class="probe-figure diagram" id="{anchor}">\n{svg}'
            f'<figcaption><span class="figure-title">{title}.</span> '
            f"{html.escape(data.caption)}{notes} — "
            f'<span class="figure-source">{html.escape(data.source)}</span>.'
            "</figcaption></figure>\n"
        )
