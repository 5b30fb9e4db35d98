"""The red team's third round on the intake, the gradebook and the CSV (issue 28, H7 to H10):
each attack stopped, and the honest learner beside it taken in as before.

- H7 (rt3-14): a learner's zip of 240 nested zips whose end records say "1 entry" over a
  directory of 44 610 cost the grader 30 to 41 s of CPU on every run.
- H8 (rt3-13): a late "Bob" moved an already graded "bob" to a new slug, and grades.csv got
  two bob rows.
- H9 (rt3-16): a megabyte of learner text in every message made an 11.4 MiB gradebook and a
  12 MB feedback page.
- H10 (case 17, rt3-12): a full-width ``＝`` at the start of a name was left in the CSV.

Nothing here needs the sandbox: each attack is on the grader's own side (the intake, the
gradebook, the feedback and the CSV), run for real on files, as root and as any user alike.
"""

from __future__ import annotations

import contextlib
import csv
import json
import re
import sqlite3
import time
import zipfile
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from gpulab.course.progress import Measurement
from gpulab.grading.classrun.feedback import write_feedback, write_grades_csv
from gpulab.grading.gradebook import Gradebook, GradebookError
from gpulab.grading.gradebook.verdict import CheckRow, ExerciseGrade, LearnerGrades, plain
from gpulab.grading.intake import MAX_PROBLEMS, Intake, ZipLimits, collect
from gpulab.grading.intake.names import MAX_NAME, MAX_TEXT, cut, identity
from gpulab.grading.intake.zipread import ZipRefused, open_zip
from helpers.intake_attacks import copies, directory_bomb, lying_directory

EXERCISES = ("roofline",)
NOTEBOOK = b'{"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}'


def put(path: Path, data: bytes = NOTEBOOK) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


@pytest.fixture
def zipinfos(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[int]]:
    """How many `ZipInfo`s zipfile makes: one per directory entry it parses."""
    made = [0]
    init = zipfile.ZipInfo.__init__

    def counted(self: zipfile.ZipInfo, *args: object, **kwargs: object) -> None:
        made[0] += 1
        init(self, *args, **kwargs)

    monkeypatch.setattr(zipfile.ZipInfo, "__init__", counted)
    yield made


# H7: zip intake bounded by what the archive really holds


def test_nested_zips_whose_end_records_understate_their_directories(
    tmp_path: Path, zipinfos: list[int]
) -> None:
    """rt3-14: 240 such zips (4.6 MB) in one learner's zip; 30 to 41 s of CPU before."""
    sub = tmp_path / "sub"
    put(sub / "mallory.zip", copies(lying_directory(), 240))
    put(sub / "ada" / "roofline.ipynb")
    started = time.process_time()
    intake = collect(sub, EXERCISES, tmp_path / "work")
    spent = time.process_time() - started
    assert [learner.slug for learner in intake.learners] == ["ada", "mallory"]
    assert set(intake.learners[0].notebooks) == {"roofline"}
    assert zipinfos[0] == 240, "a directory was parsed past its headers' count"
    assert intake.problems == (
        *(
            f"{sub}/mallory.zip/part{n}.zip: 44610 entries, more than the 2000 a zip may hold"
            for n in range(15)
        ),
        f"{sub}/mallory.zip/part15.zip: past the 16 zips one learner's hand-in may open; not "
        "opened, nor 224 more zips of mallory's",
    )
    assert spent < 5, f"{spent:.1f} s of CPU"


def test_the_same_inside_a_bulk_zip(tmp_path: Path, zipinfos: list[int]) -> None:
    bulk = tmp_path / "class.zip"
    with zipfile.ZipFile(bulk, "w") as archive:
        archive.writestr("mallory.zip", copies(lying_directory(), 40))
        archive.writestr("ada/roofline.ipynb", NOTEBOOK)
    zipinfos[0] = 0
    intake = collect(bulk, EXERCISES, tmp_path / "work")
    assert set(intake.learners[0].notebooks) == {"roofline"}
    assert zipinfos[0] == 2 + 40
    assert len(intake.problems) == 16 and intake.problems[-1].endswith(
        "nor 24 more zips of mallory's"
    )


@pytest.mark.parametrize(
    "build",
    [
        lambda: directory_bomb(3000, declared=1),  # the end record understates the count
        lambda: directory_bomb(3000, declared=1, zip64=True),  # so do both ZIP64 records
        lambda: directory_bomb(3000, declared=1, comment=b"x" * 1000),
    ],
)
def test_entries_are_counted_on_the_headers_there_before_a_zipinfo_is_made(
    tmp_path: Path, zipinfos: list[int], build: Callable[[], bytes]
) -> None:
    path = put(tmp_path / "liar.zip", build())
    with pytest.raises(ZipRefused, match=r"^3000 entries, more than the 2000 a zip may hold$"):
        open_zip(path, ZipLimits())
    assert zipinfos[0] == 0


