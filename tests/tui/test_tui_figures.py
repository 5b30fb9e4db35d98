"""Figures in the app: a node's figure drawn as a terminal plot with whose data it is, the
reason when it cannot be drawn, the learner's own results taking over from the recording,
the figures screen (f, the palette), and the claim card naming its probe's figures."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from msgspec.structs import replace
from textual.command import CommandPalette
from textual.pilot import Pilot
from textual.widgets import OptionList, Static

from gpulab.course import ProgressStore, load_course
from gpulab.figures import DIAGRAMS, FIGURES
from gpulab.probes import ProbeResult
from gpulab.tui import GpulabApp, make_app
from gpulab.tui.figures import placements, source_line
from gpulab.tui.screens import FiguresScreen, LessonScreen
from gpulab.tui.screens.figures import UNPLACED
from gpulab.tui.widgets import ClaimCard, FigureView, NodePane
from gpulab.tui.widgets.figure_view import FigurePlot, axes_text, key_text
from helpers.tui import (
    FOOTPRINT,
    PITFALL,
    build_figure_course,
    on_screen,
    plain,
    screen_text,
    wait_for,
)

SIZE = (120, 40)
COURSE = Path(__file__).resolve().parents[2] / "lessons"
"""The real course, with specs.toml and gpulab's H200 baseline beside it."""
RECORDED = "NVIDIA H200, gpulab's recording of "


@pytest.fixture
def figure_app(
    tmp_path: Path,
    store_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    recorded_h200: dict[str, ProbeResult],
) -> Callable[..., GpulabApp]:
    """Apps over the fixture course whose memory lesson ends with two figures."""
    lessons = build_figure_course(tmp_path / "course")
    monkeypatch.setenv("GPULAB_COURSE_DIR", str(lessons))

    def build(**options: object) -> GpulabApp:
        options.setdefault("has_gpu", False)
        return make_app(course=load_course(lessons), store=ProgressStore(store_path), **options)  # type: ignore[arg-type]

    return build


async def _node(app: GpulabApp, pilot: Pilot[None], key: str) -> NodePane:
    app.navigator.open_lesson("memory", key)
    await on_screen(pilot, app, LessonScreen)
    pane = app.screen.query_one(NodePane)
    await wait_for(pilot, lambda: pane.node is not None and pane.node.key == key)
    await pilot.pause()
    return pane


async def test_a_node_with_a_figure_shows_its_plot_and_whose_data(
    figure_app: Callable[..., GpulabApp],
) -> None:
    app = figure_app()
    async with app.run_test(size=SIZE) as pilot:
        pane = await _node(app, pilot, FOOTPRINT)
        assert pane.figure_ids() == ["latency-footprint"]
        view = pane.query_one(FigureView)
        assert view.data is not None and view.data.drawable
        plot = view.query_one(FigurePlot)
        assert plot.region.height == 18 and plot.region.width > 40
        assert view.border_title == "▦ figure latency-footprint"
        pane.scroll_to_widget(view, animate=False)
        await wait_for(pilot, lambda: "1 GiB" in screen_text(app))  # drawn, scrolled to
        shown = screen_text(app)
        assert "Latency against footprint: the L1, L2 and HBM plateaus" in shown
        assert "16 KiB" in shown and "64 MiB" in shown  # the x axis' own ticks
        assert "↑ latency (cycles per load)   → footprint" in shown
        assert "L2 size 60 MiB" in shown  # a reference line, in the key
        about = view.query_one(".figure-about", Static)
        assert (
            f"Data: {RECORDED}2026-12-03, 2026-12-07. `gpulab probe run pointer_chase_latency` "
            "on a GPU draws it from yours." in plain(about.content, 200)
        )
        pane.scroll_end(animate=False)
        await wait_for(pilot, lambda: f"Data: {RECORDED}" in screen_text(app))
        # f draws it full-size, among the others
        await pilot.press("f")
        await on_screen(pilot, app, FiguresScreen)
        screen = app.screen
        assert isinstance(screen, FiguresScreen) and screen.figure_id == "latency-footprint"


