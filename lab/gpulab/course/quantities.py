"""The quantities in a line of prose, and the sums worked out in it.

`numbers_in` finds the numbers a lesson states as facts, each with the unit
that follows it; `sums_in` finds computations written out in full
(``108 × 64 × 2 = 13,824``) and says whether they hold. `gpulab.course.facts`
uses both to ask of every number whether something accounts for it.

Numbers that *name* something are not facts and are skipped: digits glued to
letters (H100, FP16, sm_90, x16), numbers after a naming word (CUDA 12.4,
GPU 0, day 3), three-part versions (535.104.05), ratios such as 2:4, shapes
such as 16×16×16, years, and 0 and 1.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator
from dataclasses import dataclass

from gpulab.course.units import UNITS as _UNITS

__all__ = ["NAME_WORDS", "Number", "Sum", "numbers_in", "sums_in"]

# Words after which a number names a version, an index or a place, not a quantity.
NAME_WORDS = frozenset(
    [
        "cuda",
        "driver",
        "drivers",
        "toolkit",
        "ubuntu",
        "debian",
        "rhel",
        "python",
        "linux",
        "kernel",
        "pytorch",
        "torch",
        "version",
        "versions",
        "v",
        "gen",
        "generation",
        "pcie",
        "nvlink",
        "cgroup",
        "cgroups",
        "day",
        "days",
        "module",
        "modules",
        "step",
        "steps",
        "part",
        "parts",
        "gpu",
        "gpus",
        "cpu",
        "cpus",
        "node",
        "nodes",
        "core",
        "cores",
        "capability",
        "sm",
        "p-state",
        "chapter",
        "section",
        "rank",
        "device",
        "devices",
        "index",
        "level",
        "xid",
        "port",
        "line",
        "lines",
        "code",
        "signal",
        "id",
        "exercise",
        "lesson",
        "numa",
        "socket",
        "figure",
        "table",
        "nccl",
        "jupyterlab",
        "ipv",
        "rfc",
        "iso",
        "ieee",
        "cc",
        "tier",
        "phase",
        "week",
        "weeks",
        "rtx",
        "gtx",
        "xeon",
        "epyc",
        "ryzen",
        "llama",
    ]
)

_UNIT_RE = re.compile(
    r"\s?(?:-\s?)?("
    + "|".join(re.escape(u) for u in sorted(_UNITS, key=len, reverse=True))
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
        if unit in ("x", "×") and re.match(
            r"\s?[x×]\s*(?:\d|\(|(?:two|three|four|eight)\b)", after
        ):
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
    tokens = [
        (m.lastgroup, m.group(), m.start()) for m in _TOKEN.finditer(text) if m.lastgroup != "space"
    ]
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
        if (
            len(expr) > 1
            and j + 1 < len(tokens)
            and tokens[j][0] == "eq"
            and tokens[j + 1][0] == "num"
        ):
            computed = _evaluate(expr)
            end_token = tokens[j + 1]
            result = next((n for n in numbers_in(text, line) if n.start == end_token[2]), None)
            if computed is not None and result is not None:
                holds = _close(computed, result, loose=tokens[j][1] == "≈")
                yield Sum(text[start : end_token[2] + len(end_token[1])], computed, result, holds)
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
    scaled = computed * 10.0**shift
    if loose:
        return math.isclose(scaled, result.value, rel_tol=0.02)
    return round(scaled, result.decimals) == result.value or math.isclose(
        scaled, result.value, rel_tol=0.005
    )


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
