"""Exercise notebooks read as a hostile learner's notebook, and written the same way every time.

`read_notebook` (with nbformat's validation) and `read_cells` (without) read a
notebook the same way, as a hostile learner's notebook: every malformed input
is a `NotebookError` that names the file and, where it can, the line or cell;
the nesting, numbers, cells and values are bounded before `json.loads` and
nbformat's validator see them, and outputs and attachments are dropped unread.
`write_notebook` writes one with stable keys and one newline at the end. What
a notebook's cells are for -- their roles, and a solution's answers stripped
into the learner's stubs -- is `gpulab.grading.checks.cells`.
"""

from __future__ import annotations

import importlib
import json
import os
import re
import stat
import sys
from pathlib import Path
from typing import Any

from gpulab.errors import GpulabError

__all__ = [
    "MAX_BYTES",
    "MAX_CELLS",
    "MAX_DEPTH",
    "MAX_DIGITS",
    "MAX_KEPT_VALUES",
    "MAX_TAGS",
    "MAX_VALUES",
    "SLOW_FORMATS",
    "NotebookError",
    "load_nbformat",
    "notebook_text",
    "read_cells",
    "read_notebook",
    "write_notebook",
]

MAX_BYTES = 20 * 2**20
MAX_DEPTH = 64  # how deep a notebook's JSON may nest; nbformat's own layout is under 10
MAX_CELLS = 1_000  # course notebooks have under 40
MAX_VALUES = 2_000_000  # JSON values in the file (each costs json.loads about 80 bytes)
MAX_KEPT_VALUES = 50_000  # JSON values besides outputs; course notebooks have under 1100
MAX_DIGITS = 100  # digits of an integer
MAX_TAGS = 100  # tags of a cell
SLOW_FORMATS = "rfc3987_syntax"
"""The format checker that `load_nbformat` keeps from loading (see there)."""


class NotebookError(GpulabError):
    """A notebook that cannot be used, said in words: which file, what is wrong."""


def load_nbformat() -> Any:
    """nbformat, imported on first use (it has no type hints), without a slow extra.

    nbformat imports jsonschema, and jsonschema imports at once every format
    checker it finds installed. One of them, rfc3987_syntax (which Jupyter's
    ``jsonschema[format-nongpl]`` brings), compiles some 40 Lark grammars as it
    is imported: 1.5 to 2.5 s on the project's machines, in every process that
    reads a notebook (python-jsonschema/jsonschema#1428), for the ``iri``
    formats that no notebook schema uses. While jsonschema is first imported
    here, that one module reads as absent, so jsonschema leaves those two
    formats unchecked, as it does wherever the package is not installed; the
    mark is lifted afterwards, and a process that imported jsonschema earlier
    is left as it is.
    """
    if any(name in sys.modules for name in ("nbformat", "jsonschema", SLOW_FORMATS)):
        return importlib.import_module("nbformat")  # nothing left to save
    sys.modules[SLOW_FORMATS] = None  # type: ignore[assignment]  # import raises ImportError
    try:
        return importlib.import_module("nbformat")
    finally:
        del sys.modules[SLOW_FORMATS]


def notebook_text(notebook: Any) -> str:
    """A notebook as the text `write_notebook` writes."""
    return str(load_nbformat().writes(notebook)) + "\n"


def read_notebook(path: Path) -> Any:
    """Read and validate a notebook; `NotebookError` says what is wrong, never a traceback.

    The notebook comes back without outputs and attachments (see `_load`):
    nothing in gpulab reads them, and validating them is where a hostile
    notebook spends the grader's time.
    """
    data = _load(path)
    nbformat = load_nbformat()
    try:
        notebook = nbformat.v4.to_notebook_json(data)
        nbformat.validate(notebook)
    except Exception as exc:  # nbformat raises several validation error classes
        message = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise NotebookError(f"{path}: not a valid notebook: {_printable(message[:300])}") from None
    return notebook


