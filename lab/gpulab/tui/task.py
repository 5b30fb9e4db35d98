"""What an exercise asks for, read from the files a learner gets: its parts and their points.

The exercise notebook's answer cells carry ``metadata.gpulab.part``; the
functions a part asks for are the ``def``s in its cell, and its text is the
Markdown cell before it. A visible check (``test_<name>.py`` beside the
notebook) is worth its ``@pytest.mark.points(n)`` (1 without one, times the
cases of a literal ``parametrize``), and belongs to the parts whose functions
it names: in its own body, or in the fixtures and helpers it uses. Everything
is read as text and syntax trees; nothing is imported or run, and pytest is
not started. Hidden checks are never read: they are not shipped to learners.
The points they add come from the manifest (``hidden_points``) where it says.

UI-free: blocking file reads, so the app calls `read_task` from a thread.
"""

from __future__ import annotations

import ast
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from gpulab.course import ExerciseEntry

__all__ = ["Part", "Task", "checks_file", "read_task"]


@dataclass(frozen=True)
class Part:
    """One part of an exercise: what to write, the notebook's words for it, its points."""

    name: str
    functions: tuple[str, ...]
    text: str
    signatures: tuple[str, ...] = ()  # ``ns_inode(link)``, one per function
    points: float = 0.0
    gpu_points: float = 0.0  # of `points`, those of checks that need a GPU


@dataclass(frozen=True)
class Task:
    """An exercise's parts, and the visible points no single part holds."""

    parts: tuple[Part, ...] = ()
    shared: tuple[tuple[tuple[str, ...], float, float], ...] = ()
    """Checks that use several parts at once: (the parts, points, of them on a GPU)."""
    other: float = 0.0  # points of checks that name no part's function
    hidden_points: float | None = None  # what the instructor's hidden checks add, if known
    problems: tuple[str, ...] = field(default=())

    @property
    def visible_points(self) -> float:
        return sum(p.points for p in self.parts) + sum(n for _, n, _ in self.shared) + self.other

    @property
    def gpu_points(self) -> float:
        """Of the visible points, those of checks that need an NVIDIA GPU."""
        return sum(p.gpu_points for p in self.parts) + sum(g for _, _, g in self.shared)


def checks_file(entry: ExerciseEntry) -> Path:
    """The exercise's visible checks, beside its notebook."""
    return entry.notebook.parent / f"test_{entry.name.replace('-', '_')}.py"


def read_task(entry: ExerciseEntry, notebook: Path | None = None) -> Task:
    """The task of an exercise, from its notebook (default: the course's) and visible checks.

    Never raises for a file that is missing or unreadable: `Task.problems` says why.
    """
    hidden_points = entry.hidden_points
    problems: list[str] = []
    path = notebook or entry.notebook
    try:
        parts = _parts(json.loads(path.read_text(encoding="utf-8")))
    except OSError as exc:
        problems.append(f"{path.name}: cannot be read ({exc.strerror or exc})")
        parts = []
    except (ValueError, TypeError, AttributeError) as exc:
        problems.append(f"{path.name}: not a notebook ({exc})")
        parts = []
    checks = checks_file(entry)
    try:
        tests = _checks(ast.parse(checks.read_text(encoding="utf-8"), str(checks)))
    except OSError as exc:
        problems.append(f"{checks.name}: cannot be read ({exc.strerror or exc})")
        tests = []
    except (ValueError, SyntaxError) as exc:
        problems.append(f"{checks.name}: not Python ({exc})")
        tests = []
    points: dict[str, float] = {p.name: 0.0 for p in parts}
    on_gpu: dict[str, float] = {p.name: 0.0 for p in parts}
    shared: dict[tuple[str, ...], tuple[float, float]] = {}
    other = 0.0
    for names, worth, gpu in tests:
        mine = tuple(p.name for p in parts if names & set(p.functions))
        if len(mine) == 1:
            points[mine[0]] += worth
            on_gpu[mine[0]] += worth if gpu else 0.0
        elif mine:
            total, gpu_total = shared.get(mine, (0.0, 0.0))
            shared[mine] = (total + worth, gpu_total + (worth if gpu else 0.0))
        else:
            other += worth
    return Task(
        tuple(
            Part(p.name, p.functions, p.text, p.signatures, points[p.name], on_gpu[p.name])
            for p in parts
        ),
        tuple((names, total, gpu) for names, (total, gpu) in shared.items()),
        other,
        hidden_points,
        tuple(problems),
    )


