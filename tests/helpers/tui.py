"""Helpers for the TUI tests: the fixture course, Pilot waits and screen text."""

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

from helpers.squares_course import ANSWER, CHECKS, solution_notebook

FIXTURE = Path(__file__).resolve().parents[1] / "tui" / "fixture_course"
NVML_REPLAY = Path(__file__).resolve().parents[1] / "fixtures" / "nvml" / "h200.json"
"""NVML's answers on gpulab's H200, recorded there, replayed where there is no GPU."""
SIZE = (100, 30)


async def wait_for(
    pilot: Pilot[None], predicate: Callable[[], object], timeout: float = 5.0
) -> None:
    """Let the app run until `predicate()` is true; fail after `timeout` seconds."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not predicate():
        if loop.time() > deadline:
            raise AssertionError("condition not reached in time")
        await pilot.pause(0.02)


def screen_text(app: App[object]) -> str:
    """What the terminal shows now, as plain text (the screen and the ones under a modal)."""
    width, height = app.size
    console = Console(
        width=width,
        height=height,
        file=io.StringIO(),
        color_system=None,
        record=True,
        legacy_windows=False,
        safe_box=False,
    )
    console.print(
        app.screen._compositor.render_update(full=True, screen_stack=app._background_screens)
    )
    return console.export_text()


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


# -- a course with figures ------------------------------------------------------------------------

FIGURE_NODES = """
## Measured

- Latency against footprint

  One thread chases pointers through ever larger buffers.

  <!-- figure: latency-footprint -->

- The warm-cache pitfall <!-- figure: warm-cache-pitfall -->
"""
"""Two nodes with figures, added to the fixture's memory lesson: one the recording draws, one
from gpulab's H200 baseline, which the fixture course lacks (so it cannot be drawn)."""

FOOTPRINT = "memory-hierarchy/measured/latency-against-footprint"
PITFALL = "memory-hierarchy/measured/the-warm-cache-pitfall"


def build_figure_course(root: Path) -> Path:
    """The fixture course under root/lessons, its memory lesson ending with FIGURE_NODES;
    returns root/lessons."""
    lessons = root / "lessons"
    shutil.copytree(FIXTURE, lessons)
    with (lessons / "memory.md").open("a", encoding="utf-8") as lesson:
        lesson.write(FIGURE_NODES)
    return lessons


# -- a course with one small CPU exercise --------------------------------------------------------

SQUARES_ENTRY = """
[[exercises]]
name = "squares"
lesson = "basics"
gpu = false
time_limit = 30
hints = ["Multiply x by itself.", "x * x"]
"""


PART_TEXT = "## Part 1: a square\n\nWrite `square(x)`: x times itself, for ints and floats."
"""The Markdown cell before the squares notebook's answer cell: the part's words."""


def build_exercise_course(root: Path) -> Path:
    """The fixture course under root/lessons, plus a "squares" exercise (solution, checks and
    the released notebook) under root/solutions and root/exercises; returns root/lessons."""
    import nbformat

    from gpulab.grading.checks.cells import to_exercise
    from gpulab.grading.checks.notebook import read_notebook, write_notebook

    lessons = root / "lessons"
    shutil.copytree(FIXTURE, lessons)
    with (lessons / "course.toml").open("a", encoding="utf-8") as manifest:
        manifest.write(SQUARES_ENTRY)

    source = root / "solutions" / "basics" / "squares.ipynb"
    solution = solution_notebook()
    answer = next(
        i
        for i, cell in enumerate(solution.cells)
        if cell.metadata.get("gpulab", {}).get("role") == "answer"
    )
    solution.cells.insert(answer, nbformat.v4.new_markdown_cell(PART_TEXT))
    write_notebook(solution, source)
    (root / "exercises" / "basics").mkdir(parents=True)
    (root / "exercises" / "basics" / "test_squares.py").write_text(CHECKS)
    write_notebook(
        to_exercise(read_notebook(source), source), root / "exercises" / "basics" / "squares.ipynb"
    )
    return lessons


def solve(notebook: Path, answer: str = ANSWER) -> None:
    """Type `answer` into the notebook's answer cell and save it, as a learner would (give it
    the workspace's notebook: the course's stays pristine)."""
    from gpulab.grading.checks.notebook import read_notebook, write_notebook

    found = read_notebook(notebook)
    for cell in found.cells:
        if cell.get("metadata", {}).get("gpulab", {}).get("role") == "answer":
            cell.source = answer
    write_notebook(found, notebook)
