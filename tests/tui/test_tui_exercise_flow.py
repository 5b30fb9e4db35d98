"""The learner's side of an exercise: check, fail, solve, pass, see the solution; watching the
notebook; the state everywhere exercises are listed; `gpulab check` seen by the app.

The checks really run: pytest in a process of its own and the worker that runs the
learner's notebook, on the "squares" exercise of a copy of the fixture course. The
learner's notebook is the one in their workspace; the course's stays as shipped.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from textual.widgets import Markdown

from gpulab.course import ProgressStore
from gpulab.course.workspace import Workspace
from gpulab.probes.nvml import Replay
from gpulab.tui import GpulabApp
from gpulab.tui.exercise_text import NO_SOLUTIONS
from gpulab.tui.measure import gpu_present
from gpulab.tui.screens import CourseMapScreen, ExerciseScreen
from gpulab.tui.screens.exercise import LOCKED
from gpulab.tui.widgets import CourseTree, ItemSummary
from helpers.tui import SIZE, on_screen, plain, solve, wait_for

CHECK_TIME = 90.0
"""Seconds a check may take in these tests (pytest and a worker process start cold)."""


def facts(app: GpulabApp) -> str:
    return plain(app.screen.query_one("#exercise-facts").content, width=400)


def checks(app: GpulabApp) -> str:
    return plain(app.screen.query_one("#exercise-checks").content, width=400)


def notes(app: GpulabApp) -> str:
    return app.screen.query_one("#exercise-notes", Markdown).source


def label(app: GpulabApp, name: str) -> str:
    tree = app.screen.query_one(CourseTree)
    _, node = tree._exercises[name]
    return str(node.label)


def notes_in_view(app: GpulabApp) -> bool:
    """Whether the notes box (where `s` shows the solution) is on the screen: all of it, or
    half the scrolled body's height of it at least."""
    notes = app.screen.query_one("#exercise-notes", Markdown)
    body = app.screen.query_one("#exercise-body")
    shown = notes.region.intersection(body.region).height
    return shown > 0 and shown >= min(notes.outer_size.height, body.region.height // 2)


def pristine(exercise_lessons: Path) -> bytes:
    return (exercise_lessons.parent / "exercises" / "basics" / "squares.ipynb").read_bytes()


async def test_check_fail_solve_pass_then_the_solution(
    exercise_app: Callable[..., GpulabApp],
    exercise_lessons: Path,
    store_path: Path,
    workspace: Workspace,
) -> None:
    shipped = pristine(exercise_lessons)
    notebook = workspace.root / "basics" / "squares.ipynb"
    app = exercise_app()
    async with app.run_test(size=SIZE) as pilot:
        assert "✎ squares  CPU · not started" in label(app, "squares")
        app.navigator.open_exercise("squares")
        await on_screen(pilot, app, ExerciseScreen)
        assert "not started" in facts(app)
        assert str(notebook) in facts(app)
        await pilot.press("s")  # no pass yet: the solution stays closed
        assert LOCKED in notes(app) and "def square" not in notes(app)

        await pilot.press("c")
        assert "Running the checks" in checks(app) and "checking…" in facts(app)
        await wait_for(pilot, lambda: "failing (0/3)" in facts(app), CHECK_TIME)
        shown = checks(app)
        assert "✗ failing — 0 of 3 points" in shown
        assert "✗ squares small numbers  [0/2]" in shown and "NotImplementedError" in shown
        saved = json.loads(store_path.read_text())["workspaces"][workspace.key]["squares"]
        assert (saved["status"], saved["earned"], saved["possible"]) == ("failing", 0, 3)
        assert saved["at"].endswith("+00:00")
        await pilot.press("s")
        assert LOCKED in notes(app)

        await pilot.press("w")  # not watching: this save is checked by c below, not by itself
        solve(notebook)
        await pilot.press("c")
        await wait_for(pilot, lambda: "passed (3/3)" in facts(app), CHECK_TIME)
        assert "✓ passed — 3 of 3 points" in checks(app)
        assert "✓ squares a float  [1/1]" in checks(app)
        saved = json.loads(store_path.read_text())["workspaces"][workspace.key]["squares"]
        assert saved["status"] == "passed"
        await pilot.press("s")
        await wait_for(pilot, lambda: "```python" in notes(app))
        await wait_for(pilot, lambda: notes_in_view(app))  # scrolled to, below the checks
        assert "**square**" in notes(app) and "return x * x * SCALE" in notes(app)
        assert "BEGIN SOLUTION" not in notes(app) and "END SOLUTION" not in notes(app)
        assert "squares.ipynb" in notes(app)

        await pilot.press("escape")
        assert isinstance(app.screen, CourseMapScreen)
        assert "✎ squares  CPU · passed (3/3)" in label(app, "squares")
    assert pristine(exercise_lessons) == shipped  # the course was never written to


async def test_s_scrolls_to_the_solution(
    exercise_app: Callable[..., GpulabApp], store_path: Path, workspace: Workspace
) -> None:
    """The solution is drawn at the foot of the screen, below the checks and the task: `s`
    scrolls down to it, as `h` and `o` do to theirs."""
    notebook = workspace.root / "basics" / "squares.ipynb"
    solve(notebook)
    app = exercise_app()
    async with app.run_test(size=(100, 24)) as pilot:
        app.navigator.open_exercise("squares")
        await on_screen(pilot, app, ExerciseScreen)
        await pilot.press("c")
        await wait_for(pilot, lambda: "passed (3/3)" in facts(app), CHECK_TIME)
        await pilot.press("s")
        await wait_for(pilot, lambda: "```python" in notes(app))
        await wait_for(pilot, lambda: notes_in_view(app))


async def test_a_course_without_solutions_says_so_on_s(
    exercise_app: Callable[..., GpulabApp],
    exercise_lessons: Path,
    store_path: Path,
    workspace: Workspace,
) -> None:
    """An installed course ships no solutions: `s` says so in words, without a path, and a
    pass does not send the learner to a solution."""
    shutil.rmtree(exercise_lessons.parent / "solutions")
    store = ProgressStore(store_path)
    progress = store.load()
    progress.record_check("squares", workspace=workspace.key, passed=True, earned=3, possible=3)
    store.save(progress)
    app = exercise_app()
    async with app.run_test(size=SIZE) as pilot:
        app.navigator.open_exercise("squares")
        await on_screen(pilot, app, ExerciseScreen)
        await pilot.press("s")
        await wait_for(pilot, lambda: notes(app) == NO_SOLUTIONS, 10)
        assert str(exercise_lessons.parent) not in notes(app)
        await wait_for(pilot, lambda: notes_in_view(app), 10)
        screen = app.screen
        assert isinstance(screen, ExerciseScreen)
        assert "press n" not in checks(app)  # nothing checked in this session yet
        solve(workspace.notebook(screen.exercise))  # saved: the app checks it on its own
        await wait_for(pilot, lambda: "press n for the next exercise" in checks(app), CHECK_TIME)
        assert "press s" not in checks(app)


async def test_saving_the_notebook_runs_the_checks(
    exercise_app: Callable[..., GpulabApp], workspace: Workspace, exercise_lessons: Path
) -> None:
    shipped = pristine(exercise_lessons)
    notebook = workspace.root / "basics" / "squares.ipynb"
    app = exercise_app()
    async with app.run_test(size=SIZE) as pilot:
        app.navigator.open_exercise("squares")
        await on_screen(pilot, app, ExerciseScreen)
        assert "saving the notebook runs the checks" in facts(app)
        await pilot.pause(2.5)  # opening the screen runs nothing: nothing was saved
        assert not app.screen.query_one("#exercise-checks").display
        assert "not started" in facts(app)

        solve(notebook)  # the learner saves in JupyterLab
        await wait_for(pilot, lambda: "you saved the notebook" in checks(app), 10)
        await wait_for(pilot, lambda: "passed (3/3)" in facts(app), CHECK_TIME)
        assert "✓ passed — 3 of 3 points" in checks(app)

        solve(notebook, "def square(x):\n    return x + x\n")  # a wrong answer, saved
        await wait_for(pilot, lambda: "failing (" in facts(app), CHECK_TIME)
        assert "✗ squares small numbers  [0/2]" in checks(app)
        assert "square(3) gave 6, not 9" in checks(app)

        await pilot.press("w")  # stop watching: a save runs nothing
        assert "not watching" in facts(app)
        solve(notebook)
        await pilot.pause(3.0)
        assert "squares" not in app.checking and "failing (" in facts(app)
    assert pristine(exercise_lessons) == shipped


async def test_a_check_that_cannot_run_changes_nothing(
    exercise_app: Callable[..., GpulabApp], store_path: Path, workspace: Workspace
) -> None:
    app = exercise_app()
    async with app.run_test(size=SIZE) as pilot:
        app.navigator.open_exercise(
            "measure-cache"
        )  # listed, but its notebook is not in this course
        await on_screen(pilot, app, ExerciseScreen)
        assert "(not found: gpulab reset brings it back)" in facts(app)
        await pilot.press("c")
        await wait_for(pilot, lambda: "could not run" in checks(app), CHECK_TIME)
        assert "measure-cache.ipynb: cannot read it" in checks(app)
        assert "not started" in facts(app)
        assert "measure-cache" not in app.keeper.progress.exercises(workspace.key)
        assert not store_path.exists() or "measure-cache" not in store_path.read_text()


async def test_gpulab_check_is_recorded_and_the_app_takes_it_in(
    exercise_app: Callable[..., GpulabApp],
    exercise_lessons: Path,
    store_path: Path,
    workspace: Workspace,
) -> None:
    def gpulab_check(*args: str) -> subprocess.CompletedProcess[str]:
        env = {
            **os.environ,
            "GPULAB_COURSE_DIR": str(exercise_lessons),
            "GPULAB_STATE_DIR": str(store_path.parent),
        }
        return subprocess.run(
            [sys.executable, "-m", "gpulab", "check", "squares", *args],
            capture_output=True,
            text=True,
            env=env,
            timeout=CHECK_TIME,
        )

    failing = gpulab_check()  # the workspace gpulab remembers (made by the fixture)
    assert failing.returncode == 1, failing.stdout + failing.stderr
    record = ProgressStore(store_path).load().exercises(workspace.key)["squares"]
    assert (record.status, record.earned, record.possible) == ("failing", 0, 3)

    app = exercise_app()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        assert "failing (0/3)" in label(app, "squares")
        solve(workspace.root / "basics" / "squares.ipynb")
        passing = gpulab_check()  # while the app runs
        assert passing.returncode == 0, passing.stdout + passing.stderr
        app.navigator.open_exercise("squares")
        await on_screen(pilot, app, ExerciseScreen)
        await pilot.press("h")  # saves at once: must not overwrite the newer result
        saved = json.loads(store_path.read_text())
        assert saved["hints"] == {"squares": 1}
        assert saved["workspaces"][workspace.key]["squares"]["status"] == "passed"
        assert "passed (3/3)" in facts(app)
        await pilot.press("escape")
        assert "passed (3/3)" in label(app, "squares")


async def test_every_list_shows_the_state(
    exercise_app: Callable[..., GpulabApp], store_path: Path, workspace: Workspace
) -> None:
    store = ProgressStore(store_path)
    progress = store.load()
    progress.record_check("squares", workspace=workspace.key, passed=False, earned=2, possible=3)
    progress.record_check(
        "squares", workspace="/some/other/workspace", passed=True, earned=3, possible=3
    )
    store.save(progress)
    app = exercise_app()
    async with app.run_test(size=SIZE) as pilot:
        summary = app.screen.query_one(ItemSummary)
        await wait_for(pilot, lambda: "✎ squares  CPU · failing (2/3)" in plain(summary.content))
        await pilot.press("down")
        await pilot.pause()
        assert "status      failing (2/3)" in plain(summary.content)
        assert "failing (2/3)" in label(app, "squares")


async def test_a_gpu_exercise_on_this_machine_without_a_gpu(
    new_app: Callable[..., GpulabApp],
) -> None:
    if gpu_present() is not False:
        pytest.skip("this machine has an NVIDIA GPU on its PCI bus")
    app = new_app()  # finds out for itself, in a worker
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: app.gpu_here is False)
        await pilot.pause()
        assert "✎ vector-add  needs an NVIDIA GPU" in label(app, "vector-add")
        assert "CPU · not started" in label(app, "measure-cache")
        app.navigator.open_exercise("vector-add")
        await on_screen(pilot, app, ExerciseScreen)
        assert "status      needs an NVIDIA GPU" in facts(app)


