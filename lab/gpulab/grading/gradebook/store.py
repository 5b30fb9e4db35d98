"""The gradebook of grading runs: one SQLite file, written a grade at a time, by one thread.

Each grade (a learner's exercise) is written in one transaction with its
checks, so a run killed at any point leaves every finished grade whole and no
half-written one; the next run reads which (learner, exercise) pairs are
already graded with the same notebook and the same checks, and skips them.
SQLite is in the standard library and is what an instructor can open with any
tool; nothing here needs a server.

One `Gradebook` is one connection, used only by the thread that opened it
(sqlite3 refuses any other): a grading run's jobs hand their grades to that
one writer (`gpulab.grading.classrun.run`), so no two transactions ever share the
connection. Every text stored passes through `verdict.plain` first, which
also cuts it to a length: what the feedback, the CSV and the summary show
later is read back from here. A learner's slug is fixed to their identity
the first time it is stored, and never given to another (`set_learner`);
the intake reads the slugs given (`holders`) before it gives new ones.

The schema has a version (``PRAGMA user_version``): a gradebook written by a
newer gpulab is refused, not guessed at; an older one is brought up to date.
The hidden checks' messages sit in a table of their own, ``hidden_messages``,
for the instructor: nothing that writes feedback reads it. Rows become records by
name (`rows`); a value not of its field's type is refused in words: the file, the
row, the field (``$.checks[2].outcome``). The tables are in `schema`.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

import msgspec

from gpulab.errors import GpulabError
from gpulab.grading.gradebook.rows import (
    DeadRun,
    KnownExercise,
    StoredGrade,
    json_list,
    json_value,
    to_record,
    to_row,
)
from gpulab.grading.gradebook.schema import (
    INSERT_CHECK,
    INSERT_GRADE,
    INSERT_MEASUREMENT,
    SCHEMA_VERSION,
    SELECT_CHECKS,
    SELECT_GRADES,
    SELECT_MEASUREMENTS,
    upgrade,
)
from gpulab.grading.gradebook.verdict import ExerciseGrade, LearnerGrades, plain
from gpulab.grading.intake.names import MAX_NAME, Holder

__all__ = ["Gradebook", "GradebookError"]

R = TypeVar("R")


class GradebookError(GpulabError):
    """The gradebook file cannot be used: which file and why."""


class Gradebook:
    """A gradebook file; use as a context manager, from one thread."""

    def __init__(self, path: Path) -> None:
        self.path = path
        try:
            self.db = sqlite3.connect(path, timeout=30, isolation_level=None)
        except sqlite3.Error as exc:
            raise GradebookError(f"{path}: cannot open it as a gradebook: {exc}") from None
        try:
            self._open()
        except sqlite3.DatabaseError as exc:
            self.db.close()
            raise GradebookError(f"{path}: not a usable gradebook: {exc}") from None
        except GradebookError:
            self.db.close()
            raise

    def _open(self) -> None:
        """Check the schema's version before anything is written; create or update it."""
        found = int(self.db.execute("PRAGMA user_version").fetchone()[0])
        if found > SCHEMA_VERSION:
            raise GradebookError(
                f"{self.path}: written by a newer gpulab (gradebook schema {found}; this "
                f"gpulab knows schema {SCHEMA_VERSION} and older). Grade with that gpulab, "
                "or into another --out."
            )
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("PRAGMA synchronous=FULL")
        self.db.execute("PRAGMA foreign_keys=ON")
        if found != SCHEMA_VERSION:
            upgrade(self.db)

    def __enter__(self) -> Gradebook:
        return self

    def __exit__(self, *exc: object) -> None:
        self.db.close()

    # -- runs ------------------------------------------------------------------------
    def start_run(
        self,
        *,
        started: str,
        command: str,
        version: str,
        guards: Sequence[str],
        tag: str = "",
        cgroups: str = "",
    ) -> int:
        with self.db:
            self.db.execute("BEGIN IMMEDIATE")
            cursor = self.db.execute(
                "INSERT INTO runs (started, status, command, gpulab_version, guards, tag, "
                "cgroups) VALUES (?, 'running', ?, ?, ?, ?, ?)",
                (
                    plain(started),
                    plain(command),
                    plain(version),
                    json_list(guards),
                    plain(tag),
                    cgroups,
                ),
            )
        assert cursor.lastrowid is not None
        return cursor.lastrowid

    def end_run(self, run_id: int, *, finished: str, status: str) -> None:
        with self.db:
            self.db.execute(
                "UPDATE runs SET finished = ?, status = ? WHERE id = ?",
                (plain(finished), plain(status), run_id),
            )

    def mark_killed(self, *, finished: str) -> list[DeadRun]:
        """Mark every run still `running` as `killed`, and return them.

        Only correct while the caller holds the lock on the run's output folder
        (`gpulab.grading.classrun.outdir.claim`): then no other run is alive to be running.
        """
        with self.db:
            self.db.execute("BEGIN IMMEDIATE")
            dead = [
                self._record(DeadRun, row, f"run {row['id']}")
                for row in self._rows(
                    "SELECT id, tag, cgroups FROM runs WHERE status = 'running' ORDER BY id"
                )
            ]
            self.db.executemany(
                "UPDATE runs SET status = 'killed', finished = ? WHERE id = ?",
                [(plain(finished), run.id) for run in dead],
            )
        return dead

    def gpu_event(self, run_id: int, at: str, gpu: str, event: str) -> None:
        with self.db:
            self.db.execute(
                "INSERT INTO gpu_events (run_id, at, gpu, event) VALUES (?, ?, ?, ?)",
                (run_id, plain(at), plain(gpu), plain(event)),
            )

    def add_problems(self, run_id: int, problems: Sequence[str]) -> None:
        """Store what the run could not read or do (they may quote learners' file names)."""
        with self.db:
            self.db.execute("BEGIN IMMEDIATE")
            start = self.db.execute(
                "SELECT count(*) FROM problems WHERE run_id = ?", (run_id,)
            ).fetchone()[0]
            self.db.executemany(
                "INSERT INTO problems (run_id, position, problem) VALUES (?, ?, ?)",
                [(run_id, start + n, plain(p)) for n, p in enumerate(problems)],
            )

    def problems(self, run_id: int) -> list[str]:
        return [
            str(r[0])
            for r in self.db.execute(
                "SELECT problem FROM problems WHERE run_id = ? ORDER BY position", (run_id,)
            )
        ]

    # -- what is graded ------------------------------------------------------------------
    def set_exercise(self, name: str, checks_hash: str, max_points: float, gpu: bool) -> None:
        with self.db:
            self.db.execute(
                "INSERT OR REPLACE INTO exercises (name, checks_hash, max_points, "
                "gpu) VALUES (:name, :checks_hash, :max_points, :gpu)",
                to_row(KnownExercise(name, checks_hash, max_points, gpu)),
            )

    def exercise(self, name: str) -> KnownExercise | None:
        """The exercise `name` as an earlier run stored it, or None."""
        row = next(self._rows("SELECT * FROM exercises WHERE name = ?", (name,)), None)
        return None if row is None else self._record(KnownExercise, row, f"exercise {name}")

    def set_learner(self, slug: str, name: str, source: str, *, identity: str = "") -> None:
        """Store a learner under `slug`, which stays the learner's whose `identity` first held
        it (`gpulab.grading.intake.names.identity`); a slug stored without one (schema 2 and older)
        takes the first identity given.

        GradebookError, nothing stored, for a slug another identity holds, or an
        identity stored under another slug: the intake keeps the slugs given
        (`holders`), so neither happens in a run.
        """
        slug, name, source = plain(slug), plain(name, MAX_NAME), plain(source)
        with self.db:
            self.db.execute("BEGIN IMMEDIATE")
            held = self.db.execute("SELECT identity FROM learners WHERE slug = ?", (slug,))
            if identity and (held.fetchone() or ("",))[0] not in ("", identity):
                raise GradebookError(f"{self.path}: {name}: the slug {slug} is another learner's")
            try:
                self.db.execute(
                    "INSERT INTO learners (slug, name, source, identity) VALUES (?, ?, ?, ?) "
                    "ON CONFLICT (slug) DO UPDATE SET name = excluded.name, source = "
                    "excluded.source, identity = CASE excluded.identity WHEN '' THEN identity "
                    "ELSE excluded.identity END",
                    (slug, name, source, identity),
                )
            except sqlite3.IntegrityError:  # learners_identity: one slug per identity
                raise GradebookError(
                    f"{self.path}: {name} has a slug already; it does not move to {slug}"
                ) from None

    def holders(self) -> list[Holder]:
        """Every slug given so far, with the identity (or, before identities, the name) of
        the learner it is fixed to: what `gpulab.grading.intake.collect` keeps."""
        return [
            self._record(Holder, row, f"learner {row['slug']}")
            for row in self._rows("SELECT slug, name, identity FROM learners ORDER BY slug")
        ]

    def graded(self) -> dict[tuple[str, str], StoredGrade]:
        """Every stored grade, by (learner, exercise), as a later run compares it."""
        return {
            (row["learner"], row["exercise"]): self._record(StoredGrade, row, _grade_of(row))
            for row in self._rows(
                "SELECT learner, exercise, notebook_hash, checks_hash, kind FROM grades"
            )
        }

    def record(
        self,
        slug: str,
        grade: ExerciseGrade,
        *,
        checks_hash: str,
        gpu: str,
        run_id: int,
        graded_at: str,
    ) -> None:
        """Store one grade and its checks, replacing an earlier one, in one transaction."""
        slug, exercise = plain(slug), plain(grade.exercise)
        with self.db:
            self.db.execute("BEGIN IMMEDIATE")
            self.db.execute(
                "DELETE FROM grades WHERE learner = ? AND exercise = ?", (slug, exercise)
            )  # its checks and hidden messages go with it
            self.db.execute(
                INSERT_GRADE,
                to_row(
                    grade,
                    learner=slug,
                    checks_hash=checks_hash,
                    gpu=gpu,
                    run_id=run_id,
                    graded_at=graded_at,
                ),
            )
            self.db.executemany(
                INSERT_CHECK,
                [
                    to_row(
                        c,
                        learner=slug,
                        exercise=exercise,
                        position=n,
                        message="" if c.hidden else c.message,
                    )
                    for n, c in enumerate(grade.checks)
                ],
            )
            self.db.executemany(
                "INSERT INTO hidden_messages (learner, exercise, position, message) "
                "VALUES (?, ?, ?, ?)",
                [
                    (slug, exercise, n, plain(c.instructor_message or c.message))
                    for n, c in enumerate(grade.checks)
                    if c.hidden and (c.instructor_message or c.message)
                ],
            )
            self.db.executemany(
                INSERT_MEASUREMENT,
                [
                    to_row(
                        m,
                        learner=slug,
                        exercise=exercise,
                        position=n,
                        number=k,
                        predicted=json.dumps(
                            plain(m.predicted, MAX_NAME)
                            if isinstance(m.predicted, str)
                            else m.predicted
                        ),
                    )
                    for n, c in enumerate(grade.checks)
                    for k, m in enumerate(c.measurements)
                ],
            )

    # -- reading back --------------------------------------------------------------------
    def learners(self, exercises: Sequence[str]) -> list[LearnerGrades]:
        """Every learner with their grades on `exercises`, in that order, sorted by slug.

        What feedback is written from: hidden checks come back without a message.
        """
        measured: dict[tuple[str, str, int], list[dict[str, Any]]] = {}
        for row in self._rows(SELECT_MEASUREMENTS):
            where = (row.pop("learner"), row.pop("exercise"), row.pop("position"))
            measured.setdefault(where, []).append(
                {**row, "predicted": json_value(row["predicted"])}
            )
        checks: dict[tuple[str, str], list[dict[str, Any]]] = {}
        for row in self._rows(SELECT_CHECKS):
            rows = checks.setdefault((row["learner"], row["exercise"]), [])
            row["measurements"] = measured.get((row["learner"], row["exercise"], len(rows)), [])
            rows.append(row)
        grades: dict[tuple[str, str], ExerciseGrade] = {}
        for row in self._rows(SELECT_GRADES):
            key = (row["learner"], row["exercise"])
            grades[key] = self._record(
                ExerciseGrade, {**row, "checks": checks.get(key, [])}, _grade_of(row)
            )
        out = []
        for row in self._rows("SELECT slug, name AS learner FROM learners ORDER BY slug"):
            slug = row["slug"]
            mine = [grades[(slug, e)] for e in exercises if (slug, e) in grades]
            out.append(self._record(LearnerGrades, {**row, "exercises": mine}, f"learner {slug}"))
        return out

    def hidden_messages(self, slug: str, exercise: str) -> dict[str, str]:
        """For the instructor: each hidden check of a grade, by name, with its message."""
        return {
            str(r[0]): str(r[1])
            for r in self.db.execute(
                "SELECT c.name, h.message FROM hidden_messages h JOIN checks c USING "
                "(learner, exercise, position) WHERE learner = ? AND exercise = ? "
                "ORDER BY position",
                (slug, exercise),
            )
        }

    def dump(self) -> dict[str, list[tuple[object, ...]]]:
        """The gradebook's contents without timings, run ids and hidden messages (which quote
        the hidden checks' random inputs): for comparing two runs."""
        return {
            "learners": self.db.execute("SELECT * FROM learners ORDER BY slug").fetchall(),
            "exercises": self.db.execute("SELECT * FROM exercises ORDER BY name").fetchall(),
            "grades": self.db.execute(
                "SELECT learner, exercise, notebook_hash, checks_hash, kind, earned, possible, "
                "message, guards, gpu FROM grades ORDER BY learner, exercise"
            ).fetchall(),
            "checks": self.db.execute(
                "SELECT * FROM checks ORDER BY learner, exercise, position"
            ).fetchall(),
        }

    # -- rows and records ----------------------------------------------------------------
    def _rows(self, sql: str, parameters: Sequence[object] = ()) -> Iterator[dict[str, Any]]:
        """The rows of a query, each a mapping from its columns' names (or aliases)."""
        cursor = self.db.execute(sql, parameters)
        names = [column[0] for column in cursor.description]
        for values in cursor:
            yield dict(zip(names, values, strict=True))

    def _record(self, kind: type[R], row: Mapping[str, Any], where: str) -> R:
        """`row` as a `kind` record (`to_record`); GradebookError naming the file, `where`
        (the row) and the field when a value is not of its field's type."""
        try:
            return to_record(kind, row)
        except msgspec.DecodeError as exc:  # ValidationError included
            raise GradebookError(
                f"{self.path}: {where} cannot be read: {exc}. Something "
                "other than gpulab changed the gradebook; grade into "
                "another --out"
            ) from None


def _grade_of(row: Mapping[str, Any]) -> str:
    """Which grade a row of ``grades`` holds, in words."""
    return f"the grade of {row['learner']} on {row['exercise']}"
