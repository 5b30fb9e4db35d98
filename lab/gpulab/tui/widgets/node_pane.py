"""The lesson screen's right pane: the selected node's claims, notes and figures.

A "Check yourself" question keeps its answer (the notes from the one that
starts with "Answer") folded until the learner asks for it, and the claim
cards and figures of such a node come after the answer, never before it: a
measured value would give the answer away.

The figures a lesson places on the node (``<!-- figure: id -->``) follow its
notes. A plot is drawn as a terminal plot (`FigureView`) from the learner's own
results of this session where they cover it, else from gpulab's recording, and
drawn again when a result comes in (the app's `measured`); a diagram
(`DiagramView`) is drawn with Rich from gpulab's recording, specs.toml and the
course. The plot's module, and plotext with it, is imported only when a node
with a figure is first shown.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import TYPE_CHECKING

from rich.text import Text
from textual import getters
from textual.app import ComposeResult
from textual.containers import Vertical, VerticalScroll
from textual.reactive import reactive
from textual.widget import Widget
from textual.widgets import Markdown, Static

from gpulab.course.tree import split_answer
from gpulab.tui.lab import Lab, as_lab
from gpulab.tui.text import inline_markdown
from gpulab.tui.widgets.claim_card import ClaimCard
from gpulab.tui.widgets.mindmap import exercise_of

if TYPE_CHECKING:
    from gpulab.course import Claim, Lesson, Node, Note

__all__ = ["ANSWER_FOLDED", "NodePane"]

ANSWER_FOLDED = "Answer folded: think it through, then press a to read it."


class NodePane(VerticalScroll):
    """Breadcrumbs, the node's title, a card per claim, then its notes as Markdown."""

    node: reactive[Node | None] = reactive(None, init=False)
    """The node shown (the tree's cursor)."""
    unfolded: reactive[bool] = reactive(False, init=False)
    """Whether the node is unfolded in the tree (says where to read on)."""

    breadcrumbs = getters.query_one("#node-path", Static)
    node_title = getters.query_one("#node-title", Static)
    exercise_hint = getters.query_one("#node-exercise", Static)
    claim_cards = getters.query_one("#claim-cards", Vertical)
    notes = getters.query_one("#notes", Markdown)
    folded_note = getters.query_one("#answer-folded", Static)
    answer_notes = getters.query_one("#answer", Markdown)
    answer_claims = getters.query_one("#answer-claims", Vertical)
    figures = getters.query_one("#node-figures", Vertical)

    @property
    def lab(self) -> Lab:
        """The running app as gpulab's state; `app` is its Textual side."""
        return as_lab(self.app)

    def __init__(
        self,
        lesson: Lesson,
        claims: Mapping[str, Claim],
        *,
        exercises: Collection[str] = (),
        id: str | None = None,
    ) -> None:
        super().__init__(id=id)
        self.lesson = lesson
        self.claims = claims
        self.exercises = frozenset(exercises)
        self.answers_shown: set[str] = set()
        """Keys of the nodes whose answer the learner asked for (this session)."""
        self._figure_ids: list[str] = []

    def watch_node(self, node: Node | None) -> None:
        self.scroll_home(animate=False)
        self.breadcrumbs.update(self._breadcrumbs(node))
        title = Text("")
        if node is not None:
            title = Text(f"{node.ordinal}. " if node.ordinal is not None else "")
            title.append_text(inline_markdown(node.label))
        title.stylize("bold")
        self.node_title.update(title)
        self._show_notes()

    def watch_unfolded(self) -> None:
        self._show_notes()

    def on_mount(self) -> None:
        self.watch(self.app, "measured", self._redraw_figures, init=False)

    def compose(self) -> ComposeResult:
        yield Static(id="node-path")
        yield Static(id="node-title")
        yield Static(id="node-exercise")
        yield Vertical(id="claim-cards")
        yield Markdown(id="notes", open_links=True)
        yield Static(ANSWER_FOLDED, id="answer-folded")
        yield Markdown(id="answer", open_links=True)
        yield Vertical(id="answer-claims")
        yield Vertical(id="node-figures")

    @property
    def has_answer(self) -> bool:
        """Whether the node shown is a question with an answer."""
        return self.node is not None and bool(split_answer(self.node.notes)[1])

    @property
    def answer_folded(self) -> bool:
        """Whether the node shown has an answer the learner has not asked for yet."""
        return self.has_answer and self.node is not None and self.node.key not in self.answers_shown

    def show_answer(self) -> None:
        """Unfold the answer of the node shown (and its claim cards, after it)."""
        if self.node is not None and self.has_answer:
            self.answers_shown.add(self.node.key)
            self._show_notes()

    def _show_notes(self) -> None:
        node = self.node
        question, answer = split_answer(node.notes) if node is not None else ([], [])
        folded = bool(answer) and node is not None and node.key not in self.answers_shown
        name = exercise_of(node, self.exercises) if node is not None else None
        hint = self.exercise_hint
        hint.display = name is not None
        if name is not None:
            hint.update(
                Text(
                    f"✎ The exercise {name}: press enter to open it (escape brings you back here).",
                    style="bold yellow",
                )
            )
        known = [self.claims[c] for c in node.claims if c in self.claims] if node else []
        self._mount_cards(self.claim_cards, [] if answer else known)
        self._mount_cards(self.answer_claims, known if answer and not folded else [])
        self.notes.update(self._notes(node, question))
        self.folded_note.display = folded
        shown = self.answer_notes
        shown.display = bool(answer) and not folded
        shown.update("\n\n".join(note.markdown for note in answer) if shown.display else "")
        self._mount_figures(
            [] if folded or node is None else list(dict.fromkeys(mark.id for mark in node.figures))
        )

    def figure_ids(self) -> list[str]:
        """The ids of the figures shown, in order."""
        return list(self._figure_ids)

    def _mount_figures(self, ids: list[str]) -> None:
        if ids == self._figure_ids:
            return
        self._figure_ids = ids
        figures = self.figures
        figures.remove_children()
        figures.display = bool(ids)
        if ids:
            figures.mount_all(self._figure_widget(i) for i in ids)

    def _figure_widget(self, figure_id: str) -> Widget:
        """The view of one placed figure: a plot or a diagram (an unknown id, which the
        linter reports, says so)."""
        from gpulab.figures import FIGURES
        from gpulab.tui.diagrams import diagrams_of, is_diagram

        if figure_id in FIGURES:
            from gpulab.tui.widgets.figure_view import FigureView

            return FigureView(self.lab.figure(figure_id), hint="f draws it full-size")
        if is_diagram(figure_id):
            from gpulab.tui.widgets.diagram_view import DiagramView

            return DiagramView(
                diagrams_of(self.lab.course).data(figure_id), hint="f shows it among the figures"
            )
        return Static(
            Text(f"No figure {figure_id!r}: `gpulab dev lint-lessons` says more.", style="yellow")
        )

    def _redraw_figures(self) -> None:
        """The learner's own results changed: draw the figures shown from them."""
        if not self._figure_ids:
            return
        from gpulab.tui.widgets.figure_view import FigureView

        for view in self.figures.query(FigureView):
            if view.data is not None:
                view.data = self.lab.figure(view.data.id)

    def _mount_cards(self, cards: Vertical, claims: list[Claim]) -> None:
        if [card.claim.id for card in cards.query(ClaimCard)] == [c.id for c in claims]:
            return
        cards.remove_children()
        cards.mount_all(ClaimCard(claim) for claim in claims)
        cards.display = bool(claims)

    def _breadcrumbs(self, node: Node | None) -> Text:
        trail: list[str] = []
        while node is not None and node.parent is not None:
            node = node.parent
            trail.append(node.title)
        return Text(" › ".join(reversed(trail)), style="dim")

    def _notes(self, node: Node | None, notes: list[Note]) -> str:
        if node is None:
            return ""
        parts = [note.markdown for note in notes]
        if node is self.lesson.root:
            objectives = "\n".join(f"- {o}" for o in self.lesson.front.objectives)
            parts.append(f"**After this lesson you can:**\n\n{objectives}")
        if not parts and len(notes) == len(node.notes):
            if node.children and self.unfolded:
                return "*No notes here: the nodes below it hold the details.*"
            if node.children:
                return "*No notes here: unfold the node (→ or space) to read on.*"
            return "*No notes for this node.*"
        return "\n\n".join(parts)
