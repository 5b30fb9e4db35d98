"""Reading hostile notebooks: every malformed input is a `NotebookError` that says where, and the
cost of reading one is bounded before `json.loads` or nbformat's validator sees it.

The inputs are the red team's cases (tests/helpers/intake_attacks.py), written to real
files and read by `read_notebook` (the grader) and `read_cells` (the checks).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpulab.grading.checks.cells import answer_cells
from gpulab.grading.checks.notebook import (
    MAX_CELLS,
    MAX_DEPTH,
    MAX_DIGITS,
    MAX_KEPT_VALUES,
    MAX_VALUES,
    NotebookError,
    read_cells,
    read_notebook,
)
from helpers.intake_attacks import (
    SHAPES,
    answer,
    deeply_nested,
    dumps,
    escaped_in_source,
    huge_integer,
    many_cells,
    notebook,
    tags,
    tiny_outputs,
)

ROOT = Path(__file__).resolve().parents[2]
STUB = ROOT / "exercises" / "memory-hierarchy" / "roofline.ipynb"
READERS: list[Callable[[Path], Any]] = [read_notebook, read_cells]


def write(tmp_path: Path, data: bytes, name: str = "mine.ipynb") -> Path:
    path = tmp_path / name
    path.write_bytes(data)
    return path


def refusal(reader: Callable[[Path], Any], path: Path) -> str:
    """What `reader` says of `path`; any exception but NotebookError fails the test."""
    with pytest.raises(NotebookError) as caught:
        reader(path)
    message = str(caught.value)
    assert message.startswith(f"{path}"), message
    assert message.isprintable() and len(message) < 600, message
    return message


def line_of(data: bytes, needle: bytes) -> int:
    return data[: data.index(needle)].count(b"\n") + 1


def depth(value: Any) -> int:
    if isinstance(value, dict):
        return 1 + max(map(depth, value.values()), default=0)
    if isinstance(value, list):
        return 1 + max(map(depth, value), default=0)
    return 0


# Crashes (V2): each of these raised something other than NotebookError


@pytest.mark.parametrize("reader", READERS)
def test_json_nested_100_000_deep_is_refused_with_its_line(
    tmp_path: Path, reader: Callable[[Path], Any]
) -> None:
    data = deeply_nested(100_000)
    path = write(tmp_path, data)
    assert refusal(reader, path) == (
        f"{path}:{line_of(data, b'[[[')}: JSON nested more than "
        f"{MAX_DEPTH} deep; no notebook nests so deep"
    )


@pytest.mark.parametrize("reader", READERS)
def test_a_5000_digit_integer_is_refused_with_its_line(
    tmp_path: Path, reader: Callable[[Path], Any]
) -> None:
    data = huge_integer(5000)
    path = write(tmp_path, data)
    assert refusal(reader, path) == (
        f"{path}:{line_of(data, b'7777')}: a number of more than "
        f"{MAX_DIGITS} digits; no notebook needs one"
    )


def test_integers_up_to_the_limit_are_read(tmp_path: Path) -> None:
    for digits in (MAX_DIGITS, -MAX_DIGITS):
        number = int("9" * abs(digits)) * (1 if digits > 0 else -1)
        path = write(tmp_path, dumps(notebook(metadata={"n": number})))
        assert read_notebook(path).metadata["n"] == number
    path = write(tmp_path, dumps(notebook(metadata={"n": int("9" * (MAX_DIGITS + 1))})))
    assert "a number of more than" in refusal(read_cells, path)


@pytest.mark.parametrize(
    ("escape", "shown"),
    [
        ("\\ud800", "a lone surrogate (U+D800)"),
        ("\\udc00", "a lone surrogate (U+DC00)"),
        ("\\ude00\\ud83d", "a lone surrogate (U+DE00)"),
        ("\\u0000", "a NUL character"),
    ],
)
@pytest.mark.parametrize("reader", READERS)
def test_text_that_is_no_text_is_refused(
    tmp_path: Path, reader: Callable[[Path], Any], escape: str, shown: str
) -> None:
    path = write(tmp_path, escaped_in_source(escape))
    assert refusal(reader, path) == (
        f"{path}: cell 2 holds {shown}"
        + (", which is not text" if "surrogate" in shown else "")
        + "; save the notebook again from JupyterLab"
    )


def test_a_surrogate_in_a_key_of_the_metadata_is_refused(tmp_path: Path) -> None:
    data = dumps(notebook(metadata={"HOLE": 1})).replace(b"HOLE", b"\\udfff")
    assert "the notebook holds a lone surrogate (U+DFFF)" in refusal(
        read_notebook, write(tmp_path, data)
    )


def test_escaped_pairs_are_text(tmp_path: Path) -> None:
    """ensure_ascii writers escape every character outside ASCII, emoji as surrogate pairs."""
    path = write(tmp_path, escaped_in_source("\\ud83d\\ude00 \\u00e9"))
    assert answer_cells(read_notebook(path), path)["roofs"].source == "x = '😀 é'\n"


@pytest.mark.parametrize("name", sorted(SHAPES))
@pytest.mark.parametrize("reader", READERS)
def test_shapes_that_are_no_notebook(
    tmp_path: Path, reader: Callable[[Path], Any], name: str
) -> None:
    path = write(tmp_path, SHAPES[name])
    message = refusal(reader, path)
    if name in ("a byte-order mark", "latin-1 bytes", "empty", "stray closing brackets"):
        assert message.startswith(f"{path}:"), message  # with the line


def test_messages_name_the_cell(tmp_path: Path) -> None:
    cases = {
        "a cell that is a number": "cell 1 is not a JSON object",
        "cell metadata as a list": "cell 1 has no metadata object",
        "outputs as a dict": "cell 1's outputs are not a list",
        "source as numbers": "cell 1 has no source text",
        "cell id as a dict": "cell 1's id is not a string",
        "metadata as a list": "the notebook has no metadata object",
        "cells as an object": "the notebook has no list of cells",
        "nbformat as a dict": "not a version 4 notebook (nbformat dict)",
    }
    for name, said in cases.items():
        path = write(tmp_path, SHAPES[name], f"{len(said)}.ipynb")
        assert refusal(read_notebook, path).startswith(f"{path}: {said}")


def test_metadata_that_is_not_a_mapping_is_no_role(tmp_path: Path) -> None:
    """gpulab's own metadata of the wrong kind is valid to nbformat, and just not an answer."""
    path = write(
        tmp_path,
        dumps(notebook(cells=[{**notebook()["cells"][1], "metadata": {"gpulab": ["answer"]}}])),
    )
    for reader in READERS:
        assert answer_cells(reader(path), path) == {}


