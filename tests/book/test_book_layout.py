"""The book's layout in real headless Chromium, from file://: phones, anchors, contents.

Every page of the book built from the real course is opened at a phone's
size (390×844) and must not scroll sideways: tables scroll in their own box,
and the table of contents is folded away. Links to a claim or an outline node
must land below the sticky top bar, not under it. The contents sit beside the
page on a wide screen, marked at the page shown, and unfold on a phone without
JavaScript. "Check yourself" answers stay hidden until asked for; the
notebook's "¶" shows on hover; the mindmap's "Fit" sits in the box's corner.

Chromium is Debian's (`.ci/run` installs it); without it the tests skip.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from gpulab.book import build_book
from gpulab.book.lesson_page import node_anchor
from gpulab.course import load_course
from helpers.chromium import chromium, needs_chromium

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Page

PHONE = {"width": 390, "height": 844}
DESKTOP = {"width": 1400, "height": 900}
LESSON = "gpu-architecture"
TIMEOUT_MS = 60_000  # generous: CI machines have two cores

pytestmark = needs_chromium


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with chromium() as launched:
        yield launched


@pytest.fixture(scope="module")
def book(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_book(load_course(), tmp_path_factory.mktemp("book") / "html").out


class Tab:
    """A page in a fresh browser context of the given size; records errors and requests."""

    def __init__(
        self, browser: Browser, viewport: dict[str, int], *, javascript: bool = True
    ) -> None:
        self.context = browser.new_context(
            viewport={"width": viewport["width"], "height": viewport["height"]},
            java_script_enabled=javascript,
        )
        self.context.set_default_timeout(TIMEOUT_MS)
        self.page: Page = self.context.new_page()
        self.errors: list[str] = []
        self.outside: list[str] = []
        self.page.on("pageerror", lambda error: self.errors.append(str(error)))
        self.page.on(
            "request",
            lambda request: (
                None if request.url.startswith("file://") else self.outside.append(request.url)
            ),
        )

    def open(self, path: Path, fragment: str = "") -> Page:
        assert path.is_file(), path
        self.page.goto(path.as_uri() + (f"#{fragment}" if fragment else ""))
        self.page.wait_for_load_state("load")
        return self.page

    def scroll_width(self) -> int:
        return int(self.page.evaluate("document.documentElement.scrollWidth"))


@pytest.fixture
def tabs(browser: Browser) -> Iterator[list[Tab]]:
    opened: list[Tab] = []
    yield opened
    for tab in opened:
        tab.context.close()


def _tab(
    tabs: list[Tab], browser: Browser, viewport: dict[str, int], javascript: bool = True
) -> Tab:
    tab = Tab(browser, viewport, javascript=javascript)
    tabs.append(tab)
    return tab


# -- a phone ----------------------------------------------------------------------------
def test_no_page_scrolls_sideways_on_a_phone(book: Path, browser: Browser, tabs: list[Tab]) -> None:
    tab = _tab(tabs, browser, PHONE)
    pages = sorted(book.rglob("*.html"))
    assert len(pages) > 20
    wide: list[str] = []
    for path in pages:
        tab.open(path)
        width = tab.scroll_width()
        if width > PHONE["width"]:
            culprits = tab.page.evaluate(
                """width => Array.from(document.querySelectorAll('main *'))
                    .filter(e => e.getBoundingClientRect().right > width + 1)
                    .slice(0, 3).map(e => e.tagName.toLowerCase() + '.' + e.className)""",
                PHONE["width"],
            )
            wide.append(f"{path.relative_to(book)}: {width} px ({culprits})")
    assert not wide, "pages wider than the phone:\n" + "\n".join(wide)
    assert tab.errors == [] and tab.outside == []


def test_the_contents_fold_on_a_phone_and_open_without_javascript(
    book: Path, browser: Browser, tabs: list[Tab]
) -> None:
    tab = _tab(tabs, browser, PHONE, javascript=False)
    page = tab.open(book / "exercises" / "roofline.html")
    assert not page.locator("nav.toc-side").is_visible()
    fold = page.locator("details.toc-fold")
    assert fold.is_visible()
    lesson = fold.get_by_role("link", name="GPU architecture")
    assert not lesson.is_visible(), "the contents must start folded on a phone"
    fold.locator("summary").click()
    assert lesson.is_visible()
    current = fold.locator('a[aria-current="page"]')
    assert current.inner_text() == "roofline" and current.is_visible()
    assert tab.scroll_width() <= PHONE["width"]
    lesson.click()
    page.wait_for_url(f"**/lessons/{LESSON}.html")
    assert page.locator("h1").inner_text() == load_course().lesson(LESSON).title


# -- a wide screen ----------------------------------------------------------------------------
def test_the_contents_sit_beside_the_page_on_a_wide_screen(
    book: Path, browser: Browser, tabs: list[Tab]
) -> None:
    tab = _tab(tabs, browser, DESKTOP)
    page = tab.open(book / "lessons" / f"{LESSON}.html")
    side = page.locator("nav.toc-side")
    assert side.is_visible() and not page.locator("details.toc-fold").is_visible()
    current = side.locator('a[aria-current="page"]')
    assert current.inner_text() == load_course().lesson(LESSON).title
    assert current.is_visible()
    main = page.locator("main").bounding_box()
    box = side.bounding_box()
    assert main is not None and box is not None
    assert box["x"] + box["width"] <= main["x"], "the contents must sit beside the page"
    # Scrolled half way down, the contents are still there, just below the bar.
    page.evaluate("window.scrollTo(0, document.body.scrollHeight / 2)")
    bar = page.evaluate("document.querySelector('.topbar').getBoundingClientRect().bottom")
    top = page.evaluate("document.querySelector('nav.toc-side').getBoundingClientRect().top")
    assert bar - 1 <= top <= bar + 8, (bar, top)
    side.get_by_role("link", name="Specs").click()
    page.wait_for_url("**/specs.html")
    assert tab.errors == [] and tab.outside == []


def _anchors() -> list[str]:
    lesson = load_course().lesson(LESSON)
    middle = lesson.nodes[len(lesson.nodes) // 2]
    return ["claim-h200_sms", node_anchor(middle.key)]


@pytest.mark.parametrize("viewport", [DESKTOP, PHONE], ids=["desktop", "phone"])
@pytest.mark.parametrize("anchor", _anchors(), ids=["claim", "node"])
def test_a_link_target_lands_below_the_top_bar(
    book: Path, browser: Browser, tabs: list[Tab], anchor: str, viewport: dict[str, int]
) -> None:
    tab = _tab(tabs, browser, viewport)
    page = tab.open(book / "lessons" / f"{LESSON}.html", anchor)
    where = page.evaluate(
        """anchor => ({
            scrolled: window.scrollY,
            bar: document.querySelector('.topbar').getBoundingClientRect().bottom,
            top: document.getElementById(anchor).getBoundingClientRect().top,
        })""",
        anchor,
    )
    assert where["scrolled"] > 0, f"the page did not go to #{anchor}"
    assert where["bar"] <= where["top"] < viewport["height"] / 2, (
        f"#{anchor} lands under the top bar: {where}"
    )


# -- answers, the notebook's ¶, the mindmap's Fit --------------------------------------------
def test_an_answer_stays_hidden_until_asked_for(
    book: Path, browser: Browser, tabs: list[Tab]
) -> None:
    tab = _tab(tabs, browser, DESKTOP, javascript=False)
    page = tab.open(book / "lessons" / f"{LESSON}.html")
    lesson = load_course().lesson(LESSON)
    node = next(n for n in lesson.nodes if n.notes and n.notes[0].markdown.startswith("Answer:"))
    item = page.locator(f"#{node_anchor(node.key)}")
    first_words = " ".join(node.notes[0].markdown.split()[:4])
    answer = item.get_by_text(first_words)
    assert item.is_visible() and not answer.is_visible()
    item.get_by_text("Show the answer").click()
    assert answer.is_visible()


def test_the_notebooks_pilcrow_shows_on_hover(
    book: Path, browser: Browser, tabs: list[Tab]
) -> None:
    tab = _tab(tabs, browser, DESKTOP)
    page = tab.open(book / "exercises" / "roofline.html")
    heading = page.locator(".notebook h4").first
    pilcrow = heading.locator(".anchor-link")
    opacity = "el => getComputedStyle(el).opacity"
    assert pilcrow.evaluate(opacity) == "0"
    heading.hover()
    page.wait_for_function(
        "el => getComputedStyle(el).opacity === '1'", arg=pilcrow.element_handle()
    )


def test_the_fit_button_sits_in_the_mindmaps_corner(
    book: Path, browser: Browser, tabs: list[Tab]
) -> None:
    tab = _tab(tabs, browser, DESKTOP)
    page = tab.open(book / "lessons" / f"{LESSON}.html")
    page.locator(".mindmap-box[data-state='ready']").wait_for(state="attached")
    box = page.locator(".mindmap-box").bounding_box()
    fit = page.get_by_role("button", name="Fit").bounding_box()
    assert box is not None and fit is not None
    assert box["y"] <= fit["y"] <= box["y"] + 20
    assert box["x"] + box["width"] - 20 <= fit["x"] + fit["width"] <= box["x"] + box["width"]
    svg = page.locator("#mindmap").bounding_box()
    assert svg is not None and abs(svg["height"] - box["height"]) <= 2, (
        "the button must not push the mindmap down"
    )
    assert tab.errors == []
