"""`?` and F1 help: generated from every screen's bindings; footers stay short."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from tui_helpers import SIZE, on_screen, plain

from gpulab.tui import GpulabApp
from gpulab.tui.app import HELP_GROUPS
from gpulab.tui.screens import CourseMapScreen, HelpScreen, LessonScreen
from gpulab.tui.screens.help import bindings_of, help_groups


@pytest.mark.parametrize("key", ["question_mark", "f1"])
async def test_help_opens_and_closes(new_app: Callable[[], GpulabApp], key: str) -> None:
    app = new_app()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press(key)
        assert isinstance(app.screen, HelpScreen)
        text = "\n".join(plain(s.content) for s in app.screen.query(".help-group").results())
        for group in ("Everywhere", "Course map", "Lesson", "Exercise", "GPU",
                      "Predicting a claim", "Search", "Help"):
            assert group in text
        for description in ("Fold all", "Unfold all", "Next lesson", "Previous lesson",
                            "Reveal a hint", "Command palette", "Search", "Open", "Measure",
                            "Measure without predicting", "Check", "Open in JupyterLab",
                            "Solution", "Open its lesson"):
            assert description in text
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
    groups = dict(help_groups(app, HELP_GROUPS))
    listed = {b.key for bindings in groups.values() for b in bindings}
    for _, classes in HELP_GROUPS:
        for cls in classes:
            for binding in bindings_of(cls):
                assert binding.key in listed, (cls, binding)
    for binding in bindings_of(type(app)):
        assert binding.key in listed, binding
    own = {b.key for b in groups["Lesson"]}
    assert {"escape", "slash", "n", "p", "m", "g", "minus", "plus", "equals_sign", "r"} <= own


async def test_footers_show_at_most_six_keys(new_app: Callable[[], GpulabApp]) -> None:
    app = new_app()
    async with app.run_test(size=SIZE) as pilot:

        def shown() -> set[str]:
            return {b.binding.description for b in app.screen.active_bindings.values()
                    if b.binding.show}

        assert shown() == {"Open", "Search", "GPU", "Quit", "Help"}
        await pilot.press("enter")
        await on_screen(pilot, app, LessonScreen)
        assert shown() == {"Map", "Search", "Next lesson", "GPU", "Help"}
        await pilot.press("down", "down")  # a node with a claim: m measures it
        await pilot.pause()
        assert shown() == {"Map", "Search", "Next lesson", "Measure", "GPU", "Help"}
        app.open_exercise("vector-add")
        await pilot.pause()
        assert shown() == {"Map", "Check", "Open in JupyterLab", "Reveal a hint", "Solution",
                           "Help"}
