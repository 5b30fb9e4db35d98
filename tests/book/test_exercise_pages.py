"""Exercise pages show the notebook as the learner gets it, never a learner's answers.

A copy of the course gets a learner's answer typed into one of its
``exercises/`` notebooks, the way a learner solves an exercise in place. With
``solutions/`` beside it (a course checkout) the book is built from what the
solution generates, so the answer stays out and the stub is shown; without
``solutions/`` (an installed course) the shipped notebook is all there is.
"""

from __future__ import annotations

import contextlib
import html
import io
import re
import shutil
from pathlib import Path
from typing import Any

import nbformat
import pytest

from gpulab.cli import main

ROOT = Path(__file__).resolve().parents[2]
NBFORMAT: Any = nbformat  # it has no type hints
EXERCISE = ("memory-hierarchy", "roofline")
STUB = "# TODO: write your answer here"
ANSWER = "bandwidth = value / 1000  # the learner's own answer"
NOTE = "My notes on the roofline, typed into the notebook"


def _course(tmp_path: Path, *, solutions: bool) -> Path:
    root = tmp_path / "course"
    folders = ("lessons", "exercises", "solutions") if solutions else ("lessons", "exercises")
    for folder in folders:
        shutil.copytree(
            ROOT / folder,
            root / folder,
            ignore=shutil.ignore_patterns(".ipynb_checkpoints", "__pycache__"),
        )
    return root


def _solve_in_place(course: Path) -> None:
    """What a learner does: an answer where a stub stood, a note of their own, saved."""
    path = course / "exercises" / EXERCISE[0] / f"{EXERCISE[1]}.ipynb"
    notebook = NBFORMAT.read(path, as_version=4)
    answers = [c for c in notebook.cells if c.cell_type == "code" and STUB in c.source]
    assert answers, f"{path} has no stub to answer"
    answers[0].source = answers[0].source.replace(STUB, ANSWER, 1)
    notebook.cells.append(NBFORMAT.v4.new_markdown_cell(NOTE))
    NBFORMAT.write(notebook, path)


def _page_text(course: Path, out: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("GPULAB_COURSE_DIR", str(course / "lessons"))
    with contextlib.redirect_stdout(io.StringIO()):
        assert main(["book", "--out", str(out)]) == 0
    page = (out / "exercises" / f"{EXERCISE[1]}.html").read_text(encoding="utf-8")
    return html.unescape(re.sub(r"<[^>]+>", "", page))  # its text, highlighting or not


def test_a_learners_answer_never_reaches_the_book(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    course = _course(tmp_path, solutions=True)
    _solve_in_place(course)
    page = _page_text(course, tmp_path / "book", monkeypatch)
    assert ANSWER not in page
    assert NOTE not in page
    assert STUB in page
    assert "raise NotImplementedError" in page


def test_without_solutions_the_shipped_notebook_is_shown(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    course = _course(tmp_path, solutions=False)
    _solve_in_place(course)
    page = _page_text(course, tmp_path / "book", monkeypatch)
    assert NOTE in page, "an installed course's book shows its exercises/ notebook"
    assert STUB in page
