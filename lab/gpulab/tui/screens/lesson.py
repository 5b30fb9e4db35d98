"""The lesson screen: the mindmap as a foldable tree, the selected node's notes beside it.

`m` on a node that carries a claim asks for a prediction, then asks the app to
measure the claim with its probe (`MeasureClaim`; the claim card shows the
outcome). Enter on a node that names an exercise opens it above the lesson
(escape comes back to the node); `a` unfolds a "Check yourself" answer; `<`
and `>` narrow and widen the tree (remembered); `f` opens the figures
(`OpenFigures`) at the node's figure, or at one its claim's probe feeds.

What the learner reads (the lesson, the node, the folds) goes up to the app as
messages (`LessonOpened`, `NodeVisited`, `FoldsChanged`), which keeps it in
the progress; the screen only reads the progress, to open where it was left.
"""

from __future__ import annotations

from collections import deque
from functools import partial
from typing import ClassVar

from textual import getters
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal
from textual.reactive import reactive
from textual.widgets import Footer, Header, Tree

from gpulab.course import Claim, Course, CourseError, Lesson, Node
from gpulab.course.paths import CoursePaths
from gpulab.tui.messages import (
    FoldsChanged,
    LessonOpened,
    MeasureClaim,
    NodeVisited,
    OpenExercise,
    OpenFigures,
    OpenGpu,
    OpenLesson,
    OpenSearch,
    ShowMap,
    TreeWidthChanged,
)
from gpulab.tui.screens.base import LabScreen
from gpulab.tui.screens.prediction import PredictionScreen
from gpulab.tui.state import TREE_WIDTH
from gpulab.tui.widgets import ClaimCard, ErrorPanel, MindmapTree, NodePane

__all__ = ["WIDTH_STEP", "LessonScreen"]

WIDTH_STEP = 5
"""Percent of the screen that `<` and `>` take from or give to the tree."""


