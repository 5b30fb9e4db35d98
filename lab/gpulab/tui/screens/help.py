"""`?` / F1 help: how to study with gpulab, then every key of every screen, generated from
their bindings.

The first part is `gpulab/tui/manual.md` (the app's manual, once a third of the
roadmap lesson).

Only gpulab's own bindings are listed, each with its longer words (the
binding's tooltip) where the footer shows a short one; the keys every list and
tree understands (arrows, page keys) are one line of words, not Textual's
internal action names.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import ClassVar

from rich.table import Table
from rich.text import Text
from textual import getters
from textual.app import App, ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical, VerticalScroll
from textual.dom import DOMNode
from textual.screen import ModalScreen
from textual.widgets import Markdown, Static

__all__ = ["MANUAL", "HelpScreen", "bindings_of", "help_groups"]

MANUAL = Path(__file__).resolve().parents[1] / "manual.md"
"""How to study with gpulab: the help screen shows it above the keys."""

MOVING = Binding(
    "up,down,pageup,pagedown,home,end",
    "move",
    "Move in a list, a tree or a page (home, end: to the top, the bottom)",
    key_display="↑↓ pgup pgdn",
)
"""The keys every list, tree and page understands, said once."""


def bindings_of(cls: type[DOMNode] | type[App[object]]) -> list[Binding]:
    """Every binding gpulab's own classes in `cls`'s ancestry declare, the nearest first,
    one per key (Textual's built-in bindings are left out: their words are internal)."""
    by_key: dict[str, Binding] = {}
    for klass in cls.__mro__:
        if not klass.__module__.startswith("gpulab."):
            continue
        declared: Iterable[BindingType] = klass.__dict__.get("BINDINGS", ())
        for binding in Binding.make_bindings(declared):
            by_key.setdefault(binding.key, binding)
    return list(by_key.values())


def help_groups(
    app: App[object], groups: list[tuple[str, list[type[DOMNode]]]]
) -> list[tuple[str, list[Binding]]]:
    """The keys that work everywhere (the app's, the palette's, moving about),
    then each group's own keys."""
    everywhere = bindings_of(type(app))
    if app.ENABLE_COMMAND_PALETTE:
        everywhere.append(
            Binding(
                app.COMMAND_PALETTE_BINDING,
                "command_palette",
                "Command palette: lessons, days, exercises, the theme",
            )
        )
    everywhere.append(MOVING)
    common = {b.key for b in everywhere}
    result = [("Everywhere", everywhere)]
    for title, classes in groups:
        seen: dict[str, Binding] = {}
        for cls in classes:
            for binding in bindings_of(cls):
                if binding.key not in common:
                    seen.setdefault(binding.key, binding)
        result.append((title, list(seen.values())))
    return result


class HelpScreen(ModalScreen[None]):
    """A scrollable list of keys, grouped by screen."""

    HELP_GROUP: ClassVar[str] = "Help"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,q,question_mark,f1", "dismiss(None)", "Close help"),
    ]

    box = getters.query_one("#help-box", Vertical)
    scroll = getters.query_one("#help-scroll", VerticalScroll)

    def __init__(self, groups: list[tuple[str, list[type[DOMNode]]]]) -> None:
        super().__init__()
        self.groups = groups

    def compose(self) -> ComposeResult:
        with Vertical(id="help-box"), VerticalScroll(id="help-scroll"):
            yield Markdown(MANUAL.read_text(encoding="utf-8"), id="help-manual")
            for title, bindings in help_groups(self.app, self.groups):
                yield Static(self._table(title, bindings), classes="help-group")

    def on_mount(self) -> None:
        self.box.border_title = "Help"
        self.box.border_subtitle = "esc, q or ? closes"
        self.scroll.focus()

    def _table(self, title: str, bindings: list[Binding]) -> Table:
        table = Table(
            title=Text(title, style="bold"),
            title_justify="left",
            show_header=False,
            box=None,
            padding=(0, 2),
            expand=True,
        )
        table.add_column(style="bold cyan", no_wrap=True, min_width=12)
        table.add_column(ratio=1)
        rows: dict[tuple[str, str], list[str]] = {}
        for binding in bindings:
            description = binding.tooltip or binding.description or binding.action.replace("_", " ")
            keys = rows.setdefault((binding.action, description), [])
            display = binding.key_display or self.app.get_key_display(binding)
            if display not in keys:
                keys.append(display)
        for (_, description), keys in rows.items():
            table.add_row(", ".join(keys), description)
        return table
