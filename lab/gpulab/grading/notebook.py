"""Exercise notebooks: reading them safely, their cell roles, and answer stripping.

Every code cell of an exercise carries ``metadata.gpulab.role``: ``setup``,
``answer`` (with ``part``), ``explore`` or ``check`` (see solutions/README.md).
`strip_solution` turns a solution's answer into the learner's stub: what lies
between ``### BEGIN SOLUTION`` and ``### END SOLUTION`` becomes ``# TODO`` and
``raise NotImplementedError``, indented like the first line it replaces.
"""

from __future__ import annotations

import copy
import importlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gpulab.errors import GpulabError

__all__ = [
    "BEGIN",
    "END",
    "Cell",
    "NotebookError",
    "answer_cells",
    "notebook_text",
    "read_cells",
    "read_notebook",
    "setup_cells",
    "strip_solution",
    "to_exercise",
    "write_notebook",
]

BEGIN = "### BEGIN SOLUTION"
END = "### END SOLUTION"
STUB = "# TODO: write your answer here"
MAX_BYTES = 20 * 2**20


class NotebookError(GpulabError):
    """A notebook that cannot be used, said in words: which file, what is wrong."""


@dataclass(frozen=True)
class Cell:
    """The code of one cell and where it came from, for the worker and its messages."""

    name: str      # "setup 1", "answer read_limits"
    source: str


def _nbformat() -> Any:
    """nbformat, imported on first use (it has no type hints)."""
    return importlib.import_module("nbformat")


def notebook_text(notebook: Any) -> str:
    """A notebook as the text `write_notebook` writes."""
    return str(_nbformat().writes(notebook)) + "\n"


def read_notebook(path: Path) -> Any:
    """Read and validate a notebook; `NotebookError` says what is wrong, never a traceback."""
    nbformat = _nbformat()

    try:
        size = path.stat().st_size
    except OSError as exc:
        raise NotebookError(f"{path}: cannot read it: {exc.strerror}") from None
    if size > MAX_BYTES:
        raise NotebookError(f"{path}: {size / 2**20:.0f} MiB is too large for a notebook "
                            f"(the limit is {MAX_BYTES // 2**20} MiB): clear its outputs")
    try:
        text = path.read_text(encoding="utf-8")
        data = json.loads(text)
    except UnicodeDecodeError:
        raise NotebookError(f"{path}: not UTF-8 text, so not a notebook") from None
    except json.JSONDecodeError as exc:
        raise NotebookError(f"{path}:{exc.lineno}: not valid notebook JSON: {exc.msg}"
                            ) from None
    if not isinstance(data, dict) or data.get("nbformat") != 4:
        version = data.get("nbformat") if isinstance(data, dict) else None
        raise NotebookError(f"{path}: not a version 4 notebook (nbformat {version!r}); "
                            "open and save it in JupyterLab to upgrade it")
    try:
        notebook = nbformat.reads(text, as_version=4)
        nbformat.validate(notebook)
    except Exception as exc:  # nbformat raises several validation error classes
        message = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise NotebookError(f"{path}: not a valid notebook: {message}") from None
    return notebook


def write_notebook(notebook: Any, path: Path) -> None:
    """Write a notebook the same way every time (stable keys, one newline at the end)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(notebook_text(notebook), encoding="utf-8")


def role(cell: Any) -> str | None:
    meta = (cell.get("metadata") or {}).get("gpulab", {})
    value = meta.get("role") if isinstance(meta, dict) else None
    return value if isinstance(value, str) else None


def part(cell: Any) -> str | None:
    meta = (cell.get("metadata") or {}).get("gpulab", {})
    value = meta.get("part") if isinstance(meta, dict) else None
    return value if isinstance(value, str) else None


def _code_cells(notebook: Any) -> list[Any]:
    cells = notebook.get("cells") if isinstance(notebook, dict) else None
    return [c for c in cells or [] if isinstance(c, dict) and c.get("cell_type") == "code"]


def _source(cell: Any) -> str:
    source = cell.get("source", "")
    return "".join(source) if isinstance(source, list) else str(source)


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
            raise NotebookError(f"{path}: an answer cell has no part in its metadata "
                                "(metadata.gpulab.part)")
        if name in answers:
            raise NotebookError(f"{path}: part {name!r} is answered in two cells: keep one "
                                "(the checks cannot tell which you mean)")
        answers[name] = Cell(f"answer {name}", _source(cell))
    return answers


def read_cells(path: Path) -> dict[str, Any]:
    """A notebook that `read_notebook` has validated already, read again as plain JSON.

    The checks process uses this: importing nbformat (for its validator) costs
    over a second per process, and the runner validated both notebooks before
    it started the checks.
    """
    try:
        if path.stat().st_size > MAX_BYTES:
            raise NotebookError(f"{path}: too large for a notebook")
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise NotebookError(f"{path}: cannot read it: {exc}") from None
    if not isinstance(data, dict) or data.get("nbformat") != 4 or \
            not isinstance(data.get("cells"), list):
        raise NotebookError(f"{path}: not a version 4 notebook")
    return data


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
                raise NotebookError(f"{path}: code cell {index + 1} has no role "
                                    "(metadata.gpulab.role: setup, answer, explore or check)")
            if kind == "answer":
                cell.source = strip_solution(cell.source, f"{path}, cell {index + 1}")
                if BEGIN in solution.cells[index].source and cell.source == \
                        solution.cells[index].source:
                    raise NotebookError(f"{path}: cell {index + 1} kept its solution")
            elif BEGIN in cell.source:
                raise NotebookError(f"{path}: cell {index + 1} is a {kind} cell with a "
                                    "solution in it: only answer cells may have one")
        cell.get("metadata", {}).pop("execution", None)
    exercise.metadata.pop("widgets", None)
    return exercise
