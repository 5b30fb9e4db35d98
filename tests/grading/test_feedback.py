"""Feedback pages and the gradebook CSV of a grading run, written to real files and read back.

HTML is parsed with the standard library's parser, the CSV with the csv
module; nothing is mocked.
"""

from __future__ import annotations

import csv
import re
from html.parser import HTMLParser
from pathlib import Path

import pytest

from gpulab.grading.classrun.feedback import (
    NOT_RUN_NOTE,
    FeedbackError,
    feedback_markdown,
    write_feedback,
    write_grades_csv,
)
from gpulab.grading.gradebook.verdict import KINDS, CheckRow, ExerciseGrade, Kind, LearnerGrades

RUN_AT = "2025-03-04 10:15 UTC"
MAXIMA = {"squares": 3.0, "reduce": 4.0, "matmul": 5.0}
SECRET = "s3cr3t-expected-42"
BOX = "bubblewrap: read-only file system, no network"
LIMITS = "rlimits: CPU 30 s, file size 16 MiB"
CGROUP = "cgroup v2: at most 64 processes"

VERDICT_WORDS: dict[Kind, str] = {
    "right": "all checks passed",
    "wrong": "some checks failed",
    "timeout": "ran out of time",
    "crashed": "your code crashed the process",
    "gpu-fault": "a CUDA error in your kernel",
    "invalid": "could not be graded",
    "missing": "not handed in",
    "partial": "checked without a GPU: the GPU checks were not run",
    "not-run": "not run by the grader",
}


def ada() -> LearnerGrades:
    """Three exercises: one right, one wrong with a hidden check, one missing."""
    squares = ExerciseGrade(
        exercise="squares",
        kind="right",
        earned=3,
        possible=3,
        guards=(BOX, LIMITS),
        checks=(
            CheckRow("shape", "Returns the right shape", "passed", 1, 1),
            CheckRow("values", "Squares every element", "passed", 2, 2),
        ),
    )
    reduce = ExerciseGrade(
        exercise="reduce",
        kind="wrong",
        earned=1.5,
        possible=4,
        guards=(LIMITS, CGROUP),
        checks=(
            CheckRow("small", "Sums a short list", "passed", 1.5, 1.5),
            CheckRow(
                "tail",
                "",
                "failed",
                1,
                0,
                message="expected 10, got 9 | the last element was dropped\ncheck the loop bound",
            ),
            CheckRow(
                "big",
                f"Hidden: sums {SECRET}",
                "failed",
                1.5,
                0,
                message=f"expected {SECRET}, got 3",
                hidden=True,
            ),
        ),
    )
    matmul = ExerciseGrade(
        exercise="matmul", kind="missing", earned=0, possible=0, message="no notebook handed in"
    )
    return LearnerGrades("Ada Lovelace", "ada", (squares, reduce, matmul))


class Page(HTMLParser):
    """The tags of a page, the text inside each kind of tag, and all text."""

    def __init__(self, html: str) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[str] = []
        self.attrs: list[tuple[str, str | None]] = []
        self.text: dict[str, list[str]] = {}
        self.data: list[str] = []
        self._open: list[str] = []
        self.feed(html)
        self.close()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        self.attrs += attrs
        if tag not in {"meta", "br"}:
            self._open.append(tag)

    def handle_endtag(self, tag: str) -> None:
        if tag in self._open:
            while self._open.pop() != tag:
                pass

    def handle_data(self, data: str) -> None:
        self.data.append(data)
        for tag in set(self._open):
            self.text.setdefault(tag, []).append(data)

    def all_text(self, tag: str) -> str:
        return "".join(self.text.get(tag, []))


def written(tmp_path: Path, grades: LearnerGrades) -> tuple[Page, str, str]:
    html_path, md_path = write_feedback(
        grades, tmp_path / "feedback", title="GPU course", run_at=RUN_AT, maxima=MAXIMA
    )
    html, md = html_path.read_text(encoding="utf-8"), md_path.read_text(encoding="utf-8")
    return Page(html), html, md


def md_row(line: str) -> list[str]:
    """The cells of a Markdown table row, split on pipes that are not escaped."""
    assert line.startswith("| ") and line.endswith(" |"), line
    return [cell.strip() for cell in re.split(r"(?<!\\)\|", line[1:-1])]


