"""A lesson as an indented plain-text outline (for `gpulab show` and scripts)."""

from __future__ import annotations

from gpulab.course.tree import Lesson

__all__ = ["outline"]


def outline(lesson: Lesson, *, notes: bool = False, depth: int | None = None) -> str:
    """One line per node, two spaces per level; claims shown as ``[claim: id]``.

    With `notes`, each node's notes follow it, indented one level deeper.
    `depth` limits how deep the outline goes (0 = the root only).
    """
    lines: list[str] = []
    for node in lesson.nodes:
        if depth is not None and node.depth > depth:
            continue
        pad = "  " * node.depth
        if node.kind == "heading":
            bullet = "#" * node.level + " "
        else:
            bullet = "- " if node.ordinal is None else ""  # ordered items show their number
        claims = "".join(f"  [claim: {c}]" for c in node.claims)
        lines.append(f"{pad}{bullet}{node.title}{claims}")
        if notes:
            for note in node.notes:
                for text in note.markdown.split("\n"):
                    lines.append(f"{pad}    {text}".rstrip())
    return "\n".join(lines) + "\n"
