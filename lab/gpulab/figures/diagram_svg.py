"""Draw `DiagramData` as SVG with matplotlib, for the book.

The boxes are matplotlib patches (`FancyBboxPatch`), the connections
`FancyArrowPatch`es, the words text artists, placed where
`gpulab.figures.diagram_layout` puts them; no SVG is written by hand.
matplotlib is imported here, and only when a diagram is drawn.

The SVG is made inline exactly as the plots' is (`gpulab.figures.svg`, whose
settings and last step this module shares): reproducible bytes, text kept as
text, a viewBox and no fixed size, the book's theme colours through CSS custom
properties (each kind of box takes one of ``--fig-1`` … ``--fig-6``, faintly
filled), and ids prefixed with the diagram's (or `id_prefix`).
"""

from __future__ import annotations

import io
from typing import TYPE_CHECKING, Any

from gpulab.figures.diagram_layout import (
    LABEL_SIZE,
    LEADING,
    LINE_SIZE,
    PAD,
    Arrow,
    Placed,
    layout,
)
from gpulab.figures.diagram_model import DiagramData, Role
from gpulab.figures.svg import _BG, _DIM, _FG, _PALETTE, _RC, _inline

if TYPE_CHECKING:
    from matplotlib.axes import Axes

__all__ = ["WIDTH", "render_diagram_svg"]

WIDTH = 460.0
"""The drawing's width in points (6.4 inches, as the plots')."""
_MARGIN = 2.0

_COLOUR: dict[Role, str] = {
    "compute": _PALETTE[0],
    "device": _PALETTE[0],
    "own": _PALETTE[0],
    "memory": _PALETTE[1],
    "software": _PALETTE[2],
    "source": _PALETTE[2],
    "host": _PALETTE[3],
    "link": _PALETTE[4],
    "kernel": _PALETTE[5],
    "plain": _DIM,
    "proposed": _DIM,
    "legacy": _DIM,
}
_DASHED: frozenset[Role] = frozenset({"proposed", "legacy"})


def render_diagram_svg(data: DiagramData, *, id_prefix: str | None = None) -> str:
    """The diagram as one ``<svg>`` element (no XML prolog), ready to inline in HTML.

    Raises `ValueError` for a diagram with nothing to draw (`data.missing`).
    """
    if not data.drawable or data.root is None:
        raise ValueError(f"diagram {data.id!r} has nothing to draw: {data.missing}")
    import matplotlib
    from matplotlib.figure import Figure

    placed, arrows, height = layout(data.root, data.links, WIDTH)
    prefix = id_prefix if id_prefix is not None else f"fig-{data.id}-"
    with matplotlib.rc_context({**_RC, "svg.hashsalt": prefix, "axes.grid": False}):
        size = (WIDTH + 2 * _MARGIN) / 72, (height + 2 * _MARGIN) / 72
        figure = Figure(figsize=size)
        ax = figure.add_axes((0, 0, 1, 1))
        ax.set_xlim(-_MARGIN, WIDTH + _MARGIN)
        ax.set_ylim(height + _MARGIN, -_MARGIN)  # y grows downwards, as laid out
        ax.set_axis_off()
        for box in placed:
            _box(ax, box)
        for arrow in arrows:
            _arrow(ax, arrow)
        out = io.StringIO()
        figure.savefig(out, format="svg", metadata={"Date": None, "Creator": None})
    return _inline(out.getvalue(), prefix, data.title)


def _box(ax: Axes, placed: Placed) -> None:
    from matplotlib.colors import to_rgba
    from matplotlib.patches import FancyBboxPatch

    role = placed.box.role
    colour = _COLOUR[role]
    if placed.framed:
        leaf = not placed.box.children
        fill: Any = (
            "none" if role in ("plain", *_DASHED) else to_rgba(colour, 0.16 if leaf else 0.07)
        )
        ax.add_patch(
            FancyBboxPatch(
                (placed.x, placed.y),
                placed.w,
                placed.h,
                boxstyle="round,pad=0,rounding_size=3",
                facecolor=fill,
                edgecolor=colour,
                linewidth=0.9 if leaf else 0.8,
                linestyle="--" if role in _DASHED else "-",
                zorder=1 + placed.depth,
            )
        )
    centred = not placed.box.children
    x = placed.x + placed.w / 2 if centred else placed.x + PAD
    y = placed.y + PAD
    for line in placed.label:
        ax.text(
            x,
            y,
            line,
            fontsize=LABEL_SIZE,
            fontweight="bold",
            color=_FG,
            ha="center" if centred else "left",
            va="top",
            zorder=20,
        )
        y += LABEL_SIZE * LEADING
    for line in placed.lines:
        ax.text(
            x,
            y,
            line,
            fontsize=LINE_SIZE,
            color=_FG,
            ha="center" if centred else "left",
            va="top",
            zorder=20,
        )
        y += LINE_SIZE * LEADING


def _arrow(ax: Axes, arrow: Arrow) -> None:
    from matplotlib.patches import FancyArrowPatch

    style = "<|-|>" if arrow.link.both else "-|>"
    ax.add_patch(
        FancyArrowPatch(
            arrow.start,
            arrow.end,
            arrowstyle=style,
            mutation_scale=7,
            color=_DIM,
            linewidth=0.9,
            shrinkA=0.5,
            shrinkB=0.5,
            zorder=30,
        )
    )
    if not arrow.link.label:
        return
    (x0, y0), (x1, y1) = arrow.start, arrow.end
    upright = abs(x1 - x0) < abs(y1 - y0)
    mid = ((x0 + x1) / 2 + (3 if upright else 0), (y0 + y1) / 2 - (0 if upright else 2))
    ax.text(
        *mid,
        arrow.link.label,
        fontsize=LINE_SIZE,
        color=_FG,
        style="italic",
        ha="left" if upright else "center",
        va="center" if upright else "bottom",
        zorder=31,
        bbox={"boxstyle": "square,pad=0.1", "facecolor": _BG, "edgecolor": "none"},
    )
