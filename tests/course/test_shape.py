"""Notes longer than eight lines are asked to become child nodes (`gpulab.course.shape`)."""

from __future__ import annotations

from pathlib import Path

from gpulab.course import parse_lesson
from gpulab.course.shape import check_shape

FRONT = "---\ntitle: T\nday: 1\nobjectives: [learn]\n---\n"
LONG = "\n".join(f"  line {n} of a long note" for n in range(9))


def _problems(body: str) -> list[tuple[int | None, str]]:
    lesson = parse_lesson(FRONT + body, Path("x.md"), "x")
    return [(p.line, p.message) for p in check_shape(lesson)]


def test_a_long_note_is_told_with_its_line() -> None:
    body = f"# T\n\n## Part\n\n- A point\n\n{LONG}\n- Short\n\n  Two\n  lines.\n"
    assert _problems(body) == [(10, "the notes of 'A point' run to 9 lines (at most 8)")]


def test_eight_lines_are_fine() -> None:
    body = "# T\n\n- A point\n\n" + "\n".join(f"  line {n}" for n in range(8)) + "\n"
    assert _problems(body) == []


def test_the_root_and_an_answer_may_run_longer() -> None:
    intro = LONG.replace("  ", "")
    body = f"# T\n\n{intro}\n\n## Check yourself\n\n- Why?\n\n  Answer: because\n{LONG}\n"
    assert _problems(body) == []