def test_write_feedback_writes_both_files_named_by_the_slug(tmp_path: Path) -> None:
    folder = tmp_path / "new" / "feedback"
    html, md = write_feedback(ada(), folder, title="GPU course", run_at=RUN_AT, maxima=MAXIMA)
    assert (html, md) == (folder / "ada.html", folder / "ada.md")
    assert sorted(p.name for p in folder.iterdir()) == ["ada.html", "ada.md"]
    text = md.read_text(encoding="utf-8")
    assert text == feedback_markdown(ada(), title="GPU course", run_at=RUN_AT, maxima=MAXIMA)
    assert "\r" not in text


def test_html_has_a_section_per_exercise_with_points_verdict_and_checks(tmp_path: Path) -> None:
    page, _, _ = written(tmp_path, ada())
    assert page.tags.count("h1") == 1 and page.all_text("h1") == "GPU course"
    assert page.all_text("h2") == (
        "squares: 3/3 points, all checks passed"
        "reduce: 1.5/4 points, some checks failed"
        "matmul: 0/5 points, not handed in"
    )
    assert page.tags.count("table") == 2  # matmul has no checks
    assert page.tags.count("tr") == 2 + 2 + 2  # a header row per table; no hidden rows
    cells = page.all_text("td")
    assert "passedReturns the right shape" not in cells  # points sit between the two
    assert "passed1/1Returns the right shape" in cells
    assert (
        "failed0/1tailexpected 10, got 9 | the last element was dropped\ncheck the loop bound"
        in cells
    )  # no title: the check's name
    assert "no notebook handed in" in page.all_text("pre")
    assert "Ada Lovelace" in page.all_text("strong")


def test_footer_has_total_run_time_and_each_guard_once(tmp_path: Path) -> None:
    page, _, md = written(tmp_path, ada())
    footer = page.all_text("footer")
    assert "Total: 4.5/12 points" in footer
    assert RUN_AT in footer
    assert footer.count("Isolation in force") == 1
    assert [g.strip() for g in page.text["li"]] == [BOX, LIMITS, CGROUP]
    assert md.count("Isolation in force") == 1
    tail = md[md.index("Isolation in force") :]
    assert [line for line in tail.splitlines() if line.startswith("- ")] == [
        f"- {BOX}",
        f"- {LIMITS}",
        f"- {CGROUP}",
    ]
    assert "**Total: 4.5/12 points**" in md
    assert md.rstrip().endswith(f"Graded {RUN_AT}.")


def test_no_guards_is_said(tmp_path: Path) -> None:
    grades = LearnerGrades("Bo", "bo", (ExerciseGrade("squares", "right", 3, 3),))
    page, _, md = written(tmp_path, grades)
    assert "Isolation in force: none recorded." in page.all_text("footer")
    assert "Isolation in force: none recorded." in md


def test_html_is_one_self_contained_page(tmp_path: Path) -> None:
    page, html, _ = written(tmp_path, ada())
    assert page.tags.count("html") == 1 and page.tags.count("style") == 1
    assert not {"script", "link", "img", "iframe", "object"} & set(page.tags)
    assert not [a for a in page.attrs if a[0].startswith("on") or a[0] in {"src", "href"}]
    assert "http:" not in html and "https:" not in html and "url(" not in html
    assert "@import" not in html
    css = page.all_text("style")
    assert "@media (prefers-color-scheme: dark)" in css
    assert "@media print" in css


def test_hidden_checks_are_one_total_with_their_names_never_one_by_one(tmp_path: Path) -> None:
    page, html, md = written(tmp_path, ada())
    assert SECRET not in html and SECRET not in md
    assert "Hidden: sums" not in html and "Hidden: sums" not in md
    assert "big" not in page.all_text("td") and "hidden" not in page.all_text("td")
    assert page.all_text("p").count("Hidden checks") == 1
    assert "Hidden checks: 0/1.5 points in all, shown only as a total (big)." in page.all_text("p")
    assert "**Hidden checks: 0/1.5 points** in all, shown only as a total (big)." in md
    assert not [line for line in md.splitlines() if line.startswith("| hidden")]
    assert "squares: 3/3" in page.all_text("h2")  # no hidden checks: no hidden line
    assert md.count("Hidden checks") == 1


