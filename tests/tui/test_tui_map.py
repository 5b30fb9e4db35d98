"""The course map: days, lessons with progress, exercises, broken lessons."""

from __future__ import annotations

from collections.abc import Callable

from gpulab.course import ExerciseEntry, LessonEntry
from gpulab.tui import GpulabApp
from gpulab.tui.screens import CourseMapScreen, ExerciseScreen, LessonScreen
from gpulab.tui.widgets import CourseTree, ItemSummary
from helpers.tui import SIZE, plain, wait_for


def _labels(app: GpulabApp) -> dict[str, str]:
    tree = app.screen.query_one(CourseTree)
    labels: dict[str, str] = {}

    def walk(node: object) -> None:
        for child in getattr(node, "children", []):
            data = child.data
            name = (
                f"day {data}"
                if isinstance(data, int)
                else data.id
                if isinstance(data, LessonEntry)
                else data.name
            )
            labels[name] = str(child.label)
            walk(child)

    walk(tree.root)
    return labels


async def test_map_shows_days_lessons_exercises(new_app: Callable[..., GpulabApp]) -> None:
    app = new_app(has_gpu=True)
    async with app.run_test(size=SIZE) as pilot:
        assert isinstance(app.screen, CourseMapScreen)
        await app.workers.wait_for_complete()
        await pilot.pause()
        labels = _labels(app)
        assert labels["day 1"].startswith("Day 1")
        assert "0%  Basics of the lab" in labels["basics"]
        assert "needs GPU" in labels["vector-add"] and "not started" in labels["vector-add"]
        assert "CPU" in labels["measure-cache"]
        assert "✗ broken" in labels["broken"]
        summary = app.screen.query_one(ItemSummary)
        assert "Find your way around the lab" in plain(summary.content)


async def test_enter_opens_lesson_and_escape_returns(new_app: Callable[[], GpulabApp]) -> None:
    app = new_app()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("enter")
        assert isinstance(app.screen, LessonScreen)
        assert app.screen.lesson_id == "basics"
        await pilot.press("escape")
        assert isinstance(app.screen, CourseMapScreen)
        tree = app.screen.query_one(CourseTree)
        assert isinstance(tree.cursor_node and tree.cursor_node.data, LessonEntry)


async def test_enter_on_exercise_opens_it(new_app: Callable[[], GpulabApp]) -> None:
    app = new_app()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("down", "down")
        tree = app.screen.query_one(CourseTree)
        assert tree.cursor_node is not None
        assert isinstance(tree.cursor_node.data, ExerciseEntry)
        await pilot.press("enter")
        assert isinstance(app.screen, ExerciseScreen)
        assert app.screen.exercise.name == "measure-cache"


async def test_enter_on_day_folds_it(new_app: Callable[[], GpulabApp]) -> None:
    app = new_app()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("up")
        tree = app.screen.query_one(CourseTree)
        assert tree.cursor_node is not None and tree.cursor_node.data == 1
        await pilot.press("enter")
        assert not tree.cursor_node.is_expanded
        assert isinstance(app.screen, CourseMapScreen)


async def test_progress_shows_after_reading(new_app: Callable[[], GpulabApp]) -> None:
    app = new_app()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("enter", "down", "down", "escape")
        await app.workers.wait_for_complete()
        await wait_for(pilot, lambda: "38%" in _labels(app)["basics"])


async def test_broken_lesson_from_map_then_another_opens(new_app: Callable[[], GpulabApp]) -> None:
    app = new_app()
    async with app.run_test(size=SIZE) as pilot:
        app.screen.query_one(CourseTree).select_lesson("broken")
        await pilot.press("enter")
        assert isinstance(app.screen, LessonScreen)
        panel = app.screen.query_one("#lesson-error")
        text = str(panel.render())
        assert "broken.md:10" in text and "unknown claim 'no_such_claim'" in text
        assert "hint: define it in lessons/claims/<lesson>.toml" in text
        await pilot.press("escape")
        app.screen.query_one(CourseTree).select_lesson("kernels")
        await pilot.press("enter")
        assert isinstance(app.screen, LessonScreen) and app.screen.lesson is not None
        assert app.screen.lesson.title == "Writing kernels"
