"""`gpulab book`: the whole course built into tmp_path, then read back as HTML.

The book is built once per module through the real command line, from the
real course. Every page is parsed with html.parser: every internal link and
anchor must resolve, nothing may load from outside the book, every lesson and
exercise has its page, and no solution reaches any page. Broken lessons are
real copies of the course with real mistakes in them.
"""

from __future__ import annotations

import contextlib
import html
import io
import itertools
import json
import re
import shutil
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

import nbformat
import pytest

from gpulab.book import MARKER
from gpulab.book.lesson_page import node_anchor
from gpulab.cli import main
from gpulab.course import load_course
from gpulab.probes.recorded import recorded_results

ROOT = Path(__file__).resolve().parents[2]
VENDOR = ROOT / "book" / "assets" / "vendor"
MINDMAP_SCRIPTS = (
    "assets/vendor/d3.min.js",
    "assets/vendor/markmap-view.min.js",
    "assets/mindmap.js",
)
LOADING_TAGS = {
    "script",
    "link",
    "img",
    "iframe",
    "source",
    "video",
    "audio",
    "embed",
    "object",
    "track",
    "input",
}
NBFORMAT: Any = nbformat  # it has no type hints
OUTSIDE = re.compile(r"^(?:[a-z][a-z0-9+.-]*:|//)", re.IGNORECASE)


@dataclass
class Page:
    """What html.parser saw in one page."""

    path: Path
    ids: set[str] = field(default_factory=set)
    links: list[tuple[str, str, str]] = field(default_factory=list)  # tag, attribute, value
    scripts: dict[str, str] = field(default_factory=dict)  # script id -> its text
    text: str = ""


class _Reader(HTMLParser):
    def __init__(self, page: Page) -> None:
        super().__init__(convert_charrefs=True)
        self.page = page
        self.script_id: str | None = None
        self.parts: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        for name, value in attrs:
            if value is None:
                continue
            if name in ("id", "name") and (name == "id" or tag == "a"):
                self.page.ids.add(value)
            if name in ("href", "src", "poster", "data"):
                self.page.links.append((tag, name, value))
            if name == "srcset":
                for item in value.split(","):
                    self.page.links.append((tag, name, item.strip().split(" ")[0]))
        if tag == "script":
            self.script_id = dict(attrs).get("id") or ""

    def handle_endtag(self, tag: str) -> None:
        if tag == "script":
            self.script_id = None

    def handle_data(self, data: str) -> None:
        if self.script_id:
            self.page.scripts[self.script_id] = self.page.scripts.get(self.script_id, "") + data
        self.parts.append(data)

    def close(self) -> None:
        super().close()
        self.page.text = "".join(self.parts)


def read_page(path: Path) -> Page:
    page = Page(path)
    reader = _Reader(page)
    reader.feed(path.read_text(encoding="utf-8"))
    reader.close()
    return page


@dataclass(frozen=True)
class Built:
    out: Path
    pages: dict[str, Page]  # by path relative to out, with "/"
    stdout: str


@pytest.fixture(scope="module")
def book(tmp_path_factory: pytest.TempPathFactory) -> Built:
    out = tmp_path_factory.mktemp("book") / "html"
    stdout = io.StringIO()
    with contextlib.redirect_stdout(stdout):
        status = main(["book", "--out", str(out)])
    assert status == 0, stdout.getvalue()
    pages = {p.relative_to(out).as_posix(): read_page(p) for p in sorted(out.rglob("*.html"))}
    return Built(out, pages, stdout.getvalue())


def test_the_command_reports_the_book_and_marks_its_folder(book: Built) -> None:
    assert f"built {len(book.pages)} pages" in book.stdout
    assert str(book.out / "index.html") in book.stdout
    assert (book.out / MARKER).is_file()
    assert not [p for p in book.out.parent.iterdir() if p.name.startswith(".html-")], (
        "the build's work folder was left behind"
    )


@pytest.fixture(scope="module")
def course_pages() -> set[str]:
    course = load_course()
    return (
        {"index.html", "specs.html", "search.html"}
        | {f"lessons/{e.id}.html" for e in course.entries}
        | {f"exercises/{e.name}.html" for e in course.exercises()}
    )


def test_every_lesson_and_exercise_has_a_page(book: Built, course_pages: set[str]) -> None:
    assert len(course_pages) > 15
    assert set(book.pages) == course_pages


def _internal(value: str) -> bool:
    return not OUTSIDE.match(value)


def _ids(target: Path, by_path: dict[Path, Page]) -> set[str]:
    """The ids of a page of the book, each page read once (a page is linked to many times)."""
    if target not in by_path:
        by_path[target] = read_page(target)
    return by_path[target].ids


