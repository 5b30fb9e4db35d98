"""The gradebook's rows and records: a grade comes back as it was stored, a row of the
wrong type is refused in words, and the rows are what earlier gradebooks hold."""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from gpulab.grading.gradebook import (
    SCHEMA_VERSION,
    DeadRun,
    Gradebook,
    GradebookError,
    KnownExercise,
    StoredGrade,
)
from gpulab.grading.gradebook.verdict import CheckRow, ExerciseGrade, LearnerGrades
from gpulab.grading.intake.names import MAX_NAME, MAX_TEXT, Holder

GRADE = ExerciseGrade(
    "roofline",
    "wrong",
    7.0,
    21.0,
    "",
    (
        CheckRow("test_a", "A", "passed", 7.0, 7.0, "fine"),
        CheckRow("test_b", "B", "failed", 7.0, 0.0, "expected 4, got 5"),
        CheckRow("test_h", "H", "failed", 7.0, 0.0, "", True, "expected 42, got 7"),
    ),
    ("bubblewrap", "rlimits"),
    1.5,
    "nb-hash",
)


@pytest.fixture
def book(tmp_path: Path) -> Iterator[Gradebook]:
    """A gradebook holding one run, one exercise, one learner and `GRADE`."""
    with Gradebook(tmp_path / "gradebook.sqlite") as book:
        run = book.start_run(
            started="t0",
            command="gpulab grade class",
            version="0.1",
            guards=["bubblewrap"],
            tag="job-1",
            cgroups="v2:/gpulab/1",
        )
        book.set_exercise("roofline", "ck", 21.0, False)
        book.set_learner("ada", "Ada Lovelace", "class/ada")
        book.record("ada", GRADE, checks_hash="ck", gpu="", run_id=run, graded_at="t1")
        yield book


def test_a_grade_comes_back_as_it_was_stored(book: Gradebook) -> None:
    hidden = CheckRow("test_h", "H", "failed", 7.0, 0.0, "", True)  # its message: not here
    assert book.learners(["roofline", "vector-add"]) == [
        LearnerGrades(
            "Ada Lovelace",
            "ada",
            (
                ExerciseGrade(
                    "roofline",
                    "wrong",
                    7.0,
                    21.0,
                    "",
                    (*GRADE.checks[:2], hidden),
                    ("bubblewrap", "rlimits"),
                    1.5,
                    "nb-hash",
                ),
            ),
        )
    ]
    assert book.hidden_messages("ada", "roofline") == {"test_h": "expected 42, got 7"}
    assert book.graded() == {("ada", "roofline"): StoredGrade("nb-hash", "ck", "wrong")}
    assert book.exercise("roofline") == KnownExercise("roofline", "ck", 21.0, False)
    assert book.exercise("vector-add") is None
    assert book.mark_killed(finished="t2") == [DeadRun(1, "job-1", "v2:/gpulab/1")]


def test_the_rows_are_what_earlier_gradebooks_hold(book: Gradebook) -> None:
    """The same columns and the same SQLite types as before the records were msgspec's:
    a gradebook of either gpulab opens in the other."""
    assert book.db.execute("SELECT * FROM grades").fetchall() == [
        (
            "ada",
            "roofline",
            "nb-hash",
            "ck",
            "wrong",
            7.0,
            21.0,
            "",
            '["bubblewrap", "rlimits"]',
            "",
            1.5,
            1,
            "t1",
        )
    ]
    assert book.db.execute("SELECT * FROM checks ORDER BY position").fetchall() == [
        ("ada", "roofline", 0, "test_a", "A", "passed", 7.0, 7.0, "fine", 0),
        ("ada", "roofline", 1, "test_b", "B", "failed", 7.0, 0.0, "expected 4, got 5", 0),
        ("ada", "roofline", 2, "test_h", "H", "failed", 7.0, 0.0, "", 1),
    ]
    assert book.db.execute(
        "SELECT typeof(hidden), typeof(points) FROM checks LIMIT 1"
    ).fetchone() == ("integer", "real")
    assert book.db.execute("SELECT * FROM exercises").fetchall() == [("roofline", "ck", 21.0, 0)]


def test_learner_text_is_stored_plain(book: Gradebook) -> None:
    run = book.start_run(started="t3", command="c", version="v", guards=[])
    shouting = ExerciseGrade(
        "roofline", "crashed", 0.0, 21.0, "bye\x1b[2J\ud800", guards=("rlimits\u202e",)
    )
    book.set_learner("ada\x07", "Ada", "class/ada")
    book.record("ada\x07", shouting, checks_hash="ck", gpu="", run_id=run, graded_at="t3")
    row = book.db.execute(
        "SELECT learner, message, guards FROM grades WHERE kind = 'crashed'"
    ).fetchone()
    assert row == ("ada\\x07", "bye\\x1b[2J\ufffd", '["rlimits\\\\u202e"]')


