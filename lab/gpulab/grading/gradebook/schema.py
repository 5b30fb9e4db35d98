"""The gradebook's tables, as SQL, the version of their schema, and the statements that fill
and read them.

`SCHEMA` creates every table of a gradebook (`gpulab.grading.gradebook`):
the runs, the exercises and the learners (each with the identity their slug
is fixed to), the grades and their checks, the figures
a check measured beside the learner's with the learner's prediction of each,
the hidden checks' messages (the instructor's own: nothing that writes feedback
reads them), the runs' GPU events and problems. `SCHEMA_VERSION` is the version a
gradebook file records (``PRAGMA user_version``): the gradebook refuses a file
of a newer one and brings an older one up to date, adding the columns it lacks
(`ADDED_COLUMNS`) before the tables it lacks.
"""

from __future__ import annotations

import sqlite3

__all__ = [
    "ADDED_COLUMNS",
    "INSERT_CHECK",
    "INSERT_GRADE",
    "INSERT_MEASUREMENT",
    "SCHEMA",
    "SCHEMA_VERSION",
    "SELECT_CHECKS",
    "SELECT_GRADES",
    "SELECT_MEASUREMENTS",
    "upgrade",
]

SCHEMA_VERSION = 3
"""0: gpulab before versions (no tag, cgroups, problems or hidden messages); 1: before
measurements; 2: before learners' identities; 3: this one."""

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
    slug TEXT PRIMARY KEY,             -- given once, for good, to the learner of identity
    name TEXT NOT NULL,
    source TEXT NOT NULL,
    identity TEXT NOT NULL DEFAULT ''  -- sha256 of the learner's key ('' before schema 3)
);
CREATE UNIQUE INDEX IF NOT EXISTS learners_identity ON learners (identity) WHERE identity != '';
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
CREATE TABLE IF NOT EXISTS measurements (  -- what a check measured beside the learner
    learner TEXT NOT NULL,
    exercise TEXT NOT NULL,
    position INTEGER NOT NULL,         -- the check's position in checks
    number INTEGER NOT NULL,           -- the measurement's place among the check's
    key TEXT NOT NULL,
    label TEXT NOT NULL,
    unit TEXT NOT NULL,
    yours REAL,                        -- the learner's figure (NULL: none, or not a number)
    trusted REAL,                      -- the check's own, measured in the same run
    tolerance REAL,
    predicted TEXT NOT NULL,           -- JSON: the learner's prediction (null: none)
    PRIMARY KEY (learner, exercise, position, number),
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
# Columns an older gradebook lacks, added when it is opened.
ADDED_COLUMNS = {
    "runs": ("tag TEXT NOT NULL DEFAULT ''", "cgroups TEXT NOT NULL DEFAULT ''"),
    "learners": ("identity TEXT NOT NULL DEFAULT ''",),
}

INSERT_GRADE = (
    "INSERT INTO grades (learner, exercise, notebook_hash, checks_hash, kind, earned, possible, "
    "message, guards, gpu, duration_s, run_id, graded_at) VALUES (:learner, :exercise, "
    ":notebook_hash, :checks_hash, :kind, :earned, :possible, :message, :guards, :gpu, "
    ":duration_s, :run_id, :graded_at)"
)
INSERT_CHECK = (
    "INSERT INTO checks (learner, exercise, position, name, title, outcome, points, earned, "
    "message, hidden) VALUES (:learner, :exercise, :position, :check, :title, :outcome, "
    ":points, :earned, :message, :hidden)"
)
SELECT_CHECKS = (
    'SELECT learner, exercise, name AS "check", title, outcome, points, earned, message, hidden '
    "FROM checks ORDER BY learner, exercise, position"
)
INSERT_MEASUREMENT = (
    "INSERT INTO measurements (learner, exercise, position, number, key, label, unit, yours, "
    "trusted, tolerance, predicted) VALUES (:learner, :exercise, :position, :number, :key, "
    ":label, :unit, :yours, :trusted, :tolerance, :predicted)"
)
SELECT_MEASUREMENTS = (
    "SELECT learner, exercise, position, key, label, unit, yours, trusted, tolerance, predicted "
    "FROM measurements ORDER BY learner, exercise, position, number"
)
SELECT_GRADES = (
    "SELECT learner, exercise, kind, earned, possible, message, guards, duration_s, "
    "notebook_hash FROM grades"
)


def upgrade(db: sqlite3.Connection) -> None:
    """Bring a gradebook of an older schema (or a new, empty file) up to `SCHEMA_VERSION`, in
    one transaction: the columns its tables lack first (`ADDED_COLUMNS`), then the tables
    and indexes it lacks."""
    with db:
        db.execute("BEGIN IMMEDIATE")
        for table, columns in ADDED_COLUMNS.items():
            have = {row[1] for row in db.execute(f"PRAGMA table_info({table})")}
            for column in columns if have else ():
                if column.split()[0] not in have:
                    db.execute(f"ALTER TABLE {table} ADD COLUMN {column}")
        for statement in SCHEMA.split(";"):
            db.execute(statement)
        db.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
