"""Snapshots of every screen on the fixture course: the map, a lesson (and a question with
its answer folded, and a node with a figure), an exercise, the GPU (a replayed H200, and a
machine without a GPU), search, a prediction, help, the figures, and the course that cannot
be read.

Update them with ``pytest tests/tui/test_tui_snapshots.py --snapshot-update``
and look at the SVGs before committing them. The apps are told whether there is
a GPU (`has_gpu`), and the GPU screens get a recorded NVML, so a snapshot looks
the same on every machine; nothing shows a time or a path of this machine. Figures
are drawn from gpulab's recording and nothing else (no probe runs).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pytest
from textual.pilot import Pilot

from gpulab.course import CourseError, ProgressStore, load_course
from gpulab.probes import ProbeResult
from gpulab.probes.nvml import Replay
from gpulab.tui import GpulabApp, make_app
from gpulab.tui.screens import (
    ExerciseScreen,
    FatalScreen,
    FiguresScreen,
    GpuScreen,
    LessonScreen,
    PredictionScreen,
    SearchScreen,
    gpu,
)
from gpulab.tui.widgets import ClaimCard, FigureView, NodePane, TaskPanel
from helpers.tui import (
    FOOTPRINT,
    NVML_REPLAY,
    SIZE,
    build_figure_course,
    on_screen,
    screen_text,
    wait_for,
)

Compare = Callable[..., bool]
GPU_SIZE = (100, 40)
NO_LIBRARY = NVML_REPLAY.with_name("no-library.json")
"""NVML as recorded on a machine without a GPU (its library is missing): the same on every
machine, the GPU host included."""
HOST = "writing-kernels/where-it-runs/the-host-launches-the-kernels"


async def _settle(pilot: Pilot[None]) -> None:
    await pilot.app.workers.wait_for_complete()
    await pilot.pause()
    await pilot.wait_for_scheduled_animations()


def test_map_snapshot(snap_compare: Compare, new_app: Callable[..., GpulabApp]) -> None:
    async def run_before(pilot: Pilot[None]) -> None:
        await pilot.press("down")
        await _settle(pilot)

    assert snap_compare(new_app(has_gpu=False), terminal_size=SIZE, run_before=run_before)


def test_lesson_snapshot(snap_compare: Compare, new_app: Callable[..., GpulabApp]) -> None:
    async def run_before(pilot: Pilot[None]) -> None:
        app = pilot.app
        assert isinstance(app, GpulabApp)
        app.navigator.open_lesson("memory", "memory-hierarchy/levels/hbm-is-far-away")
        await on_screen(pilot, app, LessonScreen)
        # the card asks the machine whether the probe can run: NVML's library is missing
        await wait_for(
            pilot, lambda: app.screen.query_one(ClaimCard).state.missing != "", timeout=30
        )
        await _settle(pilot)

    app = new_app(has_gpu=False, nvml_backend=Replay.load(NO_LIBRARY))
    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


def test_help_snapshot(snap_compare: Compare, new_app: Callable[..., GpulabApp]) -> None:
    async def run_before(pilot: Pilot[None]) -> None:
        await pilot.press("question_mark")
        await _settle(pilot)

    assert snap_compare(new_app(has_gpu=False), terminal_size=SIZE, run_before=run_before)


def test_check_yourself_snapshot(snap_compare: Compare, new_app: Callable[..., GpulabApp]) -> None:
    """A question with its answer folded, and no claim card to give it away."""

    async def run_before(pilot: Pilot[None]) -> None:
        app = pilot.app
        assert isinstance(app, GpulabApp)
        app.navigator.open_lesson(
            "kernels", "writing-kernels/check-yourself/how-many-cpus-can-launch-kernels-here"
        )
        await on_screen(pilot, app, LessonScreen)
        await _settle(pilot)

    assert snap_compare(new_app(has_gpu=False), terminal_size=SIZE, run_before=run_before)


def test_exercise_snapshot(snap_compare: Compare, exercise_lessons: Path, store_path: Path) -> None:
    """The task with its points, both hints drawn in full; no workspace (its path would
    differ from run to run), so the screen says how to make one."""
    app = make_app(
        course=load_course(exercise_lessons), store=ProgressStore(store_path), has_gpu=False
    )

    async def run_before(pilot: Pilot[None]) -> None:
        lab = pilot.app
        assert isinstance(lab, GpulabApp)
        lab.navigator.open_exercise("squares")
        await on_screen(pilot, lab, ExerciseScreen)
        await wait_for(pilot, lambda: "square(x)" in lab.screen.query_one(TaskPanel).source)
        await pilot.press("h", "h")
        await _settle(pilot)

    assert snap_compare(app, terminal_size=(100, 50), run_before=run_before)


def test_gpu_snapshot_replayed_h200(
    snap_compare: Compare,
    new_app: Callable[..., GpulabApp],
    h200_replay: Replay,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The inventory and the first live sample of gpulab's H200, replayed (one sample only:
    the next would come an hour later)."""
    monkeypatch.setattr(gpu, "SAMPLE_INTERVAL", 3600.0)

    async def run_before(pilot: Pilot[None]) -> None:
        app = pilot.app
        await pilot.press("g")
        await on_screen(pilot, app, GpuScreen)
        screen = app.screen
        assert isinstance(screen, GpuScreen)
        await wait_for(pilot, lambda: screen.samples == 1)
        await pilot.pause()
        await pilot.wait_for_scheduled_animations()

    app = new_app(has_gpu=True, nvml_backend=h200_replay)
    assert snap_compare(app, terminal_size=GPU_SIZE, run_before=run_before)


