"""`?` / F1 help: every key of every screen, generated from their bindings."""

from __future__ import annotations

from collections.abc import Iterable
from typing import ClassVar

from rich.table import Table
from rich.text import Text
from textual.app import App, ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical, VerticalScroll
from textual.dom import DOMNode
from textual.screen import ModalScreen, Screen
from textual.widgets import Static

__all__ = ["HelpScreen", "bindings_of", "help_groups"]

_UNDESCRIBED = {"help_quit": "Say how to quit"}
"""Descriptions for Textual's own bindings that have none."""


def bindings_of(cls: type[DOMNode] | type[App[object]]) -> list[Binding]:
    """Every binding a class declares or inherits, its own first, one per key."""
    by_key: dict[str, Binding] = {}
    for klass in cls.__mro__:
        declared: Iterable[BindingType] = klass.__dict__.get("BINDINGS", ())
        for binding in Binding.make_bindings(declared):
            by_key.setdefault(binding.key, binding)
    return list(by_key.values())


def help_groups(app: App[object], groups: list[tuple[str, list[type[DOMNode]]]]
                ) -> list[tuple[str, list[Binding]]]:
    """The keys that work everywhere (the app's, every screen's, the palette's),
    then each group's own keys."""
    keys = {b.key: b for b in bindings_of(type(app))}
    keys.update({b.key: b for b in bindings_of(Screen)})  # a screen's key wins over the app's
    everywhere = list(keys.values())
    if app.ENABLE_COMMAND_PALETTE:
        everywhere.append(Binding(app.COMMAND_PALETTE_BINDING, "command_palette",
                                  "Command palette"))
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

    def __init__(self, groups: list[tuple[str, list[type[DOMNode]]]]) -> None:
        super().__init__()
        self.groups = groups

    def compose(self) -> ComposeResult:
        with Vertical(id="help-box"), VerticalScroll(id="help-scroll"):
            for title, bindings in help_groups(self.app, self.groups):
                yield Static(self._table(title, bindings), classes="help-group")

    def on_mount(self) -> None:
        box = self.query_one("#help-box")
        box.border_title = "Keys"
        box.border_subtitle = "esc, q or ? closes"
        self.query_one("#help-scroll").focus()

    def _table(self, title: str, bindings: list[Binding]) -> Table:
        table = Table(title=Text(title, style="bold"), title_justify="left", show_header=False,
                      box=None, padding=(0, 2), expand=True)
        table.add_column(style="bold cyan", no_wrap=True, min_width=12)
        table.add_column(ratio=1)
        rows: dict[tuple[str, str], list[str]] = {}
        for binding in bindings:
            description = binding.description or _UNDESCRIBED.get(
                binding.action, binding.action.replace("_", " "))
            keys = rows.setdefault((binding.action, description), [])
            display = self.app.get_key_display(binding)
            if display not in keys:
                keys.append(display)
        for (_, description), keys in rows.items():
            table.add_row(", ".join(keys), description)
        return table
