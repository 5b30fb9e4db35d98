"""A lesson's mindmap as a foldable tree, folded the way markmap folds it."""

from __future__ import annotations

from typing import Any

from textual.widgets import Tree
from textual.widgets.tree import TreeNode

from gpulab.course import Lesson, Node
from gpulab.tui.text import node_label

__all__ = ["MindmapTree", "initially_expanded"]


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


class MindmapTree(Tree[Node]):
    """The lesson's nodes; labels keep their inline Markdown and show claim badges."""

    def __init__(
        self, lesson: Lesson, expanded: list[str] | None = None, *, id: str | None = None
    ) -> None:
        super().__init__(node_label(lesson.root), data=lesson.root, id=id)
        self.lesson = lesson
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
                branch = parent.add(node_label(child), data=child, expand=child.key in opened)
                self._by_key[child.key] = branch
                self._grow(branch, child, opened)
            else:
                self._by_key[child.key] = parent.add_leaf(node_label(child), data=child)

    def expanded_keys(self) -> list[str]:
        """Keys of the expanded nodes, in document order."""
        return [key for key, node in self._by_key.items()
                if node.allow_expand and node.is_expanded]

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
