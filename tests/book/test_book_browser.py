"""The book in real headless Chromium, from file://: the mindmap drawn, folded, and the outline.

The book is built from the real course by `build_book` (what `gpulab book`
runs), then opened the way a learner opens a downloaded copy: straight from
the disk, with no server and no network. On the front page and on one lesson page the vendored
markmap view must draw the lesson's tree into the SVG (checked against the
node titles the course itself parses), fold a branch when its circle is
clicked, and never fetch anything from outside the book. With JavaScript off
the outline must still be there and readable. Screenshots of each state are
saved under the test's own temporary folder, and each test prints where.

A small page written here, following the same contract, checks what
`mindmap.js` does when the data or the vendored scripts are missing: it says
so in the box and leaves the outline alone.

Chromium is Debian's (`.ci/run` installs it); Playwright never downloads a
browser of its own. Without either the tests skip and say why.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Literal

import pytest

from gpulab.book import build_book
from gpulab.course import load_course
from helpers.chromium import chromium, needs_chromium

if TYPE_CHECKING:
    from playwright.sync_api import Browser, BrowserContext, Page

ROOT = Path(__file__).resolve().parents[2]
ASSETS = ROOT / "book" / "assets"
LESSON = "memory-hierarchy"  # deep enough to fold: headings with items below them
TIMEOUT_MS = 60_000  # generous: CI machines have two cores
SETTLE_MS = 600  # markmap animates folds for 300 ms; screenshots wait it out


pytestmark = needs_chromium


@dataclass
class Visit:
    """A page in a browser context of its own, with every URL it asked for and every error."""

    page: Page
    requests: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    def outside_the_book(self) -> list[str]:
        return [url for url in self.requests if not url.startswith("file://")]

    def shot(self, path: Path, what: str | None = None) -> Path:
        """Save the page (or the element `what` selects) once markmap's animation is over."""
        self.page.wait_for_timeout(SETTLE_MS)
        if what is None:
            self.page.screenshot(path=path)
        else:
            self.page.locator(what).screenshot(path=path)
        print(f"screenshot: {path}")
        return path


class Visitor:
    """Opens pages from file://, each in a fresh context; closes them all at the end."""

    def __init__(self, browser: Browser) -> None:
        self.browser = browser
        self.contexts: list[BrowserContext] = []

    def open(
        self, path: Path, *, javascript: bool = True, scheme: Literal["light", "dark"] = "light"
    ) -> Visit:
        assert path.is_file(), f"no page at {path}"
        context = self.browser.new_context(
            viewport={"width": 1400, "height": 1000},
            java_script_enabled=javascript,
            color_scheme=scheme,
        )
        context.set_default_timeout(TIMEOUT_MS)
        self.contexts.append(context)
        visit = Visit(context.new_page())
        visit.page.on("request", lambda request: visit.requests.append(request.url))
        visit.page.on("pageerror", lambda error: visit.errors.append(f"page error: {error}"))
        visit.page.on(
            "console",
            lambda message: (
                visit.errors.append(f"console: {message.text}") if message.type == "error" else None
            ),
        )
        visit.page.goto(path.as_uri())
        return visit

    def close(self) -> None:
        for context in self.contexts:
            context.close()


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with chromium() as launched:
        yield launched


@pytest.fixture
def visitor(browser: Browser) -> Iterator[Visitor]:
    opened = Visitor(browser)
    try:
        yield opened
    finally:
        opened.close()