@pytest.mark.parametrize(
    ("change", "read", "said"),
    [
        (
            "UPDATE grades SET kind = 'splendid'",
            "learners",
            "the grade of ada on roofline cannot be read: "
            "Invalid enum value 'splendid' - at `$.kind`",
        ),
        (
            "UPDATE grades SET earned = 'lots'",
            "learners",
            "the grade of ada on roofline cannot be read: "
            "Expected `float`, got `str` - at `$.earned`",
        ),
        ("UPDATE grades SET guards = '[not json'", "learners", "at `$.guards`"),
        (
            "UPDATE grades SET guards = '[1]'",
            "learners",
            "Expected `str`, got `int` - at `$.guards[0]`",
        ),
        (
            "UPDATE checks SET outcome = 'maybe' WHERE position = 1",
            "learners",
            "Invalid enum value 'maybe' - at `$.checks[1].outcome`",
        ),
        ("UPDATE checks SET hidden = 'yes'", "learners", "at `$.checks[0].hidden`"),
        (
            "UPDATE grades SET kind = 'splendid'",
            "graded",
            "the grade of ada on roofline cannot be read: "
            "Invalid enum value 'splendid' - at `$.kind`",
        ),
        (
            "UPDATE exercises SET max_points = 'many'",
            "exercise",
            "exercise roofline cannot be read: Expected `float`, got `str` - at `$.max_points`",
        ),
        (
            "UPDATE runs SET tag = x'00ff'",
            "mark_killed",
            "run 1 cannot be read: Expected `str`, got `bytes` - at `$.tag`",
        ),
    ],
)
def test_a_value_of_the_wrong_type_is_refused_naming_file_row_and_field(
    book: Gradebook, change: str, read: str, said: str
) -> None:
    with contextlib.closing(sqlite3.connect(book.path)) as other, other:  # not gpulab
        other.execute(change)
    with Gradebook(book.path) as again, pytest.raises(GradebookError) as refused:
        if read == "learners":
            again.learners(["roofline"])
        elif read == "graded":
            again.graded()
        elif read == "exercise":
            again.exercise("roofline")
        else:
            again.mark_killed(finished="t2")
    message = str(refused.value)
    assert message.startswith(f"{book.path}: ") and said in message
    assert message.endswith(
        "Something other than gpulab changed the gradebook; grade into another --out"
    )


def test_learners_are_stored_with_the_identity_their_slug_is_fixed_to(book: Gradebook) -> None:
    assert book.holders() == [Holder("ada", "Ada Lovelace", "")]  # stored before identities
    book.set_learner("ada", "Ada Lovelace", "class/ada", identity="id-ada")
    book.set_learner("ada", "Ada L.", "class/ada.zip")  # no identity given: it stays
    book.set_learner("bob", "Bob", "class/bob", identity="id-bob")
    assert book.holders() == [
        Holder("ada", "Ada L.", "id-ada"),
        Holder("bob", "Bob", "id-bob"),
    ]
    with pytest.raises(GradebookError, match="the slug ada is another learner's"):
        book.set_learner("ada", "Eve", "class/eve", identity="id-eve")
    with pytest.raises(GradebookError, match="it does not move to bob-2"):
        book.set_learner("bob-2", "Bob", "class/bob", identity="id-bob")
    assert len(book.holders()) == 2


def test_a_schema_2_gradebook_gains_identities_and_keeps_its_learners(book: Gradebook) -> None:
    with contextlib.closing(sqlite3.connect(book.path)) as other, other:  # gpulab before 3
        other.executescript(
            "DROP INDEX learners_identity; ALTER TABLE learners DROP COLUMN identity; "
            "PRAGMA user_version = 2"
        )
    with Gradebook(book.path) as again:
        assert again.db.execute("PRAGMA user_version").fetchone() == (SCHEMA_VERSION,)
        assert again.holders() == [Holder("ada", "Ada Lovelace", "")]
        assert [learner.slug for learner in again.learners(["roofline"])] == ["ada"]


def test_names_and_messages_are_stored_cut(book: Gradebook) -> None:
    run = book.start_run(started="t3", command="c", version="v", guards=[])
    book.set_learner("eve", "E" * 10_000, "class/eve")
    long = ExerciseGrade("roofline", "crashed", 0.0, 21.0, "\x1b" * 10_000)
    book.record("eve", long, checks_hash="ck", gpu="", run_id=run, graded_at="t3")
    name, message = book.db.execute(
        "SELECT l.name, g.message FROM learners l JOIN grades g ON g.learner = l.slug "
        "WHERE l.slug = 'eve'"
    ).fetchone()
    assert len(name) <= MAX_NAME and name == "E" * 226 + "… (cut: 9774 more characters)"
    assert len(message) <= MAX_TEXT and message.startswith("\\x1b\\x1b")
    assert message.endswith("more characters)")