def write_notebook(notebook: Any, path: Path) -> None:
    """Write a notebook the same way every time (stable keys, one newline at the end)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(notebook_text(notebook), encoding="utf-8")


def read_cells(path: Path) -> dict[str, Any]:
    """A notebook that `read_notebook` has validated already, read again as plain JSON.

    The checks process uses this: nbformat's import costs a few tenths of a
    second per process even without its slowest extra (`load_nbformat`), and
    the runner validated both notebooks before it started the checks. It reads
    under the same limits as `read_notebook`.
    """
    return _load(path)


# Reading under limits. A learner's notebook is hostile: what `json.loads` and
# nbformat's validator would spend on it is bounded before they see it.

_ONE_KIND = bytes.maketrans(b"{}", b"[]")
_NOT_MARKS = bytes(set(range(256)) - set(b'"[]{},'))
_STRING = rb'"[^"\\]*(?:\\.[^"\\]*)*"'
_BRACKET_TOKEN = re.compile(_STRING + rb"|[\[\]{}]", re.S)
_NUMBER_TOKEN = re.compile(
    _STRING + rb"|(?<![0-9.eE+-])-?([0-9]{%d,})(?![0-9.eE])" % (MAX_DIGITS + 1), re.S
)  # an integer, not a float's digits
_QUOTED = re.compile(rb'"[^"]*"')
_NOT_TEXT = re.compile("[\x00\ud800-\udfff]")


def _load(path: Path) -> dict[str, Any]:
    """A notebook file as JSON, read within the limits, without outputs or attachments.

    In order: the size (`MAX_BYTES`); UTF-8; the number of values
    (`MAX_VALUES`, as each costs memory) and the nesting depth (`MAX_DEPTH`,
    as `json.loads` recurses), both counted on the bytes before anything is parsed;
    the JSON itself, its integers no longer than `MAX_DIGITS` (reading one
    takes time in the square of its digits, and Python refuses past 4300); then,
    with every cell's outputs and attachments and the widget state dropped,
    the cells, tags, values and text that is no text (NUL, lone surrogates).
    Each failure is a `NotebookError` naming the file and, where it can, the line.
    """
    raw = _read_bytes(path)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise NotebookError(
            f"{path}:{_line(raw, exc.start)}: not UTF-8 text, so not a notebook"
        ) from None
    marks = _marks(raw)
    values = marks.count(b",") + marks.count(b"[") + 1
    if values > MAX_VALUES:
        raise NotebookError(
            f"{path}: about {values} JSON values, more than the {MAX_VALUES} "
            "a notebook may hold: clear its outputs"
        )
    if _depth(marks.replace(b",", b"")) > MAX_DEPTH:
        raise NotebookError(
            f"{path}:{_line(raw, _first(_BRACKET_TOKEN, raw))}: JSON nested "
            f"more than {MAX_DEPTH} deep; no notebook nests so deep"
        )
    try:
        data = json.loads(text, parse_int=_int)
    except json.JSONDecodeError as exc:
        raise NotebookError(f"{path}:{exc.lineno}: not valid notebook JSON: {exc.msg}") from None
    except _LongNumber:
        raise NotebookError(
            f"{path}:{_line(raw, _first(_NUMBER_TOKEN, raw))}: a number of "
            f"more than {MAX_DIGITS} digits; no notebook needs one"
        ) from None
    except (ValueError, RecursionError) as exc:  # the checks above should prevent both
        raise NotebookError(f"{path}: cannot be read as JSON: {type(exc).__name__}") from None
    if not isinstance(data, dict) or data.get("nbformat") != 4:
        version = data.get("nbformat") if isinstance(data, dict) else None
        shown = (
            repr(version)
            if isinstance(version, int | float | str | None)
            else type(version).__name__
        )
        raise NotebookError(
            f"{path}: not a version 4 notebook (nbformat "
            f"{_printable(shown[:40])}); open and save it in JupyterLab to "
            "upgrade it"
        )
    _check_cells(path, data)
    _drop_outputs(data)
    _check_values(path, data)
    return data


def _read_bytes(path: Path) -> bytes:
    """The file's bytes, at most `MAX_BYTES` of them; a FIFO is refused, not waited on."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        raise NotebookError(f"{path}: cannot read it: {exc.strerror}") from None
    with os.fdopen(fd, "rb") as file:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise NotebookError(f"{path}: not a regular file, so not a notebook")
        if info.st_size > MAX_BYTES:
            raise NotebookError(
                f"{path}: {info.st_size / 2**20:.0f} MiB is too large for a "
                f"notebook (the limit is {MAX_BYTES // 2**20} MiB): clear its "
                "outputs"
            )
        try:
            raw = file.read(MAX_BYTES + 1)
        except OSError as exc:
            raise NotebookError(f"{path}: cannot read it: {exc.strerror}") from None
    if len(raw) > MAX_BYTES:
        raise NotebookError(f"{path}: grew past {MAX_BYTES // 2**20} MiB while being read")
    return raw


class _LongNumber(Exception):
    """An integer in a notebook's JSON with more than `MAX_DIGITS` digits."""


def _int(digits: str) -> int:
    if len(digits.lstrip("-")) > MAX_DIGITS:
        raise _LongNumber
    return int(digits)


def _marks(raw: bytes) -> bytes:
    """The commas and brackets of the JSON in `raw` that lie outside strings ({} as []), in C.

    Escaped backslashes and quotes go first, so every quote left opens or
    closes a string; then all but quotes, commas and brackets. Two quotes side
    by side can go (they enclose nothing, or close one string and open the
    next); what quotes still enclose lies inside strings and goes too. The
    commas and opening brackets left count the values, about.
    """
    marks = raw.replace(b"\\\\", b"").replace(b'\\"', b"").translate(_ONE_KIND, _NOT_MARKS)
    return _QUOTED.sub(b"", marks.replace(b'""', b""))


