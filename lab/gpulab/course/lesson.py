"""Lesson files: markmap-compatible Markdown parsed into a mindmap tree.

Headings and list items are *nodes*; paragraphs, code, tables and quotes under
a node are its *notes*. HTML comments on a node's own line carry annotations:
``<!-- claim: id -->`` and markmap's ``<!-- markmap: fold -->``. A figure,
``<!-- figure: id -->``, goes there too (shown after the node's notes), or on a
line of its own among the notes, where it is shown. The parser only records
figure ids: which ids exist is known to `gpulab.figures`, which the course may
not import, so the linter is handed that set (`Course.lint(figures=...)`, and
`unknown_figures` here). The annotations' values are read and checked by
`gpulab.course.annotations`, which the builder here extends.

`parse_lesson` raises `CourseError` for what makes a lesson unusable (bad
front matter, no root heading, an unknown claim) and returns the rest of its
findings, the places where markmap would draw a different tree, as
`Lesson.problems` for the linter.
"""

from __future__ import annotations

import re
import textwrap
from collections.abc import Collection, Mapping
from pathlib import Path
from typing import Any, Literal

from markdown_it import MarkdownIt
from markdown_it.token import Token
from markdown_it.tree import SyntaxTreeNode
from mdit_py_plugins.front_matter import front_matter_plugin

from gpulab.course.annotations import ANNOTATION as _ANNOTATION
from gpulab.course.annotations import AnnotationReader
from gpulab.course.annotations import only_comments as _only_comments
from gpulab.course.frontmatter import FrontMatter, parse_front_matter
from gpulab.course.problems import CourseError, Problem
from gpulab.course.tree import FigureMark, Lesson, Node, Note

__all__ = ["markdown_parser", "parse_lesson", "unknown_figures"]

_LISTS = ("bullet_list", "ordered_list")
_NOTE_KINDS = {
    "paragraph": "paragraph",
    "fence": "code",
    "code_block": "code",
    "table": "table",
    "blockquote": "quote",
    "html_block": "html",
}


def markdown_parser() -> MarkdownIt:
    """The Markdown dialect of lessons: markmap's (CommonMark, HTML, tables)."""
    md = MarkdownIt("commonmark", {"html": True, "breaks": True})
    md.enable(["table", "strikethrough"])
    md.use(front_matter_plugin)
    return md


def parse_lesson(
    text: str,
    path: Path,
    lesson_id: str | None = None,
    claims: Mapping[str, object] | None = None,
) -> Lesson:
    """Parse one lesson's Markdown into a `Lesson`.

    `claims` is the set of known claim ids; when given, an unknown id is an
    error. Raises `CourseError` naming every fatal problem with its line.
    """
    tokens = markdown_parser().parse(text)
    builder = _Builder(text, path, claims)
    front = builder.front_matter(tokens)
    builder.build(SyntaxTreeNode(tokens))
    if builder.fatal:
        raise CourseError(builder.fatal)
    assert front is not None and builder.root is not None
    lesson = Lesson(lesson_id or path.stem, path, front, builder.root, builder.lint)
    return lesson


