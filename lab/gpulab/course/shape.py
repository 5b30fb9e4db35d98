"""A lesson shaped as a mindmap: labels state, short notes explain.

A node's prose notes longer than `MAX_NOTE_LINES` lines read as a page of a
textbook hung on a node; the linter asks for them to become child nodes whose
labels state each point. The lesson's root (its introduction, which its own
sections then unfold) and a "Check yourself" answer (one argument, folded
until asked for) may run longer.
"""

from __future__ import annotations

from gpulab.course.problems import Problem
from gpulab.course.tree import Lesson, split_answer

__all__ = ["MAX_NOTE_LINES", "check_shape"]

MAX_NOTE_LINES = 8


def check_shape(lesson: Lesson) -> list[Problem]:
    """A problem for each node (the root and answers aside) whose prose notes run over
    `MAX_NOTE_LINES` lines."""
    problems = []
    for node in lesson.nodes:
        if node is lesson.root:
            continue
        question, _ = split_answer(node.notes)
        lines = sum(
            len(note.markdown.strip().splitlines()) for note in question if note.kind == "paragraph"
        )
        if lines > MAX_NOTE_LINES:
            problems.append(
                Problem(
                    lesson.path,
                    node.line,
                    f"the notes of {node.text[:50]!r} run to {lines} "
                    f"lines (at most {MAX_NOTE_LINES})",
                    "split them into child nodes whose labels state each point",
                )
            )
    return problems
