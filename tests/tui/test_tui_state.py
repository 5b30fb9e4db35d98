"""State survives a restart: last lesson, selected node, folds, visited nodes."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from gpulab.course import ProgressStore
from gpulab.tui import GpulabApp, make_app
from gpulab.tui.screens import CourseMapScreen, LessonScreen
from gpulab.tui.widgets import CourseTree, MindmapTree
from helpers.tui import FIXTURE, SIZE, on_screen, wait_for


async def test_state_restored_after_restart(
    new_app: Callable[[], GpulabApp], store_path: Path
) -> None:
    app = new_app()
    async with app.run_test(size=SIZE) as pilot:
        app.navigator.open_lesson("basics")
        await on_screen(pilot, app, LessonScreen)
        await pilot.press("down", "down", "down", "space")  # fold "Blocks hold several warps"
        await pilot.press("down", "down", "space")  # unfold "The tools"
        tree = app.screen.query_one(MindmapTree)
        assert tree.cursor_node is not None and tree.cursor_node.data is not None
        selected = tree.cursor_node.data.key
        expanded = tree.expanded_keys()
    saved = json.loads(store_path.read_text())
    assert saved["last_lesson"] == "basics"
    assert saved["lessons"]["basics"]["selected"] == selected == "basics-of-the-lab/the-tools"
    assert len(saved["lessons"]["basics"]["visited"]) == 5

    again = new_app()
    async with again.run_test(size=SIZE) as pilot:
        await on_screen(pilot, again, LessonScreen)
        await pilot.pause()
        screen = again.screen
        assert isinstance(screen, LessonScreen) and screen.lesson_id == "basics"
        tree = screen.query_one(MindmapTree)
        assert tree.expanded_keys() == expanded
        assert "basics-of-the-lab/the-machine/blocks-hold-several-warps" not in expanded
        assert tree.cursor_node is not None and tree.cursor_node.data is not None
        assert tree.cursor_node.data.key == selected
        await pilot.press("escape")
        assert isinstance(again.screen, CourseMapScreen)
        course_tree = again.screen.query_one(CourseTree)
        await wait_for(
            pilot,
            lambda: (
                course_tree.cursor_node is not None
                and getattr(course_tree.cursor_node.data, "id", None) == "basics"
            ),
        )


async def test_debounced_save_without_leaving(
    new_app: Callable[[], GpulabApp], store_path: Path
) -> None:
    app = new_app()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("enter", "down")
        await wait_for(
            pilot,
            lambda: (
                store_path.exists()
                and len(json.loads(store_path.read_text())["lessons"]["basics"]["visited"]) == 2
            ),
            timeout=5,
        )


async def test_unreadable_progress_is_kept_and_reported(store_path: Path) -> None:
    store_path.parent.mkdir(parents=True)
    store_path.write_text("{not json")
    from gpulab.course import load_course

    app = make_app(course=load_course(FIXTURE), store=ProgressStore(store_path))
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        assert isinstance(app.screen, CourseMapScreen)
        assert any("unreadable" in str(n.message) for n in app._notifications)
    assert list(store_path.parent.glob("progress.json.broken-*"))
