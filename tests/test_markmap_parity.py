"""Every lesson renders the same tree in markmap as in gpulab.

markmap's own transformer (npm `markmap-lib`, pinned in tests/markmap/) turns
each file into its tree; the test compares node by node: depth, source line,
initial fold and visible text.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from functools import cache
from pathlib import Path

import pytest

from gpulab.course import Lesson, load_claims, load_course, parse_lesson

HERE = Path(__file__).resolve().parent
MARKMAP = HERE / "markmap"
FIXTURES = HERE / "fixtures" / "lessons"

Row = tuple[int, int | None, int, str]

pytestmark = pytest.mark.markmap


def _skip_reason() -> str | None:
    if shutil.which("node") is None:
        return "Node.js is not installed (.ci/run installs it)"
    if not (MARKMAP / "node_modules" / "markmap-lib").is_dir():
        return "markmap-lib is not installed: run `make test` (it runs npm ci in tests/markmap)"
    return None


@cache
def markmap_rows(path: Path) -> list[Row]:
    reason = _skip_reason()
    if reason:
        pytest.skip(reason)
    done = subprocess.run(
        ["node", str(MARKMAP / "outline.mjs"), str(path)],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    return [tuple(row) for row in json.loads(done.stdout)[str(path)]]  # type: ignore[misc]


def gpulab_rows(lesson: Lesson) -> list[Row]:
    return [(n.depth, n.line, n.fold, n.title) for n in lesson.nodes]


def assert_same_tree(lesson: Lesson, path: Path) -> None:
    theirs = markmap_rows(path)
    ours = gpulab_rows(lesson)
    assert [r[:3] for r in theirs] == [r[:3] for r in ours], (
        f"{path.name}: markmap's tree (depth, line, fold) differs from gpulab's"
    )
    for (_, line, _, their_text), (_, _, _, our_text) in zip(theirs, ours, strict=True):
        visible = our_text.split("$")[0]  # markmap renders $math$; compare the text before it
        assert their_text.startswith(visible), f"{path.name}:{line}: {their_text!r} vs {our_text!r}"


COURSE = load_course()


@pytest.mark.parametrize("lesson_id", [e.id for e in COURSE.entries])
def test_course_lessons_match_markmap(lesson_id: str) -> None:
    lesson = COURSE.lesson(lesson_id)
    assert_same_tree(lesson, lesson.path)


def test_fixture_lesson_matches_markmap() -> None:
    path = FIXTURES / "tree.md"
    claims = load_claims(FIXTURES / "claims.toml")
    assert_same_tree(parse_lesson(path.read_text(), path, claims=claims), path)


def test_markmap_sample_differs_exactly_where_the_linter_says() -> None:
    """markmap's documented sample puts blocks under a heading; markmap makes
    them nodes, gpulab makes them notes, and the linter names each one."""
    path = FIXTURES / "markmap_docs.md"
    lesson = parse_lesson(path.read_text(), path)
    theirs = markmap_rows(path)
    ours = {row[1] for row in gpulab_rows(lesson)}
    extra = sorted(line for _, line, _, _ in theirs if line not in ours)
    assert extra == [34, 38, 43]
    assert sorted(p.line for p in lesson.problems if p.line is not None) == extra
    without_extra = [r[:3] for r in theirs if r[1] not in extra]
    assert without_extra == [r[:3] for r in gpulab_rows(lesson)]