def _hidden_failing(which: str) -> LearnerGrades:
    """A learner who passes every check but the hidden check `which` (all worth 2)."""
    names = ("test_every_gpu", "test_place_on_every_gpu", "test_random_roofs")
    rows = [CheckRow("shape", "Returns the right shape", "passed", 1, 1)]
    for name in names:
        failed = name == which
        rows.append(
            CheckRow(
                name,
                f"hidden title of {name}",
                "failed" if failed else "passed",
                2,
                0 if failed else 2,
                hidden=True,
                instructor_message=f"{name} saw h20" if failed else "",
            )
        )
    rows.append(CheckRow("test_on_a_gpu", "needs a GPU", "skipped", 3, 0, hidden=True))
    grade = ExerciseGrade("matmul", "wrong", 5, 7, checks=tuple(rows), guards=(BOX,))
    return LearnerGrades("Mallory", "mallory", (grade,))


@pytest.mark.parametrize("which", ["test_every_gpu", "test_place_on_every_gpu"])
def test_which_hidden_check_failed_cannot_be_read_from_the_page(tmp_path: Path, which: str) -> None:
    """The red team's bit channel (V17): a learner fails one hidden check on purpose when
    their code sees a hidden input. Failing another check of the same worth must give the
    very same page, in HTML and in Markdown."""
    page, html, md = written(tmp_path / "one", _hidden_failing(which))
    _, other_html, other_md = written(tmp_path / "other", _hidden_failing("test_random_roofs"))
    assert html == other_html and md == other_md
    assert "saw h20" not in html and "hidden title" not in html and "hidden title" not in md
    assert (
        "Hidden checks: 4/6 points in all, shown only as a total (test_every_gpu, "
        "test_place_on_every_gpu, test_random_roofs, test_on_a_gpu). 3 more points of "
        "them were not run here."
    ) in page.all_text("p")
    assert page.all_text("h2") == "matmul: 5/7 points, some checks failed"


def test_learner_text_is_escaped_in_html_and_markdown(tmp_path: Path) -> None:
    name = "<script>alert('name')</script>"
    evil = "<img src=x onerror=alert(1)> & </td></table><script>x()</script>"
    grades = LearnerGrades(
        name,
        "mallory",
        (
            ExerciseGrade(
                "squares",
                "crashed",
                0,
                3,
                message=f"Traceback:\n  {evil}",
                checks=(CheckRow("values", "Squares", "failed", 3, 0, message=evil),),
            ),
        ),
    )
    page, html, md = written(tmp_path, grades)
    assert "script" not in page.tags and "img" not in page.tags
    assert not [a for a in page.attrs if a[0].startswith("on")]
    assert "<script" not in html and "<img" not in html
    assert page.tags.count("table") == 1 and page.tags.count("td") == 4
    text = "".join(page.data)
    assert name in text and evil in page.all_text("td") and evil in page.all_text("pre")
    assert name in page.all_text("title")
    # Markdown: no raw tag outside the fenced traceback, and the table row stays one row.
    fenced = re.search(r"^(`{3,})text\n(.*?)\n\1$", md, re.S | re.M)
    assert fenced and fenced.group(2) == f"Traceback:\n  {evil}"
    outside = md.replace(fenced.group(0), "")
    assert not re.search(r"(?<!\\)<(?!br>)", outside)  # every other "<" is escaped
    assert "\\<script\\>" in outside
    row = [line for line in md.splitlines() if line.startswith("| failed")]
    assert len(row) == 1 and len(md_row(row[0])) == 4


def test_markdown_escapes_pipes_and_newlines_in_cells(tmp_path: Path) -> None:
    md = feedback_markdown(ada(), title="GPU course", run_at=RUN_AT, maxima=MAXIMA)
    rows = [md_row(line) for line in md.splitlines() if line.startswith("| failed")]
    assert rows == [
        [
            "failed",
            "0/1",
            "tail",
            r"expected 10, got 9 \| the last element was dropped<br>check the loop bound",
        ]
    ]
    assert "## reduce: 1.5/4 points, some checks failed" in md
    assert "## matmul: 0/5 points, not handed in" in md


