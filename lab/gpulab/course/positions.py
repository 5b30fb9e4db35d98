"""Where a key stands in a course file: one key-path -> line map for TOML, one for YAML.

A course loader validates the parsed data and must then point the author at
the line of the offending key. `tomllib` keeps no positions at all (only its
syntax errors carry one, in the message: `toml_error`), so `toml_lines` scans
the text once and gives every table header, array-of-tables element and key
its 1-based line, by key path: ``("gpus", "h200", "sms")`` for ``sms = 132``
under ``[gpus.h200]``, ``("lessons", 2, "id")`` for the ``id`` of the third
``[[lessons]]``. It knows what the course files use: bare, quoted and dotted
keys, ``[table]`` and ``[[array]]`` headers (nested arrays included), values
that run over several lines (triple-quoted strings, arrays, inline tables) and
comments. Writing a TOML parser that keeps positions is not worth it for this:
tomlkit keeps a document model but no line numbers either.

For YAML (the lessons' front matter) `yaml_lines` reads the node marks of
PyYAML's own composer, exact for any layout.

`line_at(lines, path)` answers for the longest prefix of `path` that the file
holds, so a value missing from a table points at the table.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from gpulab.course.problems import CourseError

if TYPE_CHECKING:
    import yaml

__all__ = ["KeyPath", "line_at", "toml_error", "toml_lines", "yaml_lines"]

KeyPath = tuple[str | int, ...]
"""Keys from the top of the document down; an int is an index into an array."""

_AT_LINE = re.compile(r"\(at line (\d+), column (\d+)\)")
_BARE = re.compile(r"[A-Za-z0-9_-]+")


def toml_error(path: Path, exc: tomllib.TOMLDecodeError) -> CourseError:
    """Turn a TOML syntax error into a `CourseError` at its line."""
    message = str(exc)
    match = _AT_LINE.search(message)
    line = int(match.group(1)) if match else None
    message = _AT_LINE.sub("", message).strip()
    return CourseError.at(path, line, f"TOML syntax error: {message}", "fix the TOML syntax")


def line_at(lines: Mapping[KeyPath, int], path: KeyPath) -> int | None:
    """The line of `path`, or of its longest prefix that the file holds; None if no part is
    there."""
    for end in range(len(path), 0, -1):
        if path[:end] in lines:
            return lines[path[:end]]
    return None


def toml_lines(text: str) -> dict[KeyPath, int]:
    """Every table, array element and key of a TOML text, by key path, with its 1-based line.

    Meant for text that `tomllib` has parsed: on malformed text it still returns
    what it could place, never raises.
    """
    lines: dict[KeyPath, int] = {}
    counts: dict[KeyPath, int] = {}  # elements of each array of tables so far
    table: KeyPath = ()
    closing = ""  # the quotes that end an open multi-line string
    depth = 0  # open brackets of a multi-line value
    for number, raw in enumerate(text.splitlines(), start=1):
        if closing:
            closing, depth = _continue_value(raw, closing, depth)
            continue
        if depth:
            closing, depth = _continue_value(raw, "", depth)
            continue
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("[["):
            name = _header(line, 2)
            if name is None:
                continue
            array = _resolve(name, counts)
            index = counts.get(array, 0)
            counts[array] = index + 1
            table = (*array, index)
            _place(lines, array, number)
            lines[table] = number
        elif line.startswith("["):
            name = _header(line, 1)
            if name is None:
                continue
            table = _resolve(name, counts)
            _place(lines, table, number)
        else:
            key, _, value = _split_assignment(line)
            if key is None:
                continue
            _place(lines, (*table, *key), number)
            closing, depth = _continue_value(value, "", 0)
    return lines


def yaml_lines(text: str, first_line: int = 1) -> dict[KeyPath, int]:
    """Every key and list item of a YAML text, by key path, with its line (the text's first
    line is `first_line`). Empty for text PyYAML cannot compose. PyYAML is imported here,
    when front matter is read, not when the course's TOML files are."""
    import yaml

    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError:
        return {}
    lines: dict[KeyPath, int] = {}

    def walk(node: yaml.Node | None, path: KeyPath) -> None:
        if isinstance(node, yaml.MappingNode):
            for key, value in node.value:
                here = (*path, str(key.value))
                lines.setdefault(here, first_line + key.start_mark.line)
                walk(value, here)
        elif isinstance(node, yaml.SequenceNode):
            for index, item in enumerate(node.value):
                here = (*path, index)
                lines.setdefault(here, first_line + item.start_mark.line)
                walk(item, here)

    walk(root, ())
    return lines


