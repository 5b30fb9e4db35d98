"""nbgrader's copy of four CPU exercises, built from gpulab's solutions and ported checks.

bench/grading.py grades one synthetic class with `gpulab grade` and with
`nbgrader autograde`. This module keeps nbgrader's side the same assignment:

- ``source/cpu-exercises/<name>.ipynb`` is the solution notebook in nbgrader's
  format. Setup cells become locked read-only cells; answer cells become
  solution cells whose grade_id is the part (nbgrader reads the same
  ``### BEGIN SOLUTION`` markers); explore cells stay plain code cells. The
  check cell gives way to a locked cell of the checker's helpers and one
  autograder test cell per gpulab check, with the check's name as grade_id
  and the check's points; a hidden check sits between ``### BEGIN HIDDEN
  TESTS`` and ``### END HIDDEN TESTS``.
- ``checks/<name>.py`` holds those cells, ported from the visible and hidden
  check files: ``# %% checker`` starts the helpers, ``# %% test NAME points=N
  needs=PART,...`` (or ``hidden``) starts a test cell; ``needs`` names the
  answer parts the check calls (``all``: every part).

`problems()` says where the committed notebooks or the ports have drifted
from gpulab's exercises (check names, points, the generated notebooks).
After changing a solution or a port, write the notebooks again:

    python bench/nbgrader/assignment.py
"""

from __future__ import annotations

import ast
import copy
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import nbformat

from gpulab.course import load_course
from gpulab.course.manifest import ExerciseEntry
from gpulab.grading.build import solution_path
from gpulab.grading.checks.cells import part, role
from gpulab.grading.checks.notebook import notebook_text, read_notebook
from gpulab.grading.checks.runner import check_files

ASSIGNMENT = "cpu-exercises"
EXERCISES = ("roofline", "env-report", "namespaces", "cgroup-limits")
HERE = Path(__file__).resolve().parent
SOURCE = HERE / "source" / ASSIGNMENT
CHECKS = HERE / "checks"

_HEADER = re.compile(
    r"^# %% (?:(?P<checker>checker)|(?P<kind>test|hidden) (?P<name>\w+)"
    r" points=(?P<points>\d+(?:\.\d+)?) needs=(?P<needs>[\w,]+))"
    r"(?:\s+# noqa: \w+)?$"
)


class PortError(Exception):
    """A ported checks file that cannot be read: where, and what is wrong."""


@dataclass(frozen=True)
class TestCell:
    """One autograder test cell: a ported gpulab check."""

    name: str
    points: float
    hidden: bool
    needs: tuple[str, ...] | None  # the parts it calls; None: every part
    source: str


@dataclass(frozen=True)
class Port:
    """The checks of one exercise as nbgrader cells."""

    checker: str
    tests: tuple[TestCell, ...]


def entries() -> list[ExerciseEntry]:
    """The four exercises' manifest entries, in EXERCISES order."""
    found = {entry.name: entry for entry in load_course().exercises()}
    missing = [name for name in EXERCISES if name not in found]
    if missing:
        raise PortError(f"lessons/course.toml lists no exercise {', '.join(missing)}")
    return [found[name] for name in EXERCISES]


def read_port(name: str) -> Port:
    """The ported checks of exercise `name`, from checks/<name>.py."""
    path = CHECKS / f"{name}.py"
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise PortError(f"{path}: cannot read it: {exc.strerror}") from None
    checker: list[str] | None = None
    tests: list[tuple[int, re.Match[str], list[str]]] = []
    body: list[str] | None = None
    for number, line in enumerate(lines, start=1):
        if line.startswith("# %%"):
            match = _HEADER.match(line)
            if match is None:
                raise PortError(
                    f"{path}:{number}: not a cell header: {line!r} (want '# %% "
                    "checker' or '# %% test|hidden NAME points=N needs=PARTS')"
                )
            body = []
            if match["checker"]:
                if checker is not None:
                    raise PortError(f"{path}:{number}: a second checker cell")
                checker = body
            else:
                tests.append((number, match, body))
        elif body is not None:
            body.append(line)
    if checker is None or not tests:
        raise PortError(f"{path}: needs a '# %% checker' cell and at least one test cell")
    cells = []
    for number, match, lines_of in tests:
        source = "\n".join(lines_of).strip("\n")
        if not source:
            raise PortError(f"{path}:{number}: the test cell {match['name']} is empty")
        needs = None if match["needs"] == "all" else tuple(match["needs"].split(","))
        cells.append(
            TestCell(
                match["name"], float(match["points"]), match["kind"] == "hidden", needs, source
            )
        )
    names = [cell.name for cell in cells]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise PortError(f"{path}: test cells named twice: {', '.join(twice)}")
    return Port("\n".join(checker).strip("\n"), tuple(cells))