@pytest.fixture(scope="module")
def book(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The whole course built once for this module, the way `gpulab book` builds it."""
    result = build_book(load_course(), tmp_path_factory.mktemp("book") / "html")
    assert result.front.is_file(), f"the book has no front page at {result.front}"
    return result.out


# -- helpers ------------------------------------------------------------------
def _normalise(text: str) -> str:
    return " ".join(text.split())


def _drawn(visit: Visit) -> list[str]:
    """The label of every node drawn in the mindmap (in markmap's order, not the tree's)."""
    labels: list[str] = visit.page.locator("#mindmap g.markmap-node").evaluate_all(
        "nodes => nodes.map(g => g.querySelector('foreignObject').textContent)"
    )
    return [_normalise(label) for label in labels]


def _wait_drawn(visit: Visit, screenshot: Path) -> None:
    """Wait until mindmap.js says the mindmap is drawn; on failure save what the page shows."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    box = visit.page.locator(".mindmap-box")
    try:
        visit.page.locator(".mindmap-box[data-state]").wait_for(state="attached")
    except PlaywrightTimeout as exc:
        visit.shot(screenshot)
        raise AssertionError(
            f"mindmap.js never finished (see {screenshot}); errors: {visit.errors}"
        ) from exc
    state = box.get_attribute("data-state")
    if state != "ready":
        visit.shot(screenshot)
        raise AssertionError(
            f"the mindmap box is {state!r}: {box.inner_text()!r} "
            f"(see {screenshot}); errors: {visit.errors}"
        )


def _node_path(visit: Visit, title: str) -> str:
    """markmap's data-path of the drawn node whose label is exactly `title`."""
    paths: list[str] = visit.page.locator("#mindmap g.markmap-node").evaluate_all(
        """(nodes, title) => nodes
            .filter(g => g.querySelector('foreignObject').textContent
                         .replace(/\\s+/g, ' ').trim() === title)
            .map(g => g.getAttribute('data-path'))""",
        title,
    )
    assert len(paths) == 1, f"{len(paths)} drawn nodes are labelled {title!r}"
    return paths[0]


def _wait_drawn_labels(visit: Visit, titles: list[str], *, present: bool) -> None:
    """Wait until every title is drawn as a node (present) or none is (folded away).

    A folded branch's nodes leave the SVG once markmap's transition ends.
    """
    visit.page.wait_for_function(
        """([titles, present]) => {
            const drawn = Array.from(document.querySelectorAll('#mindmap g.markmap-node'),
                g => g.querySelector('foreignObject').textContent.replace(/\\s+/g, ' ').trim());
            return titles.every(title => drawn.includes(title) === present);
        }""",
        arg=[titles, present],
    )


# -- the real book -------------------------------------------------------------
def test_front_page_opens_from_file_with_nothing_from_outside(
    book: Path, visitor: Visitor, tmp_path: Path
) -> None:
    visit = visitor.open(book / "index.html")
    visit.page.wait_for_load_state("load")
    course = load_course()
    assert course.title in visit.page.title() + visit.page.locator("body").inner_text()
    first = course.entries[1].title if len(course.entries) > 1 else course.entries[0].title
    assert visit.page.get_by_role("link", name=first).first.is_visible()
    visit.shot(tmp_path / "front.png")
    assert visit.outside_the_book() == []
    assert visit.errors == []


def test_lesson_mindmap_shows_the_lessons_nodes_and_folds_on_click(
    book: Path, visitor: Visitor, tmp_path: Path
) -> None:
    lesson = load_course().lesson(LESSON)
    # The lesson's front matter asks markmap to open only the first level.
    assert lesson.front.markmap.get("initialExpandLevel") == 2, lesson.front.markmap
    root = lesson.root
    visit = visitor.open(book / "lessons" / f"{LESSON}.html")
    _wait_drawn(visit, tmp_path / "lesson-not-drawn.png")
    visit.shot(tmp_path / "lesson.png", ".mindmap-section")

    drawn = _drawn(visit)
    sections = [node.title for node in root.children]
    missing = [title for title in [root.title, *sections] if title not in drawn]
    assert not missing, f"the mindmap lacks these nodes: {missing}; it draws {drawn}"
    section = next(node for node in root.children if len(node.children) >= 2)
    children = [child.title for child in section.children]
    assert not set(children) & set(drawn), "initialExpandLevel 2 must start folded below"

    path = _node_path(visit, section.title)
    node = visit.page.locator(f'#mindmap g.markmap-node[data-path="{path}"]')
    node.locator("> circle").click()  # unfold
    _wait_drawn_labels(visit, children, present=True)
    assert "markmap-fold" not in (node.get_attribute("class") or "")
    visit.shot(tmp_path / "lesson-unfolded.png", ".mindmap-section")

    node.locator("> circle").click()  # fold again: the children leave the SVG
    _wait_drawn_labels(visit, children, present=False)
    assert "markmap-fold" in (node.get_attribute("class") or "")
    assert section.title in _drawn(visit), "folding a node must keep the node itself"
    visit.shot(tmp_path / "lesson-folded.png", ".mindmap-section")

    node.locator("> circle").click()  # unfold once more: the tree now runs off the box
    _wait_drawn_labels(visit, children, present=True)
    zoom = visit.page.locator("#mindmap > g")
    before = zoom.get_attribute("transform")
    visit.page.get_by_role("button", name="Fit").click()
    visit.page.wait_for_function(
        "before => document.querySelector('#mindmap > g').getAttribute('transform') !== before",
        arg=before,
    )
    visit.shot(tmp_path / "lesson-fit.png", ".mindmap-section")
    assert visit.page.locator("nav#outline").is_visible(), "the outline must stay on the page"
    assert visit.outside_the_book() == []
    assert visit.errors == []


def test_without_javascript_the_outline_is_readable(
    book: Path, visitor: Visitor, tmp_path: Path
) -> None:
    lesson = load_course().lesson(LESSON)
    visit = visitor.open(book / "lessons" / f"{LESSON}.html", javascript=False)
    outline = visit.page.locator("nav#outline")
    assert outline.is_visible()
    text = _normalise(outline.inner_text())
    shown = [node.title for node in lesson.nodes[:40]]
    missing = [title for title in shown if title not in text]
    assert not missing, f"the outline does not show: {missing}"
    assert visit.page.locator("#mindmap g.markmap-node").count() == 0
    visit.shot(tmp_path / "lesson-no-javascript.png")
    assert visit.outside_the_book() == []


# -- mindmap.js on a page written here ---------------------------------------------
PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>contract</title></head><body>
<div class="mindmap-box">
<svg id="mindmap" class="mindmap" style="width:100%;height:500px"></svg></div>
<script type="application/json" id="mindmap-data">{data}</script>
{options}
<nav id="outline"><ul><li>Root<ul><li>Alpha<ul><li>Alpha one</li></ul></li></ul></li></ul></nav>
{scripts}
</body></html>
"""
TREE = {
    "content": "Root",
    "payload": {"key": "root"},
    "children": [
        {
            "content": "Alpha",
            "payload": {"key": "root/alpha"},
            "children": [
                {
                    "content": "Alpha one",
                    "payload": {"key": "root/alpha/one"},
                    "children": [
                        {
                            "content": "Deep <code>leaf</code>",
                            "payload": {"key": "root/alpha/one/leaf"},
                            "children": [],
                        }
                    ],
                }
            ],
        },
        {"content": "Beta", "payload": {"key": "root/beta"}, "children": []},
    ],
}


def _contract_page(
    folder: Path,
    *,
    data: str,
    options: str = "",
    vendor: tuple[str, ...] = ("d3.min.js", "markmap-view.min.js"),
) -> Path:
    """A page that follows the lesson page's contract, with the book's real assets."""
    shutil.copytree(ASSETS, folder / "assets")
    scripts = [f'<script src="assets/vendor/{name}"></script>' for name in vendor]
    scripts.append('<script src="assets/mindmap.js"></script>')
    extra = f'<script type="application/json" id="mindmap-options">{options}</script>'
    page = folder / "page.html"
    page.write_text(
        PAGE.format(
            data=data.replace("</", "<\\/"),
            options=extra if options else "",
            scripts="\n".join(scripts),
        ),
        encoding="utf-8",
    )
    return page


def test_markmap_options_of_the_lesson_are_applied(visitor: Visitor, tmp_path: Path) -> None:
    page = _contract_page(tmp_path, data=json.dumps(TREE), options='{"initialExpandLevel": 2}')
    visit = visitor.open(page)
    _wait_drawn(visit, tmp_path / "contract-not-drawn.png")
    assert sorted(_drawn(visit)) == ["Alpha", "Beta", "Root"], "initialExpandLevel 2: two levels"
    page.with_name("page.html").write_text(
        page.read_text(encoding="utf-8").replace(
            '{"initialExpandLevel": 2}', '{"initialExpandLevel": 4}'
        ),
        encoding="utf-8",
    )
    visit.page.reload()
    _wait_drawn(visit, tmp_path / "contract-not-drawn.png")
    assert sorted(_drawn(visit)) == ["Alpha", "Alpha one", "Beta", "Deep leaf", "Root"]
    assert visit.outside_the_book() == []
    assert visit.errors == []


def test_dark_theme_reaches_the_mindmap(visitor: Visitor, tmp_path: Path) -> None:
    visit = visitor.open(_contract_page(tmp_path, data=json.dumps(TREE)), scheme="dark")
    _wait_drawn(visit, tmp_path / "contract-not-drawn.png")
    assert "markmap-dark" in (visit.page.locator(".mindmap-box").get_attribute("class") or "")
    visit.page.evaluate("document.documentElement.setAttribute('data-theme', 'light')")
    visit.page.wait_for_function(
        "!document.querySelector('.mindmap-box').classList.contains('markmap-dark')"
    )
    assert visit.errors == []


def test_broken_data_is_reported_in_the_box_and_the_outline_stays(
    visitor: Visitor, tmp_path: Path
) -> None:
    visit = visitor.open(_contract_page(tmp_path, data='{"content": "Root", '))
    visit.page.locator(".mindmap-box[data-state='error']").wait_for(state="attached")
    message = visit.page.locator(".mindmap-error").inner_text()
    assert "#mindmap-data is not valid JSON" in message
    assert visit.page.locator("nav#outline").is_visible()
    assert "Alpha one" in visit.page.locator("nav#outline").inner_text()


def test_missing_vendored_scripts_are_named_in_the_box(visitor: Visitor, tmp_path: Path) -> None:
    visit = visitor.open(_contract_page(tmp_path, data=json.dumps(TREE), vendor=()))
    visit.page.locator(".mindmap-box[data-state='error']").wait_for(state="attached")
    assert "markmap-view.min.js did not load" in visit.page.locator(".mindmap-error").inner_text()
    assert visit.page.locator("nav#outline").is_visible()
