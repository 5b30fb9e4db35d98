"""A lesson's mindmap as a foldable tree, folded the way markmap folds it.

A node that names one of the course's exercises (an item of the lesson's
"Exercises" section: ``- `nvml-health`: inventory, ...``) opens that exercise
with enter or a click; enter folds or unfolds any other node.
"""

from __future__ import annotations

import re
from collections.abc import Collection
from typing import TYPE_CHECKING, Any, ClassVar

from rich.text import Text
from textual.binding import Binding, BindingType
from textual.message import Message
from textual.widgets import Tree
from textual.widgets.tree import TreeNode

from gpulab.tui.text import node_label

if TYPE_CHECKING:
    from gpulab.course import Lesson, Node

__all__ = ["MindmapTree", "exercise_of", "initially_expanded"]

_EXERCISE = re.compile(r"`([A-Za-z0-9_.-]+)`\s*:")


def exercise_of(node: Node, exercises: Collection[str]) -> str | None:
    """The exercise a node names, if its label starts with one: ``` `name`: ... ```."""
    found = _EXERCISE.match(node.label.strip())
    return found.group(1) if found and found.group(1) in exercises else None


def initially_expanded(lesson: Lesson) -> set[str]:
    """Keys of the nodes markmap shows expanded when the lesson opens.

    ``<!-- markmap: fold -->`` folds a node, ``foldAll`` folds it and all
    below, and front matter ``markmap.initialExpandLevel: N`` folds every node
    at markmap depth N or deeper (the root is depth 1).
    """
    level = _level(lesson.front.markmap)
    expanded: set[str] = set()

    def walk(node: Node, fold_all: bool) -> None:
        fold_all = fold_all or node.fold >= 2
        folded = fold_all or node.fold >= 1 or (level >= 0 and node.depth + 1 >= level)
        if node.children and not folded:
            expanded.add(node.key)
        for child in node.children:
            walk(child, fold_all)

    walk(lesson.root, False)
    return expanded


def _level(options: dict[str, Any]) -> int:
    value = options.get("initialExpandLevel", -1)
    return value if isinstance(value, int) and not isinstance(value, bool) else -1


class MindmapTree(Tree["Node"]):
    """The lesson's nodes; labels keep their inline Markdown and show claim badges."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("enter", "choose", "Open the exercise, or fold or unfold", show=False),
        Binding("space", "toggle_node", "Fold or unfold", show=False),
        Binding(
            "right", "unfold_or_enter", "Unfold, or go down into it", show=False, key_display="→"
        ),
        Binding(
            "left", "fold_or_leave", "Fold, or go up to the parent", show=False, key_display="←"
        ),
        Binding(
            "shift+right",
            "sideways(8)",
            "Scroll the tree sideways (long labels)",
            show=False,
            key_display="shift+→",
        ),
        Binding(
            "shift+left", "sideways(-8)", "Scroll the tree back", show=False, key_display="shift+←"
        ),
    ]

    class ExerciseChosen(Message):
        """The learner chose a node that names an exercise (enter or a click)."""

        def __init__(self, name: str) -> None:
            super().__init__()
            self.name = name

    def __init__(
        self,
        lesson: Lesson,
        expanded: list[str] | None = None,
        *,
        exercises: Collection[str] = (),
        id: str | None = None,
    ) -> None:
        super().__init__(node_label(lesson.root), data=lesson.root, id=id)
        self.lesson = lesson
        self.exercises = frozenset(exercises)
        self.auto_expand = False
        self.guide_depth = 3
        opened = set(expanded) if expanded is not None else initially_expanded(lesson)
        self._by_key: dict[str, TreeNode[Node]] = {lesson.root.key: self.root}
        self.root.allow_expand = bool(lesson.root.children)
        if lesson.root.key in opened or not lesson.root.children:
            self.root.expand()
        self._grow(self.root, lesson.root, opened)

    def _grow(self, parent: TreeNode[Node], node: Node, opened: set[str]) -> None:
        for child in node.children:
            if child.children:
                branch = parent.add(self._label(child), data=child, expand=child.key in opened)
                self._by_key[child.key] = branch
                self._grow(branch, child, opened)
            else:
                self._by_key[child.key] = parent.add_leaf(self._label(child), data=child)

    def _label(self, node: Node) -> Text:
        label = node_label(node)
        if exercise_of(node, self.exercises) is not None:
            label = Text("✎ ", style="yellow") + label
        return label

    def on_tree_node_selected(self, event: Tree.NodeSelected[Node]) -> None:
        """A click on a node that names an exercise opens it."""
        node = event.node.data
        name = exercise_of(node, self.exercises) if node is not None else None
        if name is not None:
            event.stop()
            self.post_message(self.ExerciseChosen(name))

    def expanded_keys(self) -> list[str]:
        """Keys of the expanded nodes, in document order."""
        return [key for key, node in self._by_key.items() if node.allow_expand and node.is_expanded]

    def reveal(self, key: str) -> bool:
        """Expand a node's ancestors and put the cursor on it; False if there is none."""
        node = self._by_key.get(key)
        if node is None:
            return False
        parent = node.parent
        while parent is not None:
            if not parent.is_expanded:
                parent.expand()
            parent = parent.parent
        self._tree_lines  # noqa: B018 - rebuild the lines so `node.line` is current
        self.move_cursor(node)
        self.scroll_to_node(node, animate=False)
        return True

    def fold_all(self) -> None:
        """Fold everything below the root, and move the cursor to the top."""
        self.root.collapse_all()
        self.root.expand()
        cursor = self.cursor_node
        self._tree_lines  # noqa: B018 - rebuild the lines so the cursor can move
        if cursor is not None and cursor.line < 0:
            while cursor.parent is not None and cursor.line < 0:
                cursor = cursor.parent
            self.move_cursor(cursor)

    def unfold_all(self) -> None:
        """Unfold every node."""
        self.root.expand_all()

    def action_choose(self) -> None:
        """Open the exercise the node names, or fold or unfold the node."""
        node = self.cursor_node
        if node is None or node.data is None:
            return
        name = exercise_of(node.data, self.exercises)
        if name is not None:
            self.post_message(self.ExerciseChosen(name))
        elif node.allow_expand:
            node.toggle()

    def action_sideways(self, columns: int) -> None:
        """Scroll the tree left or right, to read the end of long labels."""
        self.scroll_relative(x=columns, animate=False)

    def action_unfold_or_enter(self) -> None:
        """Unfold the node; on one unfolded already, go to its first child."""
        node = self.cursor_node
        if node is None or not node.allow_expand:
            return
        if not node.is_expanded:
            node.expand()
        elif node.children:
            self._tree_lines  # noqa: B018 - rebuild the lines so `node.line` is current
            self.move_cursor(node.children[0])

    def action_fold_or_leave(self) -> None:
        """Fold the node; on one folded already (or a leaf), go to its parent."""
        node = self.cursor_node
        if node is None:
            return
        if node.allow_expand and node.is_expanded:
            node.collapse()
        elif node.parent is not None:
            self.move_cursor(node.parent)
            self.scroll_to_node(node.parent, animate=False)
