"""What a lesson page shows: markmap's data, the outline with notes, the claim cards.

The mindmap and the outline are the same tree. A node's figures
(``<!-- figure: id -->``, a plot or a diagram) are placed among its notes where
their markers stand, drawn by a callable the builder passes in
(`gpulab.book.figures`). The mindmap's data follows
markmap's format (``content`` as HTML, ``children``, ``payload``), so the
vendored markmap view draws it as it is; the outline is the no-JavaScript
reading of it, with each node's notes under it. A "Check yourself" question
keeps its answer (from the note that starts with "Answer", by the app's rule) in a
folded ``<details>``, as the exercise pages keep their hints.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from gpulab.book.markdown import MarkdownRenderer
from gpulab.course.claims import Claim
from gpulab.course.tree import answer_index
from gpulab.course.verdict import judge

if TYPE_CHECKING:
    from gpulab.course.tree import FigureMark, Lesson, Node
    from gpulab.probes.model import ProbeResult

__all__ = [
    "ClaimCard",
    "OutlineNode",
    "answer_at",
    "claim_card",
    "mindmap_data",
    "mindmap_json",
    "node_anchor",
    "outline",
]


def node_anchor(key: str) -> str:
    """The HTML id of a node's outline entry (keys hold `/`, ids get `--` instead)."""
    return "node-" + key.replace("/", "--")


def claim_anchor(claim_id: str) -> str:
    return f"claim-{claim_id}"


@dataclass(frozen=True)
class OutlineNode:
    """One entry of the outline: the label, its notes and claims as HTML, its children."""

    anchor: str
    title_html: str
    notes_html: str
    claims: tuple[str, ...]
    fold: int
    children: list[OutlineNode] = field(default_factory=list)


def _title_html(node: Node, renderer: MarkdownRenderer) -> str:
    number = f"{node.ordinal}. " if node.ordinal is not None else ""
    return number + renderer.inline(node.label or node.text)


def mindmap_data(lesson: Lesson, renderer: MarkdownRenderer) -> dict[str, Any]:
    """The lesson's tree in markmap's data format, each node's key in its payload."""

    def convert(node: Node) -> dict[str, Any]:
        payload: dict[str, Any] = {"key": node.key, "anchor": node_anchor(node.key)}
        if node.fold:
            payload["fold"] = node.fold
        return {
            "content": _title_html(node, renderer),
            "children": [convert(child) for child in node.children],
            "payload": payload,
        }

    return convert(lesson.root)


def mindmap_json(data: dict[str, Any]) -> str:
    """JSON safe to place inside a ``<script>`` element (no ``</`` can end it early)."""
    return json.dumps(data, ensure_ascii=False, separators=(",", ":")).replace("</", "<\\/")


PlaceFigure = Callable[["FigureMark"], str]
"""Gives the HTML of one placed figure."""


def outline(
    lesson: Lesson, renderer: MarkdownRenderer, place: PlaceFigure | None = None
) -> OutlineNode:
    """The lesson's tree as outline entries, notes rendered, figures placed by `place`."""

    def convert(node: Node) -> OutlineNode:
        notes = _notes_html(node, renderer, place)
        return OutlineNode(
            node_anchor(node.key),
            _title_html(node, renderer),
            notes,
            node.claims,
            node.fold,
            [convert(child) for child in node.children],
        )

    return convert(lesson.root)


def answer_at(node: Node) -> int | None:
    """The index of the note that starts the node's answer ("Check yourself"), if any, by
    the rule the app folds answers with (`gpulab.course.tree.answer_index`)."""
    return answer_index(node.notes)


def _notes_html(node: Node, renderer: MarkdownRenderer, place: PlaceFigure | None = None) -> str:
    """The node's notes as HTML, its figures where their markers stand; an answer and
    what follows it folded (a figure placed before the answer stays outside the fold)."""
    html = [renderer.block(note.markdown) for note in node.notes]
    before = [""] * (len(html) + 1)  # before[i]: the figures shown before note i
    if place is not None:
        for mark in node.figures:
            before[len(html) if mark.at is None else min(mark.at, len(html))] += place(mark)
    answer = answer_at(node)
    if answer is None:
        return "".join(b + h for b, h in zip(before, html, strict=False)) + before[-1]
    shown = "".join(b + h for b, h in zip(before[:answer], html[:answer], strict=True))
    folded = html[answer] + "".join(
        b + h for b, h in zip(before[answer + 1 :], html[answer + 1 :], strict=False)
    )
    return (
        shown + before[answer] + '<details class="answer"><summary>Show the answer'
        "</summary>\n" + folded + before[-1] + "</details>\n"
    )


@dataclass(frozen=True)
class ClaimCard:
    """A claim as the book shows it, with the H200 reading recorded for it, if any."""

    claim: Claim
    anchor: str
    recorded_label: str = ""  # "recorded on NVIDIA H200, 2025-…", or "" when none
    recorded_value: str = ""  # the reading as shown, e.g. "55.4 GB/s"
    verdict: str = ""  # the verdict's words
    verdict_kind: str = ""  # agrees, differs, other_device, …
    recorded_problem: str = ""  # why the recording says nothing about this claim


def claim_card(claim: Claim, recorded: dict[str, ProbeResult]) -> ClaimCard:
    """The card of `claim`; `recorded` holds the recorded results by probe name."""
    anchor = claim_anchor(claim.id)
    result = recorded.get(claim.probe)
    if result is None:
        return ClaimCard(claim, anchor)
    label = result.recorded.label if result.recorded is not None else "recorded"
    if not claim.reading:
        return ClaimCard(
            claim,
            anchor,
            label,
            recorded_problem=(f"the {claim.probe} probe has no reading for this claim yet"),
        )
    reading = result.reading(claim.reading)
    if reading is None:
        return ClaimCard(
            claim,
            anchor,
            label,
            recorded_problem=(f"the recording has no reading {claim.reading!r}"),
        )
    if reading.status != "ok":
        return ClaimCard(
            claim, anchor, label, reading.shown, recorded_problem=reading.detail or reading.status
        )
    value = reading.value
    if isinstance(value, bool) or not isinstance(value, int | float):
        return ClaimCard(
            claim, anchor, label, reading.shown, recorded_problem="not a number to compare"
        )
    verdict = judge(claim, float(value), reading.unit, result.device)
    return ClaimCard(claim, anchor, label, reading.shown, verdict.text, verdict.kind)
