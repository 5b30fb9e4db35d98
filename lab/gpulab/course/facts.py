"""Every number in a lesson needs a source; every link must lead somewhere.

`check_numbers` reads the prose of each node (its label and its notes, but not
code, URLs or HTML comments) and reports each number that no claim on the
node, no value in specs.toml and no ``<!-- example: ... -->`` accounts for.
`check_links` reports links to lessons that do not exist and malformed web
addresses. The rules are written for authors in lessons/README.md ("Facts").

Numbers that *name* something are not facts and are skipped: digits glued to
letters (H100, FP16, sm_90, x16), numbers after a naming word (CUDA 12.4,
GPU 0, day 3), three-part versions (535.104.05), ratios such as 2:4, shapes
such as 16×16×16, years, and 0 and 1.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from markdown_it import MarkdownIt
from markdown_it.token import Token

from gpulab.course.claims import Claim
from gpulab.course.lesson import Lesson, Node, markdown_parser
from gpulab.course.problems import Problem
from gpulab.course.specs import Specs, url_problem
from gpulab.course.units import UNITS as _UNITS
from gpulab.course.units import conversions

__all__ = ["Number", "Sum", "check_links", "check_numbers", "numbers_in", "prose", "sums_in"]

# Words after which a number names a version, an index or a place, not a quantity.
NAME_WORDS = frozenset([
    "cuda", "driver", "drivers", "toolkit", "ubuntu", "debian", "rhel", "python", "linux",
    "kernel", "pytorch", "torch", "version", "versions", "v", "gen", "generation", "pcie",
    "nvlink", "cgroup", "cgroups", "day", "days", "module", "modules", "step", "steps", "part",
    "parts", "gpu", "gpus", "cpu", "cpus", "node", "nodes", "core", "cores", "capability",
    "sm", "p-state", "chapter", "section", "rank", "device", "devices", "index", "level",
    "xid", "port", "line", "lines", "code", "signal", "id", "exercise", "lesson", "numa",
    "socket", "figure", "table", "nccl", "jupyterlab", "ipv", "rfc", "iso", "ieee", "cc",
    "tier", "phase", "week", "weeks", "rtx", "gtx", "xeon", "epyc", "ryzen", "llama",
])

_UNIT_RE = re.compile(
    r"\s?(?:-\s?)?(" + "|".join(re.escape(u) for u in sorted(_UNITS, key=len, reverse=True))
    + r")(?![A-Za-z0-9_/])"
)
_NUMBER = re.compile(r"\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?")
_WORD_BEFORE = re.compile(r"([A-Za-z][A-Za-z-]*)\s*$")
_VERSION3 = re.compile(r"\d+\.\d+\.\d+")
_YEARS = range(1990, 2040)


@dataclass(frozen=True)
class Number:
    """A number found in prose, as written, with the unit that follows it."""

    written: str
    value: float
    decimals: int
    unit: str
    line: int
    start: int = 0


def numbers_in(text: str, line: int = 1) -> Iterator[Number]:
    """The quantities in one line of prose, skipping numbers that name things."""
    for match in _NUMBER.finditer(text):
        start, end = match.span()
        before = text[:start]
        after = text[end:]
        if _glued_before(before) or _glued_after(after):
            continue
        version = _VERSION3.match(text, start)
        if version and version.end() > end:
            continue
        if re.match(r"\.\d|[:×x]\d", after) or re.search(r"\d[:×x]$", before):
            continue  # part of a version, a ratio (2:4) or a shape (16×16)
        if re.match(r"B(?![A-Za-z0-9_/])|-bit\b", after):
            continue  # a model's parameter count in its name (Llama 3 8B), a type (64-bit)
        word = _WORD_BEFORE.search(before)
        if word and word.group(1).lower().rstrip("-") in NAME_WORDS:
            continue
        written = match.group(0)
        digits = written.replace(",", "")
        value = float(digits)
        unit_match = _UNIT_RE.match(after)
        unit = unit_match.group(1) if unit_match else ""
        if unit in ("x", "×") and re.match(r"\s?[x×]\s*(?:\d|\(|(?:two|three|four|eight)\b)",
                                            after):
            unit = ""  # a product, 108 × 64, 32 × (registers), not a ratio
        if value in (0.0, 1.0):
            continue
        if not unit and "." not in digits and int(digits) in _YEARS:
            continue
        decimals = len(digits.partition(".")[2])
        yield Number(written, value, decimals, unit, line, start)


@dataclass(frozen=True)
class Sum:
    """A worked computation in prose, ``108 × 64 × 2 = 13,824``, and whether it holds."""

    text: str
    computed: float
    result: Number
    holds: bool


_TOKEN = re.compile(
    r"(?P<num>\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?)|(?P<op>[×*÷+−·]|(?<!\S)/(?!\S))"
    r"|(?P<eq>=|≈)|(?P<space>\s+)|(?P<word>[^\s\d×*÷+−·=≈]+)"
)
_OPS = {"×": "*", "*": "*", "·": "*", "/": "/", "÷": "/", "+": "+", "−": "-"}


def sums_in(text: str, line: int = 1) -> Iterator[Sum]:
    """Computations written out in one line of prose: operands, operators, = or ≈, result.

    Up to two words may follow each number (``64 lanes``, ``1.41 GHz``); units
    are not converted, so a result is right when it equals the computed value
    times a power of ten, to the digits written (``=``) or within 2 % (``≈``).
    """
    tokens = [(m.lastgroup, m.group(), m.start()) for m in _TOKEN.finditer(text)
              if m.lastgroup != "space"]
    i = 0
    while i < len(tokens):
        if tokens[i][0] != "num":
            i += 1
            continue
        expr, j, start = [_plain(tokens[i][1])], i + 1, tokens[i][2]
        while True:
            j = _skip_words(tokens, j)
            if j + 1 < len(tokens) and tokens[j][0] == "op" and tokens[j + 1][0] == "num":
                expr += [_OPS[tokens[j][1]], _plain(tokens[j + 1][1])]
                j += 2
                continue
            break
        if len(expr) > 1 and j + 1 < len(tokens) and tokens[j][0] == "eq" \
                and tokens[j + 1][0] == "num":
            computed = _evaluate(expr)
            end_token = tokens[j + 1]
            result = next((n for n in numbers_in(text, line) if n.start == end_token[2]), None)
            if computed is not None and result is not None:
                holds = _close(computed, result, loose=tokens[j][1] == "≈")
                yield Sum(text[start:end_token[2] + len(end_token[1])], computed, result, holds)
            i = j + 1
        else:
            i += 1


def _skip_words(tokens: list[tuple[str | None, str, int]], j: int) -> int:
    for _ in range(2):
        if j < len(tokens) and tokens[j][0] == "word" and tokens[j][1][-1] not in ".;:!?":
            j += 1
    return j


def _plain(written: str) -> str:
    return written.replace(",", "")


def _evaluate(expr: list[str]) -> float | None:
    """The value of numbers joined by * / + -, with the usual precedence."""
    terms: list[float] = []
    sign = 1.0
    product = float(expr[0])
    for op, operand in zip(expr[1::2], expr[2::2], strict=True):
        number = float(operand)
        if op == "*":
            product *= number
        elif op == "/":
            if number == 0:
                return None
            product /= number
        else:
            terms.append(sign * product)
            sign, product = (1.0 if op == "+" else -1.0), number
    terms.append(sign * product)
    return sum(terms)


def _close(computed: float, result: Number, *, loose: bool) -> bool:
    if computed <= 0 or result.value <= 0:
        return math.isclose(computed, result.value, abs_tol=1e-9)
    shift = round(math.log10(result.value / computed))
    scaled = computed * 10.0 ** shift
    if loose:
        return math.isclose(scaled, result.value, rel_tol=0.02)
    return round(scaled, result.decimals) == result.value or math.isclose(
        scaled, result.value, rel_tol=0.005)


def _glued_before(before: str) -> bool:
    if not before:
        return False
    last = before[-1]
    if last.isalnum() or last in "_#$":
        return True
    # x86-64, sm_90/sm_80, file.1
    return last in "-/." and len(before) > 1 and (before[-2].isalnum() or before[-2] == "_")


def _glued_after(after: str) -> bool:
    """Letters right after the digits make a name (3rd, 64K), unless they are a unit."""
    if not after or not (after[0].isalpha() or after[0] == "_"):
        return False
    return _UNIT_RE.match(after) is None


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
                        problems.append(Problem(
                            lesson.path, at,
                            f"the arithmetic in {worked.text!r} does not hold: it gives "
                            f"{worked.computed:.4g}",
                            "fix the figures, or mark a deliberately wrong example with "
                            "<!-- example: ... -->"))
        examples = {_plain_number(e) for e in node.examples}
        seen_examples = {n.value for n in found}
        for example in node.examples:
            if _plain_number(example) not in seen_examples:
                problems.append(Problem(
                    lesson.path, node.line,
                    f"example {example} does not occur in this node's label or notes",
                    "list only numbers the node shows, or remove the annotation"))
        for number in found:
            if number.value in examples or (number.line, number.start) in derived:
                continue
            if any(_matches(number, v, c.unit) for c in claimed for v in _claim_numbers(c)):
                continue
            if any(_matches(number, v, unit) for v, unit in spec_values):
                continue
            shown = f"{number.written} {number.unit}".strip() if number.unit not in "%×" \
                else number.written + number.unit
            problems.append(Problem(
                lesson.path, number.line,
                f"the number {shown!r} has no source",
                "cite a claim on the node, add the value to specs.toml, list it in "
                "<!-- example: ... --> if illustrative, or write a non-fact in words"))
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
                    problems.append(Problem(lesson.path, at, f"link {href!r} {why}",
                                            "link a lesson as <id>.md, or a page as https://…"))
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
    elif mine and not theirs:       # "64 MiB" is no value counted in lanes or SMs
        return False
    for candidate in candidates:
        if math.isclose(candidate, number.value, rel_tol=1e-9):
            return True
        if round(candidate, number.decimals) == number.value:
            return True
    return False