def _parts(notebook: object) -> list[Part]:
    """The answer cells in order, each with its functions and the Markdown before it."""
    cells = notebook.get("cells") if isinstance(notebook, dict) else None
    parts: list[Part] = []
    text = ""
    for cell in cells if isinstance(cells, list) else []:
        if not isinstance(cell, dict):
            continue
        source = cell.get("source", "")
        source = "".join(source) if isinstance(source, list) else str(source)
        if cell.get("cell_type") == "markdown":
            text = source.strip()
            continue
        meta = (cell.get("metadata") or {}).get("gpulab") or {}
        if not isinstance(meta, dict) or meta.get("role") != "answer":
            continue
        name = meta.get("part")
        if isinstance(name, str) and name and name not in {p.name for p in parts}:
            defined = _functions(source)
            parts.append(
                Part(name, tuple(n for n, _ in defined), text, tuple(s for _, s in defined))
            )
            text = ""  # one cell of words belongs to one part
    return parts


def _functions(source: str) -> list[tuple[str, str]]:
    """The functions (and classes) a cell defines at its top level: (name, signature)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []
    found = []
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            arguments = node.args
            names = [a.arg for a in arguments.posonlyargs + arguments.args]
            if arguments.vararg is not None:
                names.append(f"*{arguments.vararg.arg}")
            names += [a.arg for a in arguments.kwonlyargs]
            if arguments.kwarg is not None:
                names.append(f"**{arguments.kwarg.arg}")
            found.append((node.name, f"{node.name}({', '.join(names)})"))
        elif isinstance(node, ast.ClassDef):
            found.append((node.name, f"class {node.name}"))
    return found


def _checks(tree: ast.Module) -> list[tuple[set[str], float, bool]]:
    """Each check as (the strings it can reach, its points, whether it needs a GPU)."""
    functions = {
        node.name: node
        for node in tree.body
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
    }
    reached: dict[str, set[str]] = {}

    def reach(name: str, seen: frozenset[str]) -> set[str]:
        if name in reached:
            return reached[name]
        node = functions[name]
        found = {
            n.value
            for n in ast.walk(node)
            if isinstance(n, ast.Constant) and isinstance(n.value, str)
        }
        uses = {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}
        uses |= {a.arg for a in node.args.args + node.args.kwonlyargs}  # fixtures
        for used in sorted(uses & functions.keys() - seen - {name}):
            found |= reach(used, seen | {name})
        reached[name] = found
        return found

    checks = []
    for name, node in functions.items():
        if name.startswith("test"):
            worth, gpu = _marks(node)
            checks.append((reach(name, frozenset()), worth, gpu))
    return checks


def _marks(node: ast.FunctionDef | ast.AsyncFunctionDef) -> tuple[float, bool]:
    """A check's points (`points` marker times literal `parametrize` cases) and GPU mark."""
    points, cases, gpu = 1.0, 1, False
    for decorator in node.decorator_list:
        call = decorator if isinstance(decorator, ast.Call) else None
        target = call.func if call is not None else decorator
        mark = target.attr if isinstance(target, ast.Attribute) else ""
        if mark == "gpu":
            gpu = True
        elif mark == "points" and call is not None and call.args:
            value = call.args[0]
            if isinstance(value, ast.Constant) and isinstance(value.value, int | float):
                points = float(value.value)
        elif mark == "parametrize" and call is not None and len(call.args) >= 2:
            values = call.args[1]
            if isinstance(values, ast.List | ast.Tuple):
                cases *= len(values.elts)
    return points * cases, gpu