def test_a_fence_inside_a_message_does_not_end_the_block(tmp_path: Path) -> None:
    message = "line one\n```\n<b>still inside</b>"
    grades = LearnerGrades(
        "Bo", "bo", (ExerciseGrade("squares", "invalid", 0, 0, message=message),)
    )
    md = feedback_markdown(grades, title="t", run_at=RUN_AT, maxima=MAXIMA)
    assert f"````text\n{message}\n````" in md


@pytest.mark.parametrize("kind", KINDS)
def test_every_kind_has_plain_words(tmp_path: Path, kind: Kind) -> None:
    grades = LearnerGrades("Bo", "bo", (ExerciseGrade("squares", kind, 0, 3),))
    page, _, md = written(tmp_path, grades)
    assert f"squares: 0/3 points, {VERDICT_WORDS[kind]}" == page.all_text("h2")
    assert f"## squares: 0/3 points, {VERDICT_WORDS[kind]}" in md


def test_an_exercise_without_a_maximum_is_an_error_naming_it(tmp_path: Path) -> None:
    grades = LearnerGrades("Bo", "bo", (ExerciseGrade("unknown", "missing", 0, 0),))
    with pytest.raises(FeedbackError, match=r"learner 'bo'.*'unknown'"):
        write_feedback(grades, tmp_path, title="t", run_at=RUN_AT, maxima=MAXIMA)
    assert not list(tmp_path.iterdir())


@pytest.mark.parametrize("slug", ["", ".", "..", "../up", "a/b", "a\\b", ".hidden"])
def test_a_slug_that_is_not_a_file_name_is_refused(tmp_path: Path, slug: str) -> None:
    grades = LearnerGrades("Eve", slug, (ExerciseGrade("squares", "right", 3, 3),))
    with pytest.raises(FeedbackError, match=r"slug .* is not a plain file name"):
        write_feedback(grades, tmp_path / "out", title="t", run_at=RUN_AT, maxima=MAXIMA)
    assert not (tmp_path / "out").exists() and sorted(tmp_path.iterdir()) == []


