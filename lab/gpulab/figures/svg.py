"""Draw `FigureData` as SVG with matplotlib, for the book.

matplotlib is imported here, and only when a figure is drawn, so nothing that
merely imports `gpulab.figures` (the linter, the app) pays for it.

The SVG is made to sit inline in an HTML page:

- reproducible: the same data gives the same bytes (no dates or creator in
  metadata, ids hashed from a fixed salt), so the book builds the same twice;
- text stays text (``svg.fonttype = "none"``): searchable, and sized by the page;
- no fixed size, only a viewBox, so it fills the lesson column;
- colours are the book's CSS custom properties (``var(--fg, #1d2127)``, the
  fallback being the light theme's), so the figure follows the light and dark
  themes and the print style; series take ``--fig-1`` … ``--fig-6``;
- ids are prefixed with the figure's id (or `id_prefix`), so several figures
  on one page never share one, and its stylesheet is scoped to the figure.
"""

from __future__ import annotations

import io
import math
import re
from typing import TYPE_CHECKING, Any, Literal

from gpulab.figures.model import Axis, FigureData, Series

if TYPE_CHECKING:
    from matplotlib.axes import Axes

__all__ = ["CLASS", "render_svg"]

CLASS = "figure-plot"
"""The class of the drawn <svg>, which the book's stylesheet sizes."""

WIDTH_IN = 6.4  # inches; matplotlib writes 72 points per inch into the viewBox
HEIGHT_IN = 3.6

# Colours matplotlib is given, and the CSS each one becomes in the SVG. The
# stand-ins are unlikely colours, so nothing else in a drawing is one of them.
_FG, _DIM, _GRID, _BG = "#010101", "#020202", "#030303", "#040404"
_PALETTE = ("#0a0a01", "#0a0a02", "#0a0a03", "#0a0a04", "#0a0a05", "#0a0a06")
_LIGHT = ("#1f5fa8", "#c2410c", "#2a6f3f", "#7c3aed", "#9a6700", "#b42318")
_CSS = {
    _FG: "var(--fg, #1d2127)",
    _DIM: "var(--dim, #5d6670)",
    _GRID: "var(--line, #d9dee3)",
    _BG: "var(--bg, #ffffff)",
    **{
        stand_in: f"var(--fig-{i + 1}, {light})"
        for i, (stand_in, light) in enumerate(zip(_PALETTE, _LIGHT, strict=True))
    },
}
_LINESTYLE = {"measured": "-", "datasheet": "--", "computed": ":", "limit": "-."}
_FONT = "'DejaVu Sans', system-ui, sans-serif"

_RC: dict[Any, Any] = {
    "svg.fonttype": "none",
    "font.family": "sans-serif",
    "font.sans-serif": ["DejaVu Sans"],
    "font.size": 9.5,
    "axes.titlesize": 10,
    "axes.labelsize": 9.5,
    "legend.fontsize": 8.5,
    "xtick.labelsize": 8.5,
    "ytick.labelsize": 8.5,
    "text.color": _FG,
    "axes.labelcolor": _FG,
    "axes.edgecolor": _DIM,
    "xtick.color": _DIM,
    "ytick.color": _DIM,
    "xtick.labelcolor": _FG,
    "ytick.labelcolor": _FG,
    "grid.color": _GRID,
    "grid.linewidth": 0.6,
    "axes.grid": True,
    "axes.axisbelow": True,
    "figure.facecolor": "none",
    "axes.facecolor": "none",
    "savefig.facecolor": "none",
    "savefig.edgecolor": "none",
    "legend.frameon": False,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "text.usetex": False,
    "axes.unicode_minus": False,
    "path.simplify": False,
}


def render_svg(data: FigureData, *, id_prefix: str | None = None) -> str:
    """The figure as one ``<svg>`` element (no XML prolog), ready to inline in HTML.

    Raises `ValueError` for a figure with nothing to draw (`data.missing`).
    """
    if not data.drawable:
        raise ValueError(f"figure {data.id!r} has nothing to draw: {data.missing or 'no points'}")
    import matplotlib
    from matplotlib.figure import Figure

    prefix = id_prefix if id_prefix is not None else f"fig-{data.id}-"
    with matplotlib.rc_context({**_RC, "svg.hashsalt": prefix}):
        figure = Figure(figsize=(WIDTH_IN, _height(data)), layout="constrained")
        ax = figure.add_subplot()
        if data.bars:
            _bars(ax, data)
        else:
            _points(ax, data)
        _legend(figure, ax, data)
        out = io.StringIO()
        figure.savefig(out, format="svg", metadata={"Date": None, "Creator": None})
    return _inline(out.getvalue(), prefix, data.title)


# -- drawing -------------------------------------------------------------------------


