"""Building a figure from results: whose data, which machine, what is missing.

`Inputs` holds what there is to draw from: the learner's own probe results
(`own`, may be empty), gpulab's recorded H200 results (`recorded`), specs.toml
(for datasheet lines) and gpulab's H200 baseline run (`Baseline`). A figure
never mixes machines: it is drawn from the learner's results when they hold
every probe it needs, else from the recording, and its `source` says which.

`Data` is what a figure's build function sees: one machine's results, that
machine's datasheet table from specs.toml (if specs.toml has one), and helpers
that fetch a reading or a table or raise `Missing` with the reason.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gpulab.course.units import convert
from gpulab.figures.model import Axis, FigureData, Line, Missing, Plot

if TYPE_CHECKING:
    from gpulab.course.specs_model import Specs, SpecTable
    from gpulab.probes.model import ProbeResult, Reading, Table

__all__ = [
    "BASELINE",
    "Baseline",
    "Data",
    "Figure",
    "Inputs",
    "build_figure",
    "datasheet_gpu",
    "load_baseline",
]

BASELINE = "reference/h200-baseline"
"""gpulab's H200 baseline run, relative to the lessons folder: .json (data), .md (report)."""

_USABLE = ("ok", "partial")
_MODEL = re.compile(r"\b(?:[A-Z]{1,2}\d{2,4}[A-Za-z]?|RTX \d{4})\b")
_DATE = re.compile(r"\b(\d{4}-\d{2}-\d{2})\b")


@dataclass(frozen=True)
class Baseline:
    """gpulab's H200 baseline run: its raw data, the machine and the date of the run."""

    data: Mapping[str, Any]
    machine: str
    date: str

    @property
    def source(self) -> str:
        when = f" of {self.date}" if self.date else ""
        return f"{self.machine}, gpulab's baseline run{when}"


def load_baseline(lessons_dir: Path) -> Baseline | None:
    """The baseline beside the course (reference/h200-baseline.*), or None if absent.

    The data is the .json; the date is the one in the .md report's title.
    """
    data_file = lessons_dir / f"{BASELINE}.json"
    try:
        data = json.loads(data_file.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict):
        return None
    try:
        title = (lessons_dir / f"{BASELINE}.md").read_text(encoding="utf-8").split("\n", 1)[0]
    except OSError:
        title = ""
    date = _DATE.search(title)
    props = data.get("device_props")
    machine = str(props.get("name", "")) if isinstance(props, dict) else ""
    return Baseline(data, machine or "NVIDIA H200", date.group(1) if date else "")


@dataclass(frozen=True)
class Inputs:
    """Everything a figure may be drawn from."""

    recorded: Mapping[str, ProbeResult] = field(default_factory=dict)
    own: Mapping[str, ProbeResult] = field(default_factory=dict)
    specs: Specs | None = None
    baseline: Baseline | None = None


def datasheet_gpu(specs: Specs | None, device: str) -> SpecTable | None:
    """specs.toml's table for the GPU named `device` ("NVIDIA H200" -> h200), if one fits.

    Matches the model (H200, A100, RTX 4090); where several tables share it (H100
    SXM5 and PCIe), the one whose other name words the device name holds, or
    None when that does not decide.
    """
    if specs is None or not device:
        return None
    have = {m.replace(" ", "") for m in _MODEL.findall(device)}
    found = [
        t
        for t in specs.gpus.values()
        if have & {m.replace(" ", "") for m in _MODEL.findall(t.title)}
    ]
    if len(found) <= 1:
        return found[0] if found else None
    compact = re.sub(r"[\s_-]+", "", device).lower()

    def score(table: SpecTable) -> int:
        return sum(1 for word in table.title.split()[1:] if word.lower() in compact)

    ranked = sorted(found, key=score, reverse=True)
    return ranked[0] if score(ranked[0]) > score(ranked[1]) else None


@dataclass(frozen=True)
class Data:
    """One machine's results as a figure's build function sees them."""

    results: Mapping[str, ProbeResult]
    device: str = ""
    gpu: SpecTable | None = None
    baseline: Baseline | None = None
    unmatched: list[str] = field(default_factory=list)  # datasheet keys asked for in vain
    specs: Specs | None = None  # every GPU's datasheet (datasheet figures)

    def has(self, probe: str) -> bool:
        return probe in self.results

    def result(self, probe: str) -> ProbeResult:
        found = self.results.get(probe)
        if found is None:
            raise Missing(f"no result of the {probe} probe")
        return found

    def reading(self, probe: str, key: str) -> Reading:
        found = self.result(probe).reading(key)
        if found is None:
            raise Missing(f"the {probe} result has no reading {key!r}")
        if found.status != "ok":
            raise Missing(f"{probe} {key}: {found.detail or found.shown}")
        return found

    def number(self, probe: str, key: str) -> float:
        """A reading's value as a number, or `Missing`."""
        value = self.reading(probe, key).value
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise Missing(f"{probe} {key} is {value!r}, not a number")
        return float(value)

    def optional_number(self, probe: str, key: str) -> float | None:
        try:
            return self.number(probe, key)
        except Missing:
            return None

    def table(self, probe: str, *columns: str) -> list[dict[str, Any]]:
        """The rows of the probe's first table that has these columns, as dicts."""
        table = _table_with(self.result(probe).tables, columns)
        if table is None:
            raise Missing(
                f"the {probe} result has no table with columns "
                + ", ".join(repr(c) for c in columns)
            )
        rows = [dict(zip(table.columns, row, strict=False)) for row in table.rows]
        if not rows:
            raise Missing(f"the {probe} table {table.title!r} has no rows")
        return rows

    def datasheet(self, key: str, unit: str, label: str = "") -> Line | None:
        """specs.toml's `key` for this GPU as a datasheet line in `unit`, or None."""
        if self.gpu is None:
            self.unmatched.append(key)
            return None
        spec = self.gpu.values.get(key)
        if spec is None or spec.value is None:
            return None
        value = convert(spec.value, spec.unit, unit)
        if value is None:
            return None
        shown = f"{spec.value:g} {spec.unit}"
        note = f", {spec.note}" if spec.note else ""
        return Line(
            value,
            label or f"datasheet: {shown}",
            source=(f"specs.toml {self.gpu.id}.{key} ({shown}{note}): {spec.source.title}"),
        )

    def datasheet_value(self, key: str, unit: str) -> float | None:
        line = self.datasheet(key, unit)
        return line.value if line is not None else None

    def baseline_data(self) -> Mapping[str, Any]:
        if self.baseline is None:
            raise Missing(
                f"gpulab's H200 baseline ({BASELINE}.json beside the lessons) is not here"
            )
        return self.baseline.data


