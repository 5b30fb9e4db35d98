"""course.toml and claims.toml: what loads, and what each mistake is told."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpulab.course import CourseError, load_claims, load_course, load_manifest

LESSON = "---\ntitle: {title}\nday: {day}\nobjectives: [x]\n---\n# {title}\n\n- a node\n"


def write_course(root: Path, manifest: str, lessons: dict[str, str] | None = None) -> Path:
    folder = root / "lessons"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "course.toml").write_text(manifest)
    for lesson_id, text in (lessons or {}).items():
        (folder / f"{lesson_id}.md").write_text(text)
    return folder


def entry(lesson_id: str, day: int = 1, title: str = "T") -> str:
    return f'[[lessons]]\nid = "{lesson_id}"\nday = {day}\ntitle = "{title}"\n\n'


def test_real_course_loads_in_teaching_order() -> None:
    course = load_course()
    days = [e.day for e in course.entries]
    assert days == sorted(days)
    assert len(course.entries) >= 3
    for e in course.entries:
        assert e.path.name == f"{e.id}.md"


def test_lessons_and_exercises(tmp_path: Path) -> None:
    text = (
        entry("a", 1, "A")
        + entry("b", 2, "B")
        + (
            '[[exercises]]\nname = "ex-1"\nlesson = "b"\ngpu = true\ntime_limit = 90\n'
            'hints = ["gentle", "strong"]\n'
        )
    )
    listing = LESSON.format(title="B", day=2).replace(
        "- a node\n", "## Exercises\n\n- `ex-1`: the first exercise\n"
    )
    folder = write_course(tmp_path, text, {"a": LESSON.format(title="A", day=1), "b": listing})
    course = load_course(folder)
    assert [(e.id, e.day, e.title, e.line) for e in course.entries] == [
        ("a", 1, "A", 2),
        ("b", 2, "B", 7),
    ]
    (ex,) = course.exercises("b")
    assert (ex.name, ex.gpu, ex.time_limit, ex.hints) == ("ex-1", True, 90, ("gentle", "strong"))
    assert ex.notebook == tmp_path / "exercises" / "b" / "ex-1.ipynb"
    assert course.exercises("a") == []
    assert course.neighbour("a", 1) == "b" and course.neighbour("b", 1) is None
    assert [(d, [e.id for e in es]) for d, es in course.days()] == [(1, ["a"]), (2, ["b"])]
    assert course.lint() == []
    (folder / "b.md").write_text(LESSON.format(title="B", day=2))
    unlisted = load_course(folder).lint()
    assert [(p.line, p.message) for p in unlisted] == [
        (12, "exercise 'ex-1' is listed under no lesson's Exercises heading")
    ]


def test_missing_lesson_file_breaks_only_that_lesson(tmp_path: Path) -> None:
    folder = write_course(
        tmp_path, entry("here") + entry("gone"), {"here": LESSON.format(title="T", day=1)}
    )
    course = load_course(folder)
    assert course.lesson("here").title == "T"
    with pytest.raises(CourseError) as caught:
        course.lesson("gone")
    (problem,) = caught.value.problems
    assert problem.line == 7
    assert problem.message == "lesson 'gone': its file gone.md does not exist"
    assert "create lessons/gone.md" in problem.hint


def test_duplicate_ids_are_reported_on_the_second(tmp_path: Path) -> None:
    folder = write_course(
        tmp_path,
        entry("a") + entry("b") + entry("a"),
        {"a": LESSON.format(title="T", day=1), "b": LESSON.format(title="T", day=1)},
    )
    manifest = load_manifest(folder / "course.toml")
    first, _, second = manifest.lessons
    assert first.problems == ()
    (problem,) = second.problems
    assert (problem.line, problem.message) == (12, "duplicate lesson id 'a'")
    assert "first defined at line 2" in problem.hint
    assert load_course(folder).lesson("a").title == "T"


@pytest.mark.parametrize(
    ("text", "line", "message"),
    [
        ('[[lessons]]\nid = "a"\nday = "x"\ntitle = "T"\n', 2, "lesson 'a': day must be"),
        ('[[lessons]]\nid = "Bad Id"\nday = 1\ntitle = "T"\n', 2, "lesson id 'Bad Id' is not"),
        ('[[lessons]]\nday = 1\ntitle = "T"\n', 1, "lesson 1 has no id"),  # its header
        ('[[lessons]]\nid = "a"\nday = 1\ntitle = ""\n', 2, "lesson 'a': title must be"),
    ],
)
def test_bad_lesson_entries(tmp_path: Path, text: str, line: int | None, message: str) -> None:
    folder = write_course(tmp_path, text, {"a": LESSON.format(title="T", day=1)})
    (entry_,) = load_manifest(folder / "course.toml").lessons
    assert entry_.problems[0].line == line
    assert entry_.problems[0].message.startswith(message)


@pytest.mark.parametrize(
    ("text", "line", "message"),
    [
        ("[[lessons]\nid = 1\n", 1, "TOML syntax error"),
        ('[course]\ntitle = "x"\n', None, "the manifest lists no lessons"),
        ("lessons = 3\n", None, "the manifest lists no lessons"),
    ],
)
def test_unreadable_manifest(tmp_path: Path, text: str, line: int | None, message: str) -> None:
    folder = write_course(tmp_path, text)
    with pytest.raises(CourseError) as caught:
        load_course(folder)
    (problem,) = caught.value.problems
    assert problem.line == line and problem.message.startswith(message)


def test_missing_manifest(tmp_path: Path) -> None:
    with pytest.raises(CourseError, match=r"course\.toml: file not found"):
        load_course(tmp_path)


def test_non_utf8_lesson_names_the_line(tmp_path: Path) -> None:
    folder = write_course(tmp_path, entry("a"))
    (folder / "a.md").write_bytes(b"---\ntitle: T\n\xff\n")
    with pytest.raises(CourseError) as caught:
        load_course(folder).lesson("a")
    (problem,) = caught.value.problems
    assert problem.line == 3
    assert problem.message == "not valid UTF-8 (byte 0xff at column 1)"
    assert problem.hint == "save the file as UTF-8"


def test_exercise_problems(tmp_path: Path) -> None:
    text = entry("a") + (
        '[[exercises]]\nname = "x"\nlesson = "nope"\nhints = []\ngpu = "yes"\n\n'
        '[[exercises]]\nname = "ok"\nlesson = "a"\nhints = ["h"]\n\n'
        '[[exercises]]\nname = "ok"\nlesson = "a"\nhints = ["h"]\n'
    )
    folder = write_course(tmp_path, text, {"a": LESSON.format(title="T", day=1)})
    manifest = load_manifest(folder / "course.toml")
    assert [e.name for e in manifest.exercises] == ["ok"]
    assert [(p.line, p.message) for p in manifest.problems] == [
        (7, "exercise 'x': names unknown lesson 'nope'"),
        (7, "exercise 'x': gpu must be true or false"),
        (7, "exercise 'x': hints must be a list of one or more hints, gentlest first"),
        (18, "exercise 'ok': duplicate exercise name"),
    ]


def test_lint_checks_title_and_day_agree(tmp_path: Path) -> None:
    folder = write_course(
        tmp_path, entry("a", 2, "Manifest title"), {"a": LESSON.format(title="Other", day=1)}
    )
    problems = load_course(folder).lint()
    assert [(p.line, p.message) for p in problems] == [
        (2, "title 'Other' differs from course.toml's 'Manifest title'"),
        (2, "day 1 differs from course.toml's 2"),
    ]


CLAIM = """[{id}]
statement = "s"
value = 1.0
unit = "GB/s"
device = "any"
source = "https://example.org/datasheet"
probe = "p"
tolerance = 0.1
"""


def test_claims_load(tmp_path: Path) -> None:
    path = tmp_path / "claims.toml"
    path.write_text(
        CLAIM.format(id="one") + CLAIM.format(id="two").replace("value = 1.0", "min = 2\nmax = 3")
    )
    claims = load_claims(path)
    assert claims["one"].expected == "1 GB/s" and claims["one"].line == 1
    assert claims["two"].expected == "2–3 GB/s" and claims["two"].line == 9
    assert load_claims(tmp_path / "absent.toml") == {}


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda t: t.replace('unit = "GB/s"\n', ""), "claim 'one': missing unit"),
        (lambda t: t + "colour = 1\n", "claim 'one': unknown field colour"),
        (lambda t: t.replace("value = 1.0", "min = 1"), "claim 'one': give either value or"),
        (lambda t: t.replace("tolerance = 0.1", 'tolerance = "10%"'), "claim 'one': tolerance"),
        (lambda t: t.replace("https://example.org/datasheet", "a book"), "claim 'one': source"),
        (lambda t: t.replace("[one]", "[One]"), "claim 'One': ids are lowercase"),
    ],
)
def test_bad_claims(tmp_path: Path, edit: object, message: str) -> None:
    path = tmp_path / "claims.toml"
    path.write_text(edit(CLAIM.format(id="one")))  # type: ignore[operator]
    with pytest.raises(CourseError) as caught:
        load_claims(path)
    assert caught.value.problems[0].message.startswith(message)
    assert caught.value.problems[0].line == 1


def test_claims_folder_merges_files_and_names_duplicates(tmp_path: Path) -> None:
    folder = tmp_path / "claims"
    folder.mkdir()
    (folder / "a.toml").write_text(CLAIM.format(id="one"))
    (folder / "b.toml").write_text(CLAIM.format(id="two"))
    claims = load_claims(folder)
    assert sorted(claims) == ["one", "two"]
    assert claims["two"].path == folder / "b.toml"
    (folder / "c.toml").write_text("\n" + CLAIM.format(id="one"))
    with pytest.raises(CourseError) as caught:
        load_claims(folder)
    (problem,) = caught.value.problems
    assert (problem.path, problem.line) == (folder / "c.toml", 2)
    assert problem.message == "claim 'one' is defined twice"
    assert problem.hint == "it is already defined in a.toml:1; keep one"


def test_hidden_points_must_be_a_number_of_points(tmp_path: Path) -> None:
    lessons = tmp_path / "lessons"
    lessons.mkdir()
    (lessons / "a.md").write_text("---\ntitle: A\nday: 1\nobjectives: [x]\n---\n# A\n")
    base = (
        '[[lessons]]\nid = "a"\nday = 1\ntitle = "A"\n\n[[exercises]]\nname = "e"\n'
        'lesson = "a"\nhints = ["h"]\n'
    )
    (lessons / "course.toml").write_text(base + "hidden_points = 4.5\n")
    (entry,) = load_manifest(lessons / "course.toml").exercises
    assert entry.hidden_points == 4.5
    (lessons / "course.toml").write_text(base)
    (entry,) = load_manifest(lessons / "course.toml").exercises
    assert entry.hidden_points is None
    for wrong in ("-1", "true", '"six"'):
        (lessons / "course.toml").write_text(base + f"hidden_points = {wrong}\n")
        manifest = load_manifest(lessons / "course.toml")
        assert manifest.exercises == ()
        assert "hidden_points must be a number of points, 0 or more" in manifest.problems[0].message


def test_a_course_in_a_newer_format_is_refused_with_advice(tmp_path: Path) -> None:
    lesson = {"a": LESSON.format(title="A", day=1)}
    newer = '[course]\nformat_version = 2\ntitle = "T"\n\n' + entry("a", 1, "A")
    with pytest.raises(CourseError) as caught:
        load_course(write_course(tmp_path, newer, lesson))
    (problem,) = caught.value.problems
    assert problem.message == (
        "this course is written in course format 2; this gpulab reads format 1 and older"
    )
    assert "upgrade gpulab" in problem.hint
    bad = '[course]\nformat_version = "one"\ntitle = "T"\n\n' + entry("a", 1, "A")
    with pytest.raises(CourseError, match="format_version must be a whole number"):
        load_course(write_course(tmp_path / "bad", bad, lesson))
    assert load_course().manifest.format_version == 1
