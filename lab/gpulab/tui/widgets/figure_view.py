"""A figure drawn in the terminal: its title, the plot, a key, the caption and whose data it is.

`FigureView` shows one `gpulab.figures.FigureData`; `FigurePlot` draws its
plot with plotext (through textual-plotext's `PlotextPlot`), as the data says:
log axes, tick marks, lines and points or bars (sideways when the figure says
so), and reference lines (a datasheet peak, a measured ceiling) across it. The
key under the plot names each series and line in its colour, and for a bar
chart gives the values, which bars only approximate in a terminal. A figure
whose data is missing shows why instead of a plot.

plotext is imported with this module, which is imported only when a figure is
first shown (`gpulab.tui.widgets` loads its modules on first use), never
before the app's first paint.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

from rich.console import Group
from rich.style import Style
from rich.text import Text
from textual.app import ComposeResult, RenderResult
from textual.containers import Vertical
from textual.reactive import reactive
from textual.widgets import Static
from textual_plotext import Plot, PlotextPlot

from gpulab.tui.figures import FIGURE_BADGE, source_line
from gpulab.tui.text import caption_text, not_drawn_text

if TYPE_CHECKING:
    from gpulab.figures import FigureData, Series

__all__ = [
    "LINE_COLOURS",
    "MAX_VALUES",
    "SERIES_COLOURS",
    "FigurePlot",
    "FigureView",
    "about_text",
    "axes_text",
    "draw",
    "key_text",
]

RGB = tuple[int, int, int]

SERIES_COLOURS: tuple[RGB, ...] = (
    (66, 153, 255),
    (255, 153, 51),
    (77, 196, 105),
    (191, 128, 255),
    (0, 190, 190),
    (230, 110, 160),
)
"""The colours of a figure's series, in order: clear on both the dark and the light theme."""

LINE_COLOURS: tuple[RGB, ...] = (
    (235, 80, 70),
    (60, 175, 80),
    (205, 165, 0),
    (200, 90, 200),
    (140, 140, 140),
)
"""The colours of a figure's reference lines, in order."""

MAX_VALUES = 9
"""A bar chart's key gives the values of a series of at most this many bars."""

_MARK = {"line": "──", "curve": "┈┈", "points": "●", "bars": "██"}


def _series_colour(index: int) -> RGB:
    return SERIES_COLOURS[index % len(SERIES_COLOURS)]


def _line_colour(index: int) -> RGB:
    return LINE_COLOURS[index % len(LINE_COLOURS)]


def _rich(colour: RGB) -> Style:
    return Style(color=f"rgb({colour[0]},{colour[1]},{colour[2]})", bold=True)


def _number(value: float) -> str:
    return f"{value:,.0f}" if abs(value) >= 1000 else f"{value:.3g}"


def draw(plt: Plot, data: FigureData) -> None:
    """Draw the figure's series and reference lines on a (cleared) plotext plot."""
    plt.clear_figure()
    if data.bars:
        _draw_bars(plt, data)
    else:
        _draw_points(plt, data)


def _draw_points(plt: Plot, data: FigureData) -> None:
    if data.x.log:
        plt.xscale("log")
    if data.y.log:
        plt.yscale("log")
    for index, series in enumerate(data.series):
        x, y = [float(v) for v in series.x], list(series.y)
        colour = _series_colour(index)
        if series.kind == "points":
            plt.scatter(x, y, marker="●", color=colour)
        else:
            plt.plot(x, y, marker="braille", color=colour)
        for point, (at, value, note) in enumerate(zip(x, y, series.notes, strict=False)):
            if note:  # beside its point, towards the middle of the plot
                side: Literal["left", "right"] = "left" if point < len(x) / 2 else "right"
                plt.text(note, at, value, color=colour, alignment=side)
    for index, line in enumerate(data.lines):
        (plt.vline if line.axis == "x" else plt.hline)(line.value, _line_colour(index))
    across = [line.value for line in data.lines if line.axis == "x"]
    up = [line.value for line in data.lines if line.axis == "y"]
    xs = [float(v) for s in data.series for v in s.x] + across
    ys = [v for s in data.series for v in s.y] + up
    _ticks(plt, "x", data.x.ticks, xs)
    _ticks(plt, "y", data.y.ticks, ys)


def _draw_bars(plt: Plot, data: FigureData) -> None:
    categories = data.categories
    bars = [s for s in data.series if s.kind == "bars"]
    heights = [
        [dict(zip(map(str, s.x), s.y, strict=True)).get(c, 0.0) for c in categories] for s in bars
    ]
    sideways = data.horizontal
    minimum = None
    if data.y.log:  # bars start a little below the lowest one: a log axis has no 0
        minimum = min((v for row in heights for v in row if v > 0), default=1.0) / 1.5
        (plt.xscale if sideways else plt.yscale)("log")
    orientation: Literal["horizontal", "vertical"] = "horizontal" if sideways else "vertical"
    # series side by side over the same categories, else (one series, or each its own
    # categories) one bar per category
    beside = len(bars) if sum(len(s.x) for s in bars) > len(categories) else 1
    width = 0.8 / beside if beside > 1 else 0.6

    def place(category: str) -> float:  # left to right, or sideways top to bottom (the book's)
        index = categories.index(category)
        return float(len(categories) - index if sideways else index + 1)

    for index, series in enumerate(bars):
        offset = (index - (beside - 1) / 2) * width if beside > 1 else 0.0
        plt.bar(
            [place(str(x)) + offset for x in series.x],
            list(series.y),
            orientation=orientation,
            color=_series_colour(data.series.index(series)),
            minimum=minimum,
            width=width,
            reset_ticks=False,
        )
    _put_ticks(plt, "y" if sideways else "x", [(place(c), c) for c in categories])
    for index, line in enumerate(data.lines):
        (plt.vline if sideways else plt.hline)(line.value, _line_colour(index))
    values = [v for row in heights for v in row] + [line.value for line in data.lines]
    _ticks(
        plt,
        "x" if sideways else "y",
        data.y.ticks,
        [*values, minimum if minimum is not None else 0.0],
    )


