"""The gradebook of grading runs: one SQLite file, written a grade at a time, by one thread.

Each grade (a learner's exercise) is written in one transaction with its
checks, so a run killed at any point leaves every finished grade whole and no
half-written one; the next run reads which (learner, exercise) pairs are
already graded with the same notebook and the same checks, and skips them.
SQLite is in the standard library and is what an instructor can open with any
tool; nothing here needs a server.

One `Gradebook` is one connection, used only by the thread that opened it
(sqlite3 refuses any other): a grading run's jobs hand their grades to that
one writer (`gpulab.grading.run`), so no two transactions ever share the
connection. Every text stored passes through `verdict.plain` first: what
the feedback, the CSV and the summary show later is read back from here.

The schema has a version (``PRAGMA user_version``): a gradebook written by a
newer gpulab is refused, not guessed at; an older one is brought up to date.
The hidden checks' messages sit in a table of their own, ``hidden_messages``,
for the instructor: nothing that writes feedback reads it.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from gpulab.errors import GpulabError
from gpulab.grading.verdict import CheckRow, ExerciseGrade, LearnerGrades, plain

__all__ = ["SCHEMA_VERSION", "DeadRun", "Gradebook", "GradebookError"]

SCHEMA_VERSION = 1
"""0: gpulab before versions (no tag, cgroups, problems or hidden messages); 1: this one."""

SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (
    id INTEGER PRIMARY KEY,
    started TEXT NOT NULL,
    finished TEXT,
    status TEXT NOT NULL,              -- running, finished, stopped, killed
    command TEXT NOT NULL,
    gpulab_version TEXT NOT NULL,
    guards TEXT NOT NULL,              -- JSON list: the isolation in force
    tag TEXT NOT NULL DEFAULT '',      -- the run's name: its jobs' GPULAB_JOB, its cgroups
    cgroups TEXT NOT NULL DEFAULT ''   -- the run's cgroups, as sandbox.Policy.cgroup
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
    notebook_hash TEXT NOT NULL,       -- sha256 of the notebook the checks read ("" if none)
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
    message TEXT NOT NULL,             -- "" for a hidden check: see hidden_messages
    hidden INTEGER NOT NULL,
    PRIMARY KEY (learner, exercise, position),
    FOREIGN KEY (learner, exercise) REFERENCES grades(learner, exercise) ON DELETE CASCADE
);
CREATE TABLE IF NOT EXISTS hidden_messages (  -- the instructor's: feedback never reads it
    learner TEXT NOT NULL,
    exercise TEXT NOT NULL,
    position INTEGER NOT NULL,
    message TEXT NOT NULL,
    PRIMARY KEY (learner, exercise, position),
    FOREIGN KEY (learner, exercise) REFERENCES grades(learner, exercise) ON DELETE CASCADE
);
CREATE TABLE IF NOT EXISTS gpu_events (
    run_id INTEGER NOT NULL REFERENCES runs(id),
    at TEXT NOT NULL,
    gpu TEXT NOT NULL,
    event TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS problems (      -- what a run could not read or do, in its words
    run_id INTEGER NOT NULL REFERENCES runs(id),
    position INTEGER NOT NULL,
    problem TEXT NOT NULL,
    PRIMARY KEY (run_id, position)
)
"""
# Columns a version-0 gradebook lacks, added when it is opened.
_ADDED = {"runs": ("tag TEXT NOT NULL DEFAULT ''", "cgroups TEXT NOT NULL DEFAULT ''")}


class GradebookError(GpulabError):
    """The gradebook file cannot be used: which file and why."""


