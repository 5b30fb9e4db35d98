"""The gradebook of grading runs: one SQLite file, written a grade at a time.

Each grade (a learner's exercise) is written in one transaction with its
checks, so a run killed at any point leaves every finished grade whole and no
half-written one; the next run reads which (learner, exercise) pairs are
already graded with the same notebook and the same checks, and skips them.
SQLite is in the standard library and is what an instructor can open with any
tool; nothing here needs a server.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from pathlib import Path

from gpulab.grading.verdict import CheckRow, ExerciseGrade, LearnerGrades

__all__ = ["Gradebook", "GradebookError"]

from gpulab.errors import GpulabError

SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (
    id INTEGER PRIMARY KEY,
    started TEXT NOT NULL,
    finished TEXT,
    status TEXT NOT NULL,              -- running, finished, stopped
    command TEXT NOT NULL,
    gpulab_version TEXT NOT NULL,
    guards TEXT NOT NULL               -- JSON list: the isolation in force
);
CREATE TABLE IF NOT EXISTS exercises (
    name TEXT PRIMARY KEY,
    checks_hash TEXT NOT NULL,         -- sha256 of the released notebook and its checks
    max_points REAL NOT NULL,
    gpu INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS learners (
    slug TEXT PRIMARY KEY,
    name TEXT NOT NULL,
    source TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS grades (
    learner TEXT NOT NULL REFERENCES learners(slug),
    exercise TEXT NOT NULL,
    notebook_hash TEXT NOT NULL,       -- sha256 of the learner's notebook ("" when missing)
    checks_hash TEXT NOT NULL,
    kind TEXT NOT NULL,                -- right, wrong, timeout, crashed, gpu-fault, ...
    earned REAL NOT NULL,
    possible REAL NOT NULL,
    message TEXT NOT NULL,
    guards TEXT NOT NULL,              -- JSON list
    gpu TEXT NOT NULL,                 -- the GPU it ran on ("" for CPU work)
    duration_s REAL NOT NULL,
    run_id INTEGER NOT NULL REFERENCES runs(id),
    graded_at TEXT NOT NULL,
    PRIMARY KEY (learner, exercise)
);
CREATE TABLE IF NOT EXISTS checks (
    learner TEXT NOT NULL,
    exercise TEXT NOT NULL,
    position INTEGER NOT NULL,
    name TEXT NOT NULL,
    title TEXT NOT NULL,
    outcome TEXT NOT NULL,
    points REAL NOT NULL,
    earned REAL NOT NULL,
    message TEXT NOT NULL,
    hidden INTEGER NOT NULL,
    PRIMARY KEY (learner, exercise, position),
    FOREIGN KEY (learner, exercise) REFERENCES grades(learner, exercise) ON DELETE CASCADE
);
CREATE TABLE IF NOT EXISTS gpu_events (
    run_id INTEGER NOT NULL REFERENCES runs(id),
    at TEXT NOT NULL,
    gpu TEXT NOT NULL,
    event TEXT NOT NULL
);
"""


class GradebookError(GpulabError):
    """The gradebook file cannot be used: which file and why."""


