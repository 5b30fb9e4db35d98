"""Figures in lessons: the marker, where it puts a figure, and what the linter says.

`<!-- figure: id -->` on a line of its own among a node's notes places the
figure there; on the node's own line, after its notes. The course parser only
records ids (it may not import `gpulab.figures`); the linter, handed the ids
there are, reports an unknown one at its marker's file:line, and so does the
book, which refuses to build.
"""

from __future__ import annotations

import contextlib
import io
from pathlib import Path

import pytest

from gpulab.cli import main
from gpulab.course import load_course, parse_lesson
from gpulab.course.lesson import unknown_figures
from gpulab.course.tree import FigureMark
from gpulab.figures import FIGURE_IDS, FIGURES

LESSON = """---
title: T
day: 1
objectives: [x]
---
# T

- Latency sweep <!-- figure: stride-sweep -->

  First note.

  <!-- figure: latency-footprint -->

  Second note.
- Nothing here

  A note with <!-- figure: roofline --> inside its text.
- Bad ids

  <!-- figure: No_Such -->
- Unknown

  <!-- figure: no-such-figure -->
"""


def _lesson(tmp_path: Path, text: str = LESSON) -> Path:
    folder = tmp_path / "lessons"
    folder.mkdir(exist_ok=True)
    (folder / "course.toml").write_text(
        '[course]\ntitle = "C"\n\n[[lessons]]\nid = "t"\nday = 1\ntitle = "T"\n', encoding="utf-8"
    )
    (folder / "t.md").write_text(text, encoding="utf-8")
    return folder


def _line(text: str, needle: str) -> int:
    return next(i for i, line in enumerate(text.split("\n"), 1) if needle in line)


def test_markers_place_figures_on_their_nodes(tmp_path: Path) -> None:
    path = _lesson(tmp_path) / "t.md"
    lesson = parse_lesson(LESSON, path)
    sweep = lesson.nodes[1]
    assert sweep.label == "Latency sweep"
    assert sweep.figures == (
        FigureMark("stride-sweep", _line(LESSON, "Latency sweep"), None),
        FigureMark("latency-footprint", _line(LESSON, "figure: latency-footprint"), 1),
    )
    assert [n.markdown for n in sweep.notes] == ["First note.", "Second note."]
    assert lesson.nodes[2].figures == ()  # inside a note's text it places nothing ...
    warned = {(p.line, p.message) for p in lesson.problems}
    assert (_line(LESSON, "A note with"), "a figure annotation inside a note's text") in warned
    # ... and an id that cannot be one is a lint warning where it stands.
    assert (_line(LESSON, "No_Such"), "'No_Such' is not a valid figure id") in warned


def test_an_unknown_figure_is_a_lint_problem_at_its_line(tmp_path: Path) -> None:
    folder = _lesson(tmp_path)
    course = load_course(folder)
    problems = [p for p in course.lint(figures=FIGURE_IDS) if "unknown figure" in p.message]
    assert [(p.path, p.line, p.message) for p in problems] == [
        (folder / "t.md", _line(LESSON, "no-such-figure"), "unknown figure 'no-such-figure'")
    ]
    assert unknown_figures(course.lesson("t"), FIGURE_IDS) == problems
    # Without the ids the course cannot tell, and says nothing about them.
    assert not any("unknown figure" in p.message for p in course.lint())


def test_the_linter_command_reports_it_as_file_and_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = _lesson(tmp_path)
    monkeypatch.setenv("GPULAB_COURSE_DIR", str(folder))
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        assert main(["dev", "lint-lessons"]) == 2
    where = f"{folder / 't.md'}:{_line(LESSON, 'no-such-figure')}: unknown figure"
    assert any(line.startswith(where) for line in out.getvalue().splitlines()), out.getvalue()


def test_every_figure_is_placed_in_some_lesson_and_every_placement_exists() -> None:
    course = load_course()
    placed: dict[str, list[str]] = {}
    for entry in course.entries:
        for node in course.lesson(entry.id).nodes:
            for mark in node.figures:
                placed.setdefault(mark.id, []).append(f"{entry.id}:{mark.line}")
    assert set(FIGURES) <= set(placed), f"placed nowhere: {set(FIGURES) - set(placed)}"
    assert set(placed) <= FIGURE_IDS, f"unknown: {set(placed) - FIGURE_IDS}"
    for entry in course.entries:
        assert unknown_figures(course.lesson(entry.id), FIGURE_IDS) == []


def test_every_lesson_with_probe_data_shows_a_figure() -> None:
    course = load_course()
    with_figures = {
        e.id for e in course.entries if any(n.figures for n in course.lesson(e.id).nodes)
    }
    assert {
        "memory-hierarchy",
        "gpu-architecture",
        "tensor-cores",
        "numa",
        "gpu-management",
        "measuring",
        "cuda-programming",
    } <= with_figures