def test_a_folder_that_cannot_be_made_is_an_error_not_a_traceback(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x", encoding="utf-8")
    with pytest.raises(FeedbackError, match="cannot write it"):
        write_feedback(ada(), blocker / "feedback", title="t", run_at=RUN_AT, maxima=MAXIMA)


def read_csv(path: Path) -> list[list[str]]:
    with path.open(encoding="utf-8", newline="") as f:
        return list(csv.reader(f))


def test_grades_csv_has_header_points_possible_and_a_row_per_learner(tmp_path: Path) -> None:
    bo = LearnerGrades(
        "Bo, the second",
        "bo",
        (ExerciseGrade("squares", "right", 3, 3), ExerciseGrade("matmul", "wrong", 2.25, 5)),
    )
    path = write_grades_csv(
        [ada(), bo], ["squares", "reduce", "matmul"], MAXIMA, tmp_path / "grades.csv"
    )
    assert path == tmp_path / "grades.csv"
    raw = path.read_bytes()
    assert not raw.startswith(b"\xef\xbb\xbf") and b"\r" not in raw
    assert read_csv(path) == [
        ["Learner", "Slug", "squares", "reduce", "matmul", "Total"],
        ["Points possible", "", "3", "4", "5", "12"],
        ["Ada Lovelace", "ada", "3", "1.5", "0", "4.5"],
        ["Bo, the second", "bo", "3", "", "2.25", "5.25"],  # no grade: left blank
    ]


@pytest.mark.parametrize(
    ("earned", "shown"),
    [
        (3.0, "3"),
        (3, "3"),
        (2.5, "2.5"),
        (1 / 3, "0.33"),
        (2 / 3, "0.67"),
        (2.999, "3"),
        (0.1 + 0.2, "0.3"),
        (0.0, "0"),
        (10.05, "10.05"),
        (1e-9, "0"),
    ],
)
def test_points_are_written_as_people_write_them(tmp_path: Path, earned: float, shown: str) -> None:
    grades = LearnerGrades("Bo", "bo", (ExerciseGrade("squares", "wrong", earned, 3),))
    rows = read_csv(
        write_grades_csv([grades], ["squares"], {"squares": 3.5}, tmp_path / "grades.csv")
    )
    assert rows[1] == ["Points possible", "", "3.5", "3.5"]
    assert rows[2] == ["Bo", "bo", shown, shown]
    md = feedback_markdown(grades, title="t", run_at=RUN_AT, maxima=MAXIMA)
    assert f"## squares: {shown}/3 points" in md


@pytest.mark.parametrize(
    "name",
    [
        '=HYPERLINK("http://x")',
        "+1+1",
        "-2",
        "@SUM(A1)",
        "\tcmd",
        " =1+1",
        "\u3000 @SUM(A1)",
        "＝1+1",  # full width: the test_attacks_intake.py corpus has the rest of its kin
    ],
)
def test_csv_cells_that_look_like_formulas_are_defused(tmp_path: Path, name: str) -> None:
    grades = LearnerGrades(name, name, (ExerciseGrade("=squares", "right", 3, 3),))
    rows = read_csv(
        write_grades_csv([grades], ["=squares"], {"=squares": 3}, tmp_path / "grades.csv")
    )
    assert rows[0][2] == "'=squares"
    assert rows[2][:2] == ["'" + name, "'" + name]
    assert rows[2][2:] == ["3", "3"]


def test_a_carriage_return_is_written_out_not_left_to_end_the_row(tmp_path: Path) -> None:
    grades = LearnerGrades("\rcmd", "x\ry", ())
    rows = read_csv(write_grades_csv([grades], [], {}, tmp_path / "grades.csv"))
    assert rows[2] == ["\\rcmd", "x\\ry", "0"]  # as the gradebook stores it (plain)


def test_ordinary_names_are_left_alone(tmp_path: Path) -> None:
    grades = LearnerGrades("Zoë O'Neil = best", "zoe", ())
    rows = read_csv(write_grades_csv([grades], [], {}, tmp_path / "grades.csv"))
    assert rows == [
        ["Learner", "Slug", "Total"],
        ["Points possible", "", "0"],
        ["Zoë O'Neil = best", "zoe", "0"],
    ]


def test_csv_without_a_maximum_is_an_error_naming_the_exercise(tmp_path: Path) -> None:
    with pytest.raises(FeedbackError, match="no points possible given for exercise 'extra'"):
        write_grades_csv([ada()], ["squares", "extra"], MAXIMA, tmp_path / "grades.csv")
    assert not (tmp_path / "grades.csv").exists()


@pytest.mark.parametrize("earned", [float("nan"), float("inf"), -1.0])
def test_points_that_are_not_a_count_are_refused(tmp_path: Path, earned: float) -> None:
    grades = LearnerGrades("Bo", "bo", (ExerciseGrade("squares", "wrong", earned, 3),))
    with pytest.raises(FeedbackError, match="learner 'bo', exercise 'squares': earned points"):
        write_grades_csv([grades], ["squares"], MAXIMA, tmp_path / "grades.csv")
    with pytest.raises(FeedbackError, match="learner 'bo', exercise 'squares': earned points"):
        feedback_markdown(grades, title="t", run_at=RUN_AT, maxima=MAXIMA)


def test_an_exercise_listed_twice_is_refused(tmp_path: Path) -> None:
    with pytest.raises(FeedbackError, match="'squares' is listed twice"):
        write_grades_csv([ada()], ["squares", "squares"], MAXIMA, tmp_path / "grades.csv")


def test_work_the_grader_did_not_run_is_blank_in_the_csv_never_zero(tmp_path: Path) -> None:
    """A GPU exercise on a machine without a GPU: no grade, said in the points row."""
    cy = LearnerGrades(
        "Cy",
        "cy",
        (
            ExerciseGrade("squares", "right", 3, 3),
            ExerciseGrade("matmul", "not-run", 0, 5, message="not graded: no GPU"),
        ),
    )
    di = LearnerGrades("Di", "di", (ExerciseGrade("matmul", "not-run", 0, 5),))
    rows = read_csv(
        write_grades_csv([cy, di], ["squares", "matmul"], MAXIMA, tmp_path / "grades.csv")
    )
    assert rows[1] == ["Points possible", NOT_RUN_NOTE, "3", "5", "8"]
    assert rows[2:] == [
        ["Cy", "cy", "3", "", "3"],  # the total of what was graded
        ["Di", "di", "", "", ""],
    ]  # nothing graded: no total either
    ordinary = read_csv(write_grades_csv([ada()], ["squares"], MAXIMA, tmp_path / "o.csv"))
    assert ordinary[1] == ["Points possible", "", "3", "3"]  # the note only where it applies
