"""A lesson as a tree: the nodes of the mindmap, their notes and markers (`gpulab.course.lesson`
parses a file into it)."""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from gpulab.course.frontmatter import FrontMatter
from gpulab.course.problems import Problem

__all__ = ["FigureMark", "Lesson", "Node", "Note", "answer_index", "split_answer"]


@dataclass(frozen=True)
class Note:
    """A block of Markdown that explains its node."""

    kind: Literal["paragraph", "code", "table", "quote", "html"]
    markdown: str
    line: int
    lang: str = ""


@dataclass(frozen=True)
class FigureMark:
    """A figure placed on a node: its id, the line of its marker, and where it goes.

    `at` is the number of the node's notes shown before it; None places it after
    all of them (a marker on the node's own line).
    """

    id: str
    line: int
    at: int | None = None


@dataclass(eq=False)
class Node:
    """One node of the mindmap: a heading or a list item."""

    key: str
    label: str
    text: str
    kind: Literal["heading", "item"]
    depth: int
    line: int
    level: int = 0
    ordinal: int | None = None
    claims: tuple[str, ...] = ()
    examples: tuple[str, ...] = ()
    figures: tuple[FigureMark, ...] = ()
    fold: int = 0
    notes: list[Note] = field(default_factory=list)
    children: list[Node] = field(default_factory=list)
    parent: Node | None = field(default=None, repr=False)

    def walk(self) -> Iterator[Node]:
        """This node and everything below it, in document order."""
        yield self
        for child in self.children:
            yield from child.walk()

    @property
    def title(self) -> str:
        """The label as shown: ordered items keep their number."""
        return f"{self.ordinal}. {self.text}" if self.ordinal is not None else self.text


@dataclass(eq=False)
class Lesson:
    """A parsed lesson: its front matter, its tree, and lint findings."""

    id: str
    path: Path
    front: FrontMatter
    root: Node
    problems: list[Problem] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.nodes: list[Node] = list(self.root.walk())
        self.by_key: dict[str, Node] = {node.key: node for node in self.nodes}

    @property
    def title(self) -> str:
        return self.front.title


_ANSWER = re.compile(r"\s*(\*\*|__)?answer\b", re.IGNORECASE)


def answer_index(notes: Sequence[Note]) -> int | None:
    """Where a node's answer ("Check yourself") starts: the index of the first paragraph
    that begins with "Answer" (plain or bold), or None. The one rule for the app's
    folded answers, the book's and the note-length lint."""
    return next(
        (
            index
            for index, note in enumerate(notes)
            if note.kind == "paragraph" and _ANSWER.match(note.markdown)
        ),
        None,
    )


def split_answer(notes: list[Note]) -> tuple[list[Note], list[Note]]:
    """A node's notes as (the question's, the answer's), split at `answer_index`; without
    an answer, every note is the question's."""
    index = answer_index(notes)
    return (notes, []) if index is None else (notes[:index], notes[index:])
