"""Every number in a lesson needs a source; every link must lead somewhere.

`check_numbers` reads the prose of each node (its label and its notes, but not
code, URLs or HTML comments) and reports each number that no claim on the
node, no value in specs.toml and no ``<!-- example: ... -->`` accounts for.
`check_links` reports links to lessons that do not exist and malformed web
addresses. The rules are written for authors in lessons/README.md ("Facts").

Which numbers in a line are facts, and which worked sums hold, is decided in
`gpulab.course.quantities` (numbers that only name something are skipped
there); `Number`, `Sum`, `numbers_in` and `sums_in` are re-exported here.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path

from markdown_it import MarkdownIt
from markdown_it.token import Token

from gpulab.course.claims import Claim
from gpulab.course.lesson import markdown_parser
from gpulab.course.problems import Problem
from gpulab.course.quantities import Number, numbers_in, sums_in
from gpulab.course.specs import url_problem
from gpulab.course.specs_model import Specs
from gpulab.course.tree import Lesson, Node
from gpulab.course.units import UNITS as _UNITS
from gpulab.course.units import conversions

__all__ = ["check_links", "check_numbers", "prose"]


def prose(markdown: str, first_line: int) -> Iterator[tuple[str, int]]:
    """The readable text of a Markdown block, line by line, without code or URLs.

    Yields (text, line) pairs with 1-based line numbers in the lesson file.
    """
    for token in _parser().parse(markdown):
        if token.type != "inline" or token.map is None:
            continue
        yield from _inline_prose(token, first_line + token.map[0])


def _inline_prose(token: Token, line: int) -> Iterator[tuple[str, int]]:
    parts: list[str] = []
    for child in token.children or ():
        if child.type == "text":
            parts.append(child.content)
        elif child.type in ("softbreak", "hardbreak"):
            yield " ".join(parts), line
            parts, line = [], line + 1
        elif child.type in ("code_inline", "html_inline", "image"):
            parts.append(" ")
    yield " ".join(parts), line


def links(markdown: str, first_line: int) -> Iterator[tuple[str, int]]:
    """Every link target in a Markdown block, with its line."""
    for token in _parser().parse(markdown):
        if token.type != "inline" or token.map is None:
            continue
        line = first_line + token.map[0]
        for child in token.children or ():
            if child.type in ("softbreak", "hardbreak"):
                line += 1
            elif child.type == "link_open":
                yield str(child.attrs.get("href", "")), line


@functools.cache
def _parser() -> MarkdownIt:
    return markdown_parser()


def _node_blocks(node: Node) -> Iterator[tuple[str, int]]:
    """The node's label and its prose notes, as (markdown, first line)."""
    yield node.label, node.line
    for note in node.notes:
        if note.kind in ("paragraph", "table", "quote"):
            yield note.markdown, note.line


def check_numbers(lesson: Lesson, claims: Mapping[str, Claim], specs: Specs) -> list[Problem]:
    """A problem for each number in the lesson's prose that nothing accounts for."""
    problems: list[Problem] = []
    spec_values = _spec_numbers(specs)
    for node in lesson.nodes:
        claimed = [claims[c] for c in node.claims if c in claims]
        found: list[Number] = []
        derived: set[tuple[int, int]] = set()
        for markdown, line in _node_blocks(node):
            for text, at in prose(markdown, line):
                found.extend(numbers_in(text, at))
                for worked in sums_in(text, at):
                    if worked.holds:
                        derived.add((worked.result.line, worked.result.start))
                    else:
                        problems.append(
                            Problem(
                                lesson.path,
                                at,
                                f"the arithmetic in {worked.text!r} does not hold: it gives "
                                f"{worked.computed:.4g}",
                                "fix the figures, or mark a deliberately wrong example with "
                                "<!-- example: ... -->",
                            )
                        )
        examples = {_plain_number(e) for e in node.examples}
        seen_examples = {n.value for n in found}
        for example in node.examples:
            if _plain_number(example) not in seen_examples:
                problems.append(
                    Problem(
                        lesson.path,
                        node.line,
                        f"example {example} does not occur in this node's label or notes",
                        "list only numbers the node shows, or remove the annotation",
                    )
                )
        for number in found:
            if number.value in examples or (number.line, number.start) in derived:
                continue
            if any(_matches(number, v, c.unit) for c in claimed for v in _claim_numbers(c)):
                continue
            if any(_matches(number, v, unit) for v, unit in spec_values):
                continue
            shown = (
                f"{number.written} {number.unit}".strip()
                if number.unit not in "%×"
                else number.written + number.unit
            )
            problems.append(
                Problem(
                    lesson.path,
                    number.line,
                    f"the number {shown!r} has no source",
                    "cite a claim on the node, add the value to specs.toml, list it in "
                    "<!-- example: ... --> if illustrative, or write a non-fact in words",
                )
            )
    return problems


def check_links(lesson: Lesson, lesson_ids: Iterable[str]) -> list[Problem]:
    """A problem for each link that leads nowhere."""
    known = set(lesson_ids)
    problems: list[Problem] = []
    for node in lesson.nodes:
        for markdown, line in _node_blocks(node):
            for href, at in links(markdown, line):
                why = _link_problem(href, known)
                if why:
                    problems.append(
                        Problem(
                            lesson.path,
                            at,
                            f"link {href!r} {why}",
                            "link a lesson as <id>.md, or a page as https://…",
                        )
                    )
    return problems


def _link_problem(href: str, lessons: set[str]) -> str:
    if not href:
        return "is empty"
    if re.match(r"^[a-z][a-z0-9+.-]*:", href):
        return url_problem(href)
    target, _, _fragment = href.partition("#")
    if not target:
        return ""  # a link within the page
    path = Path(target)
    if path.suffix != ".md" or path.parent != Path("."):
        return "is neither a web address nor a lesson file"
    if path.stem not in lessons:
        return f"names a lesson that does not exist ({path.stem})"
    return ""


def _spec_numbers(specs: Specs) -> list[tuple[float, str]]:
    return [(number, value.unit) for value in specs.values() for number in value.numbers]


def _claim_numbers(claim: Claim) -> Sequence[float]:
    return [n for n in (claim.value, claim.min, claim.max) if n is not None]


def _plain_number(written: str) -> float:
    return float(written.replace(",", ""))


def _matches(number: Number, value: float, unit: str) -> bool:
    """Does `number` as written state `value` (in `unit`), to the digits written?"""
    candidates = [value]
    mine, theirs = _UNITS.get(number.unit), _UNITS.get(unit.strip())
    if mine and theirs:
        candidates = conversions(value, unit.strip(), number.unit)
        if not candidates:
            return False
    elif mine and not theirs:  # "64 MiB" is no value counted in lanes or SMs
        return False
    for candidate in candidates:
        if math.isclose(candidate, number.value, rel_tol=1e-9):
            return True
        if round(candidate, number.decimals) == number.value:
            return True
    return False