# ---- the TOML scanner's pieces ----------------------------------------------------------------


def _place(lines: dict[KeyPath, int], path: KeyPath, number: int) -> None:
    """Put `path` on line `number`, and the tables it implies (``[a.b]`` makes ``a``, a
    dotted key ``x.y = 1`` makes ``x``) where they first appear."""
    for end in range(1, len(path) + 1):
        lines.setdefault(path[:end], number)


def _header(line: str, brackets: int) -> tuple[str, ...] | None:
    """The dotted name of a ``[a.b]`` (brackets=1) or ``[[a.b]]`` (2) header line."""
    end = _outside_strings(line, "]")
    if end is None:
        return None
    return _key_parts(line[brackets:end])


def _resolve(name: tuple[str, ...], counts: Mapping[KeyPath, int]) -> KeyPath:
    """A header's name as a key path: a part that names an array of tables means its
    latest element (``[[a.b]]`` under ``[[a]]`` belongs to the last ``a``)."""
    path: KeyPath = ()
    for place, part in enumerate(name):
        path = (*path, part)
        if place < len(name) - 1 and path in counts:
            path = (*path, counts[path] - 1)
    return path


def _split_assignment(line: str) -> tuple[tuple[str, ...] | None, str, str]:
    """``key = value`` as (key parts, "=", the value's text); (None, "", "") if not one."""
    at = _outside_strings(line, "=")
    if at is None:
        return None, "", ""
    return _key_parts(line[:at]), "=", line[at + 1 :]


def _key_parts(text: str) -> tuple[str, ...] | None:
    """A (dotted) key's parts, unquoted: ``a."b.c".d`` -> ("a", "b.c", "d")."""
    parts: list[str] = []
    rest = text.strip()
    while rest:
        if rest[0] in "\"'":
            end = rest.find(rest[0], 1)
            while rest[0] == '"' and end > 0 and rest[end - 1] == "\\":
                end = rest.find('"', end + 1)
            if end < 0:
                return None
            parts.append(rest[1:end])
            rest = rest[end + 1 :].strip()
        else:
            bare = _BARE.match(rest)
            if bare is None:
                return None
            parts.append(bare.group())
            rest = rest[bare.end() :].strip()
        if rest.startswith("."):
            rest = rest[1:].strip()
        elif rest:
            return None
    return tuple(parts) or None


def _outside_strings(text: str, wanted: str) -> int | None:
    """The index of the first `wanted` character of `text` outside quotes and comments."""
    quote = ""
    index = 0
    while index < len(text):
        char = text[index]
        if quote:
            if char == "\\" and quote == '"':
                index += 1
            elif char == quote:
                quote = ""
        elif char in "\"'":
            quote = char
        elif char == "#":
            return None
        elif char == wanted:
            return index
        index += 1
    return None


def _continue_value(text: str, closing: str, depth: int) -> tuple[str, int]:
    """Follow a value over one more line: the quotes of a multi-line string still open
    after it (or ""), and the brackets still open."""
    index = 0
    while index < len(text):
        if closing:
            end = text.find(closing, index)
            if end < 0:
                return closing, depth
            index, closing = end + 3, ""
            continue
        char = text[index]
        if text.startswith(('"""', "'''"), index):
            closing, index = text[index : index + 3], index + 3
            continue
        if char in "\"'":
            end = index + 1
            while end < len(text) and text[end] != char:
                end += 2 if char == '"' and text[end] == "\\" else 1
            index = end + 1
            continue
        if char == "#":
            break
        if char in "[{":
            depth += 1
        elif char in "]}":
            depth = max(0, depth - 1)
        index += 1
    return closing, depth
