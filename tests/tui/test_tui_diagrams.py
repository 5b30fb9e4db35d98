"""Diagrams in the app: a node's diagram drawn as boxes with where its facts come from, the
reason when it cannot be drawn, the figures screen listing and drawing diagrams (f), each
of the course's diagrams drawn in a terminal, and a snapshot of a node with one.

Update the snapshot with ``pytest tests/tui/test_tui_diagrams.py --snapshot-update`` and
look at it before committing it.
"""

from __future__ import annotations

import io
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from rich.console import Console
from textual.pilot import Pilot
from textual.widgets import OptionList, Static

from gpulab.course import ProgressStore, load_course
from gpulab.figures import DIAGRAMS, FIGURES
from gpulab.probes import ProbeResult
from gpulab.tui import GpulabApp, make_app
from gpulab.tui.diagrams import DiagramSource, diagrams_of
from gpulab.tui.screens import FiguresScreen, LessonScreen
from gpulab.tui.widgets import FigureView, NodePane
from gpulab.tui.widgets.diagram_view import DiagramView, draw
from helpers.tui import FIXTURE, on_screen, plain, screen_text, wait_for

SIZE = (120, 45)
COURSE = Path(__file__).resolve().parents[2] / "lessons"
"""The real course, with specs.toml beside it."""
RECORDED = "NVIDIA H200, gpulab's recording of 2026-12-03"

DIAGRAM_NODES = """
## Pictures

- The ladder at a glance

  Five levels, each larger and slower than the one above.

  <!-- figure: memory-ladder -->

- The sixty days <!-- figure: course-timeline -->
"""
"""Two nodes with diagrams, added to the fixture's memory lesson: the ladder, which the
recording and specs.toml draw, and the timeline, which needs a roadmap lesson the fixture
course lacks."""

LADDER = "memory-hierarchy/pictures/the-ladder-at-a-glance"
DAYS = "memory-hierarchy/pictures/the-sixty-days"


@pytest.fixture
def diagram_lessons(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, recorded_h200: dict[str, ProbeResult]
) -> Path:
    """The fixture course with the real specs.toml and the two diagram nodes."""
    lessons = tmp_path / "course" / "lessons"
    shutil.copytree(FIXTURE, lessons)
    shutil.copyfile(COURSE / "specs.toml", lessons / "specs.toml")
    shutil.copytree(COURSE / "reference", lessons / "reference")
    with (lessons / "memory.md").open("a", encoding="utf-8") as lesson:
        lesson.write(DIAGRAM_NODES)
    monkeypatch.setenv("GPULAB_COURSE_DIR", str(lessons))
    return lessons


@pytest.fixture
def diagram_app(diagram_lessons: Path, store_path: Path) -> Callable[[], GpulabApp]:
    return lambda: make_app(
        course=load_course(diagram_lessons), store=ProgressStore(store_path), has_gpu=False
    )


async def _node(app: GpulabApp, pilot: Pilot[None], key: str) -> NodePane:
    app.navigator.open_lesson("memory", key)
    await on_screen(pilot, app, LessonScreen)
    pane = app.screen.query_one(NodePane)
    await wait_for(pilot, lambda: pane.node is not None and pane.node.key == key)
    await pilot.pause()
    return pane


async def test_a_node_with_a_diagram_shows_its_boxes_and_where_they_come_from(
    diagram_app: Callable[[], GpulabApp],
) -> None:
    app = diagram_app()
    async with app.run_test(size=SIZE) as pilot:
        pane = await _node(app, pilot, LADDER)
        assert pane.figure_ids() == ["memory-ladder"]
        view = pane.query_one(DiagramView)
        assert view.data is not None and view.data.drawable
        assert view.border_title == "◇ diagram memory-ladder"
        assert not pane.query(FigureView)
        pane.scroll_to_widget(view, animate=False)
        await wait_for(pilot, lambda: "663.4 cycles" in screen_text(app))
        shown = screen_text(app)
        assert "The memory ladder of an H200" in shown
        assert "Shared memory: one block's" in shown and "28.6 cycles, 14.4 ns per load" in shown
        assert "╭" in shown and "╰" in shown  # boxes, in box characters
        about = plain(view.query_one(".diagram-about", Static).content, 300)
        assert f"Data: {RECORDED}, 2026-12-07; specs.toml: gpus.h200, topics.sm-units." in about