def test_no_internal_link_is_broken(book: Built) -> None:
    broken: list[str] = []
    checked = 0
    by_path = {page.path.resolve(): page for page in book.pages.values()}
    for name, page in book.pages.items():
        for tag, attribute, value in page.links:
            if not _internal(value):
                continue
            parts = urlsplit(value)
            target = (page.path.parent / unquote(parts.path)).resolve() if parts.path else page.path
            checked += 1
            try:
                target.relative_to(book.out)
            except ValueError:
                broken.append(f"{name}: <{tag} {attribute}={value!r}> leads out of the book")
                continue
            if not target.is_file():
                broken.append(f"{name}: <{tag} {attribute}={value!r}>: no such file")
                continue
            if parts.fragment and target.suffix == ".html":
                ids = _ids(target, by_path)
                # a browser looks for the fragment as written, then percent-decoded
                if not {parts.fragment, unquote(parts.fragment)} & ids:
                    broken.append(
                        f"{name}: <{tag} {attribute}={value!r}>: no id "
                        f"{unquote(parts.fragment)!r} there"
                    )
    assert checked > 1000
    assert not broken, "\n".join(broken[:40])


def test_the_link_checker_finds_a_broken_link_and_a_missing_anchor(
    book: Built, tmp_path: Path
) -> None:
    """The check above can fail: a page with one dead file link and one dead anchor."""
    page = tmp_path / "lessons" / "x.html"
    page.parent.mkdir()
    page.write_text(
        '<a href="../nowhere.html">a</a><a href="#missing">b</a><p id="here"></p>'
        '<a href="#here">c</a>',
        encoding="utf-8",
    )
    read = read_page(page)
    values = [v for _, _, v in read.links]
    assert values == ["../nowhere.html", "#missing", "#here"]
    assert not (page.parent / "../nowhere.html").resolve().is_file()
    assert "missing" not in read.ids and "here" in read.ids


def test_no_page_loads_anything_from_outside(book: Built) -> None:
    outside: list[str] = []
    citations = 0
    for name, page in book.pages.items():
        for tag, attribute, value in page.links:
            if _internal(value) or value.startswith("data:"):
                continue
            if tag == "a" and value.startswith(("https://", "http://")):
                citations += 1  # a source cited by a link the reader may follow
                continue
            outside.append(f"{name}: <{tag} {attribute}={value!r}>")
    for css in book.out.rglob("*.css"):
        for found in re.findall(
            r"(?:url\(\s*['\"]?|@import\s+['\"])([^'\")\s]+)", css.read_text(encoding="utf-8")
        ):
            if OUTSIDE.match(found) and not found.startswith("data:"):
                outside.append(f"{css.name}: {found}")
    assert citations > 50, "the specs and claims should cite their sources"
    assert not outside, "\n".join(outside)


def _solution_lines(solution: Path) -> set[str]:
    """Lines of a solution notebook's answers (between its solution markers)."""
    lines: set[str] = set()
    for cell in NBFORMAT.read(solution, as_version=4).cells:
        inside = False
        for line in cell.source.splitlines():
            if "### BEGIN SOLUTION" in line:
                inside = True
            elif "### END SOLUTION" in line:
                inside = False
            elif inside and len(line.strip()) >= 25:
                lines.add(line.strip())
    return lines


def test_solutions_never_appear(book: Built) -> None:
    course = load_course()
    public = "\n".join(
        c.source for e in course.exercises() for c in NBFORMAT.read(e.notebook, as_version=4).cells
    )
    public += "\n".join(e.path.read_text(encoding="utf-8") for e in course.entries)
    secrets = {
        line
        for e in course.exercises()
        for line in _solution_lines(ROOT / "solutions" / e.lesson / e.notebook.name)
        if line not in public
    }  # only what the course shows nowhere else
    assert len(secrets) > 20
    texts = {name: html.unescape(page.text) for name, page in book.pages.items()}
    leaks = [
        f"{name}: {line!r}" for name, text in texts.items() for line in secrets if line in text
    ]
    assert not leaks, "\n".join(leaks[:20])
    # The same comparison sees the student's own code, so it would see a solution's.
    for exercise in course.exercises():
        page = texts[f"exercises/{exercise.name}.html"]
        student = NBFORMAT.read(exercise.notebook, as_version=4)
        code = [
            line.strip()
            for c in student.cells
            if c.cell_type == "code"
            for line in c.source.splitlines()
            if len(line.strip()) >= 25
        ]
        assert code and all(line in page for line in code), exercise.name


def _keys(node: dict[str, Any]) -> list[str]:
    """The node keys of markmap data, in document order; checks each node's shape."""
    assert isinstance(node["content"], str) and node["content"]
    assert isinstance(node["children"], list)
    keys = [str(node["payload"]["key"])]
    for child in node["children"]:
        keys.extend(_keys(child))
    return keys


