"""Course paths are derived in one place (`gpulab.course.paths.CoursePaths`)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from gpulab.course import CourseError, load_course, paths
from gpulab.course.paths import CoursePaths
from gpulab.course.specs_view import specs_view
from gpulab.grading.build import solution_path
from gpulab.grading.checks.runner import check_files


def test_the_layout() -> None:
    paths = CoursePaths(Path("/c"))
    assert paths.manifest == Path("/c/lessons/course.toml")
    assert paths.notebook("numa", "gpu-topology") == Path("/c/exercises/numa/gpu-topology.ipynb")
    assert paths.visible_checks("numa", "gpu-topology") == Path(
        "/c/exercises/numa/test_gpu_topology.py"
    )
    assert paths.solution("numa", "gpu-topology") == Path("/c/solutions/numa/gpu-topology.ipynb")
    assert paths.hidden_checks("numa", "gpu-topology") == Path(
        "/c/solutions/numa/test_gpu_topology_hidden.py"
    )
    for found in (
        CoursePaths.of_manifest(paths.manifest),
        CoursePaths.of_lesson(paths.lessons / "numa.md"),
        CoursePaths.of_notebook(paths.notebook("numa", "x")),
        CoursePaths.of_hidden_checks(paths.hidden_checks("numa", "x")),
    ):
        assert found == paths


def test_every_exercise_of_the_course_is_where_its_paths_say() -> None:
    course = load_course()
    paths = CoursePaths.of_manifest(course.manifest.path)
    exercises = course.exercises()
    assert exercises
    for entry in exercises:
        assert entry.notebook == paths.notebook(entry.lesson, entry.name)
        assert check_files(entry, hidden=True) == [
            paths.visible_checks(entry.lesson, entry.name),
            paths.hidden_checks(entry.lesson, entry.name),
        ]
        assert solution_path(entry) == paths.solution(entry.lesson, entry.name)
        for path in (entry.notebook, *check_files(entry, hidden=True), solution_path(entry)):
            assert path.is_file(), path


def test_an_unknown_name_names_its_file_in_a_checkout_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`gpulab show nosuch`: an author in a checkout is sent to the manifest; a learner
    with an installed course is not sent into site-packages."""
    course = load_course()
    with pytest.raises(CourseError) as checkout:
        course.lesson("nosuch")
    assert "course.toml: no lesson 'nosuch'" in str(checkout.value)  # relative to the cwd
    shipped = tmp_path / "site-packages" / "gpulab" / "_course"
    shutil.copytree(CoursePaths.of_manifest(course.manifest.path).lessons, shipped / "lessons")
    monkeypatch.setattr(paths, "INSTALLED", shipped)
    with pytest.raises(CourseError) as wheel:
        load_course(shipped / "lessons").lesson("nosuch")
    assert str(wheel.value).startswith("no lesson 'nosuch'\n    hint: known lessons: ")
    assert str(tmp_path) not in str(wheel.value)
    with pytest.raises(CourseError) as specs:
        specs_view(load_course(shipped / "lessons").specs, ["nosuch"])
    assert str(specs.value).startswith("no GPU or topic named 'nosuch'\n    hint: known: ")
