"""`gpulab grade` on a hostile class: right grades, a finished run, others unaffected.

The class is built from the roofline exercise (tests/helpers/adversarial_class.py);
grading runs for real: bubblewrap, rlimits and cgroups where this machine has
them, a pytest process per job, learner code in a sandboxed worker.
"""

from __future__ import annotations

import contextlib
import csv
import hashlib
import os
import random
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from gpulab.grading import sandbox
from gpulab.grading.classrun.grade import grade_class
from gpulab.grading.classrun.grade_model import GradeError, GradeOptions
from gpulab.grading.gradebook import SCHEMA_VERSION, Gradebook, GradebookError
from gpulab.grading.gradebook.verdict import CheckRow, ExerciseGrade
from helpers.adversarial_class import CASES, FULL, PARTIAL, ROOT, build_class
from helpers.run_attacks import graded_count

needs_bwrap = pytest.mark.skipif(
    not sandbox.available().bubblewrap,
    reason="bubblewrap cannot make a sandbox on this machine: "
    + sandbox.available().bubblewrap_problem,
)

TIMEOUT = 20.0  # per learner and exercise; the slow cases run into it


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    """The adversarial class graded once; shared by the tests that read the results."""
    if not sandbox.available().bubblewrap:
        pytest.skip(
            "bubblewrap cannot make a sandbox here: " + sandbox.available().bubblewrap_problem
        )
    folder = tmp_path_factory.mktemp("class")
    out = tmp_path_factory.mktemp("graded")
    cases = build_class(folder, out)
    victim = sha(folder / "victim" / "roofline.ipynb")
    started = time.monotonic()
    summary = grade_class(GradeOptions(folder, out, ("roofline",), workers=2, timeout=TIMEOUT))
    return {
        "cases": cases,
        "summary": summary,
        "out": out,
        "folder": folder,
        "tag": summary.tag,
        "victim": victim,
        "seconds": time.monotonic() - started,
    }


@needs_bwrap
def test_every_hostile_case_gets_its_grade(hostile):
    summary = hostile["summary"]
    worth = summary.maxima["roofline"]
    assert worth > 0
    got = {learner.slug: learner.exercises[0] for learner in summary.learners}
    assert set(got) == set(hostile["cases"])
    wrong = []
    for slug, case in hostile["cases"].items():
        grade = got[slug]
        want = worth if case.earned == FULL else case.earned
        partial_wrong = case.earned == PARTIAL and not 0 < grade.earned < worth
        if (
            grade.kind not in case.kinds
            or partial_wrong
            or (case.earned >= 0 and grade.earned != want)
        ):
            wrong.append(
                f"{slug}: got {grade.kind} {grade.earned:g}, want "
                f"{'/'.join(case.kinds)} {want:g} ({grade.message[:200]})"
            )
    assert not wrong, "\n".join(wrong)


@needs_bwrap
def test_the_run_leaves_the_others_and_the_grader_alone(hostile):
    out, folder = hostile["out"], hostile["folder"]
    assert sha(folder / "victim" / "roofline.ipynb") == hostile["victim"]
    assert sha(out / "submissions" / "victim" / "roofline.ipynb") == hostile["victim"]
    with contextlib.closing(sqlite3.connect(out / "gradebook.sqlite")) as db:
        assert db.execute("PRAGMA integrity_check").fetchone() == ("ok",)  # still whole
        runs = db.execute("SELECT status FROM runs").fetchall()
    assert runs == [("finished",)]
    assert not list(Path("/").glob("gpulab-was-here"))
    leftovers = [
        p
        for p in Path("/proc").iterdir()
        if p.name.isdigit() and b"GPULAB_JOB=" + hostile["tag"].encode() in _environ(p)
    ]
    assert not leftovers, f"learner processes outlived the run: {leftovers}"
    home = sandbox.available().cgroup.partition(":")[2]
    homes = [item.rpartition("=")[2] for item in home.split(",") if item]
    assert not [h for h in homes if (Path(h) / f"gpulab-run-{hostile['tag']}").exists()]


def _environ(proc: Path) -> bytes:
    try:
        return (proc / "environ").read_bytes()
    except OSError:
        return b""


