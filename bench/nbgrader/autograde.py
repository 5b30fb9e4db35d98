"""nbgrader's half of bench/grading.py: its own environment, the course, one timed autograde.

`autograde()` takes the class's answers and returns how long ``nbgrader
autograde`` took for the whole class and what each notebook scored:

1. bench/.venv-nbgrader gets nbgrader from bench/requirements-nbgrader.txt
   (made on first use, and again when the requirements change);
2. a course folder gets nbgrader_config.py, the assignment's source
   (assignment.py), and a kernelspec ``gpulab-bench`` that runs this
   project's Python, so the learner's code and the checks see the same
   interpreter and packages as under gpulab;
3. ``nbgrader generate_assignment`` makes release/ once, and submitted/ is
   the released notebooks with each learner's answers in the solution cells;
4. ``nbgrader autograde --force`` grades the whole class, timed; the scores
   are read from its gradebook through nbgrader's own API.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import nbformat

HERE = Path(__file__).resolve().parent
BENCH = HERE.parent
VENV = BENCH / ".venv-nbgrader"
REQUIREMENTS = BENCH / "requirements-nbgrader.txt"
LIMIT_S = 3600  # the most one nbgrader command may take
KERNEL = "gpulab-bench"  # nbgrader_config.py names it too

SCORES = """
import json, sys
from nbgrader.api import Gradebook

out = {"possible": {}, "scores": []}
with Gradebook("sqlite:///gradebook.db") as gb:
    assignment = gb.find_assignment(sys.argv[1])
    for notebook in assignment.notebooks:
        out["possible"][notebook.name] = notebook.max_score
    for submission in assignment.submissions:
        for notebook in submission.notebooks:
            out["scores"].append([submission.student.id, notebook.notebook.name, notebook.score])
print(json.dumps(out))
"""


class AutogradeError(Exception):
    """nbgrader could not be installed or run: what went wrong, with its last words."""


@dataclass
class Graded:
    seconds: float
    scores: dict[tuple[str, str], float]  # (learner, exercise) -> points
    possible: dict[str, float]  # exercise -> points possible
    notes: list[str] = field(default_factory=list)


def fill(notebook: Any, answers: dict[str, str | None], key: Any) -> Any:
    """`notebook` with each answer cell (the part is `key(cell)`) holding the learner's answer.

    An answer of None deletes the cell; cells whose key is not in `answers` stay.
    """
    kept = []
    for cell in notebook.cells:
        found = key(cell)
        if found in answers:
            answer = answers[found]
            if answer is None:
                continue
            cell.source = answer
        kept.append(cell)
    notebook.cells = kept
    return notebook


def run(command: list[str], what: str, **kwargs: Any) -> subprocess.CompletedProcess[str]:
    """Run a command to its end (at most LIMIT_S), its output captured."""
    try:
        return subprocess.run(command, capture_output=True, text=True, timeout=LIMIT_S, **kwargs)
    except subprocess.TimeoutExpired:
        raise AutogradeError(f"{what} ran longer than {LIMIT_S} s and was stopped") from None
    except OSError as exc:
        raise AutogradeError(f"{what} could not start: {exc}") from None


def tail(text: str, lines: int = 8) -> str:
    """The last lines of a command's output, indented under a message."""
    return "\n    ".join(["", *text.strip().splitlines()[-lines:]])


def nbgrader_bin() -> Path:
    """bench/.venv-nbgrader/bin, made and filled from the requirements unless it is current."""
    wanted = REQUIREMENTS.read_text(encoding="utf-8")
    stamp = VENV / "installed-requirements.txt"
    bin_dir = VENV / "bin"
    if (bin_dir / "nbgrader").is_file() and stamp.is_file() and stamp.read_text() == wanted:
        return bin_dir
    print(f"installing {REQUIREMENTS.name} into {VENV.relative_to(BENCH.parent)} ...", flush=True)
    for command, what in (
        ([sys.executable, "-m", "venv", str(VENV)], "python -m venv"),
        (
            [
                str(bin_dir / "python"),
                "-m",
                "pip",
                "install",
                "-q",
                "--disable-pip-version-check",
                "-r",
                str(REQUIREMENTS),
            ],
            "pip install",
        ),
    ):
        done = run(command, what)
        if done.returncode != 0:
            raise AutogradeError(
                f"{what} for nbgrader failed (exit {done.returncode}):"
                f"{tail(done.stdout + done.stderr)}"
            )
    stamp.write_text(wanted, encoding="utf-8")
    return bin_dir


