"""Fixtures for the TUI tests: a small fixture course, a private state folder, recorded GPUs."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from gpulab.course import Course, ProgressStore, load_course
from gpulab.course.workspace import Workspace, init_workspace
from gpulab.probes import ProbeResult, nvml, recorded
from gpulab.probes.nvml import Replay
from gpulab.tui import GpulabApp, make_app
from helpers.tui import FIXTURE, NVML_REPLAY, build_exercise_course


@pytest.fixture(autouse=True)
def state_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Every test gets its own state folder, and the fixture course by default."""
    folder = tmp_path / "state"
    monkeypatch.setenv("GPULAB_STATE_DIR", str(folder))
    monkeypatch.setenv("GPULAB_COURSE_DIR", str(FIXTURE))
    return folder


@pytest.fixture
def course() -> Course:
    return load_course(FIXTURE)


@pytest.fixture
def store_path(state_dir: Path) -> Path:
    return state_dir / "progress.json"


@pytest.fixture
def new_app(store_path: Path) -> Callable[..., GpulabApp]:
    """A factory for apps over a fresh copy of the fixture course and one progress file
    (keywords go to `make_app`, e.g. ``has_gpu=False``)."""

    def build(**options: Any) -> GpulabApp:
        return make_app(course=load_course(FIXTURE), store=ProgressStore(store_path), **options)

    return build


@pytest.fixture
def exercise_lessons(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The fixture course with a small CPU exercise, "squares", in a folder of its own
    (its lessons folder; the exercises and solutions folders lie beside it)."""
    lessons = build_exercise_course(tmp_path / "course")
    monkeypatch.setenv("GPULAB_COURSE_DIR", str(lessons))
    return lessons


@pytest.fixture
def workspace(exercise_lessons: Path, tmp_path: Path) -> Workspace:
    """The learner's workspace for the course with "squares", made as `gpulab init` makes
    it (and remembered in the test's state folder); answers are written here, never into
    the course."""
    made, new = init_workspace(load_course(exercise_lessons), tmp_path / "workspace")
    assert new and (made.root / "basics" / "squares.ipynb").is_file()
    return made


@pytest.fixture
def exercise_app(
    exercise_lessons: Path, store_path: Path, workspace: Workspace
) -> Callable[..., GpulabApp]:
    """A factory for apps over the course with "squares" and the learner's workspace
    (keywords go to `make_app`)."""

    def build(**options: Any) -> GpulabApp:
        options.setdefault("has_gpu", False)
        options.setdefault("workspace", workspace)
        return make_app(
            course=load_course(exercise_lessons), store=ProgressStore(store_path), **options
        )

    return build


@pytest.fixture
def recorded_h200() -> Iterator[dict[str, ProbeResult]]:
    """The recorded H200 results the app shows on a machine without a GPU, as shipped."""
    recorded.recorded_results.cache_clear()
    found = recorded.recorded_results()
    assert {"nvml_inventory", "nvml_sample"} <= set(found)
    yield found
    recorded.recorded_results.cache_clear()


@pytest.fixture
def no_recordings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """A copy of gpulab that ships no recorded results."""
    monkeypatch.setattr(recorded, "RECORDED_FILE", str(tmp_path / "absent.json"))
    recorded.recorded_results.cache_clear()
    yield
    recorded.recorded_results.cache_clear()


@pytest.fixture
def no_gpu_here() -> str:
    """Why NVML finds no GPU on this machine; skips the test where there is one."""
    found = nvml.inventory()
    if found.status not in ("no_gpu", "unavailable"):
        pytest.skip("this machine has an NVIDIA GPU: the no-GPU path cannot be seen here")
    return found.message


@pytest.fixture
def h200_replay() -> Replay:
    """An NVML stand-in that answers as gpulab's H200 did."""
    return Replay.load(NVML_REPLAY)