class _Builder(AnnotationReader):
    """Walks markdown-it's syntax tree and builds the node tree.

    Reading the annotations, and keeping the problems found, is `AnnotationReader`'s part.
    """

    def __init__(self, text: str, path: Path, claims: Mapping[str, object] | None) -> None:
        super().__init__(path, claims)
        self.lines = text.split("\n")
        self.root: Node | None = None
        self.keys: set[str] = set()
        self.has_list: set[str] = set()

    # -- front matter -----------------------------------------------------
    def front_matter(self, tokens: list[Token]) -> FrontMatter | None:
        token = tokens[0] if tokens and tokens[0].type == "front_matter" else None
        if token is None:
            self.error(1, "no front matter", "start the file with ---, title, day, objectives, ---")
            return None
        first_line = (token.map[0] if token.map else 0) + 2
        front, problems = parse_front_matter(token.content, self.path, first_line)
        self.fatal.extend(problems)
        return front

    # -- tree ---------------------------------------------------------------
    def build(self, tree: SyntaxTreeNode) -> None:
        stack: list[Node] = []
        for block in tree.children:
            line = _line(block)
            if block.type == "front_matter":
                continue
            if block.type == "heading":
                self._heading(block, stack)
            elif not stack:
                if block.type == "html_block" and _only_comments(block.content):
                    continue
                self.error(
                    line,
                    "text before the lesson's `#` heading",
                    "start the lesson with its `# Title` heading",
                )
            elif block.type in _LISTS:
                self._list(block, stack[-1])
            else:
                self._heading_block(block, stack[-1])
        if self.root is None:
            self.error(
                None, "the lesson has no `#` heading", "add `# Title` after the front matter"
            )
        else:
            self._check_children(self.root)

    def _heading(self, block: SyntaxTreeNode, stack: list[Node]) -> None:
        level = int(block.tag[1])
        line = _line(block)
        while stack and stack[-1].level >= level:
            stack.pop()
        if level == 1:
            if self.root is not None:
                self.error(line, "a second `#` heading", "a lesson has one `#` root; use `##` here")
                return
        elif not stack:
            self.error(
                line,
                "this heading comes before the lesson's `#` heading",
                "start the lesson with its `# Title` heading",
            )
            return
        elif level > stack[-1].level + 1:
            self.warn(
                line,
                f"heading jumps from level {stack[-1].level} to {level}",
                f"use {'#' * (stack[-1].level + 1)}: markmap regroups skipped levels",
            )
        parent = stack[-1] if stack else None
        node = self._node(block.children[0], "heading", parent, line, level=level, tight=True)
        stack.append(node)
        if parent is None:
            self.root = node

    def _list(self, block: SyntaxTreeNode, parent: Node) -> None:
        start = int(block.attrs.get("start", 1)) if block.type == "ordered_list" else None
        if parent.key in self.has_list:
            self.warn(
                _line(block),
                "a second list under the same node",
                "markmap shows an empty node for each list: merge them into one list",
            )
        self.has_list.add(parent.key)
        for index, item in enumerate(block.children):
            self._item(item, parent, None if start is None else start + index)

    def _item(self, item: SyntaxTreeNode, parent: Node, ordinal: int | None) -> None:
        line = _line(item)
        blocks = list(item.children)
        first = blocks[0] if blocks else None
        if first is not None and first.type == "paragraph":
            blocks.pop(0)
            node = self._node(
                first.children[0], "item", parent, line, ordinal=ordinal, tight=bool(first.hidden)
            )
        else:
            self.warn(line, "a list item without text", "start the item with a line of text")
            node = self._node(None, "item", parent, line, ordinal=ordinal, tight=True)
        seen_list = False
        for block in blocks:
            if block.type in _LISTS:
                self._list(block, node)
                seen_list = True
                continue
            if seen_list:
                self.warn(
                    _line(block),
                    "a note after the item's sub-list",
                    "markmap drops it: move it above the sub-list",
                )
            self._note(block, node)

    def _heading_block(self, block: SyntaxTreeNode, parent: Node) -> None:
        line = _line(block)
        if block.type in ("fence", "code_block", "table"):
            what = "a table" if block.type == "table" else "a code block"
            self.warn(
                line,
                f"{what} directly under a heading",
                "markmap makes it a node and hides lists beside it: indent it under an item",
            )
        elif block.type == "paragraph" and _image_only(block):
            self.warn(
                line,
                "an image alone in a paragraph under a heading",
                "markmap makes it a node: put it under a list item",
            )
        elif block.type == "html_block" and not _only_comments(block.content):
            self.warn(
                line, "raw HTML under a heading", "markmap may turn it into nodes: use Markdown"
            )
        self._note(block, parent)

    def _note(self, block: SyntaxTreeNode, node: Node) -> None:
        kind = _NOTE_KINDS.get(block.type)
        if kind is None:  # a thematic break draws nothing in either view
            return
        if kind == "html" and _only_comments(block.content):
            self._check_stray_annotations(block.content, _line(block))
            self._figure_marks(block.content, node, _line(block))
            return
        if block.map is None:
            return
        source = "\n".join(self.lines[block.map[0] : block.map[1]])
        markdown = textwrap.dedent(source).strip("\n")
        self._check_stray_annotations(markdown, _line(block))
        lang = block.info.split()[0] if kind == "code" and block.info.strip() else ""
        node.notes.append(Note(kind, markdown, _line(block), lang))  # type: ignore[arg-type]

    # -- one node -----------------------------------------------------------
    def _node(
        self,
        inline: SyntaxTreeNode | None,
        kind: Literal["heading", "item"],
        parent: Node | None,
        line: int,
        *,
        level: int = 0,
        ordinal: int | None = None,
        tight: bool,
    ) -> Node:
        raw = inline.content if inline is not None else ""
        claims: list[str] = []
        examples: list[str] = []
        figures: list[FigureMark] = []
        fold = 0
        for match in _ANNOTATION.finditer(raw):
            what, value = match.group(1), match.group(2)
            if what == "claim":
                claims.extend(self._claim_ids(value, line))
            elif what == "example":
                examples.extend(self._examples(value, line))
            elif what == "figure":
                figures.extend(FigureMark(f, line) for f in self._figure_ids(value, line))
            elif value in ("fold", "foldAll"):
                if tight:
                    fold = max(fold, 2 if value == "foldAll" else 1)
                else:
                    self.warn(
                        line,
                        f"`markmap: {value}` on an item of a list with notes",
                        "markmap ignores it there: fold a heading instead",
                    )
        label = _ANNOTATION.sub("", raw).strip()
        text = _plain(inline.children if inline is not None else [])
        depth = 0 if parent is None else parent.depth + 1
        node = Node(
            key=self._key(parent, text),
            label=label,
            text=text,
            kind=kind,
            depth=depth,
            line=line,
            level=level,
            ordinal=ordinal,
            claims=tuple(claims),
            examples=tuple(examples),
            figures=tuple(figures),
            fold=fold,
            parent=parent,
        )
        if parent is not None:
            parent.children.append(node)
        return node

    def _key(self, parent: Node | None, text: str) -> str:
        slug = re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")[:40].strip("-") or "node"
        key = slug if parent is None else f"{parent.key}/{slug}"
        unique, n = key, 2
        while unique in self.keys:
            unique, n = f"{key}-{n}", n + 1
        self.keys.add(unique)
        return unique

    def _check_children(self, node: Node) -> None:
        kinds = {child.kind for child in node.children}
        if kinds == {"heading", "item"}:
            first_item = next(c for c in node.children if c.kind == "item")
            self.warn(
                first_item.line,
                "a list beside sub-headings",
                "markmap drops the list: move it under its own heading or into a note",
            )
        for child in node.children:
            self._check_children(child)