async def test_a_figure_whose_data_is_missing_says_why(
    figure_app: Callable[..., GpulabApp],
) -> None:
    """The fixture course has no H200 baseline beside it: the pitfall figure cannot be drawn."""
    app = figure_app()
    async with app.run_test(size=SIZE) as pilot:
        pane = await _node(app, pilot, PITFALL)
        view = pane.query_one(FigureView)
        assert view.data is not None and not view.data.drawable
        assert not view.query(FigurePlot)
        pane.scroll_to_widget(view, animate=False)
        await wait_for(pilot, lambda: "Not drawn: gpulab's H200 baseline" in screen_text(app))
        assert "The warm-cache pitfall" in screen_text(app)
        why = view.query_one(".figure-missing", Static)
        assert plain(why.content, 200).strip() == (
            "Not drawn: gpulab's H200 baseline (reference/h200-baseline.json beside the "
            "lessons) is not here"
        )


async def test_without_a_recording_a_figure_says_what_to_run(
    figure_app: Callable[..., GpulabApp], no_recordings: None
) -> None:
    app = figure_app()
    async with app.run_test(size=SIZE) as pilot:
        pane = await _node(app, pilot, FOOTPRINT)
        data = pane.query_one(FigureView).data
        assert data is not None and not pane.query(FigurePlot)
        assert data.missing == (
            "no result of pointer_chase_latency here, and none recorded: "
            "run `gpulab probe run pointer_chase_latency` on a GPU"
        )


def _own(result: ProbeResult) -> ProbeResult:
    """The recorded result as if the learner's GPU had measured it."""
    return replace(result, recorded=None, device="NVIDIA Test GPU", started="2026-12-24T10:00:00Z")


async def test_the_learners_own_results_draw_the_figure(
    figure_app: Callable[..., GpulabApp], recorded_h200: dict[str, ProbeResult]
) -> None:
    app = figure_app()
    async with app.run_test(size=SIZE) as pilot:
        pane = await _node(app, pilot, FOOTPRINT)
        view = pane.query_one(FigureView)
        assert view.data is not None and view.data.source.startswith(RECORDED)
        app.results.keep(recorded_h200["pointer_chase_latency"])  # a recording: not theirs
        assert app.measured == {}
        app.results.keep(_own(recorded_h200["pointer_chase_latency"]))
        await wait_for(
            pilot, lambda: view.data is not None and view.data.source.startswith("your GPU")
        )
        assert view.data is not None
        assert view.data.source == "your GPU (NVIDIA Test GPU), measured 2026-12-24"
        assert source_line(view.data) == ("Data: your GPU (NVIDIA Test GPU), measured 2026-12-24.")
        await pilot.pause()
        assert view.query(FigurePlot)


async def test_the_figures_screen_lists_every_figure_by_lesson(
    figure_app: Callable[..., GpulabApp],
) -> None:
    app = figure_app()
    async with app.run_test(size=SIZE) as pilot:
        app.navigator.open_lesson("memory")
        await on_screen(pilot, app, LessonScreen)
        await pilot.press("f")  # no figure on the root: the lesson's first
        await on_screen(pilot, app, FiguresScreen)
        screen = app.screen
        assert isinstance(screen, FiguresScreen)
        assert screen.figure_id == "latency-footprint"
        listed = screen.query_one("#figure-list", OptionList)
        options = [listed.get_option_at_index(i) for i in range(listed.option_count)]
        ids = [o.id for o in options if o.id is not None]
        assert len(ids) == len(FIGURES) + len(DIAGRAMS)
        assert set(ids) == set(FIGURES) | set(DIAGRAMS)  # the diagrams too, none placed here
        headings = [str(o.prompt) for o in options if o.disabled]
        assert headings == ["Day 1 · Memory hierarchy", UNPLACED]
        assert ids[:2] == ["latency-footprint", "warm-cache-pitfall"]
        assert "(not drawn)" in str(options[2].prompt)  # the pitfall: no baseline
        assert str(screen.places.content) == "In the lessons: Memory hierarchy"
        # the next figure, then full-size and back
        await pilot.press("n")
        assert screen.figure_id == "warm-cache-pitfall"
        await pilot.press("down")
        await pilot.pause()
        assert screen.figure_id == ids[2]
        await pilot.press("enter")
        await pilot.pause()
        assert screen.full_size and listed.styles.display == "none"
        view = screen.query_one("#figure-view", FigureView)
        assert view.query_one(FigurePlot).region.height > 20
        await pilot.press("escape")
        assert not screen.full_size and listed.has_focus
        await pilot.press("escape")
        await on_screen(pilot, app, LessonScreen)