class LessonScreen(LabScreen):
    """One lesson; a broken lesson shows what is wrong instead of its tree."""

    HELP_GROUP = "Lesson"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "back", "Map", tooltip="Back to the course map, on this lesson"),
        Binding("slash", "search", "Search", tooltip="Search this lesson first, then the others"),
        Binding("n", "step(1)", "Next lesson"),
        Binding("p", "step(-1)", "Previous lesson", show=False),
        Binding(
            "m",
            "measure",
            "Measure",
            tooltip="Measure the node's claim here, after your prediction",
        ),
        Binding("a", "answer", "Answer", tooltip="Unfold the answer to a Check-yourself question"),
        Binding(
            "f",
            "figures",
            "Figures",
            show=False,
            tooltip="Every figure, drawn from "
            "probe data; at this node's figure, or one its claim's probe feeds",
        ),
        Binding("g", "gpu", "GPU", tooltip="The GPU screen"),
        Binding("less_than_sign", "tree_width(-1)", "Narrow the tree", show=False, key_display="<"),
        Binding(
            "greater_than_sign", "tree_width(1)", "Widen the tree", show=False, key_display=">"
        ),
        Binding("minus", "fold_all", "Fold all", show=False),
        Binding("plus,equals_sign", "unfold_all", "Unfold all", key_display="+", show=False),
        Binding("r", "reload", "Retry a broken lesson", show=False),
    ]

    tree_width: reactive[int] = reactive(TREE_WIDTH[0], init=False)
    """The tree's width in percent of the screen (`<` and `>`; the app remembers it)."""

    mindmap = getters.query_one(MindmapTree)
    pane = getters.query_one(NodePane)

    def __init__(
        self,
        course: Course,
        lesson_id: str,
        key: str | None = None,
        *,
        tree_width: int = TREE_WIDTH[0],
    ) -> None:
        super().__init__()
        self.course = course
        self.lesson_id = lesson_id
        self.start_key = key
        self.lesson: Lesson | None = None
        self.error: CourseError | None = None
        self.set_reactive(LessonScreen.tree_width, tree_width)
        self._to_measure: deque[Claim] = deque()
        self._load()

    def _load(self) -> None:
        try:
            self.lesson, self.error = self.course.lesson(self.lesson_id), None
        except CourseError as exc:
            self.lesson, self.error = None, exc
        entry = self.course.entry(self.lesson_id)
        self.title = self.lesson.title if self.lesson is not None else entry.title
        position = self.course.entries.index(entry) + 1
        day = self.lesson.front.day if self.lesson is not None else entry.day
        self.sub_title = f"Day {day} · lesson {position} of {len(self.course.entries)}"

    def validate_tree_width(self, percent: int) -> int:
        _, low, high = TREE_WIDTH
        return min(max(percent, low), high)

    def watch_tree_width(self, percent: int) -> None:
        if self.lesson is not None:
            self.mindmap.styles.width = f"{percent}%"
        self.post_message(TreeWidthChanged(percent))

    def compose(self) -> ComposeResult:
        yield Header()
        if self.lesson is not None:
            state = self.lab.progress.lessons.get(self.lesson_id)
            names = [exercise.name for exercise in self.course.exercises()]
            with Horizontal(id="lesson-body"):
                yield MindmapTree(
                    self.lesson,
                    state.expanded if state is not None else None,
                    exercises=names,
                    id="mindmap",
                )
                yield NodePane(self.lesson, self.course.claims, exercises=names, id="node-pane")
        else:
            assert self.error is not None
            yield ErrorPanel(
                "This lesson cannot be opened.",
                self.error.problems,
                root=CoursePaths.of_manifest(self.course.manifest.path).root,
                advice="Fix the file, then press r to reload it. "
                "n and p go to the next and previous lessons; escape returns to the map.",
                id="lesson-error",
            )
        yield Footer()

    def on_mount(self) -> None:
        self._start()

    def _start(self) -> None:
        self.post_message(LessonOpened(self.lesson_id))
        if self.lesson is None:
            return
        tree = self.mindmap
        tree.styles.width = f"{self.tree_width}%"
        state = self.lab.progress.lessons.get(self.lesson_id)
        key = self.start_key or (state.selected if state is not None else None)
        if key is None or not tree.reveal(key):
            tree.reveal(self.lesson.root.key)
        tree.focus()

    def on_tree_node_highlighted(self, event: Tree.NodeHighlighted[Node]) -> None:
        node = event.node.data
        if node is None:
            return
        pane = self.pane
        pane.set_reactive(NodePane.unfolded, event.node.is_expanded)
        pane.node = node
        self.refresh_bindings()
        self.post_message(NodeVisited(self.lesson_id, node.key))

    def on_tree_node_expanded(self, event: Tree.NodeExpanded[Node]) -> None:
        self._remember_folds()
        self._tell_pane(event.node.data, unfolded=True)

    def on_tree_node_collapsed(self, event: Tree.NodeCollapsed[Node]) -> None:
        self._remember_folds()
        self._tell_pane(event.node.data, unfolded=False)

    def on_mindmap_tree_exercise_chosen(self, event: MindmapTree.ExerciseChosen) -> None:
        self.post_message(OpenExercise(event.name, above=True))

    def _tell_pane(self, node: Node | None, *, unfolded: bool) -> None:
        panes = self.query(NodePane)
        if panes and node is not None and panes.first().node is node:
            panes.first().unfolded = unfolded

    def _remember_folds(self) -> None:
        trees = self.query(MindmapTree)
        if not trees:
            return
        state = self.lab.progress.lessons.get(self.lesson_id)
        expanded = trees.first().expanded_keys()
        if state is None or state.expanded != expanded:
            self.post_message(FoldsChanged(self.lesson_id, expanded))

    def selected_claims(self) -> list[Claim]:
        """The claims of the selected node that the course defines."""
        panes = self.query(NodePane)
        node = panes.first().node if panes else None
        if node is None:
            return []
        return [self.course.claims[c] for c in node.claims if c in self.course.claims]

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        panes = self.query(NodePane)
        folded = bool(panes) and panes.first().answer_folded
        if action == "measure":  # on a claim, unless measuring would give an answer away
            return bool(self.selected_claims()) and not folded
        if action == "answer":
            return folded
        return True

    def reveal(self, key: str) -> None:
        """Select a node of this lesson, unfolding its ancestors."""
        if self.lesson is not None:
            self.mindmap.reveal(key)

    def action_back(self) -> None:
        self.post_message(ShowMap(lesson=self.lesson_id))

    def action_search(self) -> None:
        self.post_message(OpenSearch(self.lesson_id))

    def action_step(self, step: int) -> None:
        target = self.course.neighbour(self.lesson_id, step)
        if target is None:
            where = "last" if step > 0 else "first"
            self.notify(f"This is the {where} lesson.", timeout=3)
            return
        self.post_message(OpenLesson(target))

    def action_measure(self) -> None:
        """Ask for a prediction of each claim of the node, then have it measured."""
        self._to_measure = deque(self.selected_claims())
        self._ask_next()

    def _ask_next(self) -> None:
        """Ask for the next claim's prediction (its card shows whether it is being measured
        already)."""
        while self._to_measure:
            claim = self._to_measure.popleft()
            if any(
                card.state.measuring for card in self.query(ClaimCard) if card.claim.id == claim.id
            ):
                self.notify(f"{claim.id} is being measured already.", timeout=3)
                continue
            self.app.push_screen(
                PredictionScreen(claim, self.lab.nvml_backend), partial(self._predicted, claim)
            )
            return

    def _predicted(self, claim: Claim, predicted: float | None) -> None:
        self.post_message(MeasureClaim(claim, predicted))
        self._ask_next()

    def action_answer(self) -> None:
        """Unfold the answer of the Check-yourself question under the cursor."""
        if self.lesson is not None:
            self.pane.show_answer()
            self.refresh_bindings()

    def action_tree_width(self, step: int) -> None:
        """Give the tree more or less of the screen; the width is remembered."""
        if self.lesson is not None:
            self.tree_width += step * WIDTH_STEP

    def action_gpu(self) -> None:
        self.post_message(OpenGpu())

    def action_figures(self) -> None:
        """Open the figures at this node's figure (or its claim's, or this lesson's first)."""
        self.post_message(OpenFigures(self.figure_here()))

    def figure_here(self) -> str | None:
        """The figure that f opens at: the selected node's first, else the first one a claim
        of the node feeds, else the first this lesson places; None when there is none."""
        from gpulab.tui.figures import fed_by

        panes = self.query(NodePane)
        node = panes.first().node if panes else None
        if node is not None and node.figures:
            return node.figures[0].id
        for claim in self.selected_claims():
            for figure in fed_by(claim.probe):
                return figure.id
        if self.lesson is not None:
            for each in self.lesson.root.walk():
                if each.figures:
                    return each.figures[0].id
        return None

    def action_fold_all(self) -> None:
        if self.lesson is not None:
            self.mindmap.fold_all()

    def action_unfold_all(self) -> None:
        if self.lesson is not None:
            self.mindmap.unfold_all()

    async def action_reload(self) -> None:
        if self.error is None:
            self.notify("This lesson is not broken: nothing to retry.", timeout=3)
            return
        self._load()
        await self.recompose()
        self._start()
        if self.error is not None:
            self.notify("The lesson is still broken.", severity="warning", timeout=3)
