"""Probe results for people: Rich renderables for the terminal.

`render_result` draws one result; a recorded one says where and when it was
recorded, and that it is not this machine's. `render_probe_list` lists the
probes with whether each can run here, and why not.
"""

from __future__ import annotations

from collections.abc import Mapping

from rich.console import Group, RenderableType
from rich.padding import Padding
from rich.table import Table as RichTable
from rich.text import Text

from gpulab.probes.model import ProbeResult, Table, Telemetry
from gpulab.probes.readiness import NEEDS
from gpulab.probes.registry import PROBES

__all__ = ["STATUS_STYLE", "render_probe_list", "render_result", "render_telemetry"]

STATUS_STYLE = {
    "ok": "green",
    "partial": "yellow",
    "no_gpu": "cyan",
    "unavailable": "cyan",
    "error": "bold red",
}
_NEEDING = {"nvml": "the NVIDIA driver", "cuda": "a GPU and CuPy"}
_READING_STYLE = {"ok": "", "not_supported": "dim", "unknown": "dim", "error": "red"}


def render_result(result: ProbeResult) -> RenderableType:
    """One probe's result: a heading, its readings, its tables and telemetry."""
    heading = Text()
    heading.append(result.title, style="bold")
    heading.append("  ")
    heading.append(result.status.replace("_", " "), style=STATUS_STYLE[result.status])
    if result.device:
        heading.append(f"  {result.device}", style="dim")
    if result.recorded:
        heading.append(f"  ({result.recorded.label}, not this machine)", style="italic magenta")
    parts: list[RenderableType] = [heading, Text(result.message)]
    if result.readings:
        grid = RichTable(show_header=True, header_style="bold", box=None, pad_edge=False)
        grid.add_column("reading")
        grid.add_column("value", justify="right")
        grid.add_column("how it counts / why not", style="dim", overflow="fold")
        for reading in result.readings:
            style = _READING_STYLE[reading.status]
            grid.add_row(
                Text(reading.label, style=style),
                Text(reading.shown, style=style),
                reading.detail or reading.convention,
            )
        parts.append(Padding(grid, (1, 0, 0, 2)))
    parts.extend(Padding(_table(table), (1, 0, 0, 2)) for table in result.tables)
    if result.telemetry is not None and result.telemetry.samples:
        parts.append(Padding(render_telemetry(result.telemetry), (1, 0, 0, 2)))
    return Group(*parts)


def render_telemetry(telemetry: Telemetry) -> Text:
    """What the GPU did during the run, on one line."""
    bits = [f"{telemetry.samples} samples"]
    if telemetry.sm_clock_mhz:
        low, high = telemetry.sm_clock_mhz
        bits.append(f"SM clock {low:.0f}–{high:.0f} MHz")
    if telemetry.power_w is not None:
        bits.append(f"power ≤ {telemetry.power_w:.0f} W")
    if telemetry.temperature_c is not None:
        bits.append(f"temperature ≤ {telemetry.temperature_c:.0f} °C")
    reasons = ", ".join(telemetry.clock_event_reasons) or "none"
    bits.append(f"clock-event reasons: {reasons}")
    return Text("during the run: " + "; ".join(bits), style="dim")


def render_probe_list(cannot_run: Mapping[str, ProbeResult]) -> RenderableType:
    """Every probe, what it needs, whether it can run here, and what it measures; then, once
    for each need this machine lacks, why (`cannot_run`, from
    `gpulab.probes.cuda.cannot_run_here`)."""
    grid = RichTable(header_style="bold", box=None)
    for column in ("probe", "needs", "runs here", "what it measures"):
        grid.add_column(column)
    for info in PROBES:
        here = (
            Text("no", style="yellow") if info.needs in cannot_run else Text("yes", style="green")
        )
        grid.add_row(info.name, NEEDS[info.needs], here, info.summary)
    parts: list[RenderableType] = [grid]
    reasons: dict[str, list[str]] = {}  # one line per reason, naming every need it stops
    for needs, why in cannot_run.items():
        reasons.setdefault(why.message, []).append(_NEEDING[needs])
    for message, needing in reasons.items():
        line = Text(f"\nProbes that need {' or '.join(needing)} cannot run here: ", style="bold")
        line.append(message, style="")
        parts.append(line)
    return Group(*parts)


def _table(table: Table) -> RenderableType:
    """A table under its title; the title on a line of its own, never squeezed to the
    table's width, and "none found" instead of headers over no rows."""
    title = Text(table.title, style="italic")
    if not table.rows:
        title.append(": none found", style="")
        return title
    grid = RichTable(header_style="bold")
    units = table.units or ("",) * len(table.columns)
    for column, unit in zip(table.columns, units, strict=False):
        grid.add_column(f"{column} ({unit})" if unit else column, justify="right")
    for row in table.rows:
        grid.add_row(*("–" if cell is None else _cell(cell) for cell in row))
    return Group(title, grid)


def _cell(value: object) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)