def _depth(brackets: bytes) -> int:
    """How deep `brackets` (only [ and ]) nest, counted in C; past `MAX_DEPTH`, at least that.

    Each pass removes every innermost pair: the passes needed are the depth.
    Brackets left unpaired (broken JSON) each add one, so the answer errs on
    the deep side. A pass costs a scan of what is left, and at most
    `MAX_DEPTH` + 1 are made.
    """
    depth = 0
    while brackets and depth <= MAX_DEPTH:
        shorter = brackets.replace(b"[]", b"")
        if len(shorter) == len(brackets):
            break
        brackets, depth = shorter, depth + 1
    return depth + brackets.count(b"[")


def _first(pattern: re.Pattern[bytes], raw: bytes) -> int:
    """Where in `raw` the problem the quick checks found begins, token by token (for the message).

    For brackets: where the nesting first passes `MAX_DEPTH`; for numbers:
    the first too long. Only a refused notebook pays for this walk.
    """
    depth = 0
    for token in pattern.finditer(raw):
        if token.lastindex:  # a long number
            return token.start(1)
        char = raw[token.start()]
        if char in b"[{":
            depth += 1
            if depth > MAX_DEPTH and pattern is _BRACKET_TOKEN:
                return token.start()
        elif char in b"]}":
            depth -= 1
    return len(raw)


def _line(raw: bytes, offset: int) -> int:
    return raw.count(b"\n", 0, offset) + 1


def _drop_outputs(data: dict[str, Any]) -> None:
    """Empty every cell's outputs; drop its attachments and the widget state. Nothing reads them."""
    for cell in data["cells"]:
        if "outputs" in cell:
            cell["outputs"] = []
        cell.pop("attachments", None)
    data["metadata"].pop("widgets", None)


def _check_cells(path: Path, data: dict[str, Any]) -> None:
    """The parts nbformat's own steps take for granted, each with a message that says where.

    Also what would make validation slow: jsonschema, which nbformat runs to
    explain an invalid notebook, takes time in proportion to the cells and
    tags, and in the square of a cell's tags once one of them is not a string.
    """
    if not isinstance(data.get("metadata"), dict):
        raise NotebookError(f"{path}: the notebook has no metadata object")
    cells = data.get("cells")
    if not isinstance(cells, list):
        raise NotebookError(f"{path}: the notebook has no list of cells")
    if len(cells) > MAX_CELLS:
        raise NotebookError(
            f"{path}: {len(cells)} cells, more than the {MAX_CELLS} a notebook may have"
        )
    for number, cell in enumerate(cells, start=1):
        where = f"{path}: cell {number}"
        if not isinstance(cell, dict):
            raise NotebookError(f"{where} is not a JSON object")
        if not isinstance(cell.get("metadata"), dict):
            raise NotebookError(f"{where} has no metadata object")
        source, tags = cell.get("source"), cell["metadata"].get("tags", [])
        if not isinstance(source, str) and not (
            isinstance(source, list) and all(isinstance(s, str) for s in source)
        ):
            raise NotebookError(f"{where} has no source text")
        if (
            not isinstance(tags, list)
            or not all(isinstance(tag, str) for tag in tags)
            or len(tags) > MAX_TAGS
        ):
            raise NotebookError(
                f"{where}'s metadata.tags is not a list of at most {MAX_TAGS} strings"
            )
        if not isinstance(cell.get("id", ""), str):
            raise NotebookError(f"{where}'s id is not a string")
        if not isinstance(cell.get("outputs", []), list):
            raise NotebookError(f"{where}'s outputs are not a list")


def _check_values(path: Path, data: dict[str, Any]) -> None:
    """Count what is left to validate (`MAX_KEPT_VALUES`); refuse text that is no text."""
    parts = [(f"cell {number}", cell) for number, cell in enumerate(data["cells"], start=1)]
    parts.append(("the notebook", {k: v for k, v in data.items() if k != "cells"}))
    count = 0
    for where, part in parts:
        stack = [part]
        while stack:
            value = stack.pop()
            count += 1
            if count > MAX_KEPT_VALUES:
                raise NotebookError(
                    f"{path}: more than {MAX_KEPT_VALUES} JSON values besides "
                    "outputs; no notebook needs so many"
                )
            if isinstance(value, str):
                _check_text(path, where, value)
            elif isinstance(value, dict):
                for key in value:
                    _check_text(path, where, key)
                stack.extend(value.values())
            elif isinstance(value, list):
                stack.extend(value)


def _check_text(path: Path, where: str, text: str) -> None:
    found = _NOT_TEXT.search(text)
    if found:
        what = (
            "a NUL character"
            if found.group() == "\0"
            else f"a lone surrogate (U+{ord(found.group()):04X}), which is not text"
        )
        raise NotebookError(
            f"{path}: {where} holds {what}; save the notebook again from JupyterLab"
        )


def _printable(text: str) -> str:
    """Text safe for a message: surrogates and control characters as U+FFFD."""
    return "".join(
        c if c.isprintable() and not "\ud800" <= c <= "\udfff" else "\ufffd" for c in text
    )
