"""Where each box of a diagram goes on a page: rectangles, wrapped text, arrow ends.

Pure arithmetic in points (1/72 inch), y growing downwards, so that it can be
tested without drawing: `layout` gives every box its rectangle and its label and
detail lines wrapped to fit, and every link the two points its arrow joins.
`gpulab.figures.diagram_svg` draws the result with matplotlib.

Text is wrapped by an estimate of its width (DejaVu Sans averages a little over
half its size per character; the estimate errs wide), so the layout is the same
on every machine. A row's boxes share its width by their `span` and stretch to
the tallest one; a column's boxes are stacked, each as wide as its `width` says,
centred. Two neighbours that a link joins are set further apart, to leave room
for the arrow and its label.
"""

from __future__ import annotations

import textwrap
from dataclasses import dataclass
from itertools import pairwise

from gpulab.figures.diagram_model import Box, Link

__all__ = ["LABEL_SIZE", "LEADING", "LINE_SIZE", "PAD", "Arrow", "Placed", "layout", "wrap"]

LABEL_SIZE = 7.5
"""The labels' font size, in points (bold)."""
LINE_SIZE = 6.8
"""The detail lines' font size, in points."""
_ADVANCE = {True: 0.64, False: 0.58}  # characters' width per point of size, bold or not
LEADING = 1.28
"""Line height as a multiple of the font size."""
PAD = 4.0
"""Space between a framed box's border and what is inside it, in points."""
_GAP = 5.0
_LINKED_GAP = 16.0
_LABELLED_GAP = 18.0


@dataclass(frozen=True)
class Placed:
    """A box where it is drawn: its rectangle, its nesting depth, its text as wrapped."""

    box: Box
    x: float
    y: float
    w: float
    h: float
    depth: int
    label: tuple[str, ...]
    lines: tuple[str, ...]

    @property
    def framed(self) -> bool:
        """Whether the box is drawn at all: a plain box with no label only groups others."""
        return bool(self.box.label) or self.box.role != "plain"


@dataclass(frozen=True)
class Arrow:
    """A link as drawn: from one point to another, with its label."""

    link: Link
    start: tuple[float, float]
    end: tuple[float, float]


def wrap(text: str, width: float, size: float, *, bold: bool = False) -> tuple[str, ...]:
    """`text` broken into lines that fit `width` points at `size`: words kept whole where
    they fit, hyphenated names broken after a hyphen, a word longer than a line broken
    with a hyphen."""
    if not text:
        return ()
    chars = max(4, int(width / (size * _ADVANCE[bold])))
    words = [_hyphenate(word, chars) for word in text.split(" ")]
    return tuple(textwrap.wrap(" ".join(words), chars, break_on_hyphens=True)) or (text,)


def _hyphenate(word: str, chars: int) -> str:
    """A word longer than a line, with hyphens where it must break ("observabi-lity");
    one with hyphens of its own breaks there first."""
    return "-".join(
        piece
        if len(piece) <= chars
        else "-".join(piece[i : i + chars - 1] for i in range(0, len(piece), chars - 1))
        for piece in word.split("-")
    )


def _text(box: Box, width: float) -> tuple[tuple[str, ...], tuple[str, ...]]:
    inner = width - 2 * PAD
    label = wrap(box.label, inner, LABEL_SIZE, bold=True)
    lines = tuple(line for text in box.lines for line in wrap(text, inner, LINE_SIZE))
    return label, lines


def _text_height(label: tuple[str, ...], lines: tuple[str, ...]) -> float:
    return (len(label) * LABEL_SIZE + len(lines) * LINE_SIZE) * LEADING