def test_gpu_snapshot_without_a_gpu(
    snap_compare: Compare, new_app: Callable[..., GpulabApp], recorded_h200: dict[str, ProbeResult]
) -> None:
    """Why there is no GPU (NVML's library is missing, as recorded on a machine without
    one), and the readings recorded on gpulab's H200 instead."""
    no_library = Replay.load(NO_LIBRARY)

    async def run_before(pilot: Pilot[None]) -> None:
        app = pilot.app
        await pilot.press("g")
        await on_screen(pilot, app, GpuScreen)
        screen = app.screen
        assert isinstance(screen, GpuScreen)
        await wait_for(pilot, screen.sampler_done.is_set)
        await _settle(pilot)

    app = new_app(has_gpu=False, nvml_backend=no_library)
    assert snap_compare(app, terminal_size=GPU_SIZE, run_before=run_before)


def test_search_snapshot(snap_compare: Compare, new_app: Callable[..., GpulabApp]) -> None:
    """Hits in this lesson first, then in the others; the second one highlighted."""

    async def run_before(pilot: Pilot[None]) -> None:
        app = pilot.app
        assert isinstance(app, GpulabApp)
        app.navigator.open_lesson("kernels")
        await on_screen(pilot, app, LessonScreen)
        await pilot.press("slash")
        await on_screen(pilot, app, SearchScreen)
        await pilot.press(*"block", "down")
        await _settle(pilot)

    assert snap_compare(new_app(has_gpu=False), terminal_size=SIZE, run_before=run_before)


def test_prediction_snapshot(snap_compare: Compare, new_app: Callable[..., GpulabApp]) -> None:
    """m on a claim this machine can measure: the question, and a prediction being typed."""

    async def run_before(pilot: Pilot[None]) -> None:
        app = pilot.app
        assert isinstance(app, GpulabApp)
        app.navigator.open_lesson("kernels", HOST)
        await on_screen(pilot, app, LessonScreen)
        await wait_for(pilot, lambda: app.screen.query(ClaimCard))
        await pilot.press("m")
        await on_screen(pilot, app, PredictionScreen)
        await pilot.press("4")
        await _settle(pilot)

    assert snap_compare(new_app(has_gpu=False), terminal_size=SIZE, run_before=run_before)


def test_fatal_snapshot(
    snap_compare: Compare, tmp_path: Path, store_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A manifest that is not TOML: where, what, and what to do. The problem's file is
    shown under a made-up folder, not this machine's temporary one."""
    broken = tmp_path / "lessons"
    broken.mkdir()
    (broken / "course.toml").write_text("[course\ntitle = 'x'\n")
    monkeypatch.setenv("GPULAB_COURSE_DIR", str(broken))
    app = make_app(store=ProgressStore(store_path))
    assert app.course is None and app.error is not None
    shown = Path("/srv/gpulab/lessons")
    app.error = CourseError(
        replace(p, path=shown / p.path.relative_to(broken.resolve())) for p in app.error.problems
    )

    async def run_before(pilot: Pilot[None]) -> None:
        await on_screen(pilot, pilot.app, FatalScreen)
        await _settle(pilot)

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


@pytest.fixture
def figure_course(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, recorded_h200: dict[str, ProbeResult]
) -> Path:
    """The fixture course with figures on its memory lesson, drawn from the recording."""
    lessons = build_figure_course(tmp_path / "course")
    monkeypatch.setenv("GPULAB_COURSE_DIR", str(lessons))
    return lessons


def test_node_figure_snapshot(snap_compare: Compare, figure_course: Path, store_path: Path) -> None:
    """A node with a figure: its notes, then the plot with its key, caption and source."""
    app = make_app(
        course=load_course(figure_course), store=ProgressStore(store_path), has_gpu=False
    )

    async def run_before(pilot: Pilot[None]) -> None:
        lab = pilot.app
        assert isinstance(lab, GpulabApp)
        lab.navigator.open_lesson("memory", FOOTPRINT)
        await on_screen(pilot, lab, LessonScreen)
        await wait_for(pilot, lambda: lab.screen.query(FigureView))
        await wait_for(pilot, lambda: "64 MiB" in screen_text(lab))
        lab.screen.query_one(NodePane).scroll_home(animate=False)
        await _settle(pilot)

    assert snap_compare(app, terminal_size=(120, 45), run_before=run_before)


def test_figures_snapshot(snap_compare: Compare, figure_course: Path, store_path: Path) -> None:
    """The figures by lesson, the roofline highlighted and drawn beside the list."""
    app = make_app(
        course=load_course(figure_course), store=ProgressStore(store_path), has_gpu=False
    )

    async def run_before(pilot: Pilot[None]) -> None:
        lab = pilot.app
        assert isinstance(lab, GpulabApp)
        lab.navigator.open_figures("roofline")
        await on_screen(pilot, lab, FiguresScreen)
        await wait_for(pilot, lambda: "10000" in screen_text(lab))
        await _settle(pilot)

    assert snap_compare(app, terminal_size=(120, 40), run_before=run_before)
