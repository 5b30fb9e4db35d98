"""What the exercise screen writes: the exercise's facts, how to work on it, the solution.

`exercise_facts` is the grid at the top of the screen: the exercise's facts and
where the learner stands on it (its notebook, its status, whether saving it runs
the checks). `exercise_guide` says how to work on the exercise, or how to get a
workspace first. `solution_markdown` reads the solution's answer cells as
Markdown code blocks, for `s` once the checks have passed (an installed course
has none, and `s` says so); it reads files, so the screen calls it from a thread.

UI-free: Rich renderables and Markdown text, no widget; the screen
(`gpulab.tui.screens.exercise`) shows them.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from rich.table import Table
from rich.text import Text

if TYPE_CHECKING:
    from pathlib import Path

    from gpulab.course import ExerciseEntry

__all__ = [
    "NO_SOLUTIONS",
    "exercise_facts",
    "exercise_guide",
    "has_solutions",
    "solution_markdown",
]


def exercise_facts(
    exercise: ExerciseEntry,
    *,
    lesson: str,
    path: Path | None,
    shown: str,
    status: Text,
    watching: bool,
) -> Table:
    """The exercise's facts and where the learner stands: its notebook at `path` (None without
    a workspace; `shown` as the screen names it), its `status`, and whether the screen is
    `watching` the notebook."""
    grid = Table.grid(padding=(0, 2))
    grid.add_column(style="dim", no_wrap=True)
    grid.add_column()
    grid.add_row("name", Text(exercise.name, style="bold"))
    grid.add_row("lesson", lesson)
    gpu = (
        Text("needs an NVIDIA GPU", style="bold yellow")
        if exercise.gpu
        else Text("runs on the CPU", style="green")
    )
    grid.add_row("runs on", gpu)
    grid.add_row("time limit", f"{exercise.time_limit} s")
    notebook = Text(shown)
    if path is not None and not path.is_file():
        notebook.append("  (not found: gpulab reset brings it back)", style="red")
    grid.add_row("notebook", notebook)
    grid.add_row("status", status)
    if path is not None:
        watching_text = (
            Text("saving the notebook runs the checks (w stops)", style="green")
            if watching
            else Text("not watching: press w to run the checks on every save", style="dim")
        )
        grid.add_row("watching", watching_text)
    return grid


def exercise_guide(name: str, notebook: Path | None) -> str:
    """How to work on exercise `name` (Markdown), with the learner's `notebook`; without one
    (no workspace yet), how to make the workspace."""
    if notebook is None:
        return (
            "1. In a shell, run `gpulab init`: it copies the exercises into a folder "
            "of your own (`./gpulab-exercises`, or the folder you name).\n"
            "2. Come back here: gpulab finds the workspace by itself.\n\n"
            "Press **h** for a hint meanwhile; **n** opens the next exercise."
        )
    return (
        f"1. Press **o** to open the notebook in JupyterLab (or open "
        f"`{notebook}` in any Jupyter).\n"
        "2. Write your answers where `# TODO` stands, and save the notebook: "
        "while this screen is open, each save runs the checks.\n"
        f"3. Or press **c** to run them (or `gpulab check {name}` in a shell, or "
        "the notebook's last cell): each check says what it expected and what it "
        "found.\n\n"
        "Press **h** for a hint, gentlest first. "
        "The solution (**s**) opens once your checks pass; **n** opens the next "
        "exercise you have not passed."
    )


NO_SOLUTIONS = (
    "An installed course ships no solutions: ask your instructor, or work from the course checkout."
)
"""What `s` says in a course without solutions/ (the one a wheel installs)."""


def has_solutions(exercise: ExerciseEntry) -> bool:
    """Whether the exercise's course has its solutions (a checkout; never an installed
    course)."""
    from gpulab.course.paths import CoursePaths

    return CoursePaths.of_notebook(exercise.notebook).solutions.is_dir()


def solution_markdown(exercise: ExerciseEntry) -> str:
    """The solution's answer cells as Markdown code blocks, or why there are none to show
    (blocking: read in a thread)."""
    from gpulab.grading.build import solution_path
    from gpulab.grading.checks.cells import BEGIN, END, answer_cells
    from gpulab.grading.checks.notebook import NotebookError, read_notebook

    if not has_solutions(exercise):
        return NO_SOLUTIONS
    path = solution_path(exercise)
    try:
        answers = answer_cells(read_notebook(path), path)
    except NotebookError as exc:
        return f"The solution cannot be shown: {exc}"
    parts = [f"The solution's answers, from `{path.name}`: compare them with yours."]
    for part, cell in answers.items():
        source = "\n".join(
            line for line in cell.source.splitlines() if line.strip() not in (BEGIN, END)
        ).rstrip()
        longest = max((len(run) for run in re.findall(r"`+", source)), default=0)
        fence = "`" * max(3, longest + 1)
        parts.append(f"**{part}**\n\n{fence}python\n{source}\n{fence}")
    if len(parts) == 1:
        parts.append("*The solution has no answer cells.*")
    return "\n\n".join(parts)
