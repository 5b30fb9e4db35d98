"""`/` search: this lesson first, then all lessons; enter jumps to the node."""

from __future__ import annotations

from collections.abc import Callable

from textual.widgets import Input, OptionList

from gpulab.tui import GpulabApp
from gpulab.tui.screens import CourseMapScreen, LessonScreen, SearchScreen
from gpulab.tui.widgets import MindmapTree
from helpers.tui import SIZE, on_screen, wait_for


async def test_search_from_lesson_lists_this_lesson_first_and_jumps(
    new_app: Callable[[], GpulabApp],
) -> None:
    app = new_app()
    async with app.run_test(size=SIZE) as pilot:
        app.navigator.open_lesson("kernels")
        await on_screen(pilot, app, LessonScreen)
        await pilot.press("slash")
        assert isinstance(app.screen, SearchScreen)
        await pilot.press(*"block")
        search = app.screen
        assert search.query_one(Input).value == "block"
        assert [h.lesson for h in search.hits] == ["kernels", "kernels", "basics"]
        assert search.query_one(OptionList).option_count == 3
        await pilot.press("down", "down", "enter")  # the hit in another lesson
        await wait_for(
            pilot, lambda: isinstance(app.screen, LessonScreen) and app.screen.lesson_id == "basics"
        )
        await pilot.pause()
        tree = app.screen.query_one(MindmapTree)
        assert tree.cursor_node is not None and tree.cursor_node.data is not None
        key = tree.cursor_node.data.key
        assert key == "basics-of-the-lab/the-machine/blocks-hold-several-warps"


async def test_search_jumps_into_a_folded_node(new_app: Callable[[], GpulabApp]) -> None:
    app = new_app()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("slash")
        assert isinstance(app.screen, SearchScreen)
        await pilot.press(*"grades")  # under "The tools", folded by <!-- markmap: fold -->
        assert len(app.screen.hits) == 1
        await pilot.press("enter")
        await on_screen(pilot, app, LessonScreen)
        await pilot.pause()
        tree = app.screen.query_one(MindmapTree)
        assert tree.cursor_node is not None and tree.cursor_node.data is not None
        assert tree.cursor_node.data.text == "gpulab check grades an exercise"
        assert "basics-of-the-lab/the-tools" in tree.expanded_keys()


async def test_search_notes_snippets_and_escape(new_app: Callable[[], GpulabApp]) -> None:
    app = new_app()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("slash", *"issued")
        search = app.screen
        assert isinstance(search, SearchScreen)
        [hit] = search.hits
        assert not hit.in_label and "issued for a whole warp" in hit.snippet
        await pilot.press("escape")
        assert isinstance(app.screen, CourseMapScreen)


async def test_search_with_no_match(new_app: Callable[[], GpulabApp]) -> None:
    app = new_app()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("slash", *"zzz", "enter")
        assert isinstance(app.screen, SearchScreen)
        assert app.screen.hits == []
