"""Every command's exit status is an `ExitCode`, and the command line hands over what it read.

The command line alone parses `sys.argv`; what a subcommand needs of it reaches
it as an argument (the gradebook keeps the grading command as typed).
"""

from __future__ import annotations

import ast
import contextlib
import shlex
import sqlite3
import subprocess
import sys
from pathlib import Path

from gpulab.cli import main
from gpulab.errors import ExitCode

ROOT = Path(__file__).resolve().parents[1]
GPULAB = ROOT / "lab" / "gpulab"
COMMAND_LINE = [
    *sorted(GPULAB.glob("cli*.py")),
    GPULAB / "grading" / "classrun" / "report.py",
    GPULAB / "probes" / "registry.py",
]


def _numbers_returned(path: Path) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if not isinstance(node, ast.Return) or node.value is None:
            continue
        values = [node.value]
        if isinstance(node.value, ast.IfExp):
            values = [node.value.body, node.value.orelse]
        for value in values:
            if isinstance(value, ast.Constant) and type(value.value) is int:
                found.append(f"{path.relative_to(ROOT)}:{node.lineno}: return {value.value}")
    return found


def test_no_command_returns_a_bare_number() -> None:
    bare = [line for path in COMMAND_LINE for line in _numbers_returned(path)]
    assert not bare, "return an ExitCode instead:\n" + "\n".join(bare)
    assert not [p for p in COMMAND_LINE if "BAD_INPUT = " in p.read_text(encoding="utf-8")]


def test_nothing_below_the_command_line_reads_its_arguments() -> None:
    readers = [
        f"{path.relative_to(ROOT)}:{node.lineno}"
        for path in sorted(GPULAB.rglob("*.py"))
        if path.name != "cli.py"
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.Attribute)
        and node.attr == "argv"
        and isinstance(node.value, ast.Name)
        and node.value.id == "sys"
        and not _entry_point(path)
    ]
    assert not readers, f"sys.argv read below the command line: {readers}"


def _entry_point(path: Path) -> bool:
    """A module run as a process of its own (a worker, a jail) reads its own arguments."""
    text = path.read_text(encoding="utf-8")
    return path.name == "__main__.py" or '__name__ == "__main__"' in text


def test_bad_input_and_success_are_exit_codes(capsys) -> None:
    status = main(["show", "no-such-lesson"])
    assert status is ExitCode.BAD_INPUT, status
    assert "no-such-lesson" in capsys.readouterr().err
    status = main(["list"])
    assert status is ExitCode.OK, status


def test_the_gradebook_keeps_the_grading_command_as_typed(tmp_path: Path) -> None:
    folder, out = tmp_path / "a class with no one", tmp_path / "out"
    folder.mkdir()
    argv = ["grade", str(folder), "--out", str(out), "--exercises", "env-report", "--unsafe"]
    done = subprocess.run(
        [sys.executable, "-m", "gpulab", *argv], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == ExitCode.OK, done.stderr
    with contextlib.closing(sqlite3.connect(out / "gradebook.sqlite")) as db:
        (command,) = db.execute("SELECT command FROM runs").fetchone()
    assert command == shlex.join(["gpulab", *argv])