async def test_the_palette_opens_a_figure(figure_app: Callable[..., GpulabApp]) -> None:
    app = figure_app()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("ctrl+p")
        await on_screen(pilot, app, CommandPalette)
        await pilot.press(*"the roofline, measured")

        def first() -> str:
            options = app.screen.query_one("CommandList", OptionList)
            return str(options.get_option_at_index(0).prompt) if options.option_count else ""

        await wait_for(pilot, lambda: "Figure: The roofline" in first())
        await pilot.press("enter")  # the first hit, highlighted
        await on_screen(pilot, app, FiguresScreen)
        screen = app.screen
        assert isinstance(screen, FiguresScreen) and screen.figure_id == "roofline"


async def test_the_palette_opens_a_diagram(figure_app: Callable[..., GpulabApp]) -> None:
    app = figure_app()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("ctrl+p")
        await on_screen(pilot, app, CommandPalette)
        await pilot.press(*"memory ladder")

        def first() -> str:
            options = app.screen.query_one("CommandList", OptionList)
            return str(options.get_option_at_index(0).prompt) if options.option_count else ""

        await wait_for(pilot, lambda: "Diagram: The memory ladder" in first())
        await pilot.press("enter")
        await on_screen(pilot, app, FiguresScreen)
        screen = app.screen
        assert isinstance(screen, FiguresScreen) and screen.figure_id == "memory-ladder"


async def test_a_claim_card_names_the_figures_its_probe_feeds(
    figure_app: Callable[..., GpulabApp],
) -> None:
    app = figure_app(nvml_backend=None)
    async with app.run_test(size=SIZE) as pilot:
        pane = await _node(app, pilot, "memory-hierarchy/levels/hbm-is-far-away")
        card = pane.query_one(ClaimCard)
        assert card.claim.probe == "pointer_chase_latency"
        assert (
            "figures  ▦ Load latency, level by level; Latency against footprint: the L1, "
            "L2 and HBM plateaus  (f opens the figures)"
        ) in plain(card.render(), 200)
        await pilot.press("f")
        await on_screen(pilot, app, FiguresScreen)
        screen = app.screen
        assert isinstance(screen, FiguresScreen) and screen.figure_id == "latency-ladder"


def test_placements_follow_the_lessons(tmp_path: Path) -> None:
    course = load_course(build_figure_course(tmp_path))
    found = placements(course)
    assert set(found) == set(FIGURES)
    assert found["latency-footprint"] == ["memory"] == found["warm-cache-pitfall"]
    assert found["roofline"] == []


@pytest.fixture
def course_figures(recorded_h200: dict[str, ProbeResult]) -> Iterator[Callable[[str], object]]:
    from gpulab.tui.figures import FigureSource

    source = FigureSource(load_course(COURSE))
    yield lambda figure_id: source.data(figure_id, {})


@pytest.mark.parametrize("figure_id", list(FIGURES))
def test_every_figure_of_the_course_draws(
    figure_id: str, course_figures: Callable[[str], object]
) -> None:
    """Each of the course's figures, from the recording and the baseline, draws with plotext
    (twice: plotext's build changes what it builds, so each frame draws afresh)."""
    from textual_plotext import Plot

    from gpulab.figures import FigureData
    from gpulab.tui.widgets.figure_view import draw

    data = course_figures(figure_id)
    assert isinstance(data, FigureData) and data.drawable, data
    frames, plot = [], Plot()
    for _ in range(2):
        draw(plot, data)
        plot.plotsize(80, 20)
        frames.append(plot.uncolorize(plot.build()))
    assert frames[0] == frames[1] and frames[0].count("\n") == 20
    assert axes_text(data).plain and key_text(data).plain
