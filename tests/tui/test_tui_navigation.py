"""Getting about: an exercise from a lesson's node and back, escape back to where you were,
q quits everywhere but in a text field, and the first-run hint."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from textual.widgets import Input

from gpulab.course import ExerciseEntry
from gpulab.tui import GpulabApp
from gpulab.tui.screens import (
    CourseMapScreen,
    ExerciseScreen,
    GpuScreen,
    LessonScreen,
    SearchScreen,
)
from gpulab.tui.screens.course_map import FIRST_RUN
from gpulab.tui.widgets import CourseTree, MindmapTree, NodePane
from helpers.tui import SIZE, on_screen, screen_text

EXERCISE_NODE = "writing-kernels/exercise/vector-add-add-two-vectors-on-the-gpu"


def cursor_key(app: GpulabApp) -> str | None:
    node = app.screen.query_one(MindmapTree).cursor_node
    return node.data.key if node is not None and node.data is not None else None


async def test_enter_on_an_exercise_node_opens_it_and_escape_comes_back(
    new_app: Callable[..., GpulabApp],
) -> None:
    app = new_app(has_gpu=False)
    async with app.run_test(size=SIZE) as pilot:
        app.navigator.open_lesson("kernels", EXERCISE_NODE)
        await on_screen(pilot, app, LessonScreen)
        lesson = app.screen
        assert "✎ The exercise vector-add: press enter to open it" in str(
            lesson.query_one("#node-exercise").content
        )
        assert str(lesson.query_one(MindmapTree).cursor_node.label).startswith("✎ vector-add")
        await pilot.press("enter")
        await on_screen(pilot, app, ExerciseScreen)
        assert isinstance(app.screen, ExerciseScreen)
        assert app.screen.exercise.name == "vector-add"
        await pilot.press("escape")
        await on_screen(pilot, app, LessonScreen)
        assert app.screen is lesson and cursor_key(app) == EXERCISE_NODE
        await pilot.press("up", "enter")  # enter on any other node folds or unfolds it
        tree = lesson.query_one(MindmapTree)
        assert tree.cursor_node is not None and not tree.cursor_node.is_expanded
        assert isinstance(app.screen, LessonScreen)
        await pilot.press("escape")
        assert isinstance(app.screen, CourseMapScreen)


async def test_l_from_an_exercise_opened_in_a_lesson_goes_back_to_it(
    new_app: Callable[..., GpulabApp],
) -> None:
    app = new_app(has_gpu=False)
    async with app.run_test(size=SIZE) as pilot:
        app.navigator.open_lesson("kernels", EXERCISE_NODE)
        await on_screen(pilot, app, LessonScreen)
        lesson = app.screen
        await pilot.press("enter")
        await on_screen(pilot, app, ExerciseScreen)
        await pilot.press("l")
        await on_screen(pilot, app, LessonScreen)
        assert app.screen is lesson and len(app.screen_stack) == 2


async def test_escape_from_an_exercise_puts_the_map_cursor_on_it(
    new_app: Callable[..., GpulabApp],
) -> None:
    app = new_app(has_gpu=False)
    async with app.run_test(size=SIZE) as pilot:
        tree = app.screen.query_one(CourseTree)
        tree.select_exercise("vector-add")
        await pilot.pause()
        await pilot.press("enter")
        await on_screen(pilot, app, ExerciseScreen)
        await pilot.press("escape")
        await on_screen(pilot, app, CourseMapScreen)
        node = app.screen.query_one(CourseTree).cursor_node
        assert node is not None and isinstance(node.data, ExerciseEntry)
        assert node.data.name == "vector-add"
        app.navigator.open_lesson(
            "memory"
        )  # a lesson read since: escape from the palette's exercise
        await on_screen(pilot, app, LessonScreen)
        app.navigator.open_exercise("measure-cache")
        await on_screen(pilot, app, ExerciseScreen)
        await pilot.press("escape")
        await on_screen(pilot, app, CourseMapScreen)
        node = app.screen.query_one(CourseTree).cursor_node
        assert node is not None and isinstance(node.data, ExerciseEntry)
        assert node.data.name == "measure-cache"


@pytest.mark.parametrize("where", ["map", "lesson", "exercise", "gpu"])
async def test_q_quits_everywhere(new_app: Callable[..., GpulabApp], where: str) -> None:
    app = new_app(has_gpu=False)
    async with app.run_test(size=SIZE) as pilot:
        if where == "lesson":
            app.navigator.open_lesson("basics")
            await on_screen(pilot, app, LessonScreen)
        elif where == "exercise":
            app.navigator.open_exercise("measure-cache")
            await on_screen(pilot, app, ExerciseScreen)
        elif where == "gpu":
            await pilot.press("g")
            await on_screen(pilot, app, GpuScreen)
        assert not app._exit
        await pilot.press("q")
        assert app._exit and app.return_code == 0  # asked to quit by q, not by the test's end


async def test_q_in_a_text_field_is_a_letter(new_app: Callable[..., GpulabApp]) -> None:
    app = new_app(has_gpu=False)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("slash", "q")
        await on_screen(pilot, app, SearchScreen)
        assert app.screen.query_one(Input).value == "q"
        assert not app._exit


async def test_first_run_hint(new_app: Callable[..., GpulabApp]) -> None:
    first = new_app(has_gpu=False)
    async with first.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        assert "? lists the keys, ctrl+p finds everything" in FIRST_RUN
        assert " ".join(FIRST_RUN.split()) in " ".join(screen_text(first).split())
        await pilot.press("enter", "down")  # read a little: there is progress to save now
    again = new_app(has_gpu=False)
    async with again.run_test(size=SIZE) as pilot:
        await pilot.pause()
        assert not again.screen.query("#first-run")
        assert "? lists the keys" not in screen_text(again)


async def test_the_pane_says_where_to_read_on_after_unfolding(
    new_app: Callable[..., GpulabApp],
) -> None:
    app = new_app(has_gpu=False)
    async with app.run_test(size=SIZE) as pilot:
        app.navigator.open_lesson("basics", "basics-of-the-lab/the-tools")  # folded, no notes
        await on_screen(pilot, app, LessonScreen)
        tree = app.screen.query_one(MindmapTree)
        await pilot.press("minus")  # everything folded; the cursor on "The tools"
        app.screen.reveal("basics-of-the-lab/the-tools")
        await pilot.pause()
        pane = app.screen.query_one(NodePane)
        notes = app.screen.query_one("#notes")
        assert tree.cursor_node is not None and not tree.cursor_node.is_expanded
        assert "unfold the node" in notes.source  # type: ignore[attr-defined]
        await pilot.press("right")  # → unfolds
        await pilot.pause()
        assert tree.cursor_node.is_expanded and pane.unfolded
        assert "unfold" not in notes.source  # type: ignore[attr-defined]
        assert "the nodes below it hold the details" in notes.source  # type: ignore[attr-defined]
        await pilot.press("right")  # on an unfolded node, → goes into it
        assert tree.cursor_node.data is not None
        assert tree.cursor_node.data.text == "gpulab opens this map"
        await pilot.press("left")  # ← on a leaf goes up to the parent, ← again folds it
        await pilot.press("left")
        await pilot.pause()
        assert not tree.cursor_node.is_expanded
        assert "unfold the node" in notes.source  # type: ignore[attr-defined]
