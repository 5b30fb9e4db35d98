"""Property tests: random Markdown and broken manifests never crash the loaders.

Whatever the input, the parser either returns a well-formed tree or raises
`CourseError` with located problems: never another exception.
"""

from __future__ import annotations

import tomllib
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpulab.course import CourseError, Lesson, load_manifest, parse_lesson
from gpulab.course.source import read_text

FRONT = "---\ntitle: T\nday: 1\nobjectives: [x]\n---\n"

# Lines that exercise every construct the parser handles, plus noise.
PIECES = st.sampled_from(
    [
        "# Root",
        "## Section",
        "### Sub",
        "#### Deep",
        "- item",
        "  - nested item",
        "    - deeper",
        "1. first",
        "  2. second",
        "",
        "",
        "plain paragraph text",
        "  indented note",
        "```py",
        "```",
        "x = 1",
        "| a | b |",
        "|---|---|",
        "| 1 | 2 |",
        "> quote",
        "<!-- claim: some_claim -->",
        "- with claim <!-- claim: a_b -->",
        "- folded <!-- markmap: fold -->",
        "## Folded <!-- markmap: foldAll -->",
        "![img](x.png)",
        "<div>html</div>",
        "---",
        "***",
        "- ",
        "-",
        "*emph* and `code`",
        "<!-- claim: -->",
        "- bad <!-- claim: Bad! -->",
        "\t- tab item",
        "  ```",
        "  ```bash",
    ]
)

SETTINGS = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def check_tree(lesson: Lesson, source: str) -> None:
    keys = [n.key for n in lesson.nodes]
    assert len(keys) == len(set(keys))
    assert lesson.root.depth == 0 and lesson.root.kind == "heading" and lesson.root.level == 1
    lines = [n.line for n in lesson.nodes]
    assert lines == sorted(lines)
    for node in lesson.nodes:
        for child in node.children:
            assert child.parent is node and child.depth == node.depth + 1
        assert node.fold in (0, 1, 2)
    last = source.count("\n") + 1
    for problem in lesson.problems:
        assert problem.line is not None and 1 <= problem.line <= last


@SETTINGS
@given(st.lists(PIECES, max_size=40))
def test_random_markdown_parses_or_fails_cleanly(lines: list[str]) -> None:
    source = FRONT + "\n".join(lines) + "\n"
    try:
        lesson = parse_lesson(source, Path("x.md"), "x")
    except CourseError as exc:
        assert exc.problems and all(p.message for p in exc.problems)
        return
    check_tree(lesson, source)


@SETTINGS
@given(st.text(max_size=400))
def test_arbitrary_text_never_crashes(text: str) -> None:
    for source in (text, FRONT + text, FRONT + "# R\n" + text):
        try:
            parse_lesson(source, Path("x.md"))
        except CourseError as exc:
            assert exc.problems


@SETTINGS
@given(st.binary(max_size=200))
def test_arbitrary_bytes_read_cleanly(tmp_path_factory: object, data: bytes) -> None:
    path = Path(str(tmp_path_factory.mktemp("bytes"))) / "x.md"  # type: ignore[attr-defined]
    path.write_bytes(data)
    try:
        text = read_text(path)
    except CourseError as exc:
        (problem,) = exc.problems
        assert problem.line is not None and problem.line >= 1
        assert problem.message.startswith("not valid UTF-8")
        return
    assert "\r\n" not in text


TOML_VALUES = st.one_of(
    st.integers(-3, 70),
    st.text(max_size=12),
    st.booleans(),
    st.floats(allow_nan=False),
    st.lists(st.text(max_size=5), max_size=3),
)
LESSON_TABLE = st.dictionaries(st.sampled_from(["id", "day", "title", "extra"]), TOML_VALUES)
EXERCISE_TABLE = st.dictionaries(
    st.sampled_from(["name", "lesson", "gpu", "time_limit", "hints"]), TOML_VALUES
)


def to_toml(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return '"' + value.encode("unicode_escape").decode("ascii").replace('"', '\\"') + '"'
    if isinstance(value, list):
        return "[" + ", ".join(to_toml(v) for v in value) + "]"
    return repr(value)


@SETTINGS
@given(
    st.lists(LESSON_TABLE, max_size=5),
    st.lists(EXERCISE_TABLE, max_size=3),
    st.sampled_from(["", "[course]\ntitle = 3\n", "[bogus]\n", "garbage = [\n"]),
)
def test_broken_manifests_load_or_fail_cleanly(
    tmp_path_factory: object,
    lessons: list[dict[str, object]],
    exercises: list[dict[str, object]],
    head: str,
) -> None:
    parts = [head]
    for table, items in (("lessons", lessons), ("exercises", exercises)):
        for item in items:
            fields = "".join(f"{k} = {to_toml(v)}\n" for k, v in item.items())
            parts.append(f"[[{table}]]\n{fields}")
    text = "\n".join(parts)
    folder = Path(str(tmp_path_factory.mktemp("course"))) / "lessons"  # type: ignore[attr-defined]
    folder.mkdir()
    (folder / "course.toml").write_text(text)
    try:
        manifest = load_manifest(folder / "course.toml")
    except CourseError as exc:
        assert exc.problems
        return
    tomllib.loads(text)  # it loaded, so it must be valid TOML
    assert len(manifest.lessons) == len(lessons)
    for entry in manifest.lessons:
        assert entry.problems  # no lesson files exist, so every entry has a problem