@dataclass(frozen=True)
class DeadRun:
    """A run an earlier grader left `running`: it was killed; what it may have left behind."""

    id: int
    tag: str
    cgroups: str


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
                "or into another --out.")
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("PRAGMA synchronous=FULL")
        self.db.execute("PRAGMA foreign_keys=ON")
        if found == SCHEMA_VERSION:
            return
        with self.db:
            self.db.execute("BEGIN IMMEDIATE")
            for table, columns in _ADDED.items():
                have = {row[1] for row in self.db.execute(f"PRAGMA table_info({table})")}
                for column in columns if have else ():
                    if column.split()[0] not in have:
                        self.db.execute(f"ALTER TABLE {table} ADD COLUMN {column}")
            for statement in SCHEMA.split(";"):
                self.db.execute(statement)
            self.db.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")

    def __enter__(self) -> Gradebook:
        return self

    def __exit__(self, *exc: object) -> None:
        self.db.close()

    # -- runs ------------------------------------------------------------------------
    def start_run(self, *, started: str, command: str, version: str,
                  guards: Sequence[str], tag: str = "", cgroups: str = "") -> int:
        with self.db:
            self.db.execute("BEGIN IMMEDIATE")
            cursor = self.db.execute(
                "INSERT INTO runs (started, status, command, gpulab_version, guards, tag, "
                "cgroups) VALUES (?, 'running', ?, ?, ?, ?, ?)",
                (plain(started), plain(command), plain(version), _json(guards), plain(tag),
                 cgroups))
        assert cursor.lastrowid is not None
        return cursor.lastrowid

    def end_run(self, run_id: int, *, finished: str, status: str) -> None:
        with self.db:
            self.db.execute("UPDATE runs SET finished = ?, status = ? WHERE id = ?",
                            (plain(finished), plain(status), run_id))

    def mark_killed(self, *, finished: str) -> list[DeadRun]:
        """Mark every run still `running` as `killed`, and return them.

        Only correct while the caller holds the lock on the run's output folder
        (`gpulab.grading.outlock`): then no other run is alive to be running.
        """
        with self.db:
            self.db.execute("BEGIN IMMEDIATE")
            dead = [DeadRun(int(r[0]), str(r[1]), str(r[2])) for r in self.db.execute(
                "SELECT id, tag, cgroups FROM runs WHERE status = 'running' ORDER BY id")]
            self.db.executemany("UPDATE runs SET status = 'killed', finished = ? WHERE id = ?",
                                [(plain(finished), run.id) for run in dead])
        return dead

    def gpu_event(self, run_id: int, at: str, gpu: str, event: str) -> None:
        with self.db:
            self.db.execute("INSERT INTO gpu_events (run_id, at, gpu, event) VALUES (?, ?, ?, ?)",
                            (run_id, plain(at), plain(gpu), plain(event)))

    def add_problems(self, run_id: int, problems: Sequence[str]) -> None:
        """Store what the run could not read or do (they may quote learners' file names)."""
        with self.db:
            self.db.execute("BEGIN IMMEDIATE")
            start = self.db.execute("SELECT count(*) FROM problems WHERE run_id = ?",
                                    (run_id,)).fetchone()[0]
            self.db.executemany(
                "INSERT INTO problems (run_id, position, problem) VALUES (?, ?, ?)",
                [(run_id, start + n, plain(p)) for n, p in enumerate(problems)])

    def problems(self, run_id: int) -> list[str]:
        return [str(r[0]) for r in self.db.execute(
            "SELECT problem FROM problems WHERE run_id = ? ORDER BY position", (run_id,))]

    # -- what is graded ------------------------------------------------------------------
    def set_exercise(self, name: str, checks_hash: str, max_points: float, gpu: bool) -> None:
        with self.db:
            self.db.execute("INSERT OR REPLACE INTO exercises (name, checks_hash, max_points, "
                            "gpu) VALUES (?, ?, ?, ?)",
                            (plain(name), checks_hash, max_points, int(gpu)))

    def exercise(self, name: str) -> tuple[str, float] | None:
        row = self.db.execute("SELECT checks_hash, max_points FROM exercises WHERE name = ?",
                              (name,)).fetchone()
        return (row[0], float(row[1])) if row else None

    def set_learner(self, slug: str, name: str, source: str) -> None:
        with self.db:
            self.db.execute("INSERT OR REPLACE INTO learners (slug, name, source) "
                            "VALUES (?, ?, ?)", (plain(slug), plain(name), plain(source)))

    def graded(self) -> dict[tuple[str, str], tuple[str, str, str]]:
        """(learner, exercise) -> (notebook hash, checks hash, kind) for every stored grade."""
        return {(r[0], r[1]): (r[2], r[3], r[4]) for r in self.db.execute(
            "SELECT learner, exercise, notebook_hash, checks_hash, kind FROM grades")}

    def record(self, slug: str, grade: ExerciseGrade, *, checks_hash: str, gpu: str,
               run_id: int, graded_at: str) -> None:
        """Store one grade and its checks, replacing an earlier one, in one transaction."""
        slug, exercise = plain(slug), plain(grade.exercise)
        with self.db:
            self.db.execute("BEGIN IMMEDIATE")
            self.db.execute("DELETE FROM grades WHERE learner = ? AND exercise = ?",
                            (slug, exercise))     # its checks and hidden messages go with it
            self.db.execute(
                "INSERT INTO grades (learner, exercise, notebook_hash, checks_hash, kind, "
                "earned, possible, message, guards, gpu, duration_s, run_id, graded_at) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (slug, exercise, plain(grade.notebook_hash), checks_hash, plain(grade.kind),
                 grade.earned, grade.possible, plain(grade.message), _json(grade.guards),
                 plain(gpu), grade.duration_s, run_id, plain(graded_at)))
            self.db.executemany(
                "INSERT INTO checks (learner, exercise, position, name, title, outcome, "
                "points, earned, message, hidden) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [(slug, exercise, n, plain(c.check), plain(c.title), plain(c.outcome),
                  c.points, c.earned, "" if c.hidden else plain(c.message), int(c.hidden))
                 for n, c in enumerate(grade.checks)])
            self.db.executemany(
                "INSERT INTO hidden_messages (learner, exercise, position, message) "
                "VALUES (?, ?, ?, ?)",
                [(slug, exercise, n, plain(c.instructor_message or c.message))
                 for n, c in enumerate(grade.checks)
                 if c.hidden and (c.instructor_message or c.message)])

    # -- reading back --------------------------------------------------------------------
    def learners(self, exercises: Sequence[str]) -> list[LearnerGrades]:
        """Every learner with their grades on `exercises`, in that order, sorted by slug.

        What feedback is written from: hidden checks come back without a message.
        """
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

    def hidden_messages(self, slug: str, exercise: str) -> dict[str, str]:
        """For the instructor: each hidden check of a grade, by name, with its message."""
        return {str(r[0]): str(r[1]) for r in self.db.execute(
            "SELECT c.name, h.message FROM hidden_messages h JOIN checks c USING "
            "(learner, exercise, position) WHERE learner = ? AND exercise = ? "
            "ORDER BY position", (slug, exercise))}

    def dump(self) -> dict[str, list[tuple[object, ...]]]:
        """The gradebook's contents without timings, run ids and hidden messages (which quote
        the hidden checks' random inputs): for comparing two runs."""
        return {
            "learners": self.db.execute("SELECT * FROM learners ORDER BY slug").fetchall(),
            "exercises": self.db.execute("SELECT * FROM exercises ORDER BY name").fetchall(),
            "grades": self.db.execute(
                "SELECT learner, exercise, notebook_hash, checks_hash, kind, earned, possible, "
                "message, guards, gpu FROM grades ORDER BY learner, exercise").fetchall(),
            "checks": self.db.execute("SELECT * FROM checks ORDER BY learner, exercise, position"
                                      ).fetchall(),
        }


def _json(lines: Sequence[str]) -> str:
    return json.dumps([plain(line) for line in lines])
