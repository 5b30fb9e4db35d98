"""The lesson screen: tree, notes, claim cards, folds, next/previous, errors."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from textual.pilot import Pilot
from textual.widgets import Markdown

from gpulab.course import Course
from gpulab.tui import GpulabApp
from gpulab.tui.measure import find_out
from gpulab.tui.screens import CourseMapScreen, LessonScreen
from gpulab.tui.widgets import ClaimCard, MindmapTree, NodePane
from gpulab.tui.widgets.claim_card import NOT_MEASURED
from gpulab.tui.widgets.mindmap import initially_expanded
from gpulab.tui.widgets.node_pane import ANSWER_FOLDED
from helpers.tui import SIZE, plain, screen_text, wait_for


async def _open(app: GpulabApp, pilot: Pilot[None], lesson_id: str) -> LessonScreen:
    app.navigator.open_lesson(lesson_id)
    await wait_for(pilot, lambda: isinstance(app.screen, LessonScreen) and app.screen.is_mounted)
    await pilot.pause()
    screen = app.screen
    assert isinstance(screen, LessonScreen)
    return screen


def _notes(screen: LessonScreen) -> str:
    return screen.query_one("#notes", Markdown).source


async def test_lesson_header_tree_and_notes(new_app: Callable[[], GpulabApp]) -> None:
    app = new_app()
    async with app.run_test(size=SIZE) as pilot:
        screen = await _open(app, pilot, "basics")
        assert screen.title == "Basics of the lab"
        assert screen.sub_title == "Day 1 · lesson 1 of 4"
        tree = screen.query_one(MindmapTree)
        assert tree.has_focus
        assert tree.cursor_node is tree.root
        await pilot.pause()
        assert "The lab teaches AI infrastructure" in _notes(screen)
        assert "Find your way around the lab" in _notes(screen)
        await pilot.press("down", "down")
        node = tree.cursor_node
        assert node is not None and node.data is not None
        assert node.data.claims == ("warp_size",)
        assert "◆ warp_size" in str(node.label)
        await pilot.pause()
        assert "```python" in _notes(screen)
        card = screen.query_one(ClaimCard)
        assert card.claim.id == "warp_size"
        assert card.border_title == "◆ claim warp_size"


async def test_claim_card_content(new_app: Callable[[], GpulabApp]) -> None:
    app = new_app()
    async with app.run_test(size=(140, 40)) as pilot:
        screen = await _open(app, pilot, "memory")
        screen.reveal("memory-hierarchy/levels/hbm-is-far-away")
        await pilot.pause()
        card = screen.query_one(ClaimCard)
        text = plain(card.render())
        assert "A load that goes to HBM takes roughly 600-860 cycles" in text
        assert "600–860 cycles" in text
        assert "A100, H100, H200" in text
        assert "https://github.com/te42kyfo/gpu-benches" in text
        assert "pointer_chase_latency" in text
        assert "| level | latency |" in _notes(screen)
        # before m: "press m" where the probe can run, else why not, found out in a thread
        missing = find_out("pointer_chase_latency")
        if missing is None:
            assert NOT_MEASURED in text
        else:
            await wait_for(pilot, lambda: card.state.missing != "", timeout=30)
            await pilot.pause()
            reason = " ".join(missing.message.split())
            assert f"cannot be measured here: {reason}" in " ".join(plain(card.render()).split())


async def test_initial_folds(course: Course) -> None:
    basics = course.lesson("basics")
    expanded = initially_expanded(basics)
    assert "basics-of-the-lab/the-machine" in expanded
    assert "basics-of-the-lab/the-tools" not in expanded  # <!-- markmap: fold -->
    memory = course.lesson("memory")
    # initialExpandLevel: 2 shows the root and its children, folded
    assert initially_expanded(memory) == {"memory-hierarchy"}


async def test_fold_and_unfold_all(new_app: Callable[[], GpulabApp]) -> None:
    app = new_app()
    async with app.run_test(size=SIZE) as pilot:
        screen = await _open(app, pilot, "basics")
        tree = screen.query_one(MindmapTree)
        await pilot.press("plus")
        assert set(tree.expanded_keys()) == {
            "basics-of-the-lab",
            "basics-of-the-lab/the-machine",
            "basics-of-the-lab/the-machine/blocks-hold-several-warps",
            "basics-of-the-lab/the-tools",
        }
        await pilot.press("down", "down", "down", "minus")
        assert tree.expanded_keys() == ["basics-of-the-lab"]
        assert tree.cursor_node is not None and tree.cursor_node.line >= 0
        await pilot.press("equals_sign")
        assert len(tree.expanded_keys()) == 4


async def test_next_and_previous_lesson(new_app: Callable[[], GpulabApp]) -> None:
    app = new_app()
    async with app.run_test(size=SIZE) as pilot:
        await _open(app, pilot, "basics")
        await pilot.press("n")
        assert isinstance(app.screen, LessonScreen) and app.screen.lesson_id == "memory"
        await pilot.press("n", "n")
        assert isinstance(app.screen, LessonScreen) and app.screen.lesson_id == "broken"
        await pilot.press("n")  # the last lesson: stays, says so
        assert isinstance(app.screen, LessonScreen) and app.screen.lesson_id == "broken"
        await pilot.press("p")
        assert isinstance(app.screen, LessonScreen) and app.screen.lesson_id == "kernels"
        assert len(app.screen_stack) == 2  # lessons replace each other above the map
        await pilot.press("p", "p", "p")
        assert isinstance(app.screen, LessonScreen) and app.screen.lesson_id == "basics"
        await pilot.press("escape")
        assert isinstance(app.screen, CourseMapScreen)


async def test_broken_lesson_shows_error_and_app_keeps_working(
    new_app: Callable[[], GpulabApp],
) -> None:
    app = new_app()
    async with app.run_test(size=SIZE) as pilot:
        screen = await _open(app, pilot, "broken")
        assert not screen.query(MindmapTree)
        text = str(screen.query_one("#lesson-error").render())
        assert "This lesson cannot be opened." in text
        assert "fixture_course/broken.md:10" in text or "broken.md:10" in text
        await pilot.press("r")  # retry: still broken, still an error panel
        assert screen.query("#lesson-error")
        await pilot.press("minus", "plus", "p")  # fold keys do nothing; p moves on
        assert isinstance(app.screen, LessonScreen) and app.screen.lesson_id == "kernels"
        assert app.screen.query_one(MindmapTree)


async def test_selecting_nodes_updates_pane(new_app: Callable[[], GpulabApp]) -> None:
    app = new_app()
    async with app.run_test(size=SIZE) as pilot:
        screen = await _open(app, pilot, "kernels")
        await pilot.press("down", "down")
        pane = screen.query_one(NodePane)
        assert pane.node is not None and pane.node.text == "A grid of blocks"
        await pilot.pause()
        assert "__global__" in _notes(screen)
        assert not screen.query(ClaimCard)


CPUS_QUESTION = "writing-kernels/check-yourself/how-many-cpus-can-launch-kernels-here"
WAIT_QUESTION = "writing-kernels/check-yourself/does-a-kernel-launch-wait-for-the-kernel"


async def test_check_yourself_answers_stay_folded_until_asked(
    new_app: Callable[..., GpulabApp],
) -> None:
    app = new_app()
    async with app.run_test(size=(100, 40)) as pilot:
        screen = await _open(app, pilot, "kernels")
        screen.reveal(CPUS_QUESTION)
        await pilot.pause()
        pane = screen.query_one(NodePane)
        drawn = screen_text(app)
        assert "How many CPUs can launch kernels here?" in drawn
        assert "every CPU the host has online" not in drawn  # the answer is folded
        assert ANSWER_FOLDED.split(":")[0] in drawn
        assert not screen.query(ClaimCard)  # a measured value would give it away
        assert pane.answer_folded and "a" in _footer_keys(screen)
        assert "m" not in _footer_keys(screen)  # nor may measuring, before the answer
        await pilot.press("a")
        await wait_for(pilot, lambda: bool(screen.query(ClaimCard)))
        await pilot.pause()
        drawn = screen_text(app)
        assert "Answer: every CPU the host has online" in drawn
        card = screen.query_one(ClaimCard)
        answer = screen.query_one("#answer")
        assert card.region.y > answer.region.y  # the card comes after the answer, not above
        assert "a" not in _footer_keys(screen) and "m" in _footer_keys(screen)
        screen.reveal(WAIT_QUESTION)  # another question: folded again
        await pilot.pause()
        assert "The launch returns at once" not in screen_text(app)
        screen.reveal(CPUS_QUESTION)  # the one asked for stays open this session
        await pilot.pause()
        assert "every CPU the host has online" in screen_text(app)


def _footer_keys(screen: LessonScreen) -> set[str]:
    return {
        key
        for key, active in screen.active_bindings.items()
        if active.binding.show and active.enabled
    }


async def test_the_split_is_resizable_and_remembered(
    new_app: Callable[..., GpulabApp], state_dir: Path
) -> None:
    app = new_app()
    async with app.run_test(size=(100, 30)) as pilot:
        screen = await _open(app, pilot, "kernels")
        tree = screen.query_one(MindmapTree)
        before = tree.region.width
        assert before == 45
        await pilot.press("greater_than_sign", "greater_than_sign")
        await pilot.pause()
        assert tree.region.width == 55 and screen.query_one(NodePane).region.x >= 55
        await pilot.press("less_than_sign")
        await pilot.pause()
        assert tree.region.width == 50
    assert json.loads((state_dir / "app.json").read_text()) == {"tree_width": 50}
    again = new_app()
    async with again.run_test(size=(100, 30)) as pilot:
        screen = await _open(again, pilot, "memory")
        assert screen.query_one(MindmapTree).region.width == 50


async def test_long_labels_and_code_blocks_can_be_read(new_app: Callable[..., GpulabApp]) -> None:
    app = new_app()
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await _open(app, pilot, "kernels")
        screen.reveal("writing-kernels/where-it-runs/the-host-launches-the-kernels")
        await pilot.pause()
        tree = screen.query_one(MindmapTree)
        label = "The host launches the kernels  ◆ host_cpus"
        assert label not in screen_text(app)  # cut at the pane's edge
        title = plain(screen.query_one("#node-title").content)
        assert title.strip() == "The host launches the kernels"  # in full beside the tree
        await pilot.press("shift+right", "shift+right")
        await pilot.pause()
        assert tree.scroll_x > 0 and "◆ host_cpus" in screen_text(app)
        rows = screen_text(app).splitlines()[tree.region.y : tree.region.bottom]
        inside = [row[tree.region.x : tree.region.right - 1] for row in rows]  # not its border
        assert not any(glyph in row for row in inside for glyph in "▁▂▃▄▅▆▇█▏▎▍▌▋▊▉")
        await pilot.press("shift+left", "shift+left")
        assert tree.scroll_x == 0

        screen.reveal("writing-kernels/launching/a-grid-of-blocks")
        await pilot.pause()
        pane = screen.query_one(NodePane)
        fence = pane.query_one("MarkdownFence")
        assert fence.region.right <= pane.region.right
        drawn = " ".join(screen_text(app).replace("▎", " ").split())
        for piece in ("__global__ void add(float", "x[threadIdx.x] += 1; }"):
            assert piece in drawn  # the line wraps: nothing is cut off at the right
