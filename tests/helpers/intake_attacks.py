"""Hostile inputs for the intake and the notebook reader, built cheaply and byte for byte.

The red team's cases (tests/helpers/adversarial_class.py holds the graded ones):
notebooks that crash or stall the reader, and zips whose central directory
costs the grader gigabytes. Each builder returns bytes; nothing here is big
unless asked to be.
"""

from __future__ import annotations

import json
import random
import struct
import zlib
from typing import Any

# A small valid exercise-like notebook: one answer cell, one check cell.
BASE: dict[str, Any] = {
    "nbformat": 4,
    "nbformat_minor": 5,
    "metadata": {
        "kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}
    },
    "cells": [
        {"cell_type": "markdown", "id": "intro", "metadata": {}, "source": "# Roofline"},
        {
            "cell_type": "code",
            "id": "answer",
            "execution_count": None,
            "outputs": [],
            "metadata": {"gpulab": {"role": "answer", "part": "roofs"}},
            "source": ["def roofs():\n", "    return 1\n"],
        },
    ],
}


def notebook(**changes: Any) -> dict[str, Any]:
    """A fresh copy of `BASE` with top-level keys changed."""
    copy: dict[str, Any] = json.loads(json.dumps(BASE))
    copy.update(changes)
    return copy


def dumps(data: Any) -> bytes:
    return json.dumps(data, indent=1).encode()


def answer(data: dict[str, Any]) -> dict[str, Any]:
    """The answer cell of a notebook made by `notebook`."""
    cell: dict[str, Any] = data["cells"][1]
    return cell


def deeply_nested(depth: int = 100_000) -> bytes:
    """Valid JSON: the notebook's metadata holds lists `depth` deep (case 14: RecursionError)."""
    text = dumps(notebook(metadata={"x": "HOLE"})).decode()
    return text.replace('"HOLE"', "[" * depth + "]" * depth).encode()


def huge_integer(digits: int = 5000) -> bytes:
    """One integer of `digits` digits in the metadata (case 15: Python's int-digits limit)."""
    text = dumps(notebook(metadata={"n": "HOLE"})).decode()
    return text.replace('"HOLE"', "7" * digits).encode()


def escaped_in_source(escape: str) -> bytes:
    """The answer's source holding a JSON escape, e.g. \\ud800 (a lone surrogate) or \\u0000."""
    data = notebook()
    answer(data)["source"] = ["x = 'HOLE'\n"]
    return dumps(data).replace(b"HOLE", escape.encode())


def tiny_outputs(count: int = 400_000, base: dict[str, Any] | None = None) -> bytes:
    """`count` one-character stream outputs on one cell (case 33: 19.9 MiB at 400 000)."""
    data = json.loads(json.dumps(base)) if base else notebook()
    cell = next(c for c in data["cells"] if c["cell_type"] == "code")
    cell["outputs"] = [{"name": "stdout", "output_type": "stream", "text": "x"}] * count
    return json.dumps(data, separators=(",", ":")).encode()


def tags(values: list[Any]) -> bytes:
    """The answer cell tagged with `values` (jsonschema compares tags pairwise once one is not a
    string: 5 000 tags cost minutes)."""
    data = notebook()
    answer(data)["metadata"]["tags"] = values
    return dumps(data)


def many_cells(count: int) -> bytes:
    data = notebook()
    data["cells"] += [
        {"cell_type": "raw", "id": f"r{n}", "metadata": {}, "source": ""} for n in range(count)
    ]
    return dumps(data)


# Shapes that are JSON but not a notebook, or a notebook with parts of the wrong kind.
SHAPES: dict[str, bytes] = {
    "a list": b"[]",
    "a string": b'"4"',
    "a float": b"4.0",
    "null": b"null",
    "nbformat as a list": dumps(notebook(nbformat=[4])),
    "nbformat as a dict": dumps(notebook(nbformat={"a": [1] * 1000})),
    "cells as an object": dumps(notebook(cells={"0": BASE["cells"][0]})),
    "cells as a number": dumps(notebook(cells=5)),
    "a cell that is a number": dumps(notebook(cells=[5])),
    "a cell that is a list": dumps(notebook(cells=[[1, 2]])),
    "metadata as a list": dumps(notebook(metadata=[1])),
    "cell metadata as a list": dumps(notebook(cells=[{**BASE["cells"][1], "metadata": [1]}])),
    "outputs as a dict": dumps(notebook(cells=[{**BASE["cells"][1], "outputs": {"a": 1}}])),
    "source as numbers": dumps(notebook(cells=[{**BASE["cells"][1], "source": [1, 2]}])),
    "cell id as a dict": dumps(notebook(cells=[{**BASE["cells"][1], "id": {"a": 1}}])),
    "a byte-order mark": b"\xef\xbb\xbf" + dumps(BASE),
    "UTF-16": json.dumps(BASE).encode("utf-16"),
    "latin-1 bytes": dumps(BASE).replace(b"Roofline", b"Roof\xe9ine"),
    "a raw NUL between values": dumps(BASE).replace(b'"nbformat"', b'\x00"nbformat"', 1),
    "unclosed brackets": b'{"cells": [' * 50_000,
    "stray closing brackets": b"]}" * 50_000,
    "an unterminated string": b'{"nbformat": 4, "cells": ["' + b"[" * 10_000,
    "empty": b"",
}


