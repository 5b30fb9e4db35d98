"""The exercise screen: facts, hints revealed one at a time and remembered."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from textual.widgets import Markdown
from tui_helpers import SIZE, on_screen, plain

from gpulab.tui import GpulabApp
from gpulab.tui.screens import CourseMapScreen, ExerciseScreen, LessonScreen
from gpulab.tui.widgets import HintList


async def test_hints_one_by_one_and_persisted(
    new_app: Callable[..., GpulabApp], store_path: Path
) -> None:
    app = new_app(has_gpu=True)
    async with app.run_test(size=SIZE) as pilot:
        app.open_exercise("vector-add")
        await on_screen(pilot, app, ExerciseScreen)
        screen = app.screen
        facts = plain(screen.query_one("#exercise-facts").content)
        for text in ("vector-add", "Writing kernels", "needs an NVIDIA GPU", "120 s",
                     "not started"):
            assert text in facts
        hints = screen.query_one(HintList)
        assert hints.revealed == 0 and "One thread per element" not in plain(hints.render())
        await pilot.press("h")
        assert hints.revealed == 1
        assert "One thread per element" in plain(hints.render())
        assert "blockIdx" not in plain(hints.render())
        assert json.loads(store_path.read_text())["hints"] == {"vector-add": 1}
        await pilot.press("h", "h", "h")  # the fourth press finds no more hints
        assert hints.revealed == 3
        assert "No more hints" in plain(hints.render())
        assert json.loads(store_path.read_text())["hints"] == {"vector-add": 3}
        await pilot.press("l")
        await on_screen(pilot, app, LessonScreen)
        assert isinstance(app.screen, LessonScreen) and app.screen.lesson_id == "kernels"
    again = new_app(has_gpu=True)
    async with again.run_test(size=SIZE) as pilot:
        again.open_exercise("vector-add")
        await on_screen(pilot, again, ExerciseScreen)
        assert again.screen.query_one(HintList).revealed == 3
        await pilot.press("escape")
        assert isinstance(again.screen, CourseMapScreen)


async def test_cpu_exercise(new_app: Callable[..., GpulabApp]) -> None:
    app = new_app()
    async with app.run_test(size=SIZE) as pilot:
        app.open_exercise("measure-cache")
        await on_screen(pilot, app, ExerciseScreen)
        facts = plain(app.screen.query_one("#exercise-facts").content)
        assert "runs on the CPU" in facts and "60 s" in facts and "not started" in facts
        assert "exercises/memory/measure-cache.ipynb  (not found)" in facts
        guide = app.screen.query_one("#exercise-notes", Markdown).source
        assert "gpulab check measure-cache" in guide and "**o**" in guide
        assert not app.screen.query_one("#exercise-checks").display