class _Layout:
    def __init__(self, links: tuple[Link, ...]) -> None:
        self.links = links
        self.placed: list[Placed] = []

    def _keys(self, box: Box) -> set[str]:
        return {b.key for b in box.walk() if b.key}

    def gap(self, one: Box, two: Box) -> float:
        """The space between two neighbours: wider where a link joins them."""
        a, b = self._keys(one), self._keys(two)
        joining = [
            link for link in self.links if {link.start, link.end} & a and {link.start, link.end} & b
        ]
        if any(link.label for link in joining):
            return _LABELLED_GAP
        return _LINKED_GAP if joining else _GAP

    def widths(self, box: Box, inner: float) -> list[float]:
        """The widths of a row's children."""
        gaps = sum(self.gap(a, b) for a, b in pairwise(box.children))
        total = sum(c.span for c in box.children)
        return [(inner - gaps) * c.span / total for c in box.children]

    def pad(self, box: Box) -> float:
        return PAD if (box.label or box.role != "plain") else 0.0

    def height(self, box: Box, width: float) -> float:
        pad = self.pad(box)
        label, lines = _text(box, width)
        text = _text_height(label, lines)
        inner = width - 2 * pad
        if not box.children:
            return text + 2 * pad
        if box.layout == "row":
            body = max(
                self.height(c, w)
                for c, w in zip(box.children, self.widths(box, inner), strict=True)
            )
        else:
            body = sum(self.height(c, inner * c.width) for c in box.children) + sum(
                self.gap(a, b) for a, b in pairwise(box.children)
            )
        return text + (_GAP if text else 0.0) + body + 2 * pad

    def place(self, box: Box, x: float, y: float, w: float, h: float, depth: int) -> None:
        label, lines = _text(box, w)
        self.placed.append(Placed(box, x, y, w, h, depth, label, lines))
        pad = self.pad(box)
        text = _text_height(label, lines)
        top = y + pad + text + (_GAP if text else 0.0)
        inner = w - 2 * pad
        if box.layout == "row":
            left, below = x + pad, y + h - pad - top
            for index, (child, width) in enumerate(
                zip(box.children, self.widths(box, inner), strict=True)
            ):
                self.place(child, left, top, width, below, depth + 1)
                if index + 1 < len(box.children):
                    left += width + self.gap(child, box.children[index + 1])
            return
        for index, child in enumerate(box.children):
            width = inner * child.width
            height = self.height(child, width)
            self.place(child, x + pad + (inner - width) / 2, top, width, height, depth + 1)
            if index + 1 < len(box.children):
                top += height + self.gap(child, box.children[index + 1])


def _arrow(link: Link, one: Placed, two: Placed) -> Arrow:
    """The ends of the arrow from `one` to `two`: across the space between them, straight
    where they overlap."""

    def overlap(a0: float, a1: float, b0: float, b1: float) -> float:
        low, high = max(a0, b0), min(a1, b1)
        return (low + high) / 2 if low < high else (a0 + a1 + b0 + b1) / 4

    if two.y >= one.y + one.h or one.y >= two.y + two.h:  # one above the other
        x = overlap(one.x, one.x + one.w, two.x, two.x + two.w)
        if two.y >= one.y + one.h:
            x_one = x if one.x <= x <= one.x + one.w else one.x + one.w / 2
            x_two = x if two.x <= x <= two.x + two.w else two.x + two.w / 2
            return Arrow(link, (x_one, one.y + one.h), (x_two, two.y))
        x_one = x if one.x <= x <= one.x + one.w else one.x + one.w / 2
        x_two = x if two.x <= x <= two.x + two.w else two.x + two.w / 2
        return Arrow(link, (x_one, one.y), (x_two, two.y + two.h))
    y = overlap(one.y, one.y + one.h, two.y, two.y + two.h)
    if two.x >= one.x + one.w:
        return Arrow(link, (one.x + one.w, y), (two.x, y))
    if one.x >= two.x + two.w:
        return Arrow(link, (one.x, y), (two.x + two.w, y))
    raise ValueError(f"link {link.start} -> {link.end}: one box lies inside the other")


def layout(
    root: Box, links: tuple[Link, ...], width: float
) -> tuple[list[Placed], list[Arrow], float]:
    """Every box placed (parents before children), every link's arrow, and the height."""
    work = _Layout(links)
    height = work.height(root, width)
    work.place(root, 0.0, 0.0, width, height, 0)
    by_key = {p.box.key: p for p in work.placed if p.box.key}
    arrows = [_arrow(link, by_key[link.start], by_key[link.end]) for link in links]
    return work.placed, arrows, height
