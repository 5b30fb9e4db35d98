"""Snapshots of the map, a lesson and the help screen on the fixture course.

Update them with ``pytest tests/tui/test_tui_snapshots.py --snapshot-update``
and look at the SVGs before committing them. The apps are told there is no GPU
(`has_gpu=False`), so a GPU exercise looks the same on every machine.
"""

from __future__ import annotations

from collections.abc import Callable

from textual.pilot import Pilot
from tui_helpers import SIZE, on_screen

from gpulab.tui import GpulabApp
from gpulab.tui.screens import LessonScreen

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


def test_lesson_snapshot(snap_compare: Compare, new_app: Callable[..., GpulabApp]) -> None:
    async def run_before(pilot: Pilot[None]) -> None:
        app = pilot.app
        assert isinstance(app, GpulabApp)
        app.open_lesson("memory", "memory-hierarchy/levels/hbm-is-far-away")
        await on_screen(pilot, app, LessonScreen)
        await _settle(pilot)

    assert snap_compare(new_app(has_gpu=False), terminal_size=SIZE, run_before=run_before)


def test_help_snapshot(snap_compare: Compare, new_app: Callable[..., GpulabApp]) -> None:
    async def run_before(pilot: Pilot[None]) -> None:
        await pilot.press("question_mark")
        await _settle(pilot)

    assert snap_compare(new_app(has_gpu=False), terminal_size=SIZE, run_before=run_before)
