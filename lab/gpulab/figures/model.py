"""What a figure is, and the plain data it becomes.

A figure's declaration (`gpulab.figures.data.Figure`, beside the `Data` its
function reads) names the probes it reads, its two axes, and a function from
those probes' results to a `Plot` (series of points or bars, reference lines).
`gpulab.figures.data.build_figure` runs that function on one machine's results
and returns `FigureData`: the same plot with the words that say whose data it
is, or the reason nothing can be drawn. This module holds the plain data on
both sides of that function, and imports nothing of gpulab's.

Everything here is plain, immutable data: no plotting library, no NumPy. The
book draws `FigureData` as SVG with matplotlib (`gpulab.figures.svg`); a
terminal can draw the same data as text.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

__all__ = ["Axis", "FigureData", "Kind", "Line", "Missing", "Plot", "Role", "Series"]

Kind = Literal["line", "curve", "points", "bars"]
"""How a series is drawn: measured points joined by a line, a curve computed from a
formula (drawn without point marks), loose points, or bars over categories."""

Role = Literal["measured", "datasheet", "computed", "limit"]
"""Where a series' numbers come from: a probe's measurement, a datasheet value
(specs.toml), arithmetic on either (said how in the label or caption), or a
limit the device itself reports (NVML's power limit, CUDA's L2 size)."""


@dataclass(frozen=True)
class Axis:
    """One axis: its label, unit and scale, and optionally where to put tick marks.

    For a bar chart the x axis holds the categories and only its label counts.
    """

    label: str
    unit: str = ""
    log: bool = False
    ticks: tuple[tuple[float, str], ...] = ()  # (value, text) pairs; empty: the plotter's own

    @property
    def title(self) -> str:
        """The label with its unit: "latency (cycles per load)"."""
        return f"{self.label} ({self.unit})" if self.unit else self.label


@dataclass(frozen=True)
class Series:
    """Numbers to draw: points (x numeric) or bars (x the category names).

    `notes`, when given, has one short text per point, written beside it ("52 %").
    """

    label: str
    x: tuple[float, ...] | tuple[str, ...]
    y: tuple[float, ...]
    kind: Kind = "line"
    role: Role = "measured"
    notes: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if len(self.x) != len(self.y):
            raise ValueError(
                f"series {self.label!r}: {len(self.x)} x values, {len(self.y)} y values"
            )
        if self.notes and len(self.notes) != len(self.y):
            raise ValueError(
                f"series {self.label!r}: {len(self.notes)} notes for {len(self.y)} points"
            )

    def points(self) -> list[tuple[float | str, float]]:
        return list(zip(self.x, self.y, strict=True))


@dataclass(frozen=True)
class Line:
    """A reference line across the plot: a datasheet peak, a measured ceiling.

    `axis` "y" draws it at a value of the y axis (for a bar chart: the bars'
    value axis, whichever way the bars run); "x" draws it at a value of the x
    axis of a plot of points. `source` says where the value comes from.
    """

    value: float
    label: str
    axis: Literal["x", "y"] = "y"
    role: Role = "datasheet"
    source: str = ""


@dataclass(frozen=True)
class Plot:
    """What a figure's build function returns: series, reference lines, remarks."""

    series: tuple[Series, ...]
    lines: tuple[Line, ...] = ()
    notes: tuple[str, ...] = ()


class Missing(Exception):
    """Raised by a build function when the results lack what the figure needs."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass(frozen=True)
class FigureData:
    """A figure built from one machine's data, ready to draw, or why it cannot be.

    `source` says whose data it is: "your GPU (…), measured 2026-12-05", or
    "NVIDIA H200, gpulab's recording of 2026-12-03". When `missing` is not
    empty there are no series and it says why.
    """

    id: str
    title: str
    caption: str
    x: Axis
    y: Axis
    series: tuple[Series, ...] = ()
    lines: tuple[Line, ...] = ()
    notes: tuple[str, ...] = ()
    source: str = ""
    missing: str = ""
    horizontal: bool = False

    @property
    def drawable(self) -> bool:
        return not self.missing and any(s.y for s in self.series)

    @property
    def bars(self) -> bool:
        """A bar chart (categories on x) rather than a plot of points."""
        return any(s.kind == "bars" for s in self.series)

    @property
    def categories(self) -> list[str]:
        """The bar chart's categories, in first-seen order."""
        seen: dict[str, None] = {}
        for series in self.series:
            if series.kind == "bars":
                seen.update((str(x), None) for x in series.x)
        return list(seen)