def test_one_learner_opens_at_most_max_zips(tmp_path: Path) -> None:
    """Honest-looking zips too: a hand-in of 30 small zips is read no further than 16."""
    sub, inner = tmp_path / "sub", tmp_path / "inner.zip"
    with zipfile.ZipFile(inner, "w") as archive:
        archive.writestr("notes.txt", "hi")
    put(sub / "mallory.zip", copies(inner.read_bytes(), 30))
    put(sub / "mallory" / "roofline.ipynb")
    intake = collect(sub, EXERCISES, tmp_path / "work")
    assert set(intake.learners[0].notebooks) == {"roofline"}
    assert intake.problems == (
        f"{sub}/mallory.zip/part15.zip: past the 16 zips one learner's hand-in may open; not "
        "opened, nor 14 more zips of mallory's",
    )


# H8: a learner's slug is fixed by their identity, whoever hands in later


def grade_into(book: Gradebook, sub: Path, work: Path) -> Intake:
    """What a grading run does with the intake and the gradebook: the slugs the gradebook
    holds kept, every learner stored with their identity and graded."""
    intake = collect(sub, EXERCISES, work, held=book.holders())
    run = book.start_run(started="t", command="gpulab grade", version="0", guards=[])
    for learner in intake.learners:
        book.set_learner(
            learner.slug, learner.learner, str(learner.source), identity=learner.identity
        )
        earned = 15.0 if learner.notebooks else 0.0
        grade = ExerciseGrade("roofline", "right" if earned else "missing", earned, 15.0)
        book.record(learner.slug, grade, checks_hash="ck", gpu="", run_id=run, graded_at="t")
    return intake


def csv_rows(book: Gradebook, path: Path) -> list[list[str]]:
    written = write_grades_csv(book.learners(list(EXERCISES)), EXERCISES, {"roofline": 15}, path)
    with written.open(encoding="utf-8", newline="") as file:
        return list(csv.reader(file))[2:]


@pytest.mark.parametrize(("first", "late"), [("bob", "Bob"), ("Bob", "bob")])
def test_a_late_learner_never_moves_a_graded_learners_slug(
    tmp_path: Path, first: str, late: str
) -> None:
    """rt3-13: bob is graded; Bob hands in later; bob stays bob, Bob is graded apart."""
    sub, work = tmp_path / "sub", tmp_path / "work"
    for name in ("aaa-honest", first, "zzz-honest"):
        put(sub / name / "roofline.ipynb")
    with Gradebook(tmp_path / "gradebook.sqlite") as book:
        assert {s.learner: s.slug for s in grade_into(book, sub, work).learners}[first] == "bob"
        (sub / late).mkdir()  # late, and with nothing to grade
        intake = grade_into(book, sub, work)
        theirs = f"bob-{identity(('plain', late))[:6]}"
        assert {s.learner: s.slug for s in intake.learners} == {
            "aaa-honest": "aaa-honest",
            first: "bob",
            late: theirs,
            "zzz-honest": "zzz-honest",
        }
        assert intake.problems == (
            f"bob stays the slug of {first}, who had it first; graded apart: "
            f"{late} ({sub}/{late}) as {theirs}",
        )
        assert csv_rows(book, tmp_path / "grades.csv") == [
            ["aaa-honest", "aaa-honest", "15", "15"],
            [first, "bob", "15", "15"],
            [late, theirs, "0", "0"],
            ["zzz-honest", "zzz-honest", "15", "15"],
        ]
        # and again: nobody moves
        assert {s.slug for s in grade_into(book, sub, work).learners} == {
            "aaa-honest",
            "bob",
            theirs,
            "zzz-honest",
        }


def test_a_gradebook_older_than_identities_keeps_its_slugs(tmp_path: Path) -> None:
    """A schema-2 gradebook holds bob without an identity: bob claims it by name."""
    path, sub, work = tmp_path / "gradebook.sqlite", tmp_path / "sub", tmp_path / "work"
    with Gradebook(path) as book:
        book.set_learner("bob", "bob", "sub/bob")
    with contextlib.closing(sqlite3.connect(path)) as db, db:  # as gpulab before identities
        db.executescript(
            "DROP INDEX learners_identity; ALTER TABLE learners DROP COLUMN identity; "
            "PRAGMA user_version = 2"
        )
    for name in ("Bob", "bob"):
        put(sub / name / "roofline.ipynb")
    with Gradebook(path) as book:
        intake = grade_into(book, sub, work)
        slugs = {s.learner: s.slug for s in intake.learners}
        assert slugs == {"bob": "bob", "Bob": f"bob-{identity(('plain', 'Bob'))[:6]}"}
        assert [(h.slug, h.identity) for h in book.holders()] == [
            ("bob", identity(("plain", "bob"))),
            (slugs["Bob"], identity(("plain", "Bob"))),
        ]


