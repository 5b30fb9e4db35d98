"""A diagram drawn in the terminal: its title, the boxes as Rich panels, the caption and
where its facts come from.

`DiagramView` shows one `gpulab.figures.diagram_model.DiagramData`. `draw` turns its
boxes into Rich renderables: a box is a `Panel` in its kind's colour (dashed for
a proposed or deprecated part), a row of boxes a table grid whose columns share
the width by the boxes' spans, a column of boxes a group, a narrowed box (a
ladder's rung) padded to its share of the width. A link between two neighbours
is an arrow between them (↓ ↑ ↕ in a column, with its label; → ← ↔ in a row);
any other link, and a row's labelled one, is listed under the drawing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from rich import box as boxes
from rich.console import (
    Console,
    ConsoleOptions,
    Group,
    JustifyMethod,
    RenderableType,
    RenderResult,
)
from rich.padding import Padding
from rich.panel import Panel
from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.reactive import reactive
from textual.widgets import Static

from gpulab.tui.diagrams import DIAGRAM_BADGE
from gpulab.tui.text import caption_text, not_drawn_text

if TYPE_CHECKING:
    from gpulab.figures.diagram_model import Box, DiagramData, Link, Role

__all__ = ["DASHED", "ROLE_STYLES", "DiagramView", "about_text", "draw"]

ROLE_STYLES: dict[Role, str] = {
    "compute": "rgb(66,153,255)",
    "device": "rgb(66,153,255)",
    "own": "rgb(66,153,255)",
    "memory": "rgb(255,153,51)",
    "software": "rgb(77,196,105)",
    "source": "rgb(77,196,105)",
    "host": "rgb(191,128,255)",
    "link": "rgb(205,165,0)",
    "kernel": "rgb(235,80,70)",
    "plain": "rgb(140,140,140)",
    "proposed": "rgb(140,140,140)",
    "legacy": "rgb(140,140,140)",
}
"""The border colour of each kind of box: clear on both the dark and the light theme."""

DASHED = boxes.Box("╭╌╌╮\n╎ ╎╎\n├╌┼┤\n╎ ╎╎\n├╌┼┤\n├╌┼┤\n╎ ╎╎\n╰╌╌╯\n")
"""A rounded box drawn with dashes: a part of a plan only proposed, a deprecated path."""

_DASHED_ROLES = ("proposed", "legacy")


class _Share:
    """A renderable drawn in a fraction of the width it is given, centred."""

    def __init__(self, renderable: RenderableType, fraction: float) -> None:
        self.renderable = renderable
        self.fraction = fraction

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        side = int(options.max_width * (1 - self.fraction) / 2)
        yield Padding(self.renderable, (0, side))


class _Drawer:
    """Draws one diagram's boxes, knowing its links."""

    def __init__(self, data: DiagramData) -> None:
        self.links = data.links
        self.drawn: set[Link] = set()

    def joining(self, one: Box, two: Box, *, labels_too: bool = True) -> tuple[str, list[str]]:
        """The arrow between two neighbours (forward, back, both, or none) and the labels of
        the links that join them; marks those links drawn (a labelled one only where the
        arrow can carry its label: `labels_too`)."""
        a = {b.key for b in one.walk() if b.key}
        b = {b.key for b in two.walk() if b.key}
        forward = back = False
        labels: list[str] = []
        for link in self.links:
            if link.start in a and link.end in b:
                forward, back = True, back or link.both
            elif link.start in b and link.end in a:
                back, forward = True, forward or link.both
            else:
                continue
            if labels_too or not link.label:
                self.drawn.add(link)
            if link.label and link.label not in labels:
                labels.append(link.label)
        kind = "both" if forward and back else "forward" if forward else "back" if back else ""
        return kind, labels

    def box(self, box: Box, depth: int = 0) -> RenderableType:
        leaf = not box.children
        justify: JustifyMethod = "center" if leaf else "left"
        parts: list[RenderableType] = []
        if box.label:
            parts.append(Text(box.label, style="bold", justify=justify))
        parts += [Text(line, justify=justify) for line in box.lines]
        if box.children:
            parts.append(self.row(box, depth) if box.layout == "row" else self.column(box, depth))
        body = Group(*parts)
        if not box.label and box.role == "plain":
            return body
        dashed = box.role in _DASHED_ROLES
        return Panel(
            body,
            box=DASHED if dashed else boxes.ROUNDED,
            border_style=ROLE_STYLES[box.role],
            padding=(0, 1 if depth < 2 else 0),
            expand=True,
        )

    def row(self, box: Box, depth: int) -> Table:
        grid = Table.grid(expand=True)
        cells: list[RenderableType] = []
        total = sum(c.span for c in box.children)
        for index, child in enumerate(box.children):
            if index:
                kind, _labels = self.joining(box.children[index - 1], child, labels_too=False)
                arrow = {"both": "↔", "forward": "→", "back": "←"}.get(kind, " ")
                grid.add_column(width=1, vertical="middle", overflow="fold")
                cells.append(Text(arrow, style="bold"))
            grid.add_column(ratio=max(1, round(100 * child.span / total)), overflow="fold")
            cells.append(self.box(child, depth + 1))
        grid.add_row(*cells)
        return grid

    def column(self, box: Box, depth: int) -> Group:
        items: list[RenderableType] = []
        for index, child in enumerate(box.children):
            if index:
                kind, labels = self.joining(box.children[index - 1], child)
                if kind:
                    arrow = {"both": "↕", "forward": "↓", "back": "↑"}[kind]
                    items.append(Text(f"  {arrow} " + "; ".join(labels), style="italic"))
            drawn = self.box(child, depth + 1)
            items.append(_Share(drawn, child.width) if child.width < 1 else drawn)
        return Group(*items)


