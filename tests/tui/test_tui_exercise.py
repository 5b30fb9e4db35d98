"""The exercise screen: facts, the task with its points, hints revealed one at a time (and
drawn in full), the next unfinished exercise, and what to do without a workspace."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from textual.widgets import Markdown

from gpulab.course import ProgressStore
from gpulab.course.progress import Measurement
from gpulab.course.workspace import Workspace
from gpulab.tui import GpulabApp
from gpulab.tui.screens import CourseMapScreen, ExerciseScreen, LessonScreen
from gpulab.tui.widgets import HintList, TaskPanel
from gpulab.tui.widgets.task_panel import HIDDEN_UNKNOWN
from helpers.tui import PART_TEXT, SIZE, on_screen, plain, screen_text, wait_for

VECTOR_ADD_HINTS = (
    "One thread per element.",
    "The global index is blockIdx.x * blockDim.x + threadIdx.x.",
    "Guard the tail: return when the index is past the end.",
)


def task(app: GpulabApp) -> str:
    return app.screen.query_one(TaskPanel).source


async def test_hints_one_by_one_and_persisted(
    new_app: Callable[..., GpulabApp], store_path: Path
) -> None:
    app = new_app(has_gpu=True)
    async with app.run_test(size=SIZE) as pilot:
        app.navigator.open_exercise("vector-add")
        await on_screen(pilot, app, ExerciseScreen)
        screen = app.screen
        facts = plain(screen.query_one("#exercise-facts").content)
        for text in (
            "vector-add",
            "Writing kernels",
            "needs an NVIDIA GPU",
            "120 s",
            "not started",
        ):
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
        again.navigator.open_exercise("vector-add")
        await on_screen(pilot, again, ExerciseScreen)
        assert again.screen.query_one(HintList).revealed == 3
        await pilot.press("escape")
        assert isinstance(again.screen, CourseMapScreen)


async def test_every_revealed_hint_is_drawn_in_full(new_app: Callable[..., GpulabApp]) -> None:
    app = new_app(has_gpu=True)
    async with app.run_test(size=(80, 24)) as pilot:
        app.navigator.open_exercise("vector-add")
        await on_screen(pilot, app, ExerciseScreen)
        hints = app.screen.query_one(HintList)
        for count in (1, 2, 3):
            await pilot.press("h")
            await pilot.pause()
            lines = len(plain(hints.render(), width=hints.content_size.width).splitlines())
            assert hints.content_size.height >= lines > 2 * count  # the box grew with it
            drawn = " ".join(screen_text(app).replace("│", " ").split())
            for hint in VECTOR_ADD_HINTS[:count]:  # on the terminal, not only in the widget
                assert hint in drawn
        assert "No more hints: you have seen them all." in drawn


async def test_the_task_states_parts_points_and_hidden_checks(
    exercise_app: Callable[..., GpulabApp],
) -> None:
    app = exercise_app()
    async with app.run_test(size=SIZE) as pilot:
        app.navigator.open_exercise("squares")
        await on_screen(pilot, app, ExerciseScreen)
        await wait_for(pilot, lambda: "square(x)" in task(app))
        shown = task(app)
        assert "- **square**: write `square(x)` — 3 points" in shown
        assert "**The visible checks are worth 3 points.**" in shown
        assert HIDDEN_UNKNOWN in shown  # the manifest gives no hidden points
        assert "#### Part 1: a square" in shown  # the notebook's words, under the panel
        assert PART_TEXT.split("\n\n")[1] in shown
        text = " ".join(screen_text(app).split())
        assert "square: write square(x) — 3 points" in text


async def test_the_task_gives_hidden_points_when_the_manifest_does(
    exercise_app: Callable[..., GpulabApp], exercise_lessons: Path
) -> None:
    manifest = exercise_lessons / "course.toml"
    text = manifest.read_text()
    assert text.count('name = "squares"') == 1
    manifest.write_text(text.replace('name = "squares"', 'name = "squares"\nhidden_points = 4'))
    app = exercise_app()
    async with app.run_test(size=SIZE) as pilot:
        app.navigator.open_exercise("squares")
        await on_screen(pilot, app, ExerciseScreen)
        await wait_for(pilot, lambda: "square(x)" in task(app))
        assert "adds hidden checks worth 4 points more" in task(app)
        assert HIDDEN_UNKNOWN not in task(app)


async def test_next_unfinished_exercise(
    exercise_app: Callable[..., GpulabApp], store_path: Path, workspace: Workspace
) -> None:
    store = ProgressStore(store_path)
    progress = store.load()
    progress.record_check(
        "measure-cache", workspace=workspace.key, passed=True, earned=1, possible=1
    )
    store.save(progress)
    app = exercise_app()  # told there is no GPU: vector-add is left for a machine with one
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("n")  # on the map: the first exercise not passed, squares
        await on_screen(pilot, app, ExerciseScreen)
        assert isinstance(app.screen, ExerciseScreen)
        assert app.screen.exercise.name == "squares"
        await pilot.press("n")  # nothing else is left here: says so, stays
        await pilot.pause()
        assert app.screen.exercise.name == "squares"
        assert any(
            "the last exercise you have not passed" in str(n.message) for n in app._notifications
        )
    gpu = exercise_app(has_gpu=True)
    async with gpu.run_test(size=SIZE) as pilot:
        gpu.navigator.open_exercise("squares")
        await on_screen(pilot, gpu, ExerciseScreen)
        await pilot.press("n")  # after squares, wrapping round: vector-add
        await wait_for(
            pilot,
            lambda: (
                isinstance(gpu.screen, ExerciseScreen) and gpu.screen.exercise.name == "vector-add"
            ),
        )
        await pilot.press("escape")  # back to the map, on the exercise it came from
        assert isinstance(gpu.screen, CourseMapScreen)


async def test_without_a_workspace_it_says_how_to_make_one(
    new_app: Callable[..., GpulabApp],
) -> None:
    app = new_app()
    assert app.workspace is None
    async with app.run_test(size=SIZE) as pilot:
        app.navigator.open_exercise("measure-cache")
        await on_screen(pilot, app, ExerciseScreen)
        screen = app.screen
        facts = plain(screen.query_one("#exercise-facts").content)
        assert "runs on the CPU" in facts and "60 s" in facts and "not started" in facts
        assert "(no workspace yet: gpulab init)" in facts
        box = screen.query_one("#no-workspace")
        assert box.display and "gpulab init copies the exercises" in plain(box.content)
        guide = screen.query_one("#exercise-notes", Markdown).source
        assert "run `gpulab init`" in guide
        await pilot.press("c")  # nothing to check: it says why instead of failing
        await pilot.pause()
        assert not screen.query_one("#exercise-checks").display
        assert "measure-cache" not in app.checking
        assert any("gpulab init" in str(n.message) for n in app._notifications)


async def test_the_last_checks_measurements_show_beside_the_predictions(
    exercise_app: Callable[..., GpulabApp], store_path: Path, workspace: Workspace
) -> None:
    store = ProgressStore(store_path)
    progress = store.load()
    progress.record_check(
        "squares",
        workspace=workspace.key,
        passed=False,
        earned=1,
        possible=3,
        measurements=[
            Measurement("h2d", "pinned host to device", "GB/s", 21.0, 52.5, 0.25, 40.0),
            Measurement("naive", "a host timer", "ms", 0.004, 1.2, None, "the same"),
        ],
    )
    store.save(progress)
    app = exercise_app()
    async with app.run_test(size=SIZE) as pilot:
        app.navigator.open_exercise("squares")
        await on_screen(pilot, app, ExerciseScreen)
        shown = " ".join(plain(app.screen.query_one("#exercise-checks").content).split())
        assert "Your last check (failing" in shown
        assert "pinned host to device: 40 GB/s → 21 GB/s · 52.5 GB/s" in shown
        assert "differs (±25%), 0.40× the check's" in shown
        assert "a host timer: the same → 0.004 ms · 1.2 ms" in shown