def _ticks(
    plt: Plot, axis: Literal["x", "y"], ticks: tuple[tuple[float, str], ...], values: list[float]
) -> None:
    """Put the figure's own tick marks on an axis, those within its values only (plotext
    misplaces the labels of ticks beyond the plot's limits)."""
    if not ticks or not values:
        return
    low, high = min(values), max(values)
    inside = [(value, text) for value, text in ticks if low <= value <= high]
    if inside:
        _put_ticks(plt, axis, inside)


def _put_ticks(plt: Plot, axis: Literal["x", "y"], ticks: list[tuple[float, str]]) -> None:
    """Set an axis' tick marks, kept in order. plotext keeps them in the order of a set, which
    changes from run to run (strings hash anew in each process), and where two labels would
    touch it writes the one that comes first: in order, the same labels win every time."""
    (plt.xticks if axis == "x" else plt.yticks)([v for v, _ in ticks], [t for _, t in ticks])
    monitor: Any = getattr(plt, "monitor")  # noqa: B009 - plotext's, untyped
    values, labels = getattr(monitor, f"{axis}ticks"), getattr(monitor, f"{axis}labels")
    ordered = sorted(zip(values[0], labels[0], strict=True))
    values[0], labels[0] = [v for v, _ in ordered], [t for _, t in ordered]


def axes_text(data: FigureData) -> Text:
    """What the axes hold: "↑ latency (cycles per load)   → footprint" (a sideways bar
    chart's values run across)."""
    up, across = (data.x, data.y) if data.bars and data.horizontal else (data.y, data.x)
    text = Text(style="dim")
    for arrow, axis in (("↑", up), ("→", across)):
        if axis.title:
            text.append(f"{'   ' if text else ''}{arrow} {axis.title}")
    return text


def key_text(data: FigureData, *, sources: bool = False) -> Text:
    """The key: each series and reference line in its colour (with a bar chart's values, up to
    `MAX_VALUES` categories); `sources` adds where each reference line's value comes from."""
    lines: list[Text] = []
    for index, series in enumerate(data.series):
        text = Text.assemble(
            (f"{_MARK.get(series.kind, '──')} ", _rich(_series_colour(index))), series.label
        )
        if series.kind == "bars" and len(series.x) <= MAX_VALUES:
            text.append(f": {_bar_values(series)}", style="dim")
        lines.append(text)
    for index, line in enumerate(data.lines):
        mark = "━━ " if line.axis == "y" or data.bars else "┃  "
        text = Text.assemble((mark, _rich(_line_colour(index))), line.label)
        if sources and line.source:
            text.append(f" ({line.source})", style="dim")
        lines.append(text)
    return Text("\n").join(lines)


def _bar_values(series: Series) -> str:
    parts = []
    for index, (category, value) in enumerate(zip(series.x, series.y, strict=True)):
        note = series.notes[index] if series.notes else ""
        named = f"{category} " if len(series.x) > 1 else ""
        parts.append(f"{named}{_number(value)}" + (f" ({note})" if note else ""))
    return " · ".join(parts)


def about_text(data: FigureData) -> Group:
    """The caption and the figure's remarks, then whose data it is."""
    return Group(
        caption_text(data.caption, data.notes), Text(source_line(data), style="dim italic")
    )


class FigurePlot(PlotextPlot):
    """A figure's plot, drawn by plotext to the widget's size (and in the app's theme)."""

    def __init__(
        self, data: FigureData, *, id: str | None = None, classes: str | None = None
    ) -> None:
        super().__init__(id=id, classes=classes)
        self.data = data

    def render(self) -> RenderResult:
        # plotext's build changes the plot it builds (a log axis takes the log of the data
        # in place, the limits are set from the data once), so each frame draws afresh
        draw(self.plt, self.data)
        return super().render()


class FigureView(Vertical):
    """One figure: its title, the plot or why there is none, a key, the caption and the
    source line; `full` gives the plot the view's height (the figures screen), `hint` goes
    on the border (a key to press)."""

    data: reactive[FigureData | None] = reactive(None, recompose=True, init=False)
    """The figure shown; setting it draws the new one."""

    def __init__(
        self,
        data: FigureData,
        *,
        full: bool = False,
        hint: str = "",
        id: str | None = None,
        classes: str | None = None,
    ) -> None:
        super().__init__(id=id, classes=classes)
        self.full = full
        self.border_subtitle = hint
        self.set_class(full, "-full")
        self.set_reactive(FigureView.data, data)

    def compose(self) -> ComposeResult:
        data = self.data
        if data is None:
            return
        self.border_title = f"{FIGURE_BADGE} figure {data.id}"
        yield Static(Text(data.title, style="bold"), classes="figure-title")
        if data.drawable:
            yield FigurePlot(data, classes="figure-plot")
            yield Static(
                Text("\n").join([axes_text(data), key_text(data, sources=self.full)]),
                classes="figure-key",
            )
        else:
            yield Static(not_drawn_text(data.missing), classes="figure-missing")
        yield Static(about_text(data), classes="figure-about")
