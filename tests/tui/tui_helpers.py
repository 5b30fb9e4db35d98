"""Helpers for the TUI tests (a module name no other test folder uses)."""

from __future__ import annotations

import asyncio
import io
import shutil
from collections.abc import Callable
from pathlib import Path

from rich.console import Console
from textual.app import App
from textual.pilot import Pilot
from textual.screen import Screen

from squares_course import ANSWER, CHECKS, solution_notebook

FIXTURE = Path(__file__).parent / "fixture_course"
NVML_REPLAY = Path(__file__).resolve().parents[1] / "fixtures" / "nvml" / "h200.json"
"""NVML's answers on gpulab's H200, recorded there, replayed where there is no GPU."""
SIZE = (100, 30)


async def wait_for(pilot: Pilot[None], predicate: Callable[[], object], timeout: float = 5.0
                   ) -> None:
    """Let the app run until `predicate()` is true; fail after `timeout` seconds."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not predicate():
        if loop.time() > deadline:
            raise AssertionError("condition not reached in time")
        await pilot.pause(0.02)


def plain(renderable: object, width: int = 120) -> str:
    """What a Rich renderable prints, as plain text."""
    console = Console(width=width, file=io.StringIO(), color_system=None)
    with console.capture() as capture:
        console.print(renderable)
    return capture.get()


async def on_screen(pilot: Pilot[None], app: App[object], kind: type[Screen[object]]) -> None:
    """Let the app run until a screen of `kind` is on top and mounted."""
    await wait_for(pilot, lambda: isinstance(app.screen, kind) and app.screen.is_mounted)
    await pilot.pause()


# -- a course with one small CPU exercise --------------------------------------------------------

SQUARES_ENTRY = """
[[exercises]]
name = "squares"
lesson = "basics"
gpu = false
time_limit = 30
hints = ["Multiply x by itself.", "x * x"]
"""


def build_exercise_course(root: Path) -> Path:
    """The fixture course under root/lessons, plus a "squares" exercise (solution, checks and
    the learner's notebook) under root/solutions and root/exercises; returns root/lessons."""
    from gpulab.grading.notebook import read_notebook, to_exercise, write_notebook

    lessons = root / "lessons"
    shutil.copytree(FIXTURE, lessons)
    with (lessons / "course.toml").open("a", encoding="utf-8") as manifest:
        manifest.write(SQUARES_ENTRY)

    source = root / "solutions" / "basics" / "squares.ipynb"
    write_notebook(solution_notebook(), source)
    (root / "exercises" / "basics").mkdir(parents=True)
    (root / "exercises" / "basics" / "test_squares.py").write_text(CHECKS)
    write_notebook(to_exercise(read_notebook(source), source),
                   root / "exercises" / "basics" / "squares.ipynb")
    return lessons


def solve(notebook: Path, answer: str = ANSWER) -> None:
    """Type `answer` into the notebook's answer cell and save it, as a learner would."""
    from gpulab.grading.notebook import read_notebook, write_notebook

    found = read_notebook(notebook)
    for cell in found.cells:
        if cell.get("metadata", {}).get("gpulab", {}).get("role") == "answer":
            cell.source = answer
    write_notebook(found, notebook)
