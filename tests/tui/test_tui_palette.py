"""ctrl+p: go to a lesson, go to day N, open an exercise, toggle the theme."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from textual.command import CommandPalette
from textual.widgets import OptionList

from gpulab.tui import GpulabApp
from gpulab.tui.screens import CourseMapScreen, ExerciseScreen, LessonScreen
from gpulab.tui.widgets import CourseTree
from helpers.tui import SIZE, on_screen, wait_for


async def _run_command(app: GpulabApp, pilot: object, query: str, expect: str) -> None:
    from textual.pilot import Pilot

    assert isinstance(pilot, Pilot)
    await pilot.press("ctrl+p")
    await on_screen(pilot, app, CommandPalette)
    await pilot.press(*query)

    def first() -> str:
        options = app.screen.query_one("CommandList", OptionList)
        if not options.option_count:
            return ""
        return str(options.get_option_at_index(0).prompt)

    await wait_for(pilot, lambda: expect in first())
    await pilot.press("down", "enter")  # the first hit
    await wait_for(pilot, lambda: not isinstance(app.screen, CommandPalette))
    await pilot.pause()


async def test_palette_goes_to_a_lesson(new_app: Callable[[], GpulabApp]) -> None:
    app = new_app()
    async with app.run_test(size=SIZE) as pilot:
        await _run_command(app, pilot, "lesson: memory", "Go to lesson: Memory hierarchy")
        await on_screen(pilot, app, LessonScreen)
        assert isinstance(app.screen, LessonScreen) and app.screen.lesson_id == "memory"


async def test_palette_goes_to_a_day(new_app: Callable[[], GpulabApp]) -> None:
    app = new_app()
    async with app.run_test(size=SIZE) as pilot:
        app.navigator.open_lesson("basics")
        await on_screen(pilot, app, LessonScreen)
        await _run_command(app, pilot, "go to day 2", "Go to day 2")
        assert isinstance(app.screen, CourseMapScreen)
        tree = app.screen.query_one(CourseTree)
        await wait_for(pilot, lambda: tree.cursor_node is not None and tree.cursor_node.data == 2)


async def test_palette_opens_an_exercise(new_app: Callable[[], GpulabApp]) -> None:
    app = new_app()
    async with app.run_test(size=SIZE) as pilot:
        await _run_command(app, pilot, "exercise: vector", "Open exercise: vector-add")
        await on_screen(pilot, app, ExerciseScreen)
        assert isinstance(app.screen, ExerciseScreen)
        assert app.screen.exercise.name == "vector-add"


async def test_palette_toggles_theme_and_it_is_remembered(
    new_app: Callable[[], GpulabApp], store_path: Path
) -> None:
    app = new_app()
    async with app.run_test(size=SIZE) as pilot:
        assert app.theme == "textual-dark"
        await _run_command(app, pilot, "toggle theme", "Toggle theme")
        assert app.theme == "textual-light"
        await wait_for(pilot, lambda: store_path.exists())
        assert json.loads(store_path.read_text())["theme"] == "textual-light"
    again = new_app()
    async with again.run_test(size=SIZE) as pilot:
        await pilot.pause()
        assert again.theme == "textual-light"
        again.action_toggle_theme()
        await pilot.pause()
        assert again.theme == "textual-dark"
    assert json.loads(store_path.read_text())["theme"] == "textual-dark"
