"""The command line, run as a learner runs it: a real `gpulab` process."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

import pytest

from gpulab import __version__
from gpulab.course import ProgressStore, load_course
from helpers.tui import build_exercise_course, solve


def gpulab(*args: str, course: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    if course is not None:
        env["GPULAB_COURSE_DIR"] = str(course)
    return subprocess.run(
        [sys.executable, "-m", "gpulab", *args], capture_output=True, text=True, env=env, timeout=60
    )


def test_version() -> None:
    done = gpulab("--version")
    assert (done.returncode, done.stdout) == (0, f"gpulab {__version__}\n")


def _commands(
    parser: argparse.ArgumentParser | None = None, path: tuple[str, ...] = ()
) -> list[tuple[tuple[str, ...], argparse.ArgumentParser]]:
    """Every command and sub-command of gpulab's parser, with its own parser."""
    from gpulab.cli import _parser

    parser = parser or _parser()
    found = [(path, parser)]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                found += _commands(sub, (*path, name))
    return found


COMMANDS = [path for path, _ in _commands()]


def test_every_command_is_in_the_list() -> None:
    """The parametrisation below covers the parser as it is, not a list kept by hand."""
    assert len(COMMANDS) >= 24
    assert {
        ("grade",),
        ("probe", "run"),
        ("dev", "check"),
        ("image", "check"),
        ("worker",),
        ("book",),
    } <= set(COMMANDS)


@pytest.mark.parametrize("path", COMMANDS, ids=lambda path: " ".join(path) or "gpulab")
def test_help_for_every_command(path: tuple[str, ...], capsys: pytest.CaptureFixture[str]) -> None:
    """`gpulab ... --help` exits 0 with its usage line and says what the command does."""
    from gpulab.cli import _parser

    with pytest.raises(SystemExit) as done:
        _parser().parse_args([*path, "--help"])
    assert done.value.code == 0
    text = capsys.readouterr().out
    assert text.startswith(f"usage: gpulab {' '.join(path)}".rstrip())
    parser = dict(_commands())[path]
    words = parser.description or ""
    assert words and " ".join(words.split())[:40] in " ".join(text.split()), path


@pytest.mark.parametrize("args", [[], ["probe", "run"], ["grade"], ["image", "check"]])
def test_help_from_the_command_line(args: list[str]) -> None:
    done = gpulab(*args, "--help")
    assert done.returncode == 0
    assert done.stdout.startswith("usage: gpulab")


def test_lessons_lists_the_course() -> None:
    done = gpulab("lessons")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    entries = load_course().entries
    assert len(lines) == len(entries)
    for line, entry in zip(lines, entries, strict=True):
        assert line.split()[:3] == ["day", str(entry.day), entry.id]
        assert line.endswith(entry.title)


def test_show_prints_the_outline() -> None:
    course = load_course()
    lesson = course.lesson(course.entries[0].id)
    done = gpulab("show", lesson.id)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == f"# {lesson.title}"
    assert len(lines) == len(lesson.nodes)
    shallow = gpulab("show", lesson.id, "--depth", "1").stdout.splitlines()
    assert all(not line.startswith("    ") for line in shallow)
    assert len(shallow) == 1 + len(lesson.root.children)
    with_notes = gpulab("show", lesson.id, "--notes").stdout
    assert len(with_notes.splitlines()) > len(lines)


def test_show_unknown_lesson_is_bad_input() -> None:
    done = gpulab("show", "no-such-lesson")
    assert done.returncode == 2
    assert "no lesson 'no-such-lesson'" in done.stderr
    assert "Traceback" not in done.stderr


def test_lint_real_course_is_clean() -> None:
    done = gpulab("dev", "lint-lessons")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "no problems" in done.stdout


BROKEN_LESSONS = {
    "front": "---\ntitle: [oops\n---\n# X\n",
    "claim": "---\ntitle: C\nday: 1\nobjectives: [x]\n---\n# C\n\n- n <!-- claim: nope -->\n",
    "binary": b"---\ntitle: \xfe\n",
}


@pytest.fixture
def broken_course(tmp_path: Path) -> Path:
    folder = tmp_path / "lessons"
    folder.mkdir()
    manifest = "".join(
        f'[[lessons]]\nid = "{name}"\nday = 1\ntitle = "{name}"\n\n'
        for name in ["good", "front", "claim", "binary", "missing", "good"]
    )
    (folder / "course.toml").write_text(manifest)
    (folder / "good.md").write_text("---\ntitle: good\nday: 1\nobjectives: [x]\n---\n# good\n")
    for name, text in BROKEN_LESSONS.items():
        path = folder / f"{name}.md"
        if isinstance(text, bytes):
            path.write_bytes(text)
        else:
            path.write_text(text)
    return folder


