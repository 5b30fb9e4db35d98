"""Small text helpers shared by the screens: labels, bars and problem lists.

Everything here returns Rich `Text`, so widgets can show it directly and
snapshots stay stable.
"""

from __future__ import annotations

from functools import cache
from typing import TYPE_CHECKING

from rich.text import Text

from gpulab.course.standing import standing

if TYPE_CHECKING:
    from pathlib import Path

    from markdown_it import MarkdownIt
    from markdown_it.token import Token

    from gpulab.course import ExerciseEntry, ExerciseRecord, Node, Problem

__all__ = [
    "caption_text",
    "exercise_state",
    "inline_markdown",
    "node_label",
    "not_drawn_text",
    "problem_text",
    "progress_bar",
]

_STYLES = {"strong": "bold", "em": "italic", "s": "strike", "link": "underline"}
CLAIM_BADGE = "◆"


@cache
def _inline_parser() -> MarkdownIt:
    """The Markdown parser for labels, made on first use (the map needs none)."""
    from markdown_it import MarkdownIt

    return MarkdownIt("commonmark")


def inline_markdown(source: str) -> Text:
    """Rich text for one line of inline Markdown (bold, italic, code, links)."""
    text = Text()
    tokens = _inline_parser().parseInline(source)
    children: list[Token] = (tokens[0].children or []) if tokens else []
    styles: list[str] = []
    for token in children:
        kind = token.type
        if kind.endswith("_open"):
            styles.append(_STYLES.get(kind[: -len("_open")], ""))
        elif kind.endswith("_close"):
            if styles:
                styles.pop()
        elif kind == "code_inline":
            text.append(token.content, style=" ".join([*(s for s in styles if s), "cyan"]))
        elif kind in ("softbreak", "hardbreak"):
            text.append(" ")
        elif kind == "html_inline":
            continue
        elif kind == "image":
            text.append(token.content or "image", style="italic")
        else:
            text.append(token.content, style=" ".join(s for s in styles if s))
    return text


def node_label(node: Node) -> Text:
    """A mindmap node's label: its number, its inline Markdown, its claim badges."""
    label = Text()
    if node.ordinal is not None:
        label.append(f"{node.ordinal}. ")
    label.append_text(inline_markdown(node.label) if node.label else Text("(empty)", "dim"))
    if node.kind == "heading" and node.depth > 0:
        label.stylize("bold")
    for claim_id in node.claims:
        label.append("  ")
        label.append(f"{CLAIM_BADGE} {claim_id}", style="bold magenta")
    return label


def progress_bar(fraction: float, width: int = 8) -> Text:
    """A bar of `width` cells and a percentage, e.g. ``━━━━──── 50%``."""
    fraction = min(max(fraction, 0.0), 1.0)
    done = round(fraction * width)
    bar = Text()
    bar.append("━" * done, style="green" if fraction >= 1 else "cyan")
    bar.append("─" * (width - done), style="dim")
    bar.append(f" {round(fraction * 100):>3}%", style="bold" if fraction >= 1 else "")
    return bar


def problem_text(problems: tuple[Problem, ...] | list[Problem], root: Path | None) -> Text:
    """Each problem as ``file:line`` (bold), its message, and its hint."""
    text = Text()
    for index, problem in enumerate(problems):
        if index:
            text.append("\n\n")
        text.append(problem.place(root), style="bold")
        text.append(f"  {problem.message}")
        if problem.hint:
            text.append("\n  hint: ", style="dim")
            text.append(problem.hint, style="italic")
    return text


_STANDING_STYLES = {"passed": "bold green", "failing": "red", "no-gpu": "yellow"}


def exercise_state(
    exercise: ExerciseEntry, record: ExerciseRecord | None, gpu_here: bool | None
) -> Text:
    """Where the learner stands on an exercise, in `gpulab list`'s words
    (`gpulab.course.standing`): ``not started``, ``failing (3/11)``, ``passed (11/11)``,
    ``needs an NVIDIA GPU``, or ``failing (0/7) · GPU checks need a GPU`` (a GPU exercise
    checked on a machine without one)."""
    found = standing(exercise, record, gpu_here)
    text = Text(found.words, style=_STANDING_STYLES.get(found.kind, "dim"))
    if found.note:
        text.append(" · ", style="dim")
        text.append(found.note, style="yellow")
    return text


def caption_text(caption: str, notes: tuple[str, ...]) -> Text:
    """A figure's or a diagram's caption, its remarks after it in italics."""
    text = Text(caption)
    for note in notes:
        text.append(f" {note}.", style="italic")
    return text


def not_drawn_text(missing: str) -> Text:
    """Why a figure or a diagram is not drawn."""
    text = Text("Not drawn: ", style="bold yellow")
    text.append(missing, style="yellow")
    return text
