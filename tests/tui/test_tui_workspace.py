"""The app and the learner's workspace: brought up to date at start, found when made later."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

from textual import events

from gpulab.course import ProgressStore, load_course
from gpulab.course.workspace import Workspace, init_workspace
from gpulab.tui import GpulabApp, make_app
from gpulab.tui.screens import ExerciseScreen
from helpers.tui import SIZE, on_screen, plain, wait_for


def notified(app: GpulabApp) -> str:
    return "\n".join(str(n.message) for n in app._notifications)


async def test_start_brings_the_workspace_up_to_date_and_says_what_changed(
    exercise_app: Callable[..., GpulabApp], workspace: Workspace
) -> None:
    mine = workspace.root / "basics" / "squares.ipynb"
    shutil.rmtree(mine.parent)  # as if squares were new in the course
    workspace.files.clear()
    app = exercise_app()
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: "added to your workspace: squares" in notified(app))
        assert mine.is_file()  # copied in, in a thread, after first paint


async def test_an_up_to_date_workspace_starts_quietly(
    exercise_app: Callable[..., GpulabApp], workspace: Workspace
) -> None:
    app = exercise_app()
    async with app.run_test(size=SIZE) as pilot:
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert "workspace" not in notified(app)


async def test_a_workspace_made_while_the_app_runs_is_taken_up(
    exercise_lessons: Path, store_path: Path, tmp_path: Path
) -> None:
    app = make_app(
        course=load_course(exercise_lessons), store=ProgressStore(store_path), has_gpu=False
    )
    async with app.run_test(size=SIZE) as pilot:
        assert app.workspace is None
        app.navigator.open_exercise("squares")
        await on_screen(pilot, app, ExerciseScreen)
        assert app.screen.query_one("#no-workspace").display
        made, _ = init_workspace(load_course(exercise_lessons), tmp_path / "later")  # a shell
        app.post_message(events.AppFocus())  # the learner comes back to the terminal
        await wait_for(pilot, lambda: not app.screen.query_one("#no-workspace").display)
        facts = plain(app.screen.query_one("#exercise-facts").content, width=400)
        assert str(made.root / "basics" / "squares.ipynb") in facts