# The depth is counted on the bytes, exactly, whatever the strings hold


def nested(inner: Any, levels: int) -> Any:
    for _ in range(levels):
        inner = [inner]
    return inner


@pytest.mark.parametrize("reader", READERS)
def test_the_depth_limit_is_exact(tmp_path: Path, reader: Callable[[Path], Any]) -> None:
    # the notebook's object and its metadata are two levels; the lists make up the rest
    for levels, refused in ((MAX_DEPTH - 2, False), (MAX_DEPTH - 1, True)):
        data = notebook(metadata={"x": nested(1, levels)})
        assert depth(data) == MAX_DEPTH + refused
        path = write(tmp_path, dumps(data))
        if refused:
            assert "JSON nested more than" in refusal(reader, path)
        else:
            reader(path)


TRICKY = st.text(alphabet='[]{}",\\:/u0 é\n\t', max_size=12)
JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | TRICKY,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(TRICKY, inner, max_size=3),
    max_leaves=12,
)


@settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(value=JSON, ascii_only=st.booleans(), extra=st.sampled_from([0, 1]))
def test_brackets_in_strings_do_not_count(
    tmp_path: Path, value: Any, ascii_only: bool, extra: int
) -> None:
    """Strings full of brackets, quotes and backslashes: refused exactly past MAX_DEPTH."""
    levels = MAX_DEPTH - 2 - depth(value) + extra
    data = notebook(metadata={"x": nested(value, levels)})
    path = write(tmp_path, json.dumps(data, ensure_ascii=ascii_only).encode())
    if extra:
        assert "JSON nested more than" in refusal(read_cells, path)
    else:
        assert read_cells(path)["metadata"]["x"] == data["metadata"]["x"]


# Cost (V9): outputs are dropped before validation; what validation would still see is capped


def test_400_000_tiny_outputs_cost_little(tmp_path: Path) -> None:
    """The red team's 19.9 MiB notebook: 23 s of CPU and 550 MB before (14 s on this machine)."""
    base = json.loads(STUB.read_text(encoding="utf-8"))
    data = tiny_outputs(400_000, base)
    assert 19 * 2**20 < len(data) < 20 * 2**20
    path = write(tmp_path, data)
    read_notebook(STUB)  # nbformat imported, schema compiled
    started = time.process_time()
    read = read_notebook(path)
    spent = time.process_time() - started
    assert all(cell.get("outputs", []) == [] for cell in read.cells)
    assert spent < 5, f"{spent:.1f} s of CPU to read it"  # about 0.5 s here; 14 s before