def test_the_gradebook_refuses_to_move_or_share_a_slug(tmp_path: Path) -> None:
    bob, other = identity(("plain", "bob")), identity(("plain", "Bob"))
    with Gradebook(tmp_path / "gradebook.sqlite") as book:
        book.set_learner("bob", "bob", "sub/bob", identity=bob)
        with pytest.raises(GradebookError, match=r"Bob: the slug bob is another learner's$"):
            book.set_learner("bob", "Bob", "sub/Bob", identity=other)
        with pytest.raises(GradebookError, match="bob has a slug already; it does not move"):
            book.set_learner("bob-2", "bob", "sub/bob", identity=bob)
        book.set_learner("bob", "bob", "late/bob", identity=bob)  # the same learner again
        assert [(h.slug, h.name, h.identity) for h in book.holders()] == [("bob", "bob", bob)]


# H9: learner text capped in length wherever it is stored or shown

MEGA = "x" * 980_000  # rt3-16: each under the 1 MiB reply cap
CUT = r"(.*)… \(cut: (\d+) more characters\)"  # the marker, and what it counts


def test_a_megabyte_in_every_message_is_cut_everywhere(tmp_path: Path) -> None:
    checks = tuple(
        CheckRow(f"test_{n}", f"T{n}", "failed", 1.0, 0.0, f"{n}: {MEGA}", n >= 15, MEGA)
        for n in range(21)
    )
    grade = ExerciseGrade("roofline", "wrong", 0.0, 21.0, f"bye {MEGA}", checks)
    path = tmp_path / "gradebook.sqlite"
    with Gradebook(path) as book:
        run = book.start_run(started="t", command="c", version="v", guards=[])
        book.set_learner("mallory", f"Mallory {MEGA}", f"sub/{MEGA}")
        book.record("mallory", grade, checks_hash="ck", gpu="", run_id=run, graded_at="t")
        book.add_problems(run, [f"sub/{MEGA}.ipynb: refused"] * 3)
        (mallory,) = book.learners(["roofline"])
        html, md = write_feedback(
            mallory, tmp_path / "feedback", title="t", run_at="r", maxima={"roofline": 21}
        )
        texts = [mallory.learner, mallory.exercises[0].message, *book.problems(run)]
        texts += [c.message for c in mallory.exercises[0].checks if not c.hidden]
        texts += book.hidden_messages("mallory", "roofline").values()
    size = sum(p.stat().st_size for p in tmp_path.glob("gradebook.sqlite*"))
    assert size < 512 * 1024, f"{size / 2**20:.1f} MiB"  # 11.4 MiB before
    assert html.stat().st_size < 256 * 1024 and md.stat().st_size < 256 * 1024  # 12 MB
    assert mallory.learner == cut(f"Mallory {MEGA}", MAX_NAME)
    assert len(mallory.learner) <= MAX_NAME
    marked = re.fullmatch(CUT, mallory.learner, re.S)
    assert marked, mallory.learner
    kept, left_out = marked.groups()
    assert kept == f"Mallory {MEGA}"[: len(kept)] and len(kept) + int(left_out) == len(MEGA) + 8
    for text in texts:
        assert text and len(text) <= MAX_TEXT and "more characters)" in text
    assert "(cut: " in html.read_text(encoding="utf-8")


def test_a_prediction_in_words_is_cut(tmp_path: Path) -> None:
    told = Measurement("bw", "bandwidth", "GB/s", 1.0, 1.0, 0.1, "fast " * 100_000)
    row = CheckRow("test_bw", "BW", "passed", 1.0, 1.0, measurements=(told,))
    with Gradebook(tmp_path / "gradebook.sqlite") as book:
        run = book.start_run(started="t", command="c", version="v", guards=[])
        book.set_learner("ada", "Ada", "sub/ada")
        grade = ExerciseGrade("roofline", "right", 1.0, 1.0, checks=(row,))
        book.record("ada", grade, checks_hash="ck", gpu="", run_id=run, graded_at="t")
        stored = book.db.execute("SELECT predicted FROM measurements").fetchone()[0]
        shown = book.learners(["roofline"])[0].exercises[0].checks[0].measurements[0]
    assert len(json.loads(stored)) <= MAX_NAME and shown.predicted == json.loads(stored)
    assert str(shown.predicted).endswith("more characters)")


