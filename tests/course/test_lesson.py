"""The lesson parser: nodes, notes, annotations, and the problems it reports."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpulab.course import CourseError, Lesson, load_claims, parse_lesson

FRONT = "---\ntitle: T\nday: 1\nobjectives: [learn]\n---\n"


def parse(body: str, claims: dict[str, object] | None = None) -> Lesson:
    return parse_lesson(FRONT + body, Path("x.md"), "x", claims)


def shape(lesson: Lesson) -> list[tuple[int, str, str]]:
    return [(n.depth, n.kind, n.title) for n in lesson.nodes]


def problem_lines(lesson: Lesson) -> list[int | None]:
    return [p.line for p in lesson.problems]


def test_fixture_tree(fixtures: Path) -> None:
    path = fixtures / "lessons" / "tree.md"
    claims = load_claims(fixtures / "lessons" / "claims.toml")
    lesson = parse_lesson(path.read_text(), path, "tree", claims)
    assert lesson.front.title == "Tree shapes"
    assert lesson.front.markmap == {"initialExpandLevel": 2}
    assert shape(lesson) == [
        (0, "heading", "Tree shapes"),
        (1, "heading", "Items with notes"),
        (2, "item", "A tight item"),
        (2, "item", "An item with a note"),
        (3, "item", "A child item"),
        (4, "item", "A grandchild"),
        (2, "item", "An item with a claim"),
        (1, "heading", "Ordered steps"),
        (2, "item", "1. First step"),
        (2, "item", "2. Second step"),
        (3, "item", "1. Sub-step"),
        (1, "heading", "Deeper"),
        (2, "heading", "Level three"),
        (3, "item", "Leaf with code and bold and a link"),
    ]
    assert lesson.problems == []
    noted = lesson.nodes[3]
    assert [n.kind for n in noted.notes] == ["paragraph", "code", "table"]
    assert noted.notes[0].markdown == "The note explains the item. It spans\ntwo lines."
    assert noted.notes[1].lang == "bash"
    assert noted.notes[1].markdown.startswith("```bash\nnvidia-smi")
    assert noted.notes[2].line == 26
    assert lesson.root.notes[0].markdown.startswith("The root's own note")
    assert lesson.nodes[6].claims == ("sample_bandwidth",)
    assert lesson.nodes[6].label == "An item with a claim"
    assert lesson.nodes[7].fold == 1
    assert lesson.nodes[12].notes[0].kind == "quote"
    leaf = lesson.nodes[13]
    assert leaf.label == "Leaf with `code` and **bold** and a [link](https://example.org)"
    assert leaf.line == 44


def test_lines_are_one_based_and_in_document_order() -> None:
    lesson = parse("# R\n\n## A\n\n- a1\n- a2\n\n## B\n")
    assert [n.line for n in lesson.nodes] == [6, 8, 10, 11, 13]


def test_keys_are_stable_paths_and_unique() -> None:
    lesson = parse("# Root\n\n## Same\n\n- x\n\n## Same\n\n- x\n")
    assert [n.key for n in lesson.nodes] == [
        "root",
        "root/same",
        "root/same/x",
        "root/same-2",
        "root/same-2/x",
    ]
    assert lesson.by_key["root/same-2/x"].text == "x"


def test_markmap_fold_and_fold_all_on_headings_and_tight_items() -> None:
    lesson = parse(
        "# R\n\n## A <!-- markmap: foldAll -->\n\n- tight <!-- markmap: fold -->\n  - sub\n"
    )
    assert [n.fold for n in lesson.nodes] == [0, 2, 1, 0]
    assert lesson.problems == []


def test_fold_on_loose_item_is_ignored_as_markmap_does_and_reported() -> None:
    lesson = parse("# R\n\n## A\n\n- loose <!-- markmap: fold -->\n\n  note\n- other\n")
    assert lesson.nodes[2].fold == 0
    assert problem_lines(lesson) == [10]
    assert "ignores it" in lesson.problems[0].hint


def test_several_claims_on_one_node() -> None:
    known = {"a_1": 1, "b": 1, "c": 1}
    lesson = parse("# R\n\n- x <!-- claim: a_1, b --> <!-- claim: c -->\n", known)
    assert lesson.nodes[1].claims == ("a_1", "b", "c")
    assert lesson.nodes[1].text == "x"


def test_unknown_claim_is_an_error_with_its_line() -> None:
    with pytest.raises(CourseError) as caught:
        parse("# R\n\n- fine\n- bad <!-- claim: nope -->\n", {"known": 1})
    (problem,) = caught.value.problems
    assert (problem.line, problem.message) == (9, "unknown claim 'nope'")
    assert "lessons/claims/" in problem.hint
    assert str(caught.value).startswith("x.md:9: unknown claim 'nope'")


def test_malformed_claim_id() -> None:
    with pytest.raises(CourseError, match="'Bad-Id' is not a valid claim id"):
        parse("# R\n\n- x <!-- claim: Bad-Id -->\n")


def test_claims_unchecked_without_a_registry() -> None:
    assert parse("# R\n\n- x <!-- claim: anything -->\n").nodes[1].claims == ("anything",)


@pytest.mark.parametrize(
    ("front", "line", "message"),
    [
        ("", 1, "no front matter"),
        ("---\ntitle: [unclosed\nday: 1\n---\n", 3, "front matter: not valid YAML"),
        ("---\n- a list\n---\n", 2, "front matter: must be a mapping"),
        ("---\ntitle: T\nday: one\nobjectives: [x]\n---\n", 3, "front matter: `day` must be"),
        ("---\ntitle: T\nday: 1\n---\n", 2, "front matter: `objectives` must be"),
        (
            "---\ntitle: T\nday: 1\nobjectives: [x]\ncolour: red\n---\n",
            5,
            "front matter: unknown field 'colour'",
        ),
        ("---\ntitle: ''\nday: 1\nobjectives: [x]\n---\n", 2, "front matter: `title` must be"),
    ],
)
def test_front_matter_problems(front: str, line: int, message: str) -> None:
    with pytest.raises(CourseError) as caught:
        parse_lesson(front + "# R\n", Path("f.md"))
    first = caught.value.problems[0]
    assert first.line == line
    assert first.message.startswith(message)


def test_structure_errors() -> None:
    with pytest.raises(CourseError) as caught:
        parse("Text first.\n\n## Before root\n")
    messages = [p.message for p in caught.value.problems]
    assert messages == [
        "text before the lesson's `#` heading",
        "this heading comes before the lesson's `#` heading",
        "the lesson has no `#` heading",
    ]
    with pytest.raises(CourseError, match="a second `#` heading"):
        parse("# One\n\n# Two\n")


@pytest.mark.parametrize(
    ("body", "line", "words"),
    [
        ("# R\n\n## A\n\n```py\nx\n```\n", 10, "a code block directly under a heading"),
        ("# R\n\n## A\n\n| a |\n| - |\n| 1 |\n", 10, "a table directly under a heading"),
        ("# R\n\n## A\n\n![alt](x.png)\n", 10, "an image alone in a paragraph under a heading"),
        ("# R\n\n## A\n\n<div>x</div>\n", 10, "raw HTML under a heading"),
        ("# R\n\n- a\n\n## B\n", 8, "a list beside sub-headings"),
        ("# R\n\n- a\n\ntext\n\n- b\n", 12, "a second list under the same node"),
        ("# R\n\n- a\n  - sub\n\n  after\n", 11, "a note after the item's sub-list"),
        ("# R\n\n## A\n\n#### D\n", 10, "heading jumps from level 2 to 4"),
        ("# R\n\n- ```\n  code\n  ```\n", 8, "a list item without text"),
        ("# R\n\n- a\n\n  text <!-- claim: x -->\n", 10, "a claim annotation inside a note"),
    ],
)
def test_markmap_parity_findings(body: str, line: int, words: str) -> None:
    lesson = parse(body)
    assert [(p.line, p.message) for p in lesson.problems] == [(line, words)]


def test_comment_only_html_is_not_a_note() -> None:
    lesson = parse("<!-- a comment before the root -->\n# R\n\n<!-- aside -->\n\n- a\n")
    assert lesson.root.notes == []
    assert lesson.problems == []


def test_markmap_documented_example(fixtures: Path) -> None:
    """markmap's own sample: headings and list items are nodes; the blocks it
    puts directly under a heading are notes here and flagged for markmap."""
    path = fixtures / "lessons" / "markmap_docs.md"
    lesson = parse_lesson(path.read_text(), path)
    titles = [n.title for n in lesson.nodes]
    assert titles[:6] == ["markmap", "Links", "Website", "GitHub", "Features", "Lists"]
    assert titles[-4:] == ["Ordered list", "1. item 1", "2. item 2", "Blocks"]
    katex = lesson.nodes[8]
    assert katex.fold == 1 and katex.children[0].text == "More Katex Examples"
    features = lesson.nodes[4]
    assert features.notes[0].markdown.startswith("Note that if blocks and lists")
    blocks = lesson.nodes[-1]
    assert [n.kind for n in blocks.notes] == ["code", "table", "paragraph"]
    assert [(p.line, p.message.split(" directly")[0]) for p in lesson.problems] == [
        (34, "a code block"),
        (38, "a table"),
        (43, "an image alone in a paragraph under a heading"),
    ]