@needs_bwrap
def test_outputs_say_what_happened_and_keep_hidden_checks_hidden(hostile):
    out = hostile["out"]
    rows = list(csv.reader((out / "grades.csv").read_text(encoding="utf-8").splitlines()))
    assert rows[0] == ["Learner", "Slug", "roofline", "Total"]
    assert rows[1][0] == "Points possible"
    by_slug = {row[1]: row for row in rows[2:]}
    assert set(by_slug) == set(hostile["cases"])
    assert float(by_slug["stub"][2]) == 0
    assert float(by_slug["good"][2]) == float(rows[1][2])
    hidden_file = ROOT / "solutions" / "memory-hierarchy" / "test_roofline_hidden.py"
    hidden_names = [
        line.split("(")[0].removeprefix("def ").strip()
        for line in hidden_file.read_text().splitlines()
        if line.startswith("def test_")
    ]
    assert hidden_names
    page = (out / "feedback" / "stub.html").read_text(encoding="utf-8")
    markdown = (out / "feedback" / "stub.md").read_text(encoding="utf-8")
    for name in hidden_names:  # named, with points...
        assert name in page and name.replace("_", "\\_") in markdown
    hidden_docs = [
        line.strip().strip('"')
        for line in hidden_file.read_text().splitlines()
        if line.strip().startswith('"""') and len(line.strip()) > 8
    ]
    for doc in hidden_docs:  # ...but not described
        assert doc not in page and doc not in markdown
    assert "bubblewrap" in page
    with Gradebook(out / "gradebook.sqlite") as book:
        guards = book.db.execute(
            "SELECT DISTINCT guards FROM grades WHERE guards != '[]'"
        ).fetchall()
    assert len(guards) == 1 and "bubblewrap" in guards[0][0]


@needs_bwrap
def test_grading_twice_gives_the_same_gradebook(hostile, tmp_path):
    out = hostile["out"]
    before = _dump(out)
    summary = grade_class(
        GradeOptions(hostile["folder"], out, ("roofline",), workers=2, timeout=TIMEOUT)
    )
    assert summary.graded == 0 and summary.reused == len(hostile["cases"])
    assert _dump(out) == before
    fast = (
        "good",
        "stub",
        "sys-exit",
        "always-equal",
        "deleted-answer",
        "invalid-json",
        "syntax-error-in-one-part",
    )
    again = tmp_path / "again"
    (again / "class").mkdir(parents=True)
    for name in fast:
        shutil.copytree(hostile["folder"] / name, again / "class" / name)
    grade_class(
        GradeOptions(
            again / "class", again / "out", ("roofline",), workers=2, timeout=TIMEOUT, regrade=True
        )
    )
    first = _subset(before, fast, out)
    second = _subset(_dump(again / "out"), fast, again / "out")
    assert second == first


def _dump(out: Path) -> dict[str, list[tuple[object, ...]]]:
    with Gradebook(out / "gradebook.sqlite") as book:
        return book.dump()


def _subset(dump, slugs, out: Path):
    """The rows of `slugs`, with the run's own folder written as OUT."""

    def clean(row):
        return tuple(str(v).replace(str(out), "OUT") if isinstance(v, str) else v for v in row)

    return {
        table: [clean(r) for r in rows if r[0] in slugs]
        for table, rows in dump.items()
        if table in ("grades", "checks")
    }


