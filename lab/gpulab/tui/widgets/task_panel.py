"""What an exercise asks for: its parts, the functions to write, the points, the words."""

from __future__ import annotations

import re

from textual.widgets import Markdown

from gpulab.tui.task import Task

__all__ = ["HIDDEN_UNKNOWN", "TaskPanel", "task_markdown"]

HIDDEN_UNKNOWN = (
    "The instructor's grading adds hidden checks, which are not shipped to "
    "you: passing every visible check is no promise of full marks."
)
"""What the task says about hidden checks when the manifest does not give their points."""


def _points(value: float) -> str:
    return f"{value:g} point" + ("" if value == 1 else "s")


def _gpu_note(points: float, gpu: float) -> str:
    if not gpu:
        return ""
    if gpu == points:
        return ", need an NVIDIA GPU" if points != 1 else ", needs an NVIDIA GPU"
    return f" ({gpu:g} of them need an NVIDIA GPU)"


def task_markdown(task: Task) -> str:
    """The task as Markdown: a line per part, the points, then each part's own words."""
    lines: list[str] = []
    for part in task.parts:
        what = ", ".join(f"`{s}`" for s in part.signatures) or "(no function)"
        line = f"- **{part.name}**: write {what}"
        if part.points:
            line += f" — {_points(part.points)}{_gpu_note(part.points, part.gpu_points)}"
        lines.append(line)
    for names, points, gpu in task.shared:
        lines.append(
            f"- **{' + '.join(names)}** checked together — "
            f"{_points(points)}{_gpu_note(points, gpu)}"
        )
    if task.other:
        lines.append(f"- other checks — {_points(task.other)}")
    total = task.visible_points
    summary = f"**The visible checks are worth {_points(total)}"
    summary += f"{_gpu_note(total, task.gpu_points)}.**" if total else ".**"
    if task.hidden_points is None:
        hidden = HIDDEN_UNKNOWN
    elif task.hidden_points:
        hidden = (
            f"The instructor's grading adds hidden checks worth "
            f"{_points(task.hidden_points)} more, which are not shipped to you."
        )
    else:
        hidden = "The instructor's grading adds no hidden checks."
    out = ["\n".join(lines), f"{summary} {hidden}"]
    for part in task.parts:
        if part.text:
            out.append(_demote(part.text))
    out.extend(f"*{problem}*" for problem in task.problems)
    return "\n\n".join(chunk for chunk in out if chunk)


def _demote(markdown: str) -> str:
    """The notebook's headings two levels down, so that they sit under the panel's title."""
    return re.sub(
        r"^(#{1,4}) ",
        lambda m: "#" * min(len(m.group(1)) + 2, 6) + " ",
        markdown,
        flags=re.MULTILINE,
    )


class TaskPanel(Markdown):
    """The exercise's task, read in a thread and shown when it arrives."""

    def show_task(self, task: Task) -> None:
        self.update(task_markdown(task))