def test_tags_that_are_not_strings_are_refused_before_validation(tmp_path: Path) -> None:
    """jsonschema compares such tags pairwise: 1 000 of them cost 10 s before, 5 000 minutes."""
    path = write(tmp_path, tags([{"a": n} for n in range(1000)]))
    started = time.process_time()
    message = refusal(read_notebook, path)
    assert time.process_time() - started < 2
    assert message == f"{path}: cell 2's metadata.tags is not a list of at most 100 strings"
    path = write(tmp_path, tags(["a", "b"]))
    assert read_notebook(path).cells[1].metadata.tags == ["a", "b"]


def test_cells_and_values_are_capped(tmp_path: Path) -> None:
    path = write(tmp_path, many_cells(MAX_CELLS))
    assert refusal(read_notebook, path) == (
        f"{path}: {MAX_CELLS + 2} cells, more than the {MAX_CELLS} a notebook may have"
    )
    data = notebook()
    answer(data)["source"] = ["x\n"] * MAX_KEPT_VALUES
    path = write(tmp_path, dumps(data))
    assert "JSON values besides outputs" in refusal(read_notebook, path)
    answer(data)["source"] = ["x\n"] * 1000
    answer(data)["outputs"] = [0] * MAX_VALUES
    path = write(tmp_path, json.dumps(data, separators=(",", ":")).encode())
    assert f"JSON values, more than the {MAX_VALUES} a notebook may hold" in refusal(
        read_notebook, path
    )


def test_commas_and_brackets_in_strings_are_not_values(tmp_path: Path) -> None:
    data = notebook()
    answer(data)["source"] = "[{" * 100_000 + ',\\"' * MAX_VALUES
    path = write(tmp_path, dumps(data))
    assert answer_cells(read_notebook(path), path)["roofs"].source == answer(data)["source"]


def test_outputs_and_attachments_are_dropped(tmp_path: Path) -> None:
    data = notebook()
    answer(data)["outputs"] = [{"output_type": "stream", "name": "stdout", "text": "hi"}]
    answer(data)["execution_count"] = 3
    data["cells"][0]["attachments"] = {"a.png": {"image/png": "AAAA"}}
    data["metadata"]["widgets"] = {"application/vnd.jupyter.widget-state+json": {"x": [1]}}
    read = read_notebook(write(tmp_path, dumps(data)))
    assert read.cells[1].outputs == [] and read.cells[1].execution_count == 3
    assert "attachments" not in read.cells[0] and "widgets" not in read.metadata


def test_a_fifo_is_refused_not_waited_on(tmp_path: Path) -> None:
    import os
    import signal

    def waited(*_: object) -> None:
        raise AssertionError("the reader waited on a FIFO")

    os.mkfifo(tmp_path / "mine.ipynb")
    previous = signal.signal(signal.SIGALRM, waited)
    signal.alarm(10)
    try:
        for reader in READERS:
            assert refusal(reader, tmp_path / "mine.ipynb").endswith(
                "not a regular file, so not a notebook"
            )
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def test_reading_a_notebook_compiles_no_grammar(tmp_path: Path) -> None:
    """nbformat's validator comes without rfc3987_syntax's 40 Lark grammars (seconds of
    import in every process that reads a notebook), and still refuses what is no notebook;
    the module reads as installed again afterwards."""
    import subprocess
    import sys

    good = write(tmp_path, dumps(notebook()))
    bad_data = notebook()
    bad_data["cells"][0]["cell_type"] = "poem"
    bad = write(tmp_path, dumps(bad_data), "bad.ipynb")
    script = (
        "import importlib.util, sys\n"
        "from gpulab.grading.checks.notebook import NotebookError, SLOW_FORMATS, read_notebook\n"
        f"read_notebook(__import__('pathlib').Path({str(good)!r}))\n"
        f"try:\n    read_notebook(__import__('pathlib').Path({str(bad)!r}))\n"
        "except NotebookError:\n    print('refused')\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('lark', SLOW_FORMATS)))\n"
        "print(SLOW_FORMATS not in sys.modules)\n"
        "print(importlib.util.find_spec(SLOW_FORMATS) is not None)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=True
    )
    refused, loaded, unmarked, installed = done.stdout.split("\n")[:4]
    assert refused == "refused", done.stdout + done.stderr
    assert loaded == "[]", f"reading a notebook imported {loaded}"
    assert unmarked == "True", "the mark that keeps the module out stayed behind"
    assert installed == "True", "this environment lacks the package: the test shows nothing"