# Zips whose central directory is the weapon (V6). Written record by record, as zipfile
# would need one Python object per entry to write them, which is the cost under test.

_LOCAL = struct.Struct("<4s5H3L2H")  # local file header, 30 bytes
_CENTRAL = struct.Struct("<4s6H3L5H2L")  # central directory header, 46 bytes
_END = struct.Struct("<4s4H2LH")  # end of central directory, 22 bytes
_END64 = struct.Struct("<4sQ2H2L4Q")  # ZIP64 end of central directory, 56 bytes
_LOCATOR = struct.Struct("<4sLQL")  # ZIP64 end of central directory locator, 20


def directory_bomb(
    entries: int,
    *,
    name: bytes = b"a",
    declared: int | None = None,
    zip64: bool | None = None,
    comment: bytes = b"",
) -> bytes:
    """A zip whose central directory lists `entries` copies of one empty stored member.

    `declared` is the entry count the end records claim (default: the true
    one); ZIP64 end records are written when `zip64` is true, or by default
    when the count does not fit in 16 bits. The red team's inner zip had 10.5
    million entries; 100 000 already cost zipfile a second and 50 MB.
    """
    declared = entries if declared is None else declared
    zip64 = declared > 0xFFFF if zip64 is None else zip64
    local = _LOCAL.pack(b"PK\x03\x04", 20, 0, 0, 0, 0, 0, 0, 0, len(name), 0) + name
    central = (
        _CENTRAL.pack(b"PK\x01\x02", 20, 20, 0, 0, 0, 0, 0, 0, 0, len(name), 0, 0, 0, 0, 0, 0)
        + name
    )
    directory = central * entries
    start, size = len(local), len(directory)
    tail = b""
    if zip64:
        at = start + size
        tail = _END64.pack(
            b"PK\x06\x06", 44, 45, 45, 0, 0, declared, declared, size, start
        ) + _LOCATOR.pack(b"PK\x06\x07", 0, at, 1)
        counts, size32, start32 = 0xFFFF, 0xFFFFFFFF, 0xFFFFFFFF
    else:
        counts, size32, start32 = declared, size, start
    end = _END.pack(b"PK\x05\x06", 0, 0, counts, counts, size32, start32, len(comment))
    return local + directory + tail + end + comment


def comment_noise(size: int, seed: int = 28) -> bytes:
    """`size` bytes no compressor can shrink, holding no zip signature: a zip comment that keeps
    a bomb's unpacked-to-packed ratio low."""
    return random.Random(seed).randbytes(size).replace(b"PK", b"QK")


def lying_directory(entries: int = 44_610) -> bytes:
    """The red team's H7 inner zip (rt3-14): its end record says 1 entry, its directory holds
    `entries` of 47 bytes (2.0 MiB, under the 2 MiB cap), and 12 kB of noise in its comment
    keeps the ratio of a copy deflated in another zip under 200:1."""
    return directory_bomb(entries, declared=1, comment=comment_noise(12_000))


def copies(member: bytes, count: int, name: str = "part{}.zip") -> bytes:
    """A zip holding `count` deflated copies of `member`, named `name` with the number filled in.

    Written record by record and deflated once: 240 copies of a 2 MiB member
    cost one compression, not 240.
    """
    deflate = zlib.compressobj(9, zlib.DEFLATED, -15)
    packed = deflate.compress(member) + deflate.flush()
    crc = zlib.crc32(member)
    body, directory = bytearray(), bytearray()
    for number in range(count):
        filename = name.format(number).encode()
        at = len(body)
        fields = (8, 0, 0x21, crc, len(packed), len(member), len(filename))
        body += _LOCAL.pack(b"PK\x03\x04", 20, 0, *fields, 0) + filename + packed
        directory += _CENTRAL.pack(b"PK\x01\x02", 20, 20, 0, *fields, 0, 0, 0, 0, 0, at)
        directory += filename
    end = _END.pack(b"PK\x05\x06", 0, 0, count, count, len(directory), len(body), 0)
    return bytes(body + directory + end)
