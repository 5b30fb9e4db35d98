"""The learner's workspace: made once, remembered, brought up to date, never overwritten.

Each test works on a copy of the real course (its lessons and exercises) in a
folder of its own, so a "course upgrade" can be played by editing the copy.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from gpulab.course import load_course
from gpulab.course.catalog import Course
from gpulab.course.workspace import (
    RECORD,
    WorkspaceError,
    current_workspace,
    init_workspace,
    open_workspace,
    require_workspace,
)

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def course_copy(tmp_path: Path) -> Path:
    """A copy of the course's lessons and exercises; returns its root."""
    root = tmp_path / "course"
    shutil.copytree(ROOT / "lessons", root / "lessons")
    shutil.copytree(
        ROOT / "exercises",
        root / "exercises",
        ignore=shutil.ignore_patterns("__pycache__", ".ipynb_checkpoints"),
    )
    return root


def load(root: Path) -> Course:
    return load_course(root / "lessons")


def tree(folder: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()
    }


def test_init_copies_every_notebook_and_its_visible_checks(
    course_copy: Path, tmp_path: Path
) -> None:
    course = load(course_copy)
    before = tree(course_copy / "exercises")
    workspace, made = init_workspace(course, tmp_path / "mine")
    assert made and workspace.root == (tmp_path / "mine").resolve()
    for entry in course.exercises():
        mine = workspace.notebook(entry)
        assert mine == workspace.root / entry.lesson / f"{entry.name}.ipynb"
        assert mine.read_bytes() == entry.notebook.read_bytes()
        checks = f"test_{entry.name.replace('-', '_')}.py"
        assert (mine.parent / checks).read_bytes() == (entry.notebook.parent / checks).read_bytes()
    assert (workspace.root / "README.md").is_file()
    assert tree(course_copy / "exercises") == before  # the course is never written
    assert current_workspace() == workspace  # remembered
    assert require_workspace().root == workspace.root


def test_init_refuses_a_folder_that_is_not_empty_and_reuses_a_workspace(
    course_copy: Path, tmp_path: Path
) -> None:
    course = load(course_copy)
    busy = tmp_path / "busy"
    busy.mkdir()
    (busy / "thesis.tex").write_text("mine")
    with pytest.raises(WorkspaceError, match="already exists and is not empty"):
        init_workspace(course, busy)
    assert [p.name for p in busy.iterdir()] == ["thesis.tex"]
    afile = tmp_path / "afile"
    afile.write_text("x")
    with pytest.raises(WorkspaceError, match="is a file"):
        init_workspace(course, afile)

    workspace, _ = init_workspace(course, tmp_path / "ws")
    entry = course.exercises()[0]
    workspace.notebook(entry).write_text("my answers")
    again, made = init_workspace(course, tmp_path / "ws")  # taken into use again
    assert not made and again.root == workspace.root
    assert workspace.notebook(entry).read_text() == "my answers"


def test_the_workspace_in_use_env_first_and_a_vanished_one_is_said(
    course_copy: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    course = load(course_copy)
    assert current_workspace() is None
    with pytest.raises(WorkspaceError, match="you have no workspace yet: `gpulab init`"):
        require_workspace()
    first, _ = init_workspace(course, tmp_path / "one")
    second, _ = init_workspace(course, tmp_path / "two")
    assert current_workspace() == second
    monkeypatch.setenv("GPULAB_WORKSPACE", str(first.root))
    assert current_workspace() == first
    monkeypatch.delenv("GPULAB_WORKSPACE")
    shutil.rmtree(second.root)
    with pytest.raises(WorkspaceError, match="is not a gpulab workspace"):
        current_workspace()
    (first.root / RECORD).write_text("{not json")
    with pytest.raises(WorkspaceError, match="cannot be read"):
        open_workspace(first.root)


def test_an_upgrade_adds_updates_and_reports_but_never_overwrites(
    course_copy: Path, tmp_path: Path
) -> None:
    course = load(course_copy)
    workspace, _ = init_workspace(course, tmp_path / "ws")
    by_name = {e.name: e for e in course.exercises()}
    touched, untouched = by_name["namespaces"], by_name["roofline"]
    workspace.notebook(touched).write_text("my answers")
    assert not workspace.sync(course).anything

    # the course changes both notebooks, and gains an exercise
    for entry in (touched, untouched):
        data = json.loads(entry.notebook.read_text())
        data["cells"][0]["source"] = "# a newer version of the exercise\n"
        entry.notebook.write_text(json.dumps(data))
    manifest = course_copy / "lessons" / "course.toml"
    manifest.write_text(
        manifest.read_text() + '\n[[exercises]]\nname = "extra"\nlesson = '
        '"containers"\ngpu = false\ntime_limit = 30\nhints = ["h"]\n'
    )
    shutil.copy(touched.notebook, touched.notebook.with_name("extra.ipynb"))
    (touched.notebook.parent / "test_extra.py").write_text("def test_x():\n    pass\n")
    upgraded = load(course_copy)

    report = workspace.sync(upgraded)
    assert report.added == ("extra",)
    assert report.updated == ("roofline",)
    assert report.changed == ("namespaces",)
    assert workspace.notebook(touched).read_text() == "my answers"  # never overwritten
    assert workspace.notebook(untouched).read_bytes() == untouched.notebook.read_bytes()
    assert (workspace.root / "containers" / "extra.ipynb").is_file()
    lines = "\n".join(report.lines())
    assert "added to your workspace: extra" in lines
    assert "changed in the course since you started them: namespaces" in lines
    assert "gpulab reset NAME" in lines
    # said again on the next sync, until the learner resets it
    assert workspace.sync(upgraded).changed == ("namespaces",)
    backup = workspace.reset(upgraded, touched)
    assert backup is not None and backup.read_text() == "my answers"
    assert backup.name.startswith("namespaces.backup-") and backup.suffix == ".ipynb"
    assert workspace.notebook(touched).read_bytes() == touched.notebook.read_bytes()
    assert not workspace.sync(upgraded).anything
    # the record survives a reload
    assert open_workspace(workspace.root).files == workspace.files


def test_a_workspace_that_cannot_be_written_is_said(course_copy: Path, tmp_path: Path) -> None:
    course = load(course_copy)
    with pytest.raises(WorkspaceError, match="cannot make the workspace"):
        init_workspace(course, Path("/proc/gpulab-workspace"))
