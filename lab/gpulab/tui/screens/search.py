"""`/` search: a modal that finds nodes in this lesson first, then in every lesson."""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual import getters
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, OptionList, Static
from textual.widgets.option_list import Option

from gpulab.course import Course, SearchHit

__all__ = ["SearchScreen"]

LIMIT = 200


class SearchScreen(ModalScreen[SearchHit | None]):
    """Type to search; enter (or a click) jumps to the highlighted result."""

    HELP_GROUP: ClassVar[str] = "Search"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "dismiss(None)", "Close"),
        Binding("down", "move(1)", "Next result", show=False),
        Binding("up", "move(-1)", "Previous result", show=False),
        Binding("enter", "jump", "Jump to the result", show=False),
    ]

    box = getters.query_one("#search-box", Vertical)
    results = getters.query_one("#search-results", OptionList)
    status = getters.query_one("#search-status", Static)

    def __init__(self, course: Course, lesson_id: str | None, query: str = "") -> None:
        super().__init__()
        self.course = course
        self.lesson_id = lesson_id
        self.query_text = query
        self.hits: list[SearchHit] = []

    def compose(self) -> ComposeResult:
        with Vertical(id="search-box"):
            yield Input(self.query_text, placeholder="Search the lessons…", id="search-input")
            yield Static(id="search-status")
            yield OptionList(id="search-results")

    def on_mount(self) -> None:
        self.box.border_title = "Search"
        self.box.border_subtitle = "enter jump · ↑↓ choose · esc close"
        self.results.can_focus = False
        self._search(self.query_text)

    def on_input_changed(self, event: Input.Changed) -> None:
        self._search(event.value)

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.action_jump()

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        self.dismiss(self.hits[event.option_index])

    def _search(self, query: str) -> None:
        here: list[SearchHit] = []
        if self.lesson_id is not None:
            here = self.course.search(query, self.lesson_id)
        elsewhere = [h for h in self.course.search(query) if h.lesson != self.lesson_id]
        self.hits = (here + elsewhere)[:LIMIT]
        results = self.results
        results.clear_options()
        results.add_options(self._option(hit) for hit in self.hits)
        if self.hits:
            results.highlighted = 0
        self.status.update(self._status(query, here, elsewhere))

    def _status(self, query: str, here: list[SearchHit], elsewhere: list[SearchHit]) -> Text:
        if not query.strip():
            return Text("Type a word from a node or its notes.", style="dim")
        if not here and not elsewhere:
            return Text(f"Nothing matches {query.strip()!r}.", style="dim")
        parts = []
        if self.lesson_id is not None:
            parts.append(f"{len(here)} in this lesson")
        parts.append(f"{len(elsewhere)} in {'other' if self.lesson_id else 'all'} lessons")
        return Text(" · ".join(parts), style="dim")

    def _option(self, hit: SearchHit) -> Option:
        text = Text()
        try:
            lesson = self.course.entry(hit.lesson).title
        except KeyError:
            lesson = hit.lesson
        text.append(lesson, style="bold cyan" if hit.lesson == self.lesson_id else "cyan")
        text.append(" › ")
        text.append(hit.title, style="bold")
        if not hit.in_label:
            text.append("\n  ")
            text.append(hit.snippet, style="dim")
        return Option(text)

    def action_move(self, step: int) -> None:
        results = self.results
        if step > 0:
            results.action_cursor_down()
        else:
            results.action_cursor_up()

    def action_jump(self) -> None:
        index = self.results.highlighted
        if index is not None and 0 <= index < len(self.hits):
            self.dismiss(self.hits[index])
