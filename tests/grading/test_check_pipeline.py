"""One way through a learner's check: the exercise by name, the notebook, the verdict kept.

`gpulab check`, a notebook's ``check("name")`` and the app find an exercise with
`Course.exercise` (a wrong name is told what was meant), the notebook with
`find_notebook`, and keep a verdict through `save_report` before showing it. A
progress file that cannot be read is set aside, kept and reported by every
command that reads it.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gpulab.cli import main
from gpulab.course import load_course
from gpulab.course.catalog import UnknownExercise
from gpulab.course.workspace import WorkspaceError
from gpulab.environment import STATE_DIR
from gpulab.grading.learn.check import find_notebook
from gpulab.grading.learn.panel import check


def test_an_exercise_is_found_by_name_or_told_what_was_meant() -> None:
    course = load_course()
    assert course.exercise("vector-add").name == "vector-add"
    names = [e.name for e in course.exercises()]
    for asked, meant in (("Vector-Add", "vector-add"), ("vector-ad", "vector-add")):
        with pytest.raises(UnknownExercise) as told:
            course.exercise(asked)
        said = str(told.value)
        assert f"no exercise named {asked!r} (did you mean {meant}?)" in said
        assert all(name in said for name in names)
    with pytest.raises(UnknownExercise) as told:
        course.exercise("zzzzzz")
    assert "did you mean" not in str(told.value)


def test_the_command_line_and_the_notebook_say_the_same_of_a_wrong_name(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["check", "Vector-Add"]) == 2
    said = capsys.readouterr().err
    assert "did you mean vector-add?" in said and "Traceback" not in said
    with pytest.raises(UnknownExercise, match="did you mean vector-add"):
        check("Vector-Add")


def test_the_notebook_is_the_one_named_then_the_one_beside_then_the_workspaces(
    tmp_path: Path,
) -> None:
    entry = load_course().exercise("env-report")
    named = tmp_path / "mine.ipynb"
    assert find_notebook(entry, named, beside=tmp_path) == (named, None)
    (tmp_path / "env-report.ipynb").write_text("{}")
    assert find_notebook(entry, beside=tmp_path) == (tmp_path / "env-report.ipynb", None)
    with pytest.raises(WorkspaceError, match="gpulab init"):  # no workspace yet
        find_notebook(entry, beside=tmp_path / "elsewhere")


@pytest.mark.parametrize("command", [["list"], ["hint", "env-report"]], ids=["list", "hint"])
def test_a_corrupt_progress_file_is_reported_and_kept(
    command: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    state = Path(STATE_DIR.get() or "")
    state.mkdir(parents=True, exist_ok=True)
    broken = b'{"version": 1, "lessons": [[['
    (state / "progress.json").write_bytes(broken)
    assert main(command) == 0
    said = capsys.readouterr().err
    assert "progress.json was unreadable" in said and "progress starts afresh" in said
    (kept,) = state.glob("progress.json.broken-*")
    assert kept.read_bytes() == broken and kept.name in said
    after = state / "progress.json"
    assert not after.exists() or json.loads(after.read_text())  # a fresh, readable one
