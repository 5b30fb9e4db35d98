"""Prose kept true by machine: every code reference the project's text makes still leads
somewhere.

A dotted name (``gpulab.course.catalog.Course``) anywhere in the code, the checks,
the solutions, the benchmarks or a Markdown file must import (and its attributes
exist); a path of the repository (``lab/gpulab/...``, ``tests/...``, ``lessons/...``)
named in a Markdown file or in gpulab's own code must exist. After a move, each one
is either updated or reported here with file:line.
"""

from __future__ import annotations

import importlib
import re
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SKIP = {".venv", "node_modules", ".git", "_build", "__pycache__", ".pytest_cache", "devtmp"}
DOTTED = re.compile(r"(?<![\w./-])gpulab(?:\.[A-Za-z_]\w*)+")
PATH = re.compile(
    r"(?<![\w./-])((?:lab/gpulab|tests|exercises|solutions|lessons|bench|book)/[\w.\-/]*[\w/])"
)
FILE_NAME = (".py", ".md", ".toml", ".json", ".tcss", ".ipynb", ".html", ".css")
GENERATED = ("_build", ".venv")  # made by `gpulab book` and the benchmarks, not kept


def _texts(*suffixes: str, under: tuple[str, ...] = ()) -> Iterator[Path]:
    folders = [ROOT / name for name in under] if under else [ROOT]
    for folder in folders:
        for path in sorted(folder.rglob("*")):
            parts = path.relative_to(ROOT).parts
            if path.is_file() and path.suffix in suffixes and not SKIP.intersection(parts):
                yield path


def _resolves(dotted: str) -> bool:
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            found: object = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for part in parts[cut:]:
            if not hasattr(found, part):
                return False
            found = getattr(found, part)
        return True
    return False


def _lines(path: Path) -> Iterator[tuple[int, str]]:
    yield from enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), 1)


def test_every_dotted_gpulab_name_resolves() -> None:
    texts = [
        *_texts(".py", under=("lab", "tests", "exercises", "solutions", "bench")),
        *_texts(".md", ".toml"),
    ]
    missing = sorted(
        {
            f"{path.relative_to(ROOT)}:{n}: {name}"
            for path in texts
            for n, line in _lines(path)
            for name in (m.group(0).rstrip(".") for m in DOTTED.finditer(line))
            if not name.endswith(FILE_NAME) and not _resolves(name)
        }
    )
    assert not missing, "these names lead nowhere:\n" + "\n".join(missing)


def test_every_repository_path_the_prose_names_exists() -> None:
    texts = [*_texts(".md"), *_texts(".py", under=("lab",))]
    missing = sorted(
        {
            f"{path.relative_to(ROOT)}:{n}: {named}"
            for path in texts
            for n, line in _lines(path)
            for named in (m.group(1) for m in PATH.finditer(line))
            if not any(mark in named for mark in ("*", "<", *GENERATED))
            and not (ROOT / named).exists()
        }
    )
    assert not missing, "these paths are not in the repository:\n" + "\n".join(missing)


RULE_SINCE = "2026-12-07T11:30:00+00:00"  # when the 72-character rule was made a test


def test_commit_subjects_are_72_characters_or_fewer() -> None:
    """What `git log --oneline` shows of a change fits one line (commits since the rule)."""
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("not a git checkout with git installed: no history to read")
    log = subprocess.run(
        ["git", "-C", str(ROOT), "log", f"--since={RULE_SINCE}", "--format=%h %s"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.splitlines()
    long = [line for line in log if len(line.split(" ", 1)[1]) > 72]
    assert not long, "commit subjects over 72 characters:\n" + "\n".join(long)