@needs_bwrap
def test_killed_run_resumes_to_the_same_gradebook(tmp_path):
    """kill -9 the grader at random points; the same command finishes the job identically."""
    names = (
        "good",
        "stub",
        "sys-exit",
        "always-equal",
        "monkeypatch",
        "deleted-answer",
        "invalid-json",
        "fake-output",
        "network",
        "edited-setup",
    )
    cases = tuple(c for c in CASES if c.name in names)
    folder = tmp_path / "class"
    reference = tmp_path / "reference"
    build_class(folder, reference, cases)
    grade_class(GradeOptions(folder, reference, ("roofline",), workers=2, timeout=TIMEOUT))
    out = tmp_path / "killed"
    command = [
        sys.executable,
        "-m",
        "gpulab",
        "grade",
        str(folder),
        "--out",
        str(out),
        "--exercises",
        "roofline",
        "--workers",
        "2",
        "--timeout",
        str(TIMEOUT),
    ]
    rng = random.Random(1234)
    kills = 0
    logs = []
    for attempt in range(6):
        logs.append(tmp_path / f"attempt-{attempt}.log")
        # killed once the gradebook holds 0 to 2 grades more than the last attempt left:
        # a point in the run chosen by its progress, not by a guess of how long it takes
        target = graded_count(out) + rng.randrange(3)
        with logs[-1].open("wb") as log:
            process = subprocess.Popen(
                command, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
            )
        deadline = time.monotonic() + 120
        while (
            process.poll() is None
            and time.monotonic() < deadline
            and (graded_count(out) < max(target, 0))
        ):
            time.sleep(0.02)
        time.sleep(rng.uniform(0.0, 0.3))  # and somewhere inside the next job
        if process.poll() is not None:
            break
        os.killpg(process.pid, signal.SIGKILL)  # the grader and its children, at once
        process.wait()
        kills += 1
    done = subprocess.run(command, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    assert kills >= 1, "the run finished before it could be killed: make the class larger"
    for log in logs:  # a run that was not killed must have ended cleanly
        text = log.read_text(errors="replace")
        assert "Traceback" not in text and "gpulab grade:" not in text, (
            f"{log.name}:\n{text[-3000:]}"
        )
    assert _subset(_dump(out), names, out) == _subset(_dump(reference), names, reference)


def test_refuses_without_a_sandbox_unless_unsafe(tmp_path, monkeypatch):
    """No bubblewrap on PATH: no grading, unless the instructor says --unsafe."""
    folder = tmp_path / "class"
    build_class(folder, tmp_path / "out", tuple(c for c in CASES if c.name == "good"))
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    sandbox.available.cache_clear()
    try:
        with pytest.raises(GradeError, match=r"refusing to grade.*bubblewrap"):
            grade_class(GradeOptions(folder, tmp_path / "out", ("roofline",)))
        summary = grade_class(GradeOptions(folder, tmp_path / "out", ("roofline",), unsafe=True))
        grade = summary.learners[0].exercises[0]
        assert grade.kind == "right"
        assert any("no file-system isolation" in line for line in grade.guards)
    finally:
        sandbox.available.cache_clear()


def test_cli_reports_bad_input_without_a_traceback(tmp_path):
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "gpulab",
            "grade",
            str(tmp_path / "nope"),
            "--out",
            str(tmp_path / "out"),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2
    assert "no such folder or zip file" in done.stderr and "Traceback" not in done.stderr
    assert done.stderr.splitlines()[0].startswith("gpulab grade: ")  # no progress bar first
    done = subprocess.run(
        [sys.executable, "-m", "gpulab", "grade", str(tmp_path), "--exercises", "no-such-exercise"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2 and "no exercise named 'no-such-exercise'" in done.stderr
    done = subprocess.run(
        [sys.executable, "-m", "gpulab", "grade", str(tmp_path), "--gpus", "first"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2 and "--gpus 'first'" in done.stderr


@pytest.mark.skipif(
    shutil.which("nvidia-smi") is not None,
    reason="this machine has an NVIDIA GPU; the check is for a --gpus list NVML cannot read",
)
def test_a_gpu_nvml_cannot_read_is_refused_before_grading(tmp_path):
    """--gpus names GPUs to trust with learner work: one NVML cannot see is an error, up front."""
    folder = tmp_path / "class" / "ada"
    folder.mkdir(parents=True)
    shutil.copy(ROOT / "solutions" / "cuda-programming" / "vector-add.ipynb", folder)
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "gpulab",
            "grade",
            str(tmp_path / "class"),
            "--exercises",
            "vector-add",
            "--gpus",
            "0,1",
            "--unsafe",
            "--out",
            str(tmp_path / "out"),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 2, done.stderr
    assert (
        "--gpus 0,1: NVML cannot read GPU 0; this machine has no NVIDIA GPU NVML can read"
        in done.stderr
    )
    assert "Traceback" not in done.stderr
    assert not (tmp_path / "out" / "grades.csv").exists()


# The gradebook as gpulab wrote it before its schema had a version (user_version 0).
SCHEMA_0 = """
CREATE TABLE runs (id INTEGER PRIMARY KEY, started TEXT NOT NULL, finished TEXT,
    status TEXT NOT NULL, command TEXT NOT NULL, gpulab_version TEXT NOT NULL,
    guards TEXT NOT NULL);
CREATE TABLE exercises (name TEXT PRIMARY KEY, checks_hash TEXT NOT NULL,
    max_points REAL NOT NULL, gpu INTEGER NOT NULL);
CREATE TABLE learners (slug TEXT PRIMARY KEY, name TEXT NOT NULL, source TEXT NOT NULL);
CREATE TABLE grades (learner TEXT NOT NULL REFERENCES learners(slug), exercise TEXT NOT NULL,
    notebook_hash TEXT NOT NULL, checks_hash TEXT NOT NULL, kind TEXT NOT NULL,
    earned REAL NOT NULL, possible REAL NOT NULL, message TEXT NOT NULL, guards TEXT NOT NULL,
    gpu TEXT NOT NULL, duration_s REAL NOT NULL, run_id INTEGER NOT NULL REFERENCES runs(id),
    graded_at TEXT NOT NULL, PRIMARY KEY (learner, exercise));
CREATE TABLE checks (learner TEXT NOT NULL, exercise TEXT NOT NULL, position INTEGER NOT NULL,
    name TEXT NOT NULL, title TEXT NOT NULL, outcome TEXT NOT NULL, points REAL NOT NULL,
    earned REAL NOT NULL, message TEXT NOT NULL, hidden INTEGER NOT NULL,
    PRIMARY KEY (learner, exercise, position),
    FOREIGN KEY (learner, exercise) REFERENCES grades(learner, exercise) ON DELETE CASCADE);
CREATE TABLE gpu_events (run_id INTEGER NOT NULL REFERENCES runs(id), at TEXT NOT NULL,
    gpu TEXT NOT NULL, event TEXT NOT NULL);
INSERT INTO runs VALUES (1, 't0', NULL, 'running', 'gpulab grade class', '0.1', '[]');
INSERT INTO learners VALUES ('ada', 'Ada', 'class/ada');
INSERT INTO grades VALUES ('ada', 'roofline', 'nb', 'ck', 'right', 21, 21, '', '[]', '', 1.5,
    1, 't0');
INSERT INTO checks VALUES ('ada', 'roofline', 0, 'test_a', 'A', 'passed', 21, 21, '', 0);
"""


def test_a_gradebook_without_a_schema_version_is_brought_up_to_date(tmp_path):
    path = tmp_path / "gradebook.sqlite"
    with contextlib.closing(sqlite3.connect(path)) as db:
        db.executescript(SCHEMA_0)
    with Gradebook(path) as book:
        assert book.db.execute("PRAGMA user_version").fetchone() == (SCHEMA_VERSION,)
        assert [(d.id, d.tag, d.cgroups) for d in book.mark_killed(finished="t1")] == [(1, "", "")]
        grade = book.learners(["roofline"])[0].exercises[0]
        assert (grade.kind, grade.earned, [c.check for c in grade.checks]) == (
            "right",
            21.0,
            ["test_a"],
        )
        run = book.start_run(
            started="t2", command="c", version="v", guards=["g"], tag="tg", cgroups="v2:/x"
        )
        hidden = ExerciseGrade(
            "roofline",
            "wrong",
            0,
            21,
            checks=(CheckRow("test_h", "H", "failed", 21, 0, "", True, "expected 42, got 7"),),
        )
        book.record("ada", hidden, checks_hash="ck", gpu="", run_id=run, graded_at="t2")
        assert book.hidden_messages("ada", "roofline") == {"test_h": "expected 42, got 7"}
        shown = book.learners(["roofline"])[0].exercises[0].checks
        assert [(c.check, c.message) for c in shown] == [("test_h", "")]
        assert book.db.execute("SELECT status FROM runs ORDER BY id").fetchall() == [
            ("killed",),
            ("running",),
        ]
    with Gradebook(path) as again:  # opened as it is, nothing redone
        assert again.hidden_messages("ada", "roofline") == {"test_h": "expected 42, got 7"}


def test_a_file_that_is_no_gradebook_is_refused_in_words(tmp_path):
    path = tmp_path / "gradebook.sqlite"
    path.write_bytes(b"not a database at all, just some bytes" * 100)
    with pytest.raises(GradebookError, match="not a usable gradebook"):
        Gradebook(path)
