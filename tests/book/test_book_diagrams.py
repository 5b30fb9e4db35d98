"""Diagrams in the book: an inline SVG ``<figure>`` where a lesson's marker places one,
captioned with where its facts come from, its words in the search index.

Each lesson of the real course that places a diagram is rendered with the real
outline and placer; a small course is built with the real builder to see a
whole page, a diagram placed twice, one that cannot be drawn, and search.
"""

from __future__ import annotations

import json
import re
import shutil
import xml.etree.ElementTree as ET
from html import escape
from html.parser import HTMLParser
from pathlib import Path

import pytest

from gpulab.book import build_book
from gpulab.book.figures import BookFigures
from gpulab.book.lesson_page import OutlineNode, outline
from gpulab.book.markdown import MarkdownRenderer
from gpulab.course import load_course
from gpulab.figures import DIAGRAMS
from gpulab.probes.recorded import recorded_results

ROOT = Path(__file__).resolve().parents[2]
BLOCK = re.compile(
    r'<figure class="probe-figure diagram" id="([^"]+)">\n(<svg .*?</svg>)\s*'
    r"<figcaption>(.*?)</figcaption></figure>",
    re.DOTALL,
)
RECORDED = "NVIDIA H200, gpulab&#x27;s recording of 2026-12-03"


def _html(node: OutlineNode) -> str:
    return node.notes_html + "".join(_html(child) for child in node.children)


@pytest.fixture(scope="module")
def lesson_pages() -> dict[str, str]:
    """The outline HTML of each lesson of the course that places a diagram."""
    course = load_course()
    figures = BookFigures(course, recorded_results())
    renderer = MarkdownRenderer([e.id for e in course.entries])
    pages = {}
    for entry in course.entries:
        lesson = course.lesson(entry.id)
        if any(m.id in DIAGRAMS for n in lesson.nodes for m in n.figures):
            pages[entry.id] = _html(outline(lesson, renderer, figures.page()))
    return pages


def test_each_lesson_page_holds_the_diagrams_it_places(lesson_pages: dict[str, str]) -> None:
    placed = {lesson: [b[0] for b in BLOCK.findall(html)] for lesson, html in lesson_pages.items()}
    assert placed == {
        "roadmap": ["figure-course-timeline"],
        "containers": ["figure-container-stack"],
        "numa": ["figure-two-socket-server", "figure-recorded-server"],
        "gpu-architecture": ["figure-sm-layout"],
        "memory-hierarchy": ["figure-memory-ladder"],
        "cuda-stack": ["figure-cuda-layers"],
    }
    for html in lesson_pages.values():
        for anchor, svg, caption in BLOCK.findall(html):
            diagram = DIAGRAMS[anchor.removeprefix("figure-")]
            root = ET.fromstring(svg)  # well-formed where it stands
            assert root.get("aria-label") == diagram.title
            assert f'<span class="figure-title">{escape(diagram.title)}.</span>' in caption
            assert '<span class="figure-source">' in caption
    numa = BLOCK.findall(lesson_pages["numa"])
    assert "an example, not a measurement" in numa[0][2]
    assert f'<span class="figure-source">{RECORDED}</span>' in numa[1][2]
    ladder = BLOCK.findall(lesson_pages["memory-hierarchy"])[0]
    assert "28.6 cycles, 14.4 ns per load" in ladder[1]  # drawn as text
    assert f"{RECORDED}, 2026-12-07; specs.toml: gpus.h200, topics.sm-units" in ladder[2]


def test_a_diagram_stands_where_its_marker_does(lesson_pages: dict[str, str]) -> None:
    html = lesson_pages["memory-hierarchy"]
    table, ladder = html.index("<table"), html.index('id="figure-memory-ladder"')
    later = html.index("Each tool and GPU gives its own figure")
    assert table < ladder < later


LESSON = """---
title: Diagrams
day: 1
objectives: [Read a diagram]
---
# Diagrams

- The ladder

  Before the ladder.

  <!-- figure: memory-ladder -->

  After the ladder.
- The toolkit <!-- figure: container-stack -->
- Again <!-- figure: container-stack -->
- The days <!-- figure: course-timeline -->
"""


class _Ids(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.ids: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.ids += [v for k, v in attrs if k == "id" and v]


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("diagrams")
    folder = tmp / "lessons"
    folder.mkdir()
    (folder / "course.toml").write_text(
        '[course]\ntitle = "C"\nplan_days = 1\n\n[[lessons]]\nid = "diagrams"\nday = 1\n'
        'title = "Diagrams"\n',
        encoding="utf-8",
    )
    (folder / "diagrams.md").write_text(LESSON, encoding="utf-8")
    shutil.copyfile(ROOT / "lessons" / "specs.toml", folder / "specs.toml")
    shutil.copytree(ROOT / "lessons" / "reference", folder / "reference")
    return build_book(load_course(folder), tmp / "book").out


def test_the_built_page_places_each_diagram_once_per_marker(built: Path) -> None:
    page = (built / "lessons" / "diagrams.html").read_text(encoding="utf-8")
    assert [b[0] for b in BLOCK.findall(page)] == [
        "figure-memory-ladder",
        "figure-container-stack",
        "figure-container-stack-2",
    ]
    before, ladder, after = (
        page.index(t)
        for t in ("Before the ladder.", 'id="figure-memory-ladder"', "After the ladder.")
    )
    assert before < ladder < after
    reader = _Ids()
    reader.feed(page)
    assert not {i for i in reader.ids if reader.ids.count(i) > 1}


def test_a_diagram_that_cannot_be_drawn_says_why(built: Path) -> None:
    page = (built / "lessons" / "diagrams.html").read_text(encoding="utf-8")
    missing = re.search(
        r'<figure class="probe-figure diagram missing" id="figure-course-'
        r'timeline"><figcaption>(.*?)</figcaption>',
        page,
    )
    assert missing is not None
    assert "not drawn: the course has no readable roadmap lesson" in missing.group(1)


def test_a_diagrams_words_are_searchable(built: Path) -> None:
    search = (built / "search.html").read_text(encoding="utf-8")
    found = re.search(
        r'<script type="application/json" id="search-index">(.*?)</script>', search, flags=re.S
    )
    assert found
    rows = {row["t"]: row["x"] for row in json.loads(found.group(1).replace("<\\/", "</"))}
    assert "nvidia-container-runtime" in rows["The toolkit"]
    assert "Shared memory" in rows["The ladder"] and "28.6 cycles" in rows["The ladder"]