async def test_a_gpu_exercise_checked_without_a_gpu_reads_alike_in_the_app_and_the_list(
    exercise_app: Callable[..., GpulabApp],
    exercise_lessons: Path,
    store_path: Path,
    workspace: Workspace,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Its checks that need no GPU ran here and failed: the map, the exercise screen and
    `gpulab list` all show that result, and that the GPU checks need a GPU."""
    manifest = exercise_lessons / "course.toml"
    squares = 'name = "squares"\nlesson = "basics"\ngpu = '
    manifest.write_text(manifest.read_text().replace(f"{squares}false", f"{squares}true"))
    store = ProgressStore(store_path)
    progress = store.load()  # as `gpulab check` keeps it: the CPU checks' points only
    progress.record_check("squares", workspace=workspace.key, passed=False, earned=0, possible=3)
    store.save(progress)
    shown = "failing (0/3) · GPU checks need a GPU"
    app = exercise_app(has_gpu=False)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        assert label(app, "squares") == f"✎ squares  {shown}"
        app.navigator.open_exercise("squares")
        await on_screen(pilot, app, ExerciseScreen)
        assert f"status      {shown}" in facts(app)

    from gpulab.cli import main

    monkeypatch.setattr("gpulab.probes.device.present", lambda *args, **kwargs: False)
    monkeypatch.setenv("COLUMNS", "200")
    assert main(["list"]) == 0
    listed = capsys.readouterr().out
    row = next(line for line in listed.splitlines() if line.startswith("squares "))
    assert row.rstrip().endswith(f"✗ {shown}"), row
    assert "passed, 1 failing, " in listed


async def test_gpu_states_told_or_replayed(
    new_app: Callable[..., GpulabApp], h200_replay: Replay
) -> None:
    told = new_app(has_gpu=False)
    async with told.run_test(size=SIZE) as pilot:
        await pilot.pause()
        assert "✎ vector-add  needs an NVIDIA GPU" in label(told, "vector-add")
    replayed = new_app(nvml_backend=h200_replay)
    async with replayed.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: replayed.gpu_here is True)
        await pilot.pause()
        assert "✎ vector-add  needs GPU · not started" in label(replayed, "vector-add")


async def test_a_check_saved_elsewhere_shows_up_by_itself(
    exercise_app: Callable[..., GpulabApp], store_path: Path, workspace: Workspace
) -> None:
    """`gpulab check` in another terminal: the app takes the result in within a second or
    so, on the screen it is on, and the solution opens."""
    app = exercise_app()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        assert "CPU · not started" in label(app, "squares")
        store = ProgressStore(store_path)
        progress = store.load()
        progress.record_check("squares", workspace=workspace.key, passed=True, earned=3, possible=3)
        store.save(progress)
        await wait_for(pilot, lambda: "passed (3/3)" in label(app, "squares"))
        app.navigator.open_exercise("squares")
        await on_screen(pilot, app, ExerciseScreen)
        assert "passed (3/3)" in facts(app)
        await pilot.press("s")
        await wait_for(pilot, lambda: "```python" in notes(app))
