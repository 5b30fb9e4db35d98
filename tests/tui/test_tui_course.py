"""Every module of the real course opens in the app: title, tree, notes, claim cards."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.widgets import Markdown

from gpulab.course import ProgressStore, load_course
from gpulab.tui import make_app
from gpulab.tui.screens import LessonScreen
from gpulab.tui.widgets import ClaimCard, MindmapTree
from helpers.tui import plain, wait_for

LESSONS = Path(__file__).resolve().parents[2] / "lessons"
COURSE = load_course(LESSONS)


@pytest.mark.parametrize("lesson_id", [e.id for e in COURSE.entries])
async def test_each_module_opens(lesson_id: str, store_path: Path) -> None:
    course = load_course(LESSONS)
    lesson = course.lesson(lesson_id)
    app = make_app(course=course, store=ProgressStore(store_path))
    async with app.run_test(size=(120, 40)) as pilot:
        app.navigator.open_lesson(lesson_id)
        await wait_for(
            pilot, lambda: isinstance(app.screen, LessonScreen) and app.screen.is_mounted
        )
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, LessonScreen)
        assert screen.title == lesson.title
        tree = screen.query_one(MindmapTree)
        assert str(tree.root.label).startswith(lesson.root.text)
        assert tree.root.children, "the root shows its branches"
        # The root's notes are the lesson's introduction.
        notes = screen.query_one("#notes", Markdown).source
        assert lesson.root.notes and lesson.root.notes[0].markdown.split()[0] in notes
        # Every claimed node shows its claim card.
        claimed = [node for node in lesson.nodes if node.claims]
        for node in claimed[:3]:
            screen.reveal(node.key)
            await pilot.pause()
            if screen.pane.answer_folded:  # a question's claims come with its answer
                assert not screen.query(ClaimCard), "a card must not give the answer away"
                screen.pane.show_answer()
                await pilot.pause()
            card = screen.query_one(ClaimCard)
            assert card.claim.id == node.claims[0]
            assert course.claims[node.claims[0]].probe in plain(card.render())
        # The last node can be reached too: the whole tree is there.
        screen.reveal(lesson.nodes[-1].key)
        await pilot.pause()
        assert tree.cursor_node is not None and tree.cursor_node.data is lesson.nodes[-1]
