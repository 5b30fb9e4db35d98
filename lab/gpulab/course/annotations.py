"""The annotations on a lesson's nodes: HTML comments that say what a node cites or shows.

``<!-- claim: id -->`` names the claims a node's numbers come from,
``<!-- example: 64, 0.25 -->`` the numbers it shows only as examples, and
``<!-- figure: id -->`` the figures placed at the node (on its own line, or on
a line of its own among its notes). `AnnotationReader` reads and checks their
values for the lesson parser (`gpulab.course.lesson`), which builds the tree on
top of it, and collects the problems both find: an unknown or malformed claim
makes the lesson unusable, the rest is for the linter.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path

from gpulab.course.claims import CLAIM_ID
from gpulab.course.problems import Problem
from gpulab.course.tree import FigureMark, Node

__all__ = ["ANNOTATION", "FIGURE_ID", "AnnotationReader", "only_comments"]

ANNOTATION = re.compile(r"<!--\s*(claim|markmap|example|figure)\s*:\s*(.*?)\s*-->", re.DOTALL)
"""An annotation: what it is (group 1) and its value (group 2)."""
FIGURE_ID = re.compile(r"^[a-z0-9][a-z0-9-]*$")
"""What a figure id looks like: lowercase words joined by hyphens (``latency-footprint``)."""
_EXAMPLE_NUMBER = re.compile(r"^\d[\d,]*(?:\.\d+)?$")


class AnnotationReader:
    """Reads and checks annotation values, keeping the problems it finds.

    `fatal` problems make the lesson unusable; `lint` ones are for the linter.
    """

    def __init__(self, path: Path, claims: Mapping[str, object] | None) -> None:
        self.path = path
        self.claims = claims
        self.fatal: list[Problem] = []
        self.lint: list[Problem] = []

    # -- problems ---------------------------------------------------------
    def error(self, line: int | None, message: str, hint: str = "") -> None:
        self.fatal.append(Problem(self.path, line, message, hint))

    def warn(self, line: int | None, message: str, hint: str = "") -> None:
        self.lint.append(Problem(self.path, line, message, hint))

    # -- annotations --------------------------------------------------------
    def _check_stray_annotations(self, markdown: str, line: int) -> None:
        comments_only = only_comments(markdown)
        for match in ANNOTATION.finditer(markdown):
            what = match.group(1)
            if what in ("claim", "example"):
                self.warn(
                    line,
                    f"a{'n' if what == 'example' else ''} {what} annotation inside a note",
                    f"put <!-- {what}: ... --> on the node's own line",
                )
            elif what == "figure" and not comments_only:
                self.warn(
                    line,
                    "a figure annotation inside a note's text",
                    "put <!-- figure: ... --> on a line of its own, or on the node's line",
                )

    def _figure_marks(self, html: str, node: Node, line: int) -> None:
        """Figures placed by a comment on a line of its own among the node's notes."""
        for match in ANNOTATION.finditer(html):
            if match.group(1) == "figure":
                at = line + html[: match.start()].count("\n")
                node.figures += tuple(
                    FigureMark(f, at, len(node.notes)) for f in self._figure_ids(match.group(2), at)
                )

    def _figure_ids(self, value: str, line: int) -> list[str]:
        ids = [part for part in re.split(r"[\s,]+", value) if part]
        if not ids:
            self.warn(line, "an empty figure annotation", "write <!-- figure: some-id -->")
        for figure_id in ids:
            if not FIGURE_ID.match(figure_id):
                self.warn(
                    line,
                    f"{figure_id!r} is not a valid figure id",
                    "use lowercase letters, digits and hyphens",
                )
        return [f for f in ids if FIGURE_ID.match(f)]

    def _claim_ids(self, value: str, line: int) -> list[str]:
        ids = [part for part in re.split(r"[\s,]+", value) if part]
        if not ids:
            self.error(line, "an empty claim annotation", "write <!-- claim: some_id -->")
        for claim_id in ids:
            if not CLAIM_ID.match(claim_id):
                self.error(
                    line,
                    f"{claim_id!r} is not a valid claim id",
                    "use lowercase letters, digits and underscores",
                )
            elif self.claims is not None and claim_id not in self.claims:
                self.error(
                    line,
                    f"unknown claim {claim_id!r}",
                    "define it in lessons/claims/<lesson>.toml or fix the id",
                )
        return ids

    def _examples(self, value: str, line: int) -> list[str]:
        numbers = [part for part in re.split(r"[\s,;]+", value) if part]
        if not numbers:
            self.warn(line, "an empty example annotation", "write <!-- example: 64, 0.25 -->")
        for number in numbers:
            if not _EXAMPLE_NUMBER.match(number):
                self.warn(
                    line,
                    f"example {number!r} is not a number",
                    "list the numbers as written, e.g. <!-- example: 64, 0.25 -->",
                )
        return [n for n in numbers if _EXAMPLE_NUMBER.match(n)]


def only_comments(html: str) -> bool:
    return not re.sub(r"<!--.*?-->", "", html, flags=re.DOTALL).strip()
