"""Attacks on a grading run as a whole, beside ordinary learners, for test_run_attacks.py.

The learner cases reuse tests/helpers/adversarial_class.py (its `Case` and builders):
each is a learner folder, or zip, under SUBMISSIONS. What they attack is not
the sandbox but the run around it: the text a learner can put in a check's
message or a file name, and the files the run reads after the intake.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import sqlite3
import zipfile
from pathlib import Path

import nbformat

from helpers.adversarial_class import (
    CASES,
    FULL,
    LOOP,
    SOLUTION,
    STUB,
    Case,
    _answer,
    _prefixed,
    _write,
)

# A message no UTF-8 encoder takes (lone surrogates), a terminal hyperlink as an escape
# sequence, and Rich markup: raised by the learner's arithmetic_intensity, so the visible
# check test_arithmetic_intensity and the hidden test_zero_flops quote it.
HOSTILE_TEXT = (
    r"\ud800 lone \udfff [link=https://evil.example/]click[/link] [/] "
    r"\x1b]8;;https://evil.example/\x1b\\here\x1b]8;;\x1b\\ \x1b[2J \u202eevil"
)
RAISES = f'''

def arithmetic_intensity(flops, bytes_moved):
    raise ValueError("{HOSTILE_TEXT}")
'''
# Zip members named with Rich markup; "../" makes the intake refuse them, so they are
# named in the run's problems, which the summary prints.
MARKUP_MEMBERS = (
    "../[/]x.ipynb",
    "../[link=https://evil.example/]click[/link].ipynb",
    "../\x1b]8;;https://evil.example/\x1b\\x.ipynb",
)
# A learner's folder (a file name holds no "/", so no closing tag), and a notebook put
# straight into SUBMISSIONS, which the intake names in a problem.
MARKUP_NAME = "[bold]eve [link=https:evil.example]x"
MARKUP_FILE = "[link=https:evil.example]roofline[blink].ipynb"


def _raises_in_a_check(target: Path) -> None:
    """The solution, but arithmetic_intensity raises ValueError with `HOSTILE_TEXT`."""
    notebook = nbformat.read(SOLUTION, as_version=4)
    _answer(notebook, "intensity").source += RAISES
    _write(notebook, target)


def _zip_with_markup_members(target: Path) -> None:
    """A learner's zip: the solution, and members named with markup that are refused."""
    target.parent.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(target.parent.with_suffix(".zip"), "w") as zf:
        zf.write(SOLUTION, "roofline.ipynb")
        for name in MARKUP_MEMBERS:
            zf.writestr(name, "{}")


def _solution_as_named(target: Path) -> None:
    _write(nbformat.read(SOLUTION, as_version=4), target)


ORDINARY = tuple(c for c in CASES if c.name in ("good", "victim", "stub"))
SURROGATE = Case("mallory", ("wrong",), -3.0, _raises_in_a_check)
MARKUP_ZIP = Case("zara", ("right",), FULL, _zip_with_markup_members)
MARKUP_LEARNER = Case("markup-learner", ("right",), FULL, _solution_as_named)
SLOW = Case("slow", ("timeout",), 0.0, _prefixed(SOLUTION, LOOP), slow=True)


def build(folder: Path, cases: tuple[Case, ...]) -> None:
    """One learner folder (or zip) per case under `folder`; `MARKUP_LEARNER` under
    `MARKUP_NAME`, with a stray notebook named `MARKUP_FILE` beside the learners."""
    for case in cases:
        name = MARKUP_NAME if case is MARKUP_LEARNER else case.name
        case.build(folder / name / "roofline.ipynb")
        if case is MARKUP_LEARNER:
            _solution_as_named(folder / MARKUP_FILE)


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def stub_bytes() -> bytes:
    """The shipped stub as a learner's notebook file holds it."""
    return (nbformat.writes(nbformat.read(STUB, as_version=4)) + "\n").encode()


def gradebook_rows(out: Path, sql: str, *args: object) -> list[tuple[object, ...]]:
    """Rows of a query on the gradebook under `out`, read only, [] before it exists."""
    try:
        with contextlib.closing(
            sqlite3.connect(f"file:{out / 'gradebook.sqlite'}?mode=ro", uri=True, timeout=5)
        ) as db:
            return db.execute(sql, args).fetchall()
    except sqlite3.Error:
        return []


def graded_count(out: Path) -> int:
    """How many grades the gradebook under `out` holds now (-1 before it exists): a point in
    a run chosen by its progress, to kill it at."""
    try:
        with contextlib.closing(
            sqlite3.connect(f"file:{out / 'gradebook.sqlite'}?mode=ro", uri=True, timeout=1)
        ) as book:
            return int(book.execute("SELECT count(*) FROM grades").fetchone()[0])
    except sqlite3.Error:
        return -1


def tagged_processes(tag: str) -> list[int]:
    """Processes of the run named `tag`: learner code carries GPULAB_JOB=<tag>, a checks
    process the sandbox policy naming it."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            environ = (entry / "environ").read_bytes().split(b"\0")
        except OSError:
            continue
        for item in environ:
            name, _, value = item.partition(b"=")
            policy: object = None
            if name == b"GPULAB_SANDBOX":
                with contextlib.suppress(ValueError):
                    policy = json.loads(value)
            if (name == b"GPULAB_JOB" and value == tag.encode()) or (
                isinstance(policy, dict) and policy.get("tag") == tag
            ):
                found.append(int(entry.name))
                break
    return [pid for pid in found if pid != os.getpid()]
