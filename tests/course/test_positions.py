"""One key-path -> line map for TOML and one for YAML, checked against the course's files."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

import pytest

from gpulab.course import load_course
from gpulab.course.frontmatter import parse_front_matter
from gpulab.course.manifest import load_manifest
from gpulab.course.positions import KeyPath, line_at, toml_lines, yaml_lines

LESSONS = Path(__file__).resolve().parents[2] / "lessons"

TRICKY = '''# a comment [not.a.table]
a = 1
b = """several
[not.a.table]
lines = 3"""
c = [
  1, # ]
  "]", '[',
]
[t."q.x"]
d.e = {f = 1}
"g = h" = 'i'
[[arr]]
n = 1
[[arr.sub]]
m = 2
[[arr]]
n = 2
[arr.z]   # the second arr's table
y = 3
'''


def test_every_key_and_table_of_a_tricky_text_has_its_line() -> None:
    lines = toml_lines(TRICKY)
    assert tomllib.loads(TRICKY)["arr"][1]["z"]["y"] == 3  # the text is valid TOML
    assert lines == {
        ("a",): 2,
        ("b",): 3,
        ("c",): 6,
        ("t",): 10,
        ("t", "q.x"): 10,
        ("t", "q.x", "d"): 11,
        ("t", "q.x", "d", "e"): 11,
        ("t", "q.x", "g = h"): 12,
        ("arr",): 13,
        ("arr", 0): 13,
        ("arr", 0, "n"): 14,
        ("arr", 0, "sub"): 15,
        ("arr", 0, "sub", 0): 15,
        ("arr", 0, "sub", 0, "m"): 16,
        ("arr", 1): 17,
        ("arr", 1, "n"): 18,
        ("arr", 1, "z"): 19,
        ("arr", 1, "z", "y"): 20,
    }


def _paths(data: Any, path: KeyPath = ()) -> list[KeyPath]:
    """Every key path tomllib gives, tables of arrays included (inline tables not entered)."""
    found: list[KeyPath] = []
    if isinstance(data, dict):
        for key, value in data.items():
            found.append((*path, key))
            found += _paths(value, (*path, key))
    elif isinstance(data, list) and data and all(isinstance(v, dict) for v in data):
        for index, value in enumerate(data):
            found.append((*path, index))
            found += _paths(value, (*path, index))
    return found


@pytest.mark.parametrize(
    "name",
    [
        "course.toml",
        "specs.toml",
        *(f"claims/{p.name}" for p in sorted((LESSONS / "claims").glob("*.toml"))),
    ],
)
def test_every_key_of_the_course_files_is_placed_on_a_line_that_names_it(name: str) -> None:
    text = (LESSONS / name).read_text(encoding="utf-8")
    lines, rows = toml_lines(text), text.splitlines()
    for path in _paths(tomllib.loads(text)):
        line = line_at(lines, path)
        assert line is not None, path
        if path in lines and isinstance(path[-1], str):
            assert path[-1].split(".")[0] in rows[line - 1], (path, rows[line - 1])


def test_a_missing_key_points_at_its_table() -> None:
    lines = toml_lines("[gpus.h200]\nsms = 132\n")
    assert line_at(lines, ("gpus", "h200", "l2")) == 1
    assert line_at(lines, ("nothing",)) is None


def test_yaml_lines_come_from_pyyaml_marks_at_any_indent() -> None:
    text = "title: x\nday: 3\nobjectives:\n  - a\n  -   b\nmarkmap:\n    initialExpandLevel: 2\n"
    assert yaml_lines(text, 2) == {
        ("title",): 2,
        ("day",): 3,
        ("objectives",): 4,
        ("objectives", 0): 5,
        ("objectives", 1): 6,
        ("markmap",): 7,
        ("markmap", "initialExpandLevel"): 8,
    }
    assert yaml_lines("a: [unclosed\n") == {}


def test_a_manifest_problem_names_the_line_of_its_entry(tmp_path: Path) -> None:
    (tmp_path / "one.md").write_text("---\ntitle: One\nday: 1\n---\n# One\n", encoding="utf-8")
    manifest = tmp_path / "course.toml"
    manifest.write_text(
        '[course]\ntitle = "t"\n\n[[lessons]]\nid = "one"\nday = 1\n'
        'title = "One"\n\n[[lessons]]\n# no id here\nday = 2\ntitle = "Two"\n'
        '\n[[lessons]]\nday = 3\nid = "Bad Id"\ntitle = "Three"\n',
        encoding="utf-8",
    )
    lessons = load_manifest(manifest).lessons
    assert [entry.line for entry in lessons] == [5, 9, 16]  # an entry without id: its header


def test_front_matter_problems_point_at_an_indented_key(tmp_path: Path) -> None:
    text = "---\ntitle: T\nday: 1\nobjectives:\n  - o\nweird: 1\n---\n# T\n"
    _, problems = parse_front_matter(text.split("---\n")[1], tmp_path / "x.md", 2)
    assert [(p.line, p.message) for p in problems] == [(6, "front matter: unknown field 'weird'")]


def test_the_real_course_still_loads() -> None:
    assert load_course().entries
