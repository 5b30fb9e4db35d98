"""Specs as data: the sources, values and tables that `lessons/specs.toml` holds.

`gpulab.course.specs` reads and checks the file (its format is described
there) and builds these; the lessons' fact checks, the recordings' cross-check,
the book and the figures read them. They are re-exported from
`gpulab.course.specs`.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["Source", "SpecTable", "SpecValue", "Specs"]


@dataclass(frozen=True)
class Source:
    """A document that figures come from: a URL, or a file shipped with the course."""

    id: str
    title: str
    url: str = ""
    path: str = ""

    @property
    def location(self) -> str:
        return self.url or self.path


@dataclass(frozen=True)
class SpecValue:
    """One sourced value: a number, a range, or a piece of text."""

    table: str
    key: str
    source: Source
    line: int | None
    value: float | None = None
    min: float | None = None
    max: float | None = None
    text: str = ""
    unit: str = ""
    note: str = ""
    recorded: tuple[str, ...] = ()  # where a recording holds it ("file#path"): checked by lint

    @property
    def ref(self) -> str:
        """How a person names it: ``h200.sms``, ``pcie.gen4_x16``."""
        return f"{self.table}.{self.key}"

    @property
    def numbers(self) -> tuple[float, ...]:
        return tuple(n for n in (self.value, self.min, self.max) if n is not None)

    @property
    def shown(self) -> str:
        """The value as a person would write it."""
        if self.text:
            return self.text
        number = f"{self.value:g}" if self.value is not None else f"{self.min:g}–{self.max:g}"
        return f"{number} {self.unit}".strip()


@dataclass(frozen=True)
class SpecTable:
    """A GPU or a topic: a title and its values in file order."""

    kind: str  # "gpu" or "topic"
    id: str
    title: str
    values: dict[str, SpecValue]
    architecture: str = ""
    compute_capability: str = ""
    note: str = ""


@dataclass(frozen=True)
class Specs:
    """Everything in specs.toml."""

    path: Path
    sources: dict[str, Source] = field(default_factory=dict)
    gpus: dict[str, SpecTable] = field(default_factory=dict)
    topics: dict[str, SpecTable] = field(default_factory=dict)

    def values(self) -> Iterator[SpecValue]:
        for table in (*self.gpus.values(), *self.topics.values()):
            yield from table.values.values()

    def get(self, ref: str) -> SpecValue | None:
        """A value by its ``table.key`` name."""
        table, _, key = ref.partition(".")
        found = self.gpus.get(table) or self.topics.get(table)
        return found.values.get(key) if found else None
