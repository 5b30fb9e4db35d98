"""`gpulab dev check` finds files in exercises/ or solutions/ that belong to no exercise."""

from __future__ import annotations

import shutil
from pathlib import Path

from gpulab.course import load_course
from gpulab.grading.build import stray_files

ROOT = Path(__file__).resolve().parents[2]


def test_the_course_has_no_stray_file() -> None:
    assert stray_files(load_course()) == []


def test_a_leftover_of_a_renamed_exercise_is_found(tmp_path: Path) -> None:
    for part in ("lessons", "exercises", "solutions"):
        shutil.copytree(
            ROOT / part,
            tmp_path / part,
            ignore=shutil.ignore_patterns("__pycache__", ".ipynb_checkpoints"),
        )
    (tmp_path / "exercises" / "numa" / "old-name.ipynb").write_text("{}")
    (tmp_path / "solutions" / "numa" / "__pycache__").mkdir()
    (tmp_path / "solutions" / "numa" / "__pycache__" / "x.pyc").write_bytes(b"")
    problems = stray_files(load_course(tmp_path / "lessons"))
    assert [p.message for p in problems] == [
        "exercises/numa/old-name.ipynb belongs to no exercise in course.toml"
    ]
