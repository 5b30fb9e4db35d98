"""Fixtures for the TUI tests: a small fixture course and a private state folder."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from tui_helpers import FIXTURE

from gpulab.course import Course, ProgressStore, load_course
from gpulab.tui import GpulabApp, make_app


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
def new_app(store_path: Path) -> Callable[[], GpulabApp]:
    """A factory for apps over a fresh copy of the fixture course and one progress file."""

    def build() -> GpulabApp:
        return make_app(course=load_course(FIXTURE), store=ProgressStore(store_path))

    return build
