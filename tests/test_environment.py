"""One home for cross-cutting things: the GPULAB_* variables, the state folder, atomic writes.

Every ``GPULAB_*`` name in gpulab's code is one of `gpulab.environment.ALL`,
named through it (no string of its own), and the README's table lists exactly
those, with the same words; the state folder follows ``GPULAB_STATE_DIR``; an
atomic write leaves the old file whole when it cannot finish.
"""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from gpulab.environment import ALL, STATE_DIR, Variable
from gpulab.files import atomic_write
from gpulab.state import state_dir

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "lab" / "gpulab"
NAME = re.compile(r"GPULAB_[A-Z_]+[A-Z]")


def _sources() -> list[Path]:
    return sorted(p for p in PACKAGE.rglob("*.py") if "__pycache__" not in p.parts)


def test_every_variable_the_code_names_is_one_of_environment() -> None:
    known = {v.name for v in ALL}
    unknown = [
        f"{path.relative_to(ROOT)}:{n}: {name}"
        for path in _sources()
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        for name in NAME.findall(line)
        if name not in known
    ]
    assert not unknown, "\n".join(unknown)


def test_only_environment_spells_a_variable_in_code() -> None:
    """Strings in code (not prose: docstrings and messages may name one) go through a
    `Variable`: a literal "GPULAB_X" outside environment.py is a second home for it."""
    spelled = []
    for path in _sources():
        if path.name == "environment.py":
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        prose = {
            id(node.body[0].value)
            for node in ast.walk(tree)
            if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef)
            and node.body
            and isinstance(node.body[0], ast.Expr)
            and isinstance(node.body[0].value, ast.Constant)
        }
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Constant)
                and isinstance(node.value, str | bytes)
                and id(node) not in prose
            ):
                text = node.value.decode() if isinstance(node.value, bytes) else node.value
                if NAME.fullmatch(text):
                    spelled.append(f"{path.relative_to(ROOT)}:{node.lineno}: {text}")
    assert not spelled, "\n".join(spelled)


def test_the_readme_lists_every_variable_as_environment_says() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    rows = {
        match.group(1): (match.group(2), match.group(3))
        for match in re.finditer(r"^\| `(GPULAB_[A-Z_]+)` \| (.+?) \| (.+?) \|$", readme, re.M)
    }
    assert rows == {v.name: (v.set_by, v.meaning) for v in ALL}


def test_a_variable_set_to_nothing_is_not_set() -> None:
    variable = Variable("GPULAB_TEST_ONLY", "you", "nothing")
    assert variable.get({}) is None
    assert variable.get({"GPULAB_TEST_ONLY": ""}) is None
    assert variable.get({"GPULAB_TEST_ONLY": "x"}) == "x"


def test_the_state_folder_follows_its_variable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(STATE_DIR.name, str(tmp_path / "state"))
    assert state_dir() == tmp_path / "state"
    monkeypatch.setenv(STATE_DIR.name, "")
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "xdg"))
    assert state_dir() == tmp_path / "xdg" / "gpulab"
    # and a process gpulab starts finds the same folder
    monkeypatch.setenv(STATE_DIR.name, str(tmp_path / "child"))
    said = subprocess.run(
        [sys.executable, "-c", "from gpulab.state import state_dir; print(state_dir())"],
        capture_output=True,
        text=True,
        check=True,
        env=dict(os.environ),
    )
    assert said.stdout.strip() == str(tmp_path / "child")


def test_an_atomic_write_is_whole_or_not_at_all(tmp_path: Path) -> None:
    path = tmp_path / "made" / "here.json"
    atomic_write(path, "first\n")
    assert path.read_text() == "first\n" and (path.stat().st_mode & 0o777) == 0o600
    atomic_write(path, b"second", mode=0o644)
    assert path.read_bytes() == b"second" and (path.stat().st_mode & 0o777) == 0o644
    folder = tmp_path / "a folder"  # os.replace cannot put a file over a folder
    folder.mkdir()
    (folder / "kept").write_text("kept")
    with pytest.raises(IsADirectoryError):
        atomic_write(folder, "lost")
    assert (folder / "kept").read_text() == "kept"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a folder", "made"]  # no leftovers
    assert [p.name for p in path.parent.iterdir()] == ["here.json"]
