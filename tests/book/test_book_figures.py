"""Figures in the book: an inline SVG ``<figure>`` where the lesson places it, captioned
with whose data it is.

A one-lesson course (the real specs.toml and H200 baseline beside it) is built
with the real builder, so the test stays fast; the figures come from gpulab's
H200 recording, as in the full book.
"""

from __future__ import annotations

import re
import shutil
import xml.etree.ElementTree as ET
from html.parser import HTMLParser
from pathlib import Path

import pytest

from gpulab.book import build_book, check_course
from gpulab.book.figures import BookFigures
from gpulab.course import CourseError, load_course
from gpulab.course.tree import FigureMark
from gpulab.figures import FIGURE_IDS, FIGURES

ROOT = Path(__file__).resolve().parents[2]

LESSON = """---
title: Figures
day: 1
objectives: [Read a figure]
---
# Figures

- Sweep the footprint

  Before the figure.

  <!-- figure: latency-footprint -->

  After the figure.
- The same figure again <!-- figure: latency-footprint -->
- The pitfall

  <!-- figure: warm-cache-pitfall -->
- Check yourself: which level is slowest?

  <!-- figure: latency-ladder -->

  Answer: HBM.
"""


def _course(tmp_path: Path, lesson: str = LESSON) -> Path:
    folder = tmp_path / "lessons"
    folder.mkdir()
    (folder / "course.toml").write_text(
        '[course]\ntitle = "C"\nplan_days = 1\n\n[[lessons]]\nid = "figs"\nday = 1\n'
        'title = "Figures"\n',
        encoding="utf-8",
    )
    (folder / "figs.md").write_text(lesson, encoding="utf-8")
    shutil.copyfile(ROOT / "lessons" / "specs.toml", folder / "specs.toml")
    shutil.copytree(ROOT / "lessons" / "reference", folder / "reference")
    return folder


class _Ids(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.ids: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.ids += [v for k, v in attrs if k == "id" and v]


@pytest.fixture(scope="module")
def page(tmp_path_factory: pytest.TempPathFactory) -> str:
    tmp = tmp_path_factory.mktemp("figures")
    result = build_book(load_course(_course(tmp)), tmp / "book")
    return (result.out / "lessons" / "figs.html").read_text(encoding="utf-8")


def test_the_lesson_page_holds_each_placed_figure_with_caption_and_source(page: str) -> None:
    blocks = re.findall(
        r'<figure class="probe-figure" id="([^"]+)">\n(<svg .*?</svg>)\s*'
        r"<figcaption>(.*?)</figcaption></figure>",
        page,
        re.DOTALL,
    )
    assert [b[0] for b in blocks] == [
        "figure-latency-footprint",
        "figure-latency-footprint-2",
        "figure-warm-cache-pitfall",
        "figure-latency-ladder",
    ]
    for _, svg, _caption in blocks:
        ET.fromstring(svg)  # well-formed where it stands
    caption = blocks[0][2]
    assert FIGURES["latency-footprint"].title in caption
    assert "NVIDIA H200, gpulab&#x27;s recording of 2026-12-03" in caption
    assert "gpulab probe run pointer_chase_latency" in caption
    assert "gpulab&#x27;s baseline run of 2026-12-02" in blocks[2][2]


def test_a_figure_stands_where_its_marker_does(page: str) -> None:
    before, figure, after = (
        page.index(t)
        for t in ("Before the figure.", 'id="figure-latency-footprint"', "After the figure.")
    )
    assert before < figure < after
    # Placed before a "Check yourself" answer, it stays outside the folded answer.
    ladder, fold = page.index('id="figure-latency-ladder"'), page.index('<details class="answer"')
    assert ladder < fold


def test_ids_on_the_page_stay_unique_with_a_figure_placed_twice(page: str) -> None:
    reader = _Ids()
    reader.feed(page)
    repeated = {i for i in reader.ids if reader.ids.count(i) > 1}
    assert not repeated, sorted(repeated)[:10]


def test_a_figure_without_data_says_why_instead_of_drawing(tmp_path: Path) -> None:
    course = load_course(_course(tmp_path))
    placer = BookFigures(course, recorded={}).page()
    html = placer(FigureMark("stride-sweep", 1))
    assert 'class="probe-figure missing"' in html and "<svg" not in html
    assert "not drawn" in html and "gpulab probe run stride_sweep" in html


def test_an_unknown_figure_keeps_the_book_from_being_built(tmp_path: Path) -> None:
    course = load_course(_course(tmp_path, LESSON + "- More\n\n  <!-- figure: nope -->\n"))
    problems = [p for p in check_course(course) if "unknown figure" in p.message]
    lint = [p for p in course.lint(figures=FIGURE_IDS) if "unknown figure" in p.message]
    assert problems == lint and len(problems) == 1
    assert problems[0].line == LESSON.count("\n") + 3
    with pytest.raises(CourseError):
        build_book(course, tmp_path / "book")