def test_lint_names_every_broken_lesson(broken_course: Path) -> None:
    done = gpulab("dev", "lint-lessons", course=broken_course)
    assert done.returncode == 2
    out = done.stdout
    assert "front.md:2: front matter: not valid YAML" in out
    assert "claim.md:8: unknown claim 'nope'" in out
    assert "binary.md:2: not valid UTF-8 (byte 0xfe at column 8)" in out
    assert "course.toml:22: lesson 'missing': its file missing.md does not exist" in out
    assert "course.toml:27: duplicate lesson id 'good'" in out
    assert "hint:" in out
    assert "Traceback" not in done.stderr
    assert "problem(s) in 6 lesson(s)" in done.stderr


def test_broken_lesson_is_bad_input_others_still_show(broken_course: Path) -> None:
    bad = gpulab("show", "front", course=broken_course)
    assert bad.returncode == 2 and "front.md:2" in bad.stderr and "Traceback" not in bad.stderr
    good = gpulab("show", "good", course=broken_course)
    assert (good.returncode, good.stdout) == (0, "# good\n")
    listing = gpulab("lessons", course=broken_course)
    assert listing.returncode == 2
    assert "missing" in listing.stdout and "(broken:" in listing.stdout


def test_broken_manifest_is_bad_input(tmp_path: Path) -> None:
    (tmp_path / "course.toml").write_text("[[lessons]\n")
    done = gpulab("lessons", course=tmp_path)
    assert done.returncode == 2
    assert "course.toml:1: TOML syntax error" in done.stderr
    assert "Traceback" not in done.stderr


def test_specs_side_by_side_and_in_full(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "220")
    done = gpulab("specs", "h100-sxm", "h100-pcie")
    assert done.returncode == 0, done.stderr
    rows = {
        line.split("│")[1].strip(): line for line in done.stdout.splitlines() if line.count("│") > 2
    }
    assert "132 SMs" in rows["sms"] and "114 SMs" in rows["sms"]
    assert "3.35 TB/s" in rows["memory bandwidth"] and "2 TB/s" in rows["memory bandwidth"]
    one = gpulab("specs", "h100-sxm")
    assert one.returncode == 0, one.stderr
    assert "NVIDIA H100 SXM5 (Hopper, compute capability 9.0)" in one.stdout
    assert "989.4 TFLOPS" in one.stdout and "dense" in one.stdout
    assert (
        "https://developer.nvidia.com/blog/nvidia-hopper-architecture-in-depth/"
        in one.stdout.replace("│", "").replace("\n", "").replace(" ", "")
    )


def test_specs_unknown_name_is_bad_input() -> None:
    done = gpulab("specs", "h300")
    assert done.returncode == 2
    assert done.stderr.startswith("gpulab: ")
    assert "no GPU or topic named 'h300'" in done.stderr and "h200" in done.stderr
    assert "Traceback" not in done.stderr


def _check_into_a_closed_pipe(env: dict[str, str], *, read_first_line: bool) -> tuple[int, str]:
    """`gpulab check squares | true` (the reader gone before anything is written), or
    `| head -1` (one line read, then gone): gpulab's exit status and its stderr."""
    process = subprocess.Popen(
        [sys.executable, "-m", "gpulab", "check", "squares"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
    )
    assert process.stdout is not None and process.stderr is not None
    if read_first_line:
        process.stdout.readline()
    process.stdout.close()
    with process.stderr:
        errors = process.stderr.read().decode()
    return process.wait(timeout=120), errors


def test_check_into_a_pipe_closed_early_keeps_the_result_and_the_exit_status(
    tmp_path: Path,
) -> None:
    """`gpulab check NAME | head`: the result is kept before it is printed, and the exit
    status is the checks' verdict, not 0 for the broken pipe."""
    env = {**os.environ, "GPULAB_COURSE_DIR": str(build_exercise_course(tmp_path / "course"))}
    workspace = tmp_path / "ws"
    made = subprocess.run(
        [sys.executable, "-m", "gpulab", "init", str(workspace)],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert made.returncode == 0, made.stderr

    def kept() -> str | None:
        record = ProgressStore().load().exercises(str(workspace.resolve())).get("squares")
        return None if record is None else record.status

    status, errors = _check_into_a_closed_pipe(env, read_first_line=False)
    assert (status, kept()) == (1, "failing"), errors  # the notebook is as shipped
    assert "Traceback" not in errors and "Exception ignored" not in errors, errors
    solve(workspace / "basics" / "squares.ipynb")
    status, errors = _check_into_a_closed_pipe(env, read_first_line=True)
    assert (status, kept()) == (0, "passed"), errors
    assert "Traceback" not in errors and "Exception ignored" not in errors, errors