async def test_a_diagram_that_cannot_be_drawn_says_why(
    diagram_app: Callable[[], GpulabApp],
) -> None:
    app = diagram_app()
    async with app.run_test(size=SIZE) as pilot:
        pane = await _node(app, pilot, DAYS)
        view = pane.query_one(DiagramView)
        assert view.data is not None and not view.data.drawable
        assert not view.query(".diagram-drawing")
        why = plain(view.query_one(".diagram-missing", Static).content, 200).strip()
        assert why == "Not drawn: the course has no readable roadmap lesson"


async def test_f_opens_the_figures_at_the_diagram_and_steps_through_them(
    diagram_app: Callable[[], GpulabApp],
) -> None:
    app = diagram_app()
    async with app.run_test(size=SIZE) as pilot:
        await _node(app, pilot, LADDER)
        await pilot.press("f")
        await on_screen(pilot, app, FiguresScreen)
        screen = app.screen
        assert isinstance(screen, FiguresScreen) and screen.figure_id == "memory-ladder"
        assert screen.diagram_view.display and not screen.view.display
        data = screen.diagram_view.data
        assert data is not None and data.id == "memory-ladder"
        listed = screen.query_one("#figure-list", OptionList)
        options = [listed.get_option_at_index(i) for i in range(listed.option_count)]
        ids = [o.id for o in options if o.id is not None]
        assert set(ids) == set(FIGURES) | set(DIAGRAMS) and len(ids) == len(set(ids))
        assert ids[:2] == ["course-timeline", "memory-ladder"]  # the memory lesson's, first
        assert str(options[ids.index("memory-ladder") + 1].prompt).startswith("◇ The memory")
        assert "(not drawn)" in str(options[1].prompt)  # the timeline: no roadmap
        await pilot.press("n")
        assert screen.figure_id == ids[2] and screen.view.display
        assert not screen.diagram_view.display
        await pilot.press("p")
        assert screen.figure_id == "memory-ladder" and screen.diagram_view.display
        await pilot.press("enter")
        await pilot.pause()
        assert screen.full_size and listed.styles.display == "none"
        await pilot.press("escape", "escape")
        await on_screen(pilot, app, LessonScreen)


def test_the_app_builds_a_courses_diagrams_once(diagram_lessons: Path) -> None:
    course = load_course(diagram_lessons)
    source = diagrams_of(course)
    assert diagrams_of(course) is source
    assert source.data("memory-ladder") is source.data("memory-ladder")
    assert not diagrams_of(None).data("course-timeline").drawable


@pytest.mark.parametrize("diagram_id", list(DIAGRAMS))
def test_every_diagram_of_the_course_draws_in_a_terminal(
    diagram_id: str, recorded_h200: dict[str, ProbeResult]
) -> None:
    data = DiagramSource(load_course(COURSE)).data(diagram_id)
    assert data.drawable, data.missing
    wide = plain(draw(data), 220)
    for box in data.boxes():
        assert box.label in wide, box.label
    for link in data.links:
        assert not link.label or link.label in wide
    for width in (40, 72):  # narrow: every line within the width, nothing lost off the edge
        console = Console(width=width, file=io.StringIO(), color_system=None)
        with console.capture() as capture:
            console.print(draw(data))
        assert all(len(line) <= width for line in capture.get().splitlines())


def test_node_diagram_snapshot(
    snap_compare: Callable[..., bool], diagram_app: Callable[[], GpulabApp]
) -> None:
    """A node with a diagram: its notes, then the ladder with its caption and source."""

    async def run_before(pilot: Pilot[None]) -> None:
        lab = pilot.app
        assert isinstance(lab, GpulabApp)
        lab.navigator.open_lesson("memory", LADDER)
        await on_screen(pilot, lab, LessonScreen)
        await wait_for(pilot, lambda: lab.screen.query(DiagramView))
        await wait_for(pilot, lambda: "28.6 cycles, 14.4 ns per load" in screen_text(lab))
        lab.screen.query_one(NodePane).scroll_home(animate=False)
        await pilot.app.workers.wait_for_complete()
        await pilot.pause()
        await pilot.wait_for_scheduled_animations()

    assert snap_compare(diagram_app(), terminal_size=SIZE, run_before=run_before)
