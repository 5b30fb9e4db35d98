"""The app holds up at 80×24 and at 200×60, and without a readable course."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from gpulab.tui import GpulabApp, make_app
from gpulab.tui.screens import CourseMapScreen, FatalScreen, LessonScreen
from gpulab.tui.widgets import ItemSummary, MindmapTree, NodePane
from helpers.tui import on_screen


@pytest.mark.parametrize("size", [(80, 24), (200, 60)])
async def test_sizes(new_app: Callable[[], GpulabApp], size: tuple[int, int]) -> None:
    app = new_app()
    async with app.run_test(size=size) as pilot:
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, CourseMapScreen)
        summary = screen.query_one(ItemSummary)
        assert summary.display == (size[0] >= 96)
        await pilot.press("enter")
        await on_screen(pilot, app, LessonScreen)
        await pilot.press("down", "down")
        await pilot.pause()
        tree = app.screen.query_one(MindmapTree)
        pane = app.screen.query_one(NodePane)
        assert tree.size.width >= 24 and pane.size.width >= 30
        assert tree.region.right <= pane.region.x
        assert pane.region.right <= size[0]
        footer = app.screen.query_one("Footer")
        assert footer.region.y == size[1] - 1
        assert tree.size.height == size[1] - 2
        await pilot.press("question_mark")
        await pilot.pause()
        box = app.screen.query_one("#help-box")
        assert box.region.right <= size[0] and box.region.bottom <= size[1]


async def test_unreadable_course_shows_error_and_quits(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "course.toml").write_text("[course\ntitle = 'x'\n")
    monkeypatch.setenv("GPULAB_COURSE_DIR", str(tmp_path))
    app = make_app()
    assert app.course is None and app.error is not None
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        assert isinstance(app.screen, FatalScreen)
        text = str(app.screen.query_one("#fatal-error").render())
        assert "gpulab cannot read the course." in text and "course.toml:1" in text
        await pilot.press("slash", "question_mark")  # no course: search does nothing
        await pilot.press("escape")
        if isinstance(app.screen, FatalScreen):
            await pilot.press("q")
    assert app.return_code == 0