def draw(data: DiagramData) -> RenderableType:
    """The diagram's boxes as Rich renderables, and under them any link that does not join
    two neighbours."""
    if data.root is None:
        return Text("")
    drawer = _Drawer(data)
    drawing = drawer.box(data.root)
    labels = {b.key: b.label or b.key for b in data.boxes() if b.key}
    rest = [link for link in data.links if link not in drawer.drawn]
    if not rest:
        return drawing
    lines = [
        Text(
            f"{labels[link.start]} {'↔' if link.both else '→'} {labels[link.end]}"
            + (f": {link.label}" if link.label else ""),
            style="italic",
        )
        for link in rest
    ]
    return Group(drawing, *lines)


def about_text(data: DiagramData) -> Group:
    """The caption and the diagram's remarks, then where its facts come from."""
    source = Text(f"Data: {data.source}." if data.source else "", style="dim italic")
    return Group(caption_text(data.caption, data.notes), source)


class DiagramView(Vertical):
    """One diagram: its title, the boxes or why there are none, the caption and the source
    line; `full` lets it fill the view (the figures screen), `hint` goes on the border."""

    DEFAULT_CSS: ClassVar[str] = """
    DiagramView {
        height: auto;
        border: round $primary 60%;
        border-title-color: $text-accent;
        border-subtitle-color: $text-muted;
        padding: 0 1;
        margin-bottom: 1;
    }
    DiagramView.-full {
        height: 1fr;
        overflow-y: auto;
        margin-bottom: 0;
    }
    DiagramView .diagram-title, DiagramView .diagram-drawing, DiagramView .diagram-about,
    DiagramView .diagram-missing {
        height: auto;
    }
    DiagramView .diagram-drawing, DiagramView .diagram-missing {
        margin-bottom: 1;
    }
    """

    data: reactive[DiagramData | None] = reactive(None, recompose=True, init=False)
    """The diagram shown; setting it draws the new one."""

    def __init__(
        self,
        data: DiagramData | None,
        *,
        full: bool = False,
        hint: str = "",
        id: str | None = None,
        classes: str | None = None,
    ) -> None:
        super().__init__(id=id, classes=classes)
        self.full = full
        self.border_subtitle = hint
        self.set_class(full, "-full")
        self.set_reactive(DiagramView.data, data)

    def compose(self) -> ComposeResult:
        data = self.data
        if data is None:
            return
        self.border_title = f"{DIAGRAM_BADGE} diagram {data.id}"
        yield Static(Text(data.title, style="bold"), classes="diagram-title")
        if data.drawable:
            yield Static(draw(data), classes="diagram-drawing")
        else:
            yield Static(not_drawn_text(data.missing), classes="diagram-missing")
        yield Static(about_text(data), classes="diagram-about")