def _height(data: FigureData) -> float:
    if data.bars and data.horizontal:
        bars = sum(len(s.y) for s in data.series if s.kind == "bars")
        return max(HEIGHT_IN, 1.6 + 0.24 * bars + 0.2 * len(data.series) + 0.2 * len(data.lines))
    return HEIGHT_IN + 0.18 * max(0, len(data.series) + len(data.lines) - 2)


def _colours(data: FigureData) -> dict[int, str]:
    return {i: _PALETTE[i % len(_PALETTE)] for i in range(len(data.series) + len(data.lines))}


def _points(ax: Axes, data: FigureData) -> None:
    colours = _colours(data)
    xs: list[float] = []
    ys: list[float] = []
    for i, series in enumerate(data.series):
        x = [float(v) for v in series.x]
        xs += x
        ys += list(series.y)
        style = _LINESTYLE[series.role]
        if series.kind == "points":
            ax.plot(
                x,
                series.y,
                linestyle="none",
                marker="D",
                markersize=6,
                color=colours[i],
                label=series.label,
                zorder=4,
            )
        else:
            marks = series.kind == "line" and len(x) < 40
            ax.plot(
                x,
                series.y,
                linestyle=style,
                marker="o" if marks else None,
                markersize=3.5,
                linewidth=1.6,
                color=colours[i],
                label=series.label,
                zorder=3,
            )
        for xv, yv, note in zip(x, series.y, series.notes, strict=False):
            if note:
                ax.annotate(
                    note,
                    (xv, yv),
                    xytext=(4, 5),
                    textcoords="offset points",
                    fontsize=7.5,
                    color=colours[i],
                )
    offset = len(data.series)
    for j, line in enumerate(data.lines):
        colour = colours[offset + j]
        if line.axis == "x":
            xs.append(line.value)
            ax.axvline(line.value, color=_DIM, linestyle=_LINESTYLE[line.role], linewidth=0.9)
            ax.annotate(
                line.label,
                (line.value, 1),
                xycoords=("data", "axes fraction"),
                xytext=(-3, -4),
                textcoords="offset points",
                rotation=90,
                ha="right",
                va="top",
                fontsize=7.5,
                color=_FG,
            )
        else:
            ys.append(line.value)
            ax.axhline(
                line.value,
                color=colour,
                linestyle=_LINESTYLE[line.role],
                linewidth=1.1,
                label=line.label,
            )
    _axis(ax, "x", data.x, xs)
    _axis(ax, "y", data.y, ys, zero=True)


def _bars(ax: Axes, data: FigureData) -> None:
    colours = _colours(data)
    categories = data.categories
    bars = [s for s in data.series if s.kind == "bars"]
    width = 0.8
    values: list[float] = []
    for i, series in enumerate(bars):
        places, lengths = [], []
        for name, value in zip(series.x, series.y, strict=True):
            index = categories.index(str(name))
            present = [s for s in bars if str(name) in (str(x) for x in s.x)]
            share = width / len(present)
            places.append(index - width / 2 + share * (present.index(series) + 0.5))
            lengths.append(value)
        values += lengths
        share = width / max(
            1, max(sum(1 for s in bars if str(c) in map(str, s.x)) for c in series.x)
        )
        style = _bar_style(series, colours[i])
        if data.horizontal:
            drawn = ax.barh(
                places, lengths, height=share * 0.92, label=series.label, zorder=3, **style
            )
        else:
            drawn = ax.bar(
                places, lengths, width=share * 0.92, label=series.label, zorder=3, **style
            )
        if series.notes:
            ax.bar_label(drawn, labels=list(series.notes), padding=2, fontsize=7.5, color=_FG)
    for j, line in enumerate(data.lines):
        values.append(line.value)
        colour = colours[len(data.series) + j]
        draw = ax.axvline if data.horizontal else ax.axhline
        draw(
            line.value,
            color=colour,
            linestyle=_LINESTYLE[line.role],
            linewidth=1.1,
            label=line.label,
            zorder=4,
        )
    ticks = list(range(len(categories)))
    value_axis: Literal["x", "y"] = "x" if data.horizontal else "y"
    category_axis: Literal["x", "y"] = "y" if data.horizontal else "x"
    if data.horizontal:
        ax.set_yticks(ticks, categories)
        ax.invert_yaxis()
        ax.grid(False, axis="y")
    else:
        ax.set_xticks(
            ticks,
            categories,
            rotation=0 if len(categories) < 7 else 30,
            ha="center" if len(categories) < 7 else "right",
        )
        ax.grid(False, axis="x")
    (ax.set_ylabel if data.horizontal else ax.set_xlabel)(data.x.title)
    ax.tick_params(axis=category_axis, length=0)
    _axis(ax, value_axis, data.y, values, bars=True)


