"""Diagrams: pictures of structure, declared once, drawn in the book and the terminal.

Where a plot shows numbers against axes, a diagram shows how something is
built: an SM with its partitions, the memory ladder, a server's NUMA nodes
with their GPUs, the layers between a container or a framework and the GPU,
the course's sixty days. Each is a `Diagram` (`gpulab.figures.diagram_model`):
nested labelled boxes in rows and columns, optional connections, a title and a
caption, built by `build_diagram` from gpulab's H200 recording, specs.toml and
the course (`DiagramInputs`), with a `source` saying which; nothing in one is
made up.

A lesson places a diagram exactly like a plot, with ``<!-- figure: id -->``:
the ids share one namespace (`gpulab.figures.FIGURE_IDS` holds both, and the
linter checks markers against it). The book draws a diagram as SVG with
matplotlib (`gpulab.figures.diagram_svg`, imported only when drawing), the app
with Rich (`gpulab.tui.widgets.diagram_view`).

The groups: `diagrams_gpu` (the SM, the memory ladder), `diagrams_host` (two
servers' NUMA nodes and PCIe), `diagrams_stack` (the container and CUDA
stacks), `diagrams_course` (the timeline).
"""

from __future__ import annotations

from gpulab.figures.diagram_data import Diagram
from gpulab.figures.diagrams_course import COURSE_DIAGRAMS
from gpulab.figures.diagrams_gpu import GPU_DIAGRAMS
from gpulab.figures.diagrams_host import HOST_DIAGRAMS
from gpulab.figures.diagrams_stack import STACK_DIAGRAMS

__all__ = ["DIAGRAMS", "DIAGRAM_IDS", "diagram"]

DIAGRAMS: dict[str, Diagram] = {
    d.id: d for d in (*COURSE_DIAGRAMS, *STACK_DIAGRAMS, *HOST_DIAGRAMS, *GPU_DIAGRAMS)
}
"""Every diagram, by id, in the order of the course."""

DIAGRAM_IDS: frozenset[str] = frozenset(DIAGRAMS)


def diagram(diagram_id: str) -> Diagram:
    """The diagram with this id; `KeyError` naming the known ids if there is none."""
    try:
        return DIAGRAMS[diagram_id]
    except KeyError:
        raise KeyError(f"no diagram {diagram_id!r}; known: {', '.join(DIAGRAMS)}") from None