def test_lesson_pages_keep_the_mindmap_contract(book: Built) -> None:
    course = load_course()
    for entry in course.entries:
        lesson = course.lesson(entry.id)
        source = (book.out / "lessons" / f"{entry.id}.html").read_text(encoding="utf-8")
        assert (
            f'<div class="mindmap-box">\n    <svg id="mindmap" class="mindmap" '
            f'aria-label="mindmap of {html.escape(lesson.title)}"></svg>'
        ) in source
        page = book.pages[f"lessons/{entry.id}.html"]
        raw = page.scripts["mindmap-data"]
        assert "</" not in raw
        data = json.loads(raw)
        assert _keys(data) == [n.key for n in lesson.nodes]
        assert {node_anchor(n.key) for n in lesson.nodes} <= page.ids
        tail = source[source.rindex("</footer>") :]
        expected = "".join(f'<script src="../{s}"></script>\n' for s in MINDMAP_SCRIPTS)
        assert expected + "</body>" in tail
        assert '<nav class="outline" id="outline"' in source
        for node in lesson.nodes:
            for note in node.notes:
                if note.kind == "code" and len(note.markdown.splitlines()) > 2:
                    line = note.markdown.splitlines()[1].strip()
                    assert html.unescape(line) in html.unescape(page.text)


def test_the_vendored_mindmap_scripts_are_shipped(book: Built) -> None:
    assert (VENDOR / "markmap-view.min.js").is_file()
    for script in MINDMAP_SCRIPTS:
        assert (book.out / script).is_file(), script


def test_outline_notes_are_rendered_and_highlighted(book: Built) -> None:
    source = (book.out / "lessons" / "numa.html").read_text(encoding="utf-8")
    assert '<pre class="highlight"><code class="language-bash">' in source
    assert '<span class="' in source.split('class="language-bash">', 1)[1][:400]
    assert 'href="containers.html"' in source, "lesson links lead to lesson pages"
    assert 'href="containers.md"' not in source


def test_claims_are_cards_with_spec_source_and_labelled_recording(book: Built) -> None:
    course = load_course()
    recorded = recorded_results()
    shown_recorded = 0
    for entry in course.entries:
        lesson = course.lesson(entry.id)
        page = book.pages[f"lessons/{entry.id}.html"]
        text = " ".join(html.unescape(page.text).split())
        links = {v for tag, _, v in page.links if tag == "a"}
        for claim_id in {c for n in lesson.nodes for c in n.claims}:
            claim = course.claims[claim_id]
            assert f"claim-{claim_id}" in page.ids
            assert claim.expected in text
            assert claim.source in links
            result = recorded.get(claim.probe)
            reading = result.reading(claim.reading) if result and claim.reading else None
            if result is not None and result.recorded is not None and reading is not None:
                assert result.recorded.label.startswith("recorded on NVIDIA H200, ")
                assert f"{result.recorded.label}: {reading.shown}" in text, claim_id
                shown_recorded += 1
    assert shown_recorded > 5


def test_exercise_pages_say_how_to_open_and_check(book: Built) -> None:
    for exercise in load_course().exercises():
        text = " ".join(book.pages[f"exercises/{exercise.name}.html"].text.split())
        assert f"gpulab check {exercise.name}" in text
        assert "gpulab init" in text and f"gpulab open {exercise.name}" in text
        assert "jupyter lab exercises/" not in text  # the course's copy is never the learner's
        assert all(f"Hint {n}" in text for n in range(1, len(exercise.hints) + 1))


def test_front_page_is_the_roadmap_and_pages_link_in_order(book: Built) -> None:
    course = load_course()
    front = book.pages["index.html"]
    hrefs = [v for tag, _, v in front.links if tag == "a" and v.startswith("lessons/")]
    assert list(dict.fromkeys(hrefs)) == [f"lessons/{e.id}.html" for e in course.entries]
    for day, _ in course.days():
        assert f"day-{day}" in front.ids
    ids = [e.id for e in course.entries]
    for before, after in itertools.pairwise(ids):
        links = book.pages[f"lessons/{before}.html"].links
        assert ("a", "href", f"{after}.html") in links
        assert ("a", "href", f"{before}.html") in book.pages[f"lessons/{after}.html"].links


def test_specs_page_links_every_value_to_its_source(book: Built) -> None:
    specs = load_course().specs
    page = book.pages["specs.html"]
    links = {v for tag, _, v in page.links if tag == "a"}
    for gpu in specs.gpus.values():
        assert f"gpu-{gpu.id}" in page.ids
        for value in gpu.values.values():
            wanted = value.source.url or f"sources/{value.source.path}"
            assert wanted in links, value.ref


