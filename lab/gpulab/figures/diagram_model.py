"""What a diagram is: nested labelled boxes, the connections between them, whose data.

A plot (`gpulab.figures.model`) shows numbers against axes; a diagram shows
structure: an SM and its four partitions, the memory levels from registers to
HBM, a server's NUMA nodes with their GPUs, the layers between a container and
the GPU. It is a tree of `Box`es, each with a label, a few lines of detail (the
numbers, each from the recording or specs.toml), and children arranged side by
side (``row``) or top to bottom (``column``), plus `Link`s between boxes that
carry a `key`.

A diagram's declaration (`gpulab.figures.diagram_data.Diagram`, beside the
`Facts` its function reads: the recording, specs.toml and the course, with
helpers that raise `Missing`) gives a function to a `Drawing`.
`gpulab.figures.diagram_data.build_diagram` runs it
and returns `DiagramData`: the drawing with the words that say whose data it is,
or the reason nothing can be drawn. Everything here is plain, immutable data;
`gpulab.figures.diagram_svg` draws it for the book and the app draws it with
Rich.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Literal

__all__ = ["Box", "DiagramData", "Drawing", "Layout", "Link", "Role"]

Layout = Literal["row", "column"]
"""How a box arranges its children: side by side, or top to bottom."""

Role = Literal[
    "plain",
    "compute",
    "memory",
    "software",
    "host",
    "kernel",
    "device",
    "link",
    "source",
    "own",
    "proposed",
    "legacy",
]
"""What a box stands for, which decides its colour: a group (plain), an SM's execution
units (compute), a level of memory, user-space software, host hardware (CPUs, memory,
PCIe bridges), the driver (kernel modules and libcuda), a device (GPU, NIC), an
interconnect; in a plan, a part taken from its source or gpulab's own; a part of a plan
that is only proposed, or a path that is deprecated (both drawn dashed)."""


@dataclass(frozen=True)
class Box:
    """One box: a label, lines of detail under it, and children inside it.

    `span` is the box's share of a row's width against its siblings (a timeline
    gives each phase its days); `width` narrows a box in a column to a fraction
    of the column (a ladder's rungs). `key` names the box for `Link`s.
    """

    label: str
    lines: tuple[str, ...] = ()
    children: tuple[Box, ...] = ()
    layout: Layout = "column"
    role: Role = "plain"
    key: str = ""
    span: float = 1.0
    width: float = 1.0

    def __post_init__(self) -> None:
        if self.span <= 0:
            raise ValueError(f"box {self.label!r}: span must be positive, not {self.span}")
        if not 0 < self.width <= 1:
            raise ValueError(f"box {self.label!r}: width is a fraction in (0, 1], not {self.width}")

    def walk(self) -> Iterator[Box]:
        """This box and every box inside it, parents first."""
        yield self
        for child in self.children:
            yield from child.walk()


@dataclass(frozen=True)
class Link:
    """A connection from the box keyed `start` to the box keyed `end`: an arrow, with
    heads at both ends when `both`, and a short `label` beside it."""

    start: str
    end: str
    label: str = ""
    both: bool = False


@dataclass(frozen=True)
class Drawing:
    """What a diagram's build function returns.

    `sources` name what the structure comes from beyond the recording and
    specs.toml, which `Facts` notes by itself (a lesson's example, course.toml);
    `example` marks a drawing of an illustrative machine, not a measured one.
    """

    root: Box
    links: tuple[Link, ...] = ()
    notes: tuple[str, ...] = ()
    sources: tuple[str, ...] = ()
    example: bool = False


@dataclass(frozen=True)
class DiagramData:
    """A diagram built from the recording, specs.toml and the course, or why it cannot be.

    `source` says where its structure and numbers come from; when `missing` is
    not empty there is no `root` and it says why.
    """

    id: str
    title: str
    caption: str
    root: Box | None = None
    links: tuple[Link, ...] = ()
    notes: tuple[str, ...] = ()
    source: str = ""
    missing: str = ""

    @property
    def drawable(self) -> bool:
        return not self.missing and self.root is not None

    def boxes(self) -> list[Box]:
        """Every box, parents first (none when there is nothing to draw)."""
        return list(self.root.walk()) if self.root is not None else []

    def text(self) -> str:
        """Every label and line of detail, one per line: what the diagram says in words."""
        return "\n".join(part for box in self.boxes() for part in (box.label, *box.lines))
