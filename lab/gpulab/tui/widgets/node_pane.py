"""The lesson screen's right pane: the selected node's claims and notes."""

from __future__ import annotations

from collections.abc import Mapping

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical, VerticalScroll
from textual.reactive import reactive
from textual.widgets import Markdown, Static

from gpulab.course import Claim, Lesson, Node
from gpulab.tui.text import inline_markdown
from gpulab.tui.widgets.claim_card import ClaimCard

__all__ = ["NodePane"]


class NodePane(VerticalScroll):
    """Breadcrumbs, the node's title, a card per claim, then its notes as Markdown."""

    node: reactive[Node | None] = reactive(None, init=False)

    def __init__(
        self, lesson: Lesson, claims: Mapping[str, Claim], *, id: str | None = None
    ) -> None:
        super().__init__(id=id)
        self.lesson = lesson
        self.claims = claims

    def watch_node(self, node: Node | None) -> None:
        self.scroll_home(animate=False)
        self.query_one("#node-path", Static).update(self._breadcrumbs(node))
        title = Text("")
        if node is not None:
            title = Text(f"{node.ordinal}. " if node.ordinal is not None else "")
            title.append_text(inline_markdown(node.label))
        title.stylize("bold")
        self.query_one("#node-title", Static).update(title)
        cards = self.query_one("#claim-cards")
        cards.remove_children()
        if node is not None:
            known = [self.claims[c] for c in node.claims if c in self.claims]
            cards.mount_all(ClaimCard(claim) for claim in known)
            cards.display = bool(known)
        self.query_one("#notes", Markdown).update(self._notes(node))

    def compose(self) -> ComposeResult:
        yield Static(id="node-path")
        yield Static(id="node-title")
        yield Vertical(id="claim-cards")
        yield Markdown(id="notes", open_links=True)

    def _breadcrumbs(self, node: Node | None) -> Text:
        trail: list[str] = []
        while node is not None and node.parent is not None:
            node = node.parent
            trail.append(node.title)
        return Text(" › ".join(reversed(trail)), style="dim")

    def _notes(self, node: Node | None) -> str:
        if node is None:
            return ""
        parts = [note.markdown for note in node.notes]
        if node is self.lesson.root:
            objectives = "\n".join(f"- {o}" for o in self.lesson.front.objectives)
            parts.append(f"**After this lesson you can:**\n\n{objectives}")
        if not parts:
            if node.children:
                return "*No notes here: unfold the node to read on.*"
            return "*No notes for this node.*"
        return "\n\n".join(parts)
