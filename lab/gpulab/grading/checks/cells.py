"""An exercise notebook's cells by role, and a solution's answers stripped into the learner's stubs.

Every code cell of an exercise carries ``metadata.gpulab.role``: ``setup``,
``answer`` (with ``part``), ``explore`` or ``check`` (see solutions/README.md).
`setup_cells` and `answer_cells` take the cells the checks run from a notebook
read by `gpulab.grading.checks.notebook` (validated or not). `strip_solution` turns a
solution's answer into the learner's stub: what lies between ``### BEGIN
SOLUTION`` and ``### END SOLUTION`` becomes ``# TODO`` and ``raise
NotImplementedError``, indented like the first line it replaces; `to_exercise`
does that to every answer cell of a solution notebook.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gpulab.grading.checks.notebook import NotebookError

__all__ = [
    "BEGIN",
    "END",
    "Cell",
    "answer_cells",
    "part",
    "role",
    "setup_cells",
    "strip_solution",
    "to_exercise",
]

BEGIN = "### BEGIN SOLUTION"
END = "### END SOLUTION"
STUB = "# TODO: write your answer here"


@dataclass(frozen=True)
class Cell:
    """The code of one cell and where it came from, for the worker and its messages."""

    name: str  # "setup 1", "answer read_limits"
    source: str


def role(cell: Any) -> str | None:
    """A cell's role (metadata.gpulab.role), or None where it has none."""
    value = _gpulab(cell).get("role")
    return value if isinstance(value, str) else None


def part(cell: Any) -> str | None:
    """The part an answer cell answers (metadata.gpulab.part), or None where it names none."""
    value = _gpulab(cell).get("part")
    return value if isinstance(value, str) else None


def _gpulab(cell: Any) -> dict[str, Any]:
    """A cell's metadata.gpulab, or {} where any step of that is not a mapping."""
    meta = cell.get("metadata") if isinstance(cell, dict) else None
    found = meta.get("gpulab") if isinstance(meta, dict) else None
    return found if isinstance(found, dict) else {}


def _code_cells(notebook: Any) -> list[Any]:
    cells = notebook.get("cells") if isinstance(notebook, dict) else None
    return (
        [c for c in cells if isinstance(c, dict) and c.get("cell_type") == "code"]
        if isinstance(cells, list)
        else []
    )


def _source(cell: Any) -> str:
    source = cell.get("source", "")
    return "".join(map(str, source)) if isinstance(source, list) else str(source)


def setup_cells(notebook: Any) -> list[Cell]:
    """The setup cells, in order (of a validated notebook, or of `read_cells`'s dict)."""
    found = [c for c in _code_cells(notebook) if role(c) == "setup"]
    return [Cell(f"setup {n}", _source(c)) for n, c in enumerate(found, start=1)]


def answer_cells(notebook: Any, path: Path) -> dict[str, Cell]:
    """The answer cells by part; a part answered twice is a `NotebookError`."""
    answers: dict[str, Cell] = {}
    for cell in _code_cells(notebook):
        if role(cell) != "answer":
            continue
        name = part(cell)
        if not name:
            raise NotebookError(
                f"{path}: an answer cell has no part in its metadata (metadata.gpulab.part)"
            )
        if name in answers:
            raise NotebookError(
                f"{path}: part {name!r} is answered in two cells: keep one "
                "(the checks cannot tell which you mean)"
            )
        answers[name] = Cell(f"answer {name}", _source(cell))
    return answers


def strip_solution(source: str, where: str = "a cell") -> str:
    """Replace each BEGIN/END SOLUTION region with a stub; keep everything else."""
    lines = source.split("\n")
    out: list[str] = []
    inside = False
    indent = ""
    for number, line in enumerate(lines, start=1):
        text = line.strip()
        if text == BEGIN:
            if inside:
                raise NotebookError(f"{where}, line {number}: {BEGIN} inside another one")
            inside, indent = True, line[: len(line) - len(line.lstrip())]
            continue
        if text == END:
            if not inside:
                raise NotebookError(f"{where}, line {number}: {END} without {BEGIN}")
            out.extend([f"{indent}{STUB}", f"{indent}raise NotImplementedError"])
            inside = False
            continue
        if not inside:
            out.append(line)
    if inside:
        raise NotebookError(f"{where}: {BEGIN} is never closed by {END}")
    return "\n".join(out)


def to_exercise(solution: Any, path: Path) -> Any:
    """The learner's notebook from a solution: stubs for answers, no outputs."""
    exercise = copy.deepcopy(solution)
    for index, cell in enumerate(exercise.cells):
        if cell.cell_type == "code":
            cell.outputs = []
            cell.execution_count = None
            kind = role(cell)
            if kind is None:
                raise NotebookError(
                    f"{path}: code cell {index + 1} has no role "
                    "(metadata.gpulab.role: setup, answer, explore or check)"
                )
            if kind == "answer":
                cell.source = strip_solution(cell.source, f"{path}, cell {index + 1}")
                if (
                    BEGIN in solution.cells[index].source
                    and cell.source == solution.cells[index].source
                ):
                    raise NotebookError(f"{path}: cell {index + 1} kept its solution")
            elif BEGIN in cell.source:
                raise NotebookError(
                    f"{path}: cell {index + 1} is a {kind} cell with a "
                    "solution in it: only answer cells may have one"
                )
        cell.get("metadata", {}).pop("execution", None)
    exercise.metadata.pop("widgets", None)
    return exercise