@dataclass(frozen=True)
class Figure:
    """A figure's declaration.

    `probes` must all have a result from one machine; `optional` probes add to
    the figure when that machine has them too. `baseline` marks a figure drawn
    from gpulab's H200 baseline run (`lessons/reference/h200-baseline.json`)
    instead of probe results, `datasheets` one drawn from specs.toml's GPU tables
    alone (no machine's measurement). `horizontal` runs a bar chart's bars
    sideways (for long category names).
    """

    id: str
    title: str
    caption: str
    x: Axis
    y: Axis
    build: Callable[[Data], Plot]
    probes: tuple[str, ...] = ()
    optional: tuple[str, ...] = ()
    baseline: bool = False
    horizontal: bool = False
    datasheets: bool = False


def _table_with(tables: Sequence[Table], columns: Sequence[str]) -> Table | None:
    return next((t for t in tables if all(c in t.columns for c in columns)), None)


def _usable(results: Mapping[str, ProbeResult]) -> dict[str, ProbeResult]:
    return {name: r for name, r in results.items() if r.status in _USABLE}


def _whose(results: Sequence[ProbeResult]) -> str:
    """Whose data: "your GPU (…), measured <date>" or "<machine>, gpulab's recording of <date>"."""
    dates = ", ".join(sorted({r.started[:10] for r in results if r.started}))
    recorded = next((r.recorded for r in results if r.recorded is not None), None)
    if recorded is not None:
        dates = ", ".join(sorted({r.recorded.date for r in results if r.recorded}))
        return f"{recorded.machine}, gpulab's recording of {dates}"
    device = next((r.device for r in results if r.device), "")
    return f"your GPU{f' ({device})' if device else ''}, measured {dates}".rstrip(", ")


def build_figure(figure: Figure, inputs: Inputs) -> FigureData:
    """The figure drawn from the learner's results if they cover it, else the recording's."""
    empty = FigureData(
        figure.id, figure.title, figure.caption, figure.x, figure.y, horizontal=figure.horizontal
    )
    if figure.datasheets:
        data = Data({}, baseline=inputs.baseline, specs=inputs.specs)
        source = "NVIDIA's datasheets, as specs.toml cites them" if inputs.specs else ""
    elif figure.baseline:
        baseline = inputs.baseline
        machine = baseline.machine if baseline is not None else ""
        data = Data({}, machine, datasheet_gpu(inputs.specs, machine), baseline)
        source = baseline.source if baseline is not None else ""
    else:
        own, recorded = _usable(inputs.own), _usable(inputs.recorded)
        side = own if all(p in own for p in figure.probes) else recorded
        lacking = [p for p in figure.probes if p not in side]
        if lacking:
            runs = " ".join(lacking)
            return _replace(
                empty,
                missing=(
                    f"no result of {', '.join(lacking)} here, and none recorded: run "
                    f"`gpulab probe run {runs}` on a GPU"
                ),
            )
        chosen = {p: side[p] for p in (*figure.probes, *figure.optional) if p in side}
        device = next((r.device for r in chosen.values() if r.device), "")
        data = Data(chosen, device, datasheet_gpu(inputs.specs, device), inputs.baseline)
        source = _whose(list(chosen.values()))
    try:
        plot = figure.build(data)
    except Missing as missing:
        return _replace(empty, source=source, missing=missing.reason)
    if not any(s.y for s in plot.series):
        return _replace(empty, source=source, missing="the results hold no points to draw")
    notes = plot.notes
    if data.unmatched and inputs.specs is not None:
        notes = (
            *notes,
            f"specs.toml has no datasheet for {data.device or 'this GPU'}, "
            "so no datasheet values are drawn",
        )
    return FigureData(
        figure.id,
        figure.title,
        figure.caption,
        figure.x,
        figure.y,
        plot.series,
        plot.lines,
        notes,
        source,
        "",
        figure.horizontal,
    )


def _replace(data: FigureData, **changes: Any) -> FigureData:
    return replace(data, **changes)