class Gradebook:
    """A gradebook file; use as a context manager."""

    def __init__(self, path: Path) -> None:
        self.path = path
        try:
            self.db = sqlite3.connect(path, timeout=30, isolation_level=None,
                                      check_same_thread=False)
            self.db.execute("PRAGMA journal_mode=WAL")
            self.db.execute("PRAGMA synchronous=FULL")
            self.db.execute("PRAGMA foreign_keys=ON")
            self.db.executescript(SCHEMA)
        except sqlite3.DatabaseError as exc:
            raise GradebookError(f"{path}: not a usable gradebook: {exc}") from None

    def __enter__(self) -> Gradebook:
        return self

    def __exit__(self, *exc: object) -> None:
        self.db.close()

    # -- runs ------------------------------------------------------------------------
    def start_run(self, *, started: str, command: str, version: str,
                  guards: Sequence[str]) -> int:
        with self.db:
            self.db.execute("BEGIN IMMEDIATE")
            cursor = self.db.execute(
                "INSERT INTO runs (started, status, command, gpulab_version, guards) "
                "VALUES (?, 'running', ?, ?, ?)",
                (started, command, version, json.dumps(list(guards))))
        assert cursor.lastrowid is not None
        return cursor.lastrowid

    def end_run(self, run_id: int, *, finished: str, status: str) -> None:
        with self.db:
            self.db.execute("UPDATE runs SET finished = ?, status = ? WHERE id = ?",
                            (finished, status, run_id))

    def gpu_event(self, run_id: int, at: str, gpu: str, event: str) -> None:
        with self.db:
            self.db.execute("INSERT INTO gpu_events VALUES (?, ?, ?, ?)", (run_id, at, gpu, event))

    # -- what is graded ------------------------------------------------------------------
    def set_exercise(self, name: str, checks_hash: str, max_points: float, gpu: bool) -> None:
        with self.db:
            self.db.execute("INSERT OR REPLACE INTO exercises VALUES (?, ?, ?, ?)",
                            (name, checks_hash, max_points, int(gpu)))

    def exercise(self, name: str) -> tuple[str, float] | None:
        row = self.db.execute("SELECT checks_hash, max_points FROM exercises WHERE name = ?",
                              (name,)).fetchone()
        return (row[0], float(row[1])) if row else None

    def set_learner(self, slug: str, name: str, source: str) -> None:
        with self.db:
            self.db.execute("INSERT OR REPLACE INTO learners VALUES (?, ?, ?)",
                            (slug, name, source))

    def graded(self) -> dict[tuple[str, str], tuple[str, str, str]]:
        """(learner, exercise) -> (notebook hash, checks hash, kind) for every stored grade."""
        return {(r[0], r[1]): (r[2], r[3], r[4]) for r in self.db.execute(
            "SELECT learner, exercise, notebook_hash, checks_hash, kind FROM grades")}

    def record(self, slug: str, grade: ExerciseGrade, *, checks_hash: str, gpu: str,
               run_id: int, graded_at: str) -> None:
        """Store one grade and its checks, replacing an earlier one, in one transaction."""
        with self.db:
            self.db.execute("BEGIN IMMEDIATE")
            self.db.execute("DELETE FROM checks WHERE learner = ? AND exercise = ?",
                            (slug, grade.exercise))
            self.db.execute(
                "INSERT OR REPLACE INTO grades VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (slug, grade.exercise, grade.notebook_hash, checks_hash, grade.kind,
                 grade.earned, grade.possible, grade.message, json.dumps(list(grade.guards)),
                 gpu, grade.duration_s, run_id, graded_at))
            self.db.executemany(
                "INSERT INTO checks VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [(slug, grade.exercise, n, c.check, c.title, c.outcome, c.points, c.earned,
                  c.message, int(c.hidden)) for n, c in enumerate(grade.checks)])

    # -- reading back --------------------------------------------------------------------
    def learners(self, exercises: Sequence[str]) -> list[LearnerGrades]:
        """Every learner with their grades on `exercises`, in that order, sorted by slug."""
        checks: dict[tuple[str, str], list[CheckRow]] = {}
        for row in self.db.execute(
                "SELECT learner, exercise, name, title, outcome, points, earned, message, hidden "
                "FROM checks ORDER BY learner, exercise, position"):
            checks.setdefault((row[0], row[1]), []).append(CheckRow(
                row[2], row[3], row[4], float(row[5]), float(row[6]), row[7], bool(row[8])))
        grades: dict[tuple[str, str], ExerciseGrade] = {}
        for row in self.db.execute(
                "SELECT learner, exercise, kind, earned, possible, message, guards, duration_s, "
                "notebook_hash FROM grades"):
            grades[(row[0], row[1])] = ExerciseGrade(
                row[1], row[2], float(row[3]), float(row[4]), row[5],
                tuple(checks.get((row[0], row[1]), [])), tuple(json.loads(row[6])),
                float(row[7]), row[8])
        out = []
        for slug, name in self.db.execute("SELECT slug, name FROM learners ORDER BY slug"):
            mine = tuple(grades[(slug, e)] for e in exercises if (slug, e) in grades)
            out.append(LearnerGrades(name, slug, mine))
        return out

    def dump(self) -> dict[str, list[tuple[object, ...]]]:
        """The gradebook's contents without timings and run ids: for comparing two runs."""
        return {
            "learners": self.db.execute("SELECT * FROM learners ORDER BY slug").fetchall(),
            "exercises": self.db.execute("SELECT * FROM exercises ORDER BY name").fetchall(),
            "grades": self.db.execute(
                "SELECT learner, exercise, notebook_hash, checks_hash, kind, earned, possible, "
                "message, guards, gpu FROM grades ORDER BY learner, exercise").fetchall(),
            "checks": self.db.execute("SELECT * FROM checks ORDER BY learner, exercise, position"
                                      ).fetchall(),
        }