def test_names_and_file_names_a_zip_can_make_long_are_cut(tmp_path: Path) -> None:
    """A zip member's name may be 65 535 bytes: as a learner's name, and in problem lines,
    and a learner's zip may refuse a member in every entry."""
    long = "n" * 50_000
    hand_in = tmp_path / "mallory.zip"
    with zipfile.ZipFile(hand_in, "w") as archive:
        for n in range(25):  # each refused: a path outside the zip
            archive.writestr(f"../{n}{long}.ipynb", "{}")
        archive.writestr("roofline.ipynb", NOTEBOOK)
    bulk = tmp_path / "class.zip"
    with zipfile.ZipFile(bulk, "w") as archive:
        archive.writestr(f"{long}/roofline.ipynb", NOTEBOOK)
        archive.write(hand_in, "mallory.zip")
    intake = collect(bulk, EXERCISES, tmp_path / "work")
    names = sorted(learner.learner for learner in intake.learners)
    assert names == ["mallory", cut(long, MAX_NAME)]
    assert all(learner.notebooks for learner in intake.learners)
    assert len(intake.problems) == MAX_PROBLEMS + 1
    assert all(len(line) <= MAX_TEXT and re.fullmatch(CUT, line) for line in intake.problems[:-1])
    assert intake.problems[-1] == (
        f"mallory ({bulk}/mallory.zip): 5 more problems with this learner's hand-in, not listed"
    )


def test_the_cut_is_marked_and_done_once() -> None:
    text = plain("é\x1b" * 10_000, 100)
    assert len(text) <= 100 and text.endswith("… (cut: 19972 more characters)")
    assert text.startswith("é\\x1bé\\x1b") and plain(text, 100) == text
    assert plain("short", 100) == "short" and cut("a" * 100, 100) == "a" * 100


# H10: every formula lead-in defused in the CSV, full-width forms after spaces included

LEAD_INS = [
    "＝1+1",  # U+FF1D FULLWIDTH EQUALS SIGN: case 17's name
    "＋1+1",
    "－1+1",
    "＠SUM(A1)",
    "﹦1+1",  # U+FE66 SMALL EQUALS SIGN
    "﹢1",
    "﹣1",
    "﹫SUM(A1)",
    "⁼1",  # U+207C SUPERSCRIPT EQUALS SIGN
    "₊1",
    " ＝1+1",
    "\u3000＝1+1",  # after an ideographic space
    "\u00a0=1+1",  # after a no-break space
    "\u2003 @SUM(A1)",
    "\n=1+1",  # after a line break
    "\t=1+1",
    "=\u0338 1",  # a mark after = that NFC would compose into ≠
]


@pytest.mark.parametrize("name", [n for n in LEAD_INS if n.isprintable()])
def test_formula_lead_ins_are_defused_in_the_csv(tmp_path: Path, name: str) -> None:
    """From the learner's folder name, through the intake and the gradebook, to grades.csv."""
    sub = tmp_path / "sub"
    put(sub / name / "roofline.ipynb")
    with Gradebook(tmp_path / "gradebook.sqlite") as book:
        (learner,) = grade_into(book, sub, tmp_path / "work").learners
        (row,) = csv_rows(book, tmp_path / "grades.csv")
    assert row == ["'" + learner.learner, learner.slug, "15", "15"]
    assert learner.learner == name and learner.slug[0].isalnum()


@pytest.mark.parametrize("name", LEAD_INS)
def test_formula_lead_ins_are_defused_whoever_hands_in_the_name(tmp_path: Path, name: str) -> None:
    """Grades not read from a gradebook: the CSV makes the name plain itself."""
    grades = LearnerGrades(name, "x", (ExerciseGrade("roofline", "right", 3, 3),))
    path = write_grades_csv([grades], EXERCISES, {"roofline": 3}, tmp_path / "grades.csv")
    with path.open(encoding="utf-8", newline="") as file:
        (row,) = list(csv.reader(file))[2:]
    assert row[0] == "'" + " ".join(name.splitlines()), row


def test_a_carriage_return_is_shown_not_obeyed(tmp_path: Path) -> None:
    grades = LearnerGrades("\r=1+1", "x", ())
    path = write_grades_csv([grades], [], {}, tmp_path / "grades.csv")
    assert path.read_text(encoding="utf-8").splitlines()[2] == "\\r=1+1,x,0"


@pytest.mark.parametrize("name", ["Zoë", "１２３", "'quoted", "a = b", "\u200b=1", "Ω"])
def test_names_that_are_no_formula_are_left_as_they_are(tmp_path: Path, name: str) -> None:
    grades = LearnerGrades(name, "x", ())
    path = write_grades_csv([grades], [], {}, tmp_path / "grades.csv")
    with path.open(encoding="utf-8", newline="") as file:
        (row,) = list(csv.reader(file))[2:]
    assert row[0] == plain(name)
