"""What every page of the book holds, read back as HTML: paragraphs, tables, answers, contents.

The book is built once from the real course through the real command line.
Paragraphs run on at the source's line ends (no ``<br />``), every table sits
in the box that scrolls it sideways, "Check yourself" answers are folded,
exercise pages keep the notebook's headings below their own, and every page
carries the table of contents, in teaching order, with its own link marked.
"""

from __future__ import annotations

import contextlib
import html
import io
import re
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path

import pytest

from gpulab.book.lesson_page import node_anchor
from gpulab.book.markdown import MarkdownRenderer
from gpulab.cli import main
from gpulab.course import load_course
from gpulab.course.tree import answer_index

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def book(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("book") / "html"
    with contextlib.redirect_stdout(io.StringIO()):
        assert main(["book", "--out", str(out)]) == 0
    return out


def _pages(book: Path) -> dict[str, str]:
    return {
        p.relative_to(book).as_posix(): p.read_text(encoding="utf-8")
        for p in sorted(book.rglob("*.html"))
    }


# -- paragraphs ---------------------------------------------------------------------
def test_a_line_end_inside_a_paragraph_is_not_a_line_break() -> None:
    renderer = MarkdownRenderer([])
    assert (
        renderer.block("one SM becomes\nvisible to the others")
        == "<p>one SM becomes\nvisible to the others</p>\n"
    )
    assert "<br" not in renderer.inline("open the notebook\nand run it")
    # A hard break the author asked for (two spaces, or a backslash) stays one.
    assert "<br />" in renderer.block("first  \nsecond")


def test_no_page_breaks_a_paragraph_at_the_sources_line_ends(book: Path) -> None:
    sources = "".join(p.read_text(encoding="utf-8") for p in (ROOT / "lessons").glob("*.md"))
    assert "<br" not in sources.lower(), "a lesson writes <br>: this test needs a new rule"
    broken = {name: text.count("<br") for name, text in _pages(book).items() if "<br" in text}
    assert not broken, f"pages with line breaks the sources do not have: {broken}"
    # The notes are there, with their line ends as the source has them.
    lesson = load_course().lesson("gpu-architecture")
    note = next(
        n.markdown
        for node in lesson.nodes
        for n in node.notes
        if n.kind == "paragraph"
        and n.markdown.count("\n") >= 2
        and "<" not in n.markdown
        and "`" not in n.markdown
        and "*" not in n.markdown
        and "[" not in n.markdown
    )
    page = html.unescape((book / "lessons" / "gpu-architecture.html").read_text(encoding="utf-8"))
    assert f"<p>{note}</p>" in page


# -- tables ---------------------------------------------------------------------------
def test_every_table_sits_in_a_scrolling_box(book: Path) -> None:
    tables = 0
    bare: list[str] = []
    for name, text in _pages(book).items():
        count = len(re.findall(r"<table\b", text, re.IGNORECASE))
        wrapped = len(re.findall(r'<div class="table-wrap">\s*<table\b', text, re.IGNORECASE))
        tables += count
        if wrapped != count:
            bare.append(f"{name}: {count - wrapped} of {count} tables outside a .table-wrap")
    assert not bare, "\n".join(bare)
    pages = _pages(book)
    in_notes = sum(
        len(re.findall(r"<table\b", t)) for n, t in pages.items() if n.startswith("lessons/")
    )
    in_notebooks = sum(
        len(re.findall(r"<table\b", t)) for n, t in pages.items() if n.startswith("exercises/")
    )
    assert tables > 20 and in_notes > 5 and in_notebooks > 5, (tables, in_notes, in_notebooks)
    css = (book / "assets" / "book.css").read_text(encoding="utf-8")
    assert re.search(r"\.table-wrap\s*\{[^}]*overflow-x:\s*auto", css)


# -- "Check yourself" answers ------------------------------------------------------------
def _node_html(page: str, anchor: str) -> str:
    """The HTML of an outline entry, up to its first child or its end."""
    start = page.index(f'<li id="{anchor}"')
    end = min(i for i in (page.find("<li ", start + 1), page.find("</li>", start)) if i >= 0)
    return page[start:end]


def test_check_yourself_answers_are_folded(book: Path) -> None:
    course = load_course()
    folded = 0
    for entry in course.entries:
        page = (book / "lessons" / f"{entry.id}.html").read_text(encoding="utf-8")
        for node in course.lesson(entry.id).nodes:
            if answer_index(node.notes) is None:
                continue
            part = _node_html(page, node_anchor(node.key))
            fold = part.find('<details class="answer"><summary>Show the answer</summary>')
            answer = part.find("Answer", fold)
            assert 0 <= fold < answer < part.index("</details>"), (
                f"{entry.id}: the answer of {node.title!r} is not folded"
            )
            folded += 1
    assert folded > 50
    # Notes that answer nothing stay open.
    numa = (book / "lessons" / "numa.html").read_text(encoding="utf-8")
    assert numa.count('<details class="answer">') < numa.count('<div class="notes">') / 2


# -- the notebook's headings -------------------------------------------------------------
def test_exercise_pages_keep_the_notebooks_headings_below_their_own(book: Path) -> None:
    for exercise in load_course().exercises():
        page = (book / "exercises" / f"{exercise.name}.html").read_text(encoding="utf-8")
        notebook = page[page.index('<section class="notebook"') :]
        assert page.count("<h1") == 1, f"{exercise.name}: more than the page's own h1"
        headings = re.findall(r"<h([1-6])\b", notebook)
        assert headings[0] == "2", exercise.name  # "The notebook as you get it"
        assert min(int(h) for h in headings[1:]) == 3, f"{exercise.name}: {headings[:6]}"


# -- the table of contents ----------------------------------------------------------------
@dataclass
class Toc:
    """The links of one ``<nav class="toc">`` in document order, and which is current."""

    links: list[str] = field(default_factory=list)
    current: list[str] = field(default_factory=list)
    days: list[str] = field(default_factory=list)


class _TocReader(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tocs: list[Toc] = []
        self.depth = 0  # <nav> nesting inside the current table of contents
        self.in_day = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = dict(attrs)
        if tag == "nav":
            if self.depth:
                self.depth += 1
            elif "toc" in (found.get("class") or "").split():
                self.tocs.append(Toc())
                self.depth = 1
        if not self.depth:
            return
        if tag == "a":
            self.tocs[-1].links.append(found.get("href") or "")
            if found.get("aria-current") == "page":
                self.tocs[-1].current.append(found.get("href") or "")
        self.in_day = tag == "span" and found.get("class") == "toc-day-title"

    def handle_endtag(self, tag: str) -> None:
        if tag == "nav" and self.depth:
            self.depth -= 1
        self.in_day = False

    def handle_data(self, data: str) -> None:
        if self.depth and self.in_day:
            self.tocs[-1].days.append(data.strip())


def test_every_page_has_the_contents_with_its_own_link_marked(book: Path) -> None:
    course = load_course()
    wanted = ["index.html"]
    for _, entries in course.days():
        for entry in entries:
            wanted.append(f"lessons/{entry.id}.html")
            wanted.extend(f"exercises/{e.name}.html" for e in course.exercises(entry.id))
    wanted += ["specs.html", "search.html"]
    days = [f"Day {day}" for day, _ in course.days()]
    pages = _pages(book)
    assert set(wanted) == set(pages), "the contents must list every page, each once"
    for name, text in pages.items():
        reader = _TocReader()
        reader.feed(text)
        root = "../" * name.count("/")
        # One for a wide screen (the sidebar), one for a narrow one (folded).
        assert len(reader.tocs) == 2, f"{name}: {len(reader.tocs)} tables of contents"
        for toc in reader.tocs:
            assert toc.links == [root + w for w in wanted], name
            assert toc.current == [root + name], f"{name}: marked {toc.current}"
            assert toc.days == days, name
        assert re.search(r'<details class="toc-fold">\s*<summary>Contents</summary>', text)
        assert '<details class="toc-fold" open' not in text, f"{name}: unfolded on a phone"
