"""`?` and F1 help: generated from every screen's bindings; footers stay short."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from gpulab.tui import GpulabApp
from gpulab.tui.navigation import help_sections
from gpulab.tui.screens import CourseMapScreen, ExerciseScreen, HelpScreen, LessonScreen
from gpulab.tui.screens.help import bindings_of, help_groups
from helpers.tui import SIZE, on_screen, plain

TEXTUAL_WORDS = (
    "Cursor to",
    "Page Left",
    "Page Right",
    "Focus Next",
    "Focus Previous",
    "Scroll Left",
    "Scroll Right",
    "Toggle",
    "Select",
    "help quit",
    "^pgup",
    "Expand or collapse all",
)
"""Textual's own names for its bindings: the help says what gpulab's keys do instead."""


@pytest.mark.parametrize("key", ["question_mark", "f1"])
async def test_help_opens_and_closes(new_app: Callable[[], GpulabApp], key: str) -> None:
    app = new_app()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press(key)
        assert isinstance(app.screen, HelpScreen)
        text = "\n".join(plain(s.content) for s in app.screen.query(".help-group").results())
        for group in (
            "Everywhere",
            "Course map",
            "Lesson",
            "Exercise",
            "GPU",
            "Predicting a claim",
            "Search",
            "Help",
        ):
            assert group in text
        for description in (
            "Fold all",
            "Unfold all",
            "Next lesson",
            "Previous lesson",
            "Reveal a hint",
            "Command palette",
            "Search",
            "Open",
            "Measure",
            "Measure without predicting",
            "Run the checks",
            "Open in JupyterLab",
            "The solution, once your checks pass",
            "Open its lesson",
            "Open the next exercise you have not passed",
            "Fold or unfold",
            "Unfold, or go down into it",
            "Fold, or go up to the parent",
            "Scroll the tree sideways",
            "Narrow the tree",
            "Widen the tree",
            "Unfold the answer",
            "Copy JupyterLab's address",
            "Stop or start watching",
            "Move in a list, a tree or a page",
            "Quit",
        ):
            assert description in text
        for internal in TEXTUAL_WORDS:
            assert internal not in text
        await pilot.press("escape")
        assert isinstance(app.screen, CourseMapScreen)


async def test_help_from_a_lesson(new_app: Callable[[], GpulabApp]) -> None:
    app = new_app()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("enter")
        await on_screen(pilot, app, LessonScreen)
        await pilot.press("question_mark")
        assert isinstance(app.screen, HelpScreen)
        await pilot.press("question_mark")
        assert isinstance(app.screen, LessonScreen)


def test_help_lists_every_binding_of_every_screen(new_app: Callable[[], GpulabApp]) -> None:
    app = new_app()
    groups = dict(help_groups(app, help_sections()))
    listed = {b.key for bindings in groups.values() for b in bindings}
    for _, classes in help_sections():
        for cls in classes:
            for binding in bindings_of(cls):
                assert binding.key in listed, (cls, binding)
    for binding in bindings_of(type(app)):
        assert binding.key in listed, binding
    own = {b.key for b in groups["Lesson"]}
    assert {
        "escape",
        "slash",
        "n",
        "p",
        "m",
        "g",
        "minus",
        "plus",
        "equals_sign",
        "r",
        "a",
        "less_than_sign",
        "greater_than_sign",
        "enter",
        "space",
        "left",
        "right",
        "shift+left",
        "shift+right",
    } <= own
    assert {"q", "question_mark", "f1", "ctrl+p"} <= {b.key for b in groups["Everywhere"]}


async def test_footers_show_at_most_six_keys(new_app: Callable[[], GpulabApp]) -> None:
    app = new_app()
    async with app.run_test(size=SIZE) as pilot:

        def shown() -> set[str]:
            return {
                b.binding.description for b in app.screen.active_bindings.values() if b.binding.show
            }

        assert shown() == {"Open", "Next exercise", "Search", "GPU", "Quit", "Help"}
        await pilot.press("enter")
        await on_screen(pilot, app, LessonScreen)
        assert shown() == {"Map", "Search", "Next lesson", "GPU", "Help"}
        await pilot.press("down", "down")  # a node with a claim: m measures it
        await pilot.pause()
        assert shown() == {"Map", "Search", "Next lesson", "Measure", "GPU", "Help"}
        app.navigator.open_exercise("vector-add")
        await pilot.pause()
        assert shown() == {"Back", "Check", "Jupyter", "Hint", "Solution", "Help"}


@pytest.mark.parametrize("size", [(80, 24), (100, 30)])
async def test_every_footer_shows_help(
    new_app: Callable[[], GpulabApp], size: tuple[int, int]
) -> None:
    app = new_app(has_gpu=False)
    async with app.run_test(size=size) as pilot:
        for opened in (None, "lesson", "exercise"):
            if opened == "lesson":
                app.navigator.open_lesson(
                    "kernels", "writing-kernels/where-it-runs/the-host-launches-the-kernels"
                )  # Measure shows too
                await on_screen(pilot, app, LessonScreen)
            elif opened == "exercise":
                app.navigator.open_exercise("vector-add")
                await on_screen(pilot, app, ExerciseScreen)
            await pilot.pause()
            keys = [
                key
                for key in app.screen.query("FooterKey")
                if getattr(key, "key", "") == "question_mark"
            ]
            assert keys and keys[0].region.width > 0
            assert keys[0].region.right <= size[0] - len("^p palette")


async def test_help_starts_with_how_to_study(new_app: Callable[[], GpulabApp]) -> None:
    """The app's manual (once a third of the roadmap lesson) opens the help."""
    from textual.widgets import Markdown

    app = new_app()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("question_mark")
        manual = app.screen.query_one("#help-manual", Markdown)
        assert manual.source.startswith("## How to study with gpulab")
        assert app.screen.query_one("#help-box").border_title == "Help"


def test_the_manual_names_only_commands_that_exist() -> None:
    import re

    from gpulab.cli import _parser
    from gpulab.tui.screens.help import MANUAL

    parser = _parser()
    import argparse

    commands = set(
        next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices
    )
    named = set(re.findall(r"`gpulab ([a-z]+)", MANUAL.read_text()))
    assert named and named <= commands, named - commands
