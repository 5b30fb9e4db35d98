"""Snapshots of the map, a lesson, an exercise and the help screen on the fixture course.

Update them with ``pytest tests/tui/test_tui_snapshots.py --snapshot-update``
and look at the SVGs before committing them. The apps are told there is no GPU
(`has_gpu=False`), so a GPU exercise looks the same on every machine.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from textual.pilot import Pilot
from tui_helpers import SIZE, on_screen, wait_for

from gpulab.course import ProgressStore, load_course
from gpulab.tui import GpulabApp, make_app
from gpulab.tui.screens import ExerciseScreen, LessonScreen
from gpulab.tui.widgets import ClaimCard, TaskPanel

Compare = Callable[..., bool]


async def _settle(pilot: Pilot[None]) -> None:
    await pilot.app.workers.wait_for_complete()
    await pilot.pause()
    await pilot.wait_for_scheduled_animations()


def test_map_snapshot(snap_compare: Compare, new_app: Callable[..., GpulabApp]) -> None:
    async def run_before(pilot: Pilot[None]) -> None:
        await pilot.press("down")
        await _settle(pilot)

    assert snap_compare(new_app(has_gpu=False), terminal_size=SIZE, run_before=run_before)


def test_lesson_snapshot(snap_compare: Compare, new_app: Callable[..., GpulabApp],
                         no_gpu_here: str) -> None:
    async def run_before(pilot: Pilot[None]) -> None:
        app = pilot.app
        assert isinstance(app, GpulabApp)
        app.open_lesson("memory", "memory-hierarchy/levels/hbm-is-far-away")
        await on_screen(pilot, app, LessonScreen)
        # the card asks this machine whether the probe can run (none can: no GPU in CI)
        await wait_for(pilot, lambda: app.screen.query_one(ClaimCard).state.missing != "",
                       timeout=30)
        await _settle(pilot)

    assert snap_compare(new_app(has_gpu=False), terminal_size=SIZE, run_before=run_before)


def test_help_snapshot(snap_compare: Compare, new_app: Callable[..., GpulabApp]) -> None:
    async def run_before(pilot: Pilot[None]) -> None:
        await pilot.press("question_mark")
        await _settle(pilot)

    assert snap_compare(new_app(has_gpu=False), terminal_size=SIZE, run_before=run_before)


def test_check_yourself_snapshot(snap_compare: Compare, new_app: Callable[..., GpulabApp]
                                 ) -> None:
    """A question with its answer folded, and no claim card to give it away."""

    async def run_before(pilot: Pilot[None]) -> None:
        app = pilot.app
        assert isinstance(app, GpulabApp)
        app.open_lesson("kernels",
                        "writing-kernels/check-yourself/how-many-cpus-can-launch-kernels-here")
        await on_screen(pilot, app, LessonScreen)
        await _settle(pilot)

    assert snap_compare(new_app(has_gpu=False), terminal_size=SIZE, run_before=run_before)


def test_exercise_snapshot(snap_compare: Compare, exercise_lessons: Path, store_path: Path
                           ) -> None:
    """The task with its points, both hints drawn in full; no workspace (its path would
    differ from run to run), so the screen says how to make one."""
    app = make_app(course=load_course(exercise_lessons), store=ProgressStore(store_path),
                   has_gpu=False)

    async def run_before(pilot: Pilot[None]) -> None:
        lab = pilot.app
        assert isinstance(lab, GpulabApp)
        lab.open_exercise("squares")
        await on_screen(pilot, lab, ExerciseScreen)
        await wait_for(pilot, lambda: "square(x)" in lab.screen.query_one(TaskPanel).source)
        await pilot.press("h", "h")
        await _settle(pilot)

    assert snap_compare(app, terminal_size=(100, 50), run_before=run_before)
