"""Building a diagram: the facts it may use, and the words that say where they come from.

A diagram is drawn from gpulab's recording of its H200 (`DiagramInputs.recorded`,
as `gpulab.probes.recorded.recorded_results` gives it), specs.toml, and the
course itself (course.toml, a lesson's table), never from made-up numbers. Its
build function sees them through `Facts`, which fetches a reading, a table row
or a specs.toml value, raises `Missing` with the reason when it is not there,
and notes what was used, so that `build_diagram` can say so in the diagram's
`source` ("NVIDIA H200, gpulab's recording of 2026-12-03; specs.toml:
topics.sm-units, gpus.h200").

Unlike a plot, a diagram is not redrawn from the learner's own results: it
shows the structure of one machine, gpulab's H200, and says so.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from gpulab.figures.data import Data
from gpulab.figures.diagram_model import DiagramData, Drawing
from gpulab.figures.model import Missing

if TYPE_CHECKING:
    from gpulab.course.catalog import Course
    from gpulab.course.specs_model import Specs, SpecValue
    from gpulab.probes.model import ProbeResult

__all__ = ["Diagram", "DiagramInputs", "Facts", "build_diagram"]


@dataclass(frozen=True)
class DiagramInputs:
    """Everything a diagram may be drawn from."""

    recorded: Mapping[str, ProbeResult] = field(default_factory=dict)
    specs: Specs | None = None
    course: Course | None = None


class Facts:
    """The recording, specs.toml and the course, as a diagram's build function reads them;
    remembers which probes and specs.toml tables it was asked for."""

    def __init__(self, inputs: DiagramInputs) -> None:
        self.inputs = inputs
        self._data = Data(inputs.recorded)
        self.probes: list[str] = []
        self.tables: list[str] = []

    def _use(self, probe: str) -> None:
        if probe not in self.probes:
            self.probes.append(probe)

    def result(self, probe: str) -> ProbeResult:
        """The recorded result of a probe, or `Missing`."""
        found = self._data.result(probe)
        self._use(probe)
        return found

    def number(self, probe: str, key: str) -> float:
        """A recorded reading's value as a number, or `Missing`."""
        value = self._data.number(probe, key)
        self._use(probe)
        return value

    def text(self, probe: str, key: str) -> str:
        """A recorded reading's value as text; `Missing` if it has none."""
        reading = self._data.reading(probe, key)
        if reading.value is None:
            raise Missing(f"{probe} {key} has no value: {reading.detail or reading.shown}")
        self._use(probe)
        return str(reading.value)

    def detail(self, probe: str, key: str) -> str:
        """What a recorded reading's detail says ("not on PATH"); "" if it is not recorded."""
        found = self._data.results.get(probe)
        reading = found.reading(key) if found is not None else None
        if reading is None:
            return ""
        self._use(probe)
        return reading.detail

    def table(self, probe: str, *columns: str) -> list[dict[str, Any]]:
        """The rows of the recorded probe's first table with these columns, as dicts."""
        rows = self._data.table(probe, *columns)
        self._use(probe)
        return rows

    def spec(self, ref: str) -> SpecValue:
        """A specs.toml value by its ``table.key`` name, or `Missing`."""
        specs = self.inputs.specs
        if specs is None:
            raise Missing("specs.toml is not here")
        found = specs.get(ref)
        if found is None:
            raise Missing(f"specs.toml has no {ref}")
        table = ref.partition(".")[0]
        kind = "gpus" if table in specs.gpus else "topics"
        if f"{kind}.{table}" not in self.tables:
            self.tables.append(f"{kind}.{table}")
        return found

    def spec_number(self, ref: str) -> float:
        """A specs.toml value that is one number, or `Missing`."""
        found = self.spec(ref)
        if found.value is None:
            raise Missing(f"specs.toml's {ref} is not a single number ({found.shown})")
        return found.value

    @property
    def course(self) -> Course:
        """The course the diagram belongs to, or `Missing`."""
        if self.inputs.course is None:
            raise Missing("the course is not here")
        return self.inputs.course

    def source(self, extra: tuple[str, ...] = ()) -> str:
        """Where the facts used come from, recording first, then specs.toml, then `extra`."""
        parts: list[str] = []
        results = [self.inputs.recorded[p] for p in self.probes if p in self.inputs.recorded]
        if results:
            parts.append(_whose(results))
        if self.tables:
            parts.append("specs.toml: " + ", ".join(self.tables))
        return "; ".join([*parts, *extra])


def _whose(results: list[ProbeResult]) -> str:
    """ "NVIDIA H200, gpulab's recording of 2026-12-03" (or "<device>, measured <date>")."""
    recorded = [r.recorded for r in results if r.recorded is not None]
    if recorded:
        dates = ", ".join(sorted({r.date for r in recorded}))
        return f"{recorded[0].machine}, gpulab's recording of {dates}"
    device = next((r.device for r in results if r.device), "this machine")
    dates = ", ".join(sorted({r.started[:10] for r in results if r.started}))
    return f"{device}, measured {dates}".rstrip(", ")


@dataclass(frozen=True)
class Diagram:
    """A diagram's declaration: what it is called, what it says, how it is built."""

    id: str
    title: str
    caption: str
    build: Callable[[Facts], Drawing]


def build_diagram(diagram: Diagram, inputs: DiagramInputs) -> DiagramData:
    """The diagram drawn from the inputs, or `DiagramData.missing` saying what is lacking.

    Raises `ValueError` when a drawing links a box that is not in it (a mistake in
    the declaration, not in the data).
    """
    facts = Facts(inputs)
    try:
        drawing = diagram.build(facts)
    except Missing as missing:
        return DiagramData(
            diagram.id,
            diagram.title,
            diagram.caption,
            source=facts.source(),
            missing=missing.reason,
        )
    keys = [box.key for box in drawing.root.walk() if box.key]
    doubled = sorted({k for k in keys if keys.count(k) > 1})
    unknown = sorted(
        {end for link in drawing.links for end in (link.start, link.end) if end not in keys}
    )
    if doubled or unknown:
        raise ValueError(
            f"diagram {diagram.id!r}: keys used twice: {doubled or 'none'}; "
            f"links to no box: {unknown or 'none'}"
        )
    source = facts.source(drawing.sources)
    if drawing.example:
        source = f"an example, not a measurement: {source}"
    return DiagramData(
        diagram.id,
        diagram.title,
        diagram.caption,
        drawing.root,
        drawing.links,
        drawing.notes,
        source,
    )