def unknown_figures(lesson: Lesson, known: Collection[str]) -> list[Problem]:
    """A problem, at its marker's line, for each figure the lesson places that is not
    in `known` (the ids `gpulab.figures` defines, handed in by a layer that may know them)."""
    problems = []
    for node in lesson.nodes:
        for mark in node.figures:
            if mark.id not in known:
                problems.append(
                    Problem(
                        lesson.path,
                        mark.line,
                        f"unknown figure {mark.id!r}",
                        "see `gpulab.figures` for the figures there are, or fix the id",
                    )
                )
    return problems


def _line(block: SyntaxTreeNode) -> int:
    return block.map[0] + 1 if block.map else 0


def _image_only(paragraph: SyntaxTreeNode) -> bool:
    inline = paragraph.children[0] if paragraph.children else None
    children = [c for c in (inline.children if inline else []) if c.type != "softbreak"]
    return len(children) == 1 and children[0].type == "image"


def _plain(children: list[SyntaxTreeNode] | list[Any]) -> str:
    """Plain text of inline Markdown: marks, links and comments dropped."""
    parts: list[str] = []
    for child in children:
        if child.type in ("text", "code_inline"):
            parts.append(child.content)
        elif child.type in ("softbreak", "hardbreak"):
            parts.append(" ")
        elif child.type == "html_inline":
            continue
        else:
            parts.append(_plain(child.children))
    return re.sub(r"\s+", " ", "".join(parts)).strip()
