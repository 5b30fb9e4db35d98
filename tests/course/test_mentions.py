"""A lesson lists the exercises course.toml gives it, and promises none that do not exist."""

from __future__ import annotations

from pathlib import Path

from gpulab.course import parse_lesson
from gpulab.course.manifest import ExerciseEntry
from gpulab.course.mentions import check_exercise_mentions

FRONT = "---\ntitle: T\nday: 1\nobjectives: [learn]\n---\n"


def _exercise(name: str, lesson: str = "x") -> ExerciseEntry:
    return ExerciseEntry(name, lesson, False, 60, (), Path(f"{name}.ipynb"), None)


def _problems(tmp_path: Path, body: str, exercises: list[ExerciseEntry]) -> list[tuple[int, str]]:
    path = tmp_path / "x.md"
    path.write_text(FRONT + body)
    lesson = parse_lesson(path.read_text(), path, "x")
    return [(p.line or 0, p.message) for p in check_exercise_mentions(lesson, exercises)]


BODY = """\
# T

## Exercises

- `vector-add`: a grid-stride vector add

  Run `gpulab check vector-add` when it is done.
- `pointer-chase` (planned): find the plateaus

  Not in the course yet.
"""


def test_listed_and_planned_exercises_pass(tmp_path: Path) -> None:
    assert _problems(tmp_path, BODY, [_exercise("vector-add")]) == []


def test_an_exercise_that_does_not_exist_is_told(tmp_path: Path) -> None:
    body = BODY.replace("`pointer-chase` (planned)", "`pointer-chase`")
    assert _problems(tmp_path, body, [_exercise("vector-add")]) == [
        (13, "no exercise named 'pointer-chase' in course.toml")
    ]


def test_a_planned_exercise_that_landed_is_told(tmp_path: Path) -> None:
    assert _problems(tmp_path, BODY, [_exercise("vector-add"), _exercise("pointer-chase")]) == [
        (13, "exercise 'pointer-chase' is marked planned but course.toml has it")
    ]


def test_every_exercise_of_the_lesson_is_listed(tmp_path: Path) -> None:
    exercises = [_exercise("vector-add"), _exercise("reduction"), _exercise("other", "y")]
    assert _problems(tmp_path, BODY, exercises) == [
        (8, "course.toml's exercise 'reduction' of this lesson is not listed here")
    ]
    assert _problems(tmp_path, "# T\n\n## Notes\n\nNone.\n", exercises) == []


def test_an_exercise_of_another_lesson_is_told(tmp_path: Path) -> None:
    assert _problems(tmp_path, BODY, [_exercise("vector-add", "y")]) == [
        (10, "exercise 'vector-add' belongs to the lesson 'y' in course.toml")
    ]


def test_gpulab_check_must_name_an_exercise(tmp_path: Path) -> None:
    body = BODY.replace("gpulab check vector-add", "gpulab check vektor-add")
    assert _problems(tmp_path, body, [_exercise("vector-add")]) == [
        (12, "`gpulab check vektor-add` names no exercise in course.toml")
    ]