def gpulab_points(entry: ExerciseEntry) -> dict[str, float]:
    """Each check of the exercise (visible and hidden) and its points, from the check files."""
    points: dict[str, float] = {}
    for path in check_files(entry, hidden=True):
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        for node in tree.body:
            if isinstance(node, ast.FunctionDef) and node.name.startswith("test_"):
                points[node.name] = 1.0
                for decorator in node.decorator_list:
                    if (
                        isinstance(decorator, ast.Call)
                        and ast.unparse(decorator.func) == "pytest.mark.points"
                        and decorator.args
                        and isinstance(decorator.args[0], ast.Constant)
                    ):
                        points[node.name] = float(decorator.args[0].value)
    return points


def _meta(
    grade_id: str,
    *,
    grade: bool = False,
    solution: bool = False,
    locked: bool = False,
    points: float | None = None,
) -> dict[str, Any]:
    meta: dict[str, Any] = {
        "grade": grade,
        "grade_id": grade_id,
        "locked": locked,
        "schema_version": 3,
        "solution": solution,
        "task": False,
    }
    if points is not None:
        meta["points"] = points
    return {"nbgrader": meta}


def build_source(entry: ExerciseEntry, port: Port) -> Any:
    """The nbgrader source notebook of `entry`: its solution, with the port's test cells."""
    solution = read_notebook(solution_path(entry))
    notebook = nbformat.v4.new_notebook(metadata=copy.deepcopy(solution.metadata))
    setups = 0
    for cell in solution.cells:
        if cell.cell_type != "code":
            notebook.cells.append(nbformat.v4.new_markdown_cell(cell.source))
            continue
        kind = role(cell)
        if kind == "setup":
            setups += 1
            notebook.cells.append(
                nbformat.v4.new_code_cell(
                    cell.source, metadata=_meta(f"setup-{setups}", locked=True)
                )
            )
        elif kind == "answer":
            notebook.cells.append(
                nbformat.v4.new_code_cell(
                    cell.source, metadata=_meta(str(part(cell)), solution=True)
                )
            )
        elif kind == "explore":
            notebook.cells.append(nbformat.v4.new_code_cell(cell.source))
        # the check cell runs gpulab's checks: nbgrader's test cells stand in its place
    notebook.cells.append(
        nbformat.v4.new_markdown_cell(
            "## Checks\n\nThe autograder's test cells: each is worth its points when it runs "
            "without an error."
        )
    )
    notebook.cells.append(
        nbformat.v4.new_code_cell(port.checker, metadata=_meta("checker", locked=True))
    )
    for test in port.tests:
        source = test.source
        if test.hidden:
            source = f"### BEGIN HIDDEN TESTS\n{source}\n### END HIDDEN TESTS"
        notebook.cells.append(
            nbformat.v4.new_code_cell(
                source, metadata=_meta(test.name, grade=True, locked=True, points=test.points)
            )
        )
    for index, cell in enumerate(notebook.cells):
        cell["id"] = f"{entry.name}-{index:02d}"  # stable ids: the file is committed
    return notebook


def source_path(name: str) -> Path:
    return SOURCE / f"{name}.ipynb"


def problems() -> list[str]:
    """What keeps the committed nbgrader assignment from being gpulab's exercises; [] if none."""
    found: list[str] = []
    for entry in entries():
        port = read_port(entry.name)
        want = gpulab_points(entry)
        have = {test.name: test.points for test in port.tests}
        for name in sorted(set(want) - set(have)):
            found.append(f"checks/{entry.name}.py has no test cell for gpulab's check {name}")
        for name in sorted(set(have) - set(want)):
            found.append(f"checks/{entry.name}.py: {name} is no check of gpulab's")
        for name in sorted(set(want) & set(have)):
            if want[name] != have[name]:
                found.append(
                    f"checks/{entry.name}.py: {name} is worth {have[name]:g} points, "
                    f"gpulab's check {want[name]:g}"
                )
        path = source_path(entry.name)
        text = notebook_text(build_source(entry, port))
        if not path.is_file() or path.read_text(encoding="utf-8") != text:
            found.append(
                f"{path.relative_to(HERE.parent.parent)} differs from what the "
                "solution and the port give: run python bench/nbgrader/assignment.py"
            )
    return found


def main() -> int:
    try:
        for entry in entries():
            path = source_path(entry.name)
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(
                notebook_text(build_source(entry, read_port(entry.name))), encoding="utf-8"
            )
            print(f"wrote {path.relative_to(HERE.parent.parent)}")
        left = problems()
    except PortError as exc:
        print(f"bench/nbgrader/assignment.py: {exc}", file=sys.stderr)
        return 1
    for problem in left:
        print(f"bench/nbgrader/assignment.py: {problem}", file=sys.stderr)
    return 1 if left else 0


if __name__ == "__main__":
    sys.exit(main())