def test_search_index_and_a_to_z(book: Built) -> None:
    course = load_course()
    page = book.pages["search.html"]
    rows = json.loads(page.scripts["search-index"])
    hrefs = {row["u"] for row in rows}
    assert {f"lessons/{e.id}.html" for e in course.entries} <= hrefs
    assert {f"exercises/{e.name}.html" for e in course.exercises()} <= hrefs
    numa = course.lesson("numa")
    assert f"lessons/numa.html#{node_anchor(numa.nodes[1].key)}" in hrefs
    assert {"az-A", "az-N", "az-P"} <= page.ids
    assert ("script", "src", "assets/search.js") in page.links
    assert (book.out / "assets" / "search.js").is_file()


def test_themes_and_print_styles_ship(book: Built) -> None:
    css = (book.out / "assets" / "book.css").read_text(encoding="utf-8")
    assert "prefers-color-scheme: dark" in css and ':root[data-theme="dark"]' in css
    assert "@media print" in css
    assert "localStorage" in (book.out / "assets" / "theme.js").read_text(encoding="utf-8")
    assert ':root[data-theme="dark"] .highlight' in (
        book.out / "assets" / "pygments.css"
    ).read_text(encoding="utf-8")


def _course_copy(tmp_path: Path) -> Path:
    root = tmp_path / "course"
    shutil.copytree(ROOT / "lessons", root / "lessons")
    shutil.copytree(ROOT / "exercises", root / "exercises")
    return root / "lessons"


def test_broken_lessons_fail_the_build_naming_each_like_the_linter(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    lessons = _course_copy(tmp_path)
    numa = lessons / "numa.md"
    numa.write_text(
        numa.read_text(encoding="utf-8").replace("day: 2\n", "day: two\n", 1), encoding="utf-8"
    )
    containers = lessons / "containers.md"
    text = containers.read_text(encoding="utf-8")
    first_item = next(line for line in text.splitlines() if line.startswith("- "))
    containers.write_text(
        text.replace(first_item, first_item + " <!-- claim: no_such_claim -->", 1), encoding="utf-8"
    )
    monkeypatch.setenv("GPULAB_COURSE_DIR", str(lessons))
    monkeypatch.chdir(tmp_path)

    assert main(["dev", "lint-lessons"]) == 2
    lint = capsys.readouterr().out.splitlines()
    out = tmp_path / "book"
    assert main(["book", "--out", str(out)]) == 2
    captured = capsys.readouterr()
    wanted = [
        line
        for line in lint
        if ("numa.md:" in line and "front matter" in line)
        or ("containers.md:" in line and "no_such_claim" in line)
    ]
    assert any("numa.md:" in w for w in wanted) and any("containers.md:" in w for w in wanted)
    for line in wanted:
        assert line in captured.out.splitlines(), line
    assert re.search(r"course/lessons/numa\.md:\d+: front matter", captured.out)
    assert "containers.md" in captured.err and "numa.md" in captured.err
    assert "Traceback" not in captured.out + captured.err
    assert not out.exists()


def test_a_missing_notebook_fails_the_build(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    lessons = _course_copy(tmp_path)
    (lessons.parent / "exercises" / "numa" / "numa-topology.ipynb").unlink()
    monkeypatch.setenv("GPULAB_COURSE_DIR", str(lessons))
    assert main(["book", "--out", str(tmp_path / "book")]) == 2
    out = capsys.readouterr().out
    assert re.search(
        r"course\.toml:\d+: exercise 'numa-topology': its notebook "
        r"exercises/numa/numa-topology\.ipynb does not exist",
        out,
    )


def test_the_book_never_replaces_a_folder_that_is_not_a_book(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    keep = tmp_path / "mine.txt"
    keep.write_text("mine", encoding="utf-8")
    assert main(["book", "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert f"{tmp_path} holds files that are not a gpulab book" in err
    assert "Traceback" not in err
    assert keep.read_text(encoding="utf-8") == "mine"
    assert main(["book", "--out", str(keep)]) == 2
    assert "is a file, not a folder" in capsys.readouterr().err


def test_search_never_gives_a_check_yourself_answer_away(book: Built) -> None:
    from gpulab.book.index import plain_text
    from gpulab.book.lesson_page import node_anchor
    from gpulab.course.tree import answer_index

    search = (book.out / "search.html").read_text(encoding="utf-8")
    found = re.search(
        r'<script type="application/json" id="search-index">(.*?)</script>', search, flags=re.S
    )
    assert found
    index = {row["u"]: row["x"] for row in json.loads(found.group(1).replace("<\\/", "</"))}
    course, asked = load_course(), 0
    for entry in course.entries:
        for node in course.lesson(entry.id).nodes:
            at = answer_index(node.notes)
            if at is None:
                continue
            asked += 1
            answer = plain_text(node.notes[at].markdown)
            text = index[f"lessons/{entry.id}.html#{node_anchor(node.key)}"]
            assert "Answer:" not in text and answer[len("Answer:") :].strip()[:40] not in text
    assert asked > 50
