"""Figures drawn from real probe data: declared once, drawn in the book and the terminal.

Each figure is a small declaration (`Figure`): an id, a title, a caption, the
probes it reads, its axes, and a function from those probes' results to plain
data (`Plot`: series of points or bars, reference lines such as a datasheet
peak with its specs.toml source). `build_figure` runs it on the learner's own
results when they cover the figure, else on gpulab's recording of its H200, and
returns `FigureData` with `source` saying whose data it is ("your GPU (…),
measured <date>" or "NVIDIA H200, gpulab's recording of <date>"), or with
`missing` saying why nothing can be drawn. No number is made up: a figure
draws what a result holds, datasheet values from specs.toml, and arithmetic on
them that its caption states.

This data side is pure Python and imports no plotting library, so the app can
draw the same `FigureData` in a terminal. `gpulab.figures.svg` draws it as SVG
with matplotlib, imported only there and only when called.

Lessons place a figure with ``<!-- figure: id -->`` (lessons/README.md); the
course parser records the ids, and ``gpulab dev lint-lessons`` hands it
`FIGURE_IDS` to check them, since the course package may not import this one.
The same marker places a diagram (`gpulab.figures.diagrams`: a picture of
structure, drawn from the recording, specs.toml and the course), so
`FIGURE_IDS` holds the diagrams' ids too.

Layering: figures -> course (specs, units), probes (the result model);
book -> figures; nothing here imports textual.
"""

from __future__ import annotations

from gpulab.figures.compute import COMPUTE_FIGURES
from gpulab.figures.data import Baseline, Data, Figure, Inputs, build_figure, load_baseline
from gpulab.figures.datasheet import DATASHEET_FIGURES
from gpulab.figures.device import DEVICE_FIGURES
from gpulab.figures.diagrams import DIAGRAM_IDS, DIAGRAMS
from gpulab.figures.memory import MEMORY_FIGURES
from gpulab.figures.model import (
    Axis,
    FigureData,
    Line,
    Missing,
    Plot,
    Series,
)

__all__ = [
    "DIAGRAMS",
    "DIAGRAM_IDS",
    "FIGURES",
    "FIGURE_IDS",
    "Axis",
    "Baseline",
    "Data",
    "Figure",
    "FigureData",
    "Inputs",
    "Line",
    "Missing",
    "Plot",
    "Series",
    "build_figure",
    "figure",
    "load_baseline",
]

FIGURES: dict[str, Figure] = {
    f.id: f for f in (*MEMORY_FIGURES, *COMPUTE_FIGURES, *DEVICE_FIGURES, *DATASHEET_FIGURES)
}
"""Every figure, by id: those drawn from measurements in the order of the course, then
those drawn from datasheets alone."""

FIGURE_IDS: frozenset[str] = frozenset(FIGURES) | DIAGRAM_IDS
"""Every id a lesson may place: the plots' and the diagrams' (never the same id)."""


def figure(figure_id: str) -> Figure:
    """The figure with this id; `KeyError` naming the known ids if there is none."""
    try:
        return FIGURES[figure_id]
    except KeyError:
        raise KeyError(f"no figure {figure_id!r}; known: {', '.join(FIGURES)}") from None