def _solution_id(cell: Any) -> str | None:
    meta = cell.get("metadata", {}).get("nbgrader", {})
    return str(meta["grade_id"]) if meta.get("solution") else None


def prepare(
    course: Path,
    assignment: str,
    source: Path,
    bin_dir: Path,
    answers: Iterable[tuple[str, str, dict[str, str | None]]],
) -> dict[str, str]:
    """The course folder, up to submitted/; the environment to run nbgrader in."""
    course.mkdir(parents=True)
    shutil.copy(HERE / "nbgrader_config.py", course)
    shutil.copytree(source, course / "source" / assignment)
    kernel = course / "jupyter" / "kernels" / KERNEL
    kernel.mkdir(parents=True)
    (kernel / "kernel.json").write_text(
        json.dumps(
            {
                "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
                "display_name": "gpulab bench (the project's Python)",
                "language": "python",
            }
        )
    )
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith("JUPYTER") and key != "VIRTUAL_ENV"
    }
    env.update(
        PATH=f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}",  # nbgrader runs alembic
        JUPYTER_PATH=str(course / "jupyter"),
        JUPYTER_CONFIG_DIR=str(course / ".jupyter"),
        JUPYTER_DATA_DIR=str(course / ".jupyter-data"),
        JUPYTER_RUNTIME_DIR=str(course / ".jupyter-runtime"),
    )
    done = run(
        [str(bin_dir / "nbgrader"), "generate_assignment", assignment, "--force"],
        "nbgrader generate_assignment",
        cwd=course,
        env=env,
    )
    if done.returncode != 0:
        raise AutogradeError(
            f"nbgrader generate_assignment exited {done.returncode}:"
            f"{tail(done.stdout + done.stderr)}"
        )
    release = course / "release" / assignment
    for learner, exercise, parts in answers:
        notebook = fill(
            nbformat.read(release / f"{exercise}.ipynb", as_version=4), parts, _solution_id
        )
        path = course / "submitted" / learner / assignment / f"{exercise}.ipynb"
        path.parent.mkdir(parents=True, exist_ok=True)
        nbformat.write(notebook, path)
    return env


def autograde(
    course: Path,
    assignment: str,
    source: Path,
    answers: Iterable[tuple[str, str, dict[str, str | None]]],
    timeout: float,
) -> Graded:
    """Grade the class with ``nbgrader autograde``: the time it took and the scores."""
    bin_dir = nbgrader_bin()
    env = prepare(course, assignment, source, bin_dir, answers)
    print("grading with nbgrader ...", flush=True)
    start = time.perf_counter()
    done = run(
        [
            str(bin_dir / "nbgrader"),
            "autograde",
            assignment,
            "--force",
            f"--Execute.timeout={timeout:g}",
        ],
        "nbgrader autograde",
        cwd=course,
        env=env,
    )
    seconds = time.perf_counter() - start
    said = done.stdout + done.stderr
    (course / "autograde.log").write_text(said, encoding="utf-8")
    notes = []
    if done.returncode != 0:
        errors = [line for line in said.splitlines() if "ERROR" in line]
        notes.append(
            f"nbgrader autograde exited {done.returncode} with {len(errors)} ERROR "
            f"lines in {course / 'autograde.log'}" + (f", the first: {errors[0]}" if errors else "")
        )
    done = run(
        [str(bin_dir / "python"), "-c", SCORES, assignment],
        "reading nbgrader's gradebook",
        cwd=course,
        env=env,
    )
    try:
        data = json.loads(done.stdout)
    except ValueError:
        raise AutogradeError(
            f"nbgrader's gradebook could not be read:{tail(done.stdout + done.stderr)}"
        ) from None
    return Graded(
        seconds,
        {
            (learner, notebook): float(score)
            for learner, notebook, score in data["scores"]
            if score is not None
        },
        {name: float(value) for name, value in data["possible"].items()},
        notes,
    )