def _bar_style(series: Series, colour: str) -> dict[str, Any]:
    if series.role == "datasheet":
        return {"color": "none", "edgecolor": colour, "hatch": "///", "linewidth": 1.0}
    if series.role == "computed":
        return {"color": colour, "alpha": 0.45, "edgecolor": colour, "linewidth": 0.8}
    return {"color": colour}


def _axis(
    ax: Axes, which: str, axis: Axis, values: list[float], *, bars: bool = False, zero: bool = False
) -> None:
    """Label, scale and limits of one axis; bars and `zero` start a linear axis at 0."""
    set_label = ax.set_xlabel if which == "x" else ax.set_ylabel
    set_label(axis.title)
    finite = [v for v in values if math.isfinite(v)]
    if axis.log:
        positive = [v for v in finite if v > 0]
        (ax.set_xscale if which == "x" else ax.set_yscale)("log")
        if positive:
            low, high = min(positive), max(positive)
            pad = 1.6 if bars else 1.25
            (ax.set_xlim if which == "x" else ax.set_ylim)(low / pad, high * pad)
        from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

        target = ax.xaxis if which == "x" else ax.yaxis
        if positive and max(positive) / min(positive) < 300:  # under 2.5 decades: 1, 2, 5
            target.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
        target.set_major_formatter(FuncFormatter(lambda v, _pos: _plain(v)))
        target.set_minor_formatter(NullFormatter())
    elif finite and (bars or zero) and min(finite) >= 0:
        high = max(finite)
        (ax.set_xlim if which == "x" else ax.set_ylim)(0, high * (1.12 if bars else 1.06))
    if axis.ticks and finite:
        low, high = min(finite), max(finite)
        if axis.log:
            low, high = low / 1.6, high * 1.6
        shown = [(v, t) for v, t in axis.ticks if low <= v <= high]
        if len(shown) >= 2:
            (ax.set_xticks if which == "x" else ax.set_yticks)(
                [v for v, _ in shown], [t for _, t in shown]
            )


def _plain(value: float) -> str:
    if value >= 1:
        return f"{value:,.0f}"
    return f"{value:.4g}"


def _legend(figure: Any, ax: Axes, data: FigureData) -> None:
    """One legend under the plot: the series in their order, then the reference lines.

    A lone series needs none: the axis labels and the caption say what it is."""
    drawn, names = ax.get_legend_handles_labels()
    found = dict(zip(names, drawn, strict=True))
    order = [s.label for s in data.series] + [line.label for line in data.lines if line.axis == "y"]
    labels = [label for label in dict.fromkeys(order) if label in found]
    if not labels or (len(labels) == 1 and not data.lines):
        return
    handles = [found[label] for label in labels]
    columns = 1 if max(len(label) for label in labels) > 42 or len(labels) < 2 else 2
    figure.legend(
        handles,
        labels,
        loc="outside lower center",
        ncols=columns,
        handlelength=2.6,
        borderaxespad=0.2,
    )


# -- making it inline ----------------------------------------------------------------

_PROLOG = re.compile(r"^.*?(?=<svg\b)", re.DOTALL)
_METADATA = re.compile(r"\s*<metadata>.*?</metadata>", re.DOTALL)
_COMMENT = re.compile(r"\s*<!--.*?-->", re.DOTALL)
_SIZE = re.compile(r'\s(?:width|height)="[^"]*pt"')
_ID = re.compile(r'\sid="([^"]+)"')
_REF = re.compile(r'(url\(#|href="#)([^)"]+)')
_HEX = re.compile(r"#[0-9a-fA-F]{6}\b")


def _inline(svg: str, prefix: str, title: str) -> str:
    svg = _PROLOG.sub("", svg, count=1)
    svg = _METADATA.sub("", svg)
    svg = _COMMENT.sub("", svg)
    svg = _SIZE.sub("", svg, count=2)
    referenced = {m.group(2) for m in _REF.finditer(svg)}
    svg = _ID.sub(lambda m: f' id="{prefix}{m.group(1)}"' if m.group(1) in referenced else "", svg)
    svg = _REF.sub(lambda m: f"{m.group(1)}{prefix}{m.group(2)}", svg)
    svg = svg.replace("*{stroke-linejoin", f"svg.{CLASS} *{{stroke-linejoin")
    svg = _HEX.sub(lambda m: _CSS.get(m.group(0).lower(), m.group(0)), svg)
    svg = svg.replace("'DejaVu Sans'", _FONT)
    safe = title.replace("&", "&amp;").replace('"', "&quot;").replace("<", "&lt;")
    svg = svg.replace("<svg ", f'<svg class="{CLASS}" role="img" aria-label="{safe}" ', 1)
    return svg.strip() + "\n"
