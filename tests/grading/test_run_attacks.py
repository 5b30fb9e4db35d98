"""Attacks on a grading run as a whole: each stopped, and the rest of the class graded right.

Each test grades a small class for real (bubblewrap, a pytest process per
job, SQLite) in which one or two learners attack the run around the sandbox:
text no encoder takes, markup in names, a notebook changed after the intake,
a second run into the same folder, a newer gradebook, a grader killed with
SIGKILL. The learners are built in tests/helpers/run_attacks.py from
tests/helpers/adversarial_class.py.
"""

from __future__ import annotations

import contextlib
import csv
import os
import random
import re
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import pytest

from gpulab.course.manifest import ExerciseEntry
from gpulab.grading import sandbox
from gpulab.grading.checks.gpu import gpu_missing
from gpulab.grading.checks.protocol import CheckResult
from gpulab.grading.checks.runner import CheckReport
from gpulab.grading.classrun.feedback import NOT_RUN_NOTE
from gpulab.grading.classrun.grade import grade_class
from gpulab.grading.classrun.grade_model import GradeError, GradeOptions
from gpulab.grading.classrun.run import Done, GpuEvent, Job, Writer, run_jobs
from gpulab.grading.gradebook import SCHEMA_VERSION, Gradebook, GradebookError
from gpulab.grading.gradebook.verdict import CheckRow, ExerciseGrade, plain, verdict
from helpers.adversarial_class import Case
from helpers.run_attacks import (
    MARKUP_FILE,
    MARKUP_LEARNER,
    MARKUP_MEMBERS,
    MARKUP_NAME,
    MARKUP_ZIP,
    ORDINARY,
    SLOW,
    SOLUTION,
    SURROGATE,
    _solution_as_named,
    build,
    gradebook_rows,
    sha,
    stub_bytes,
    tagged_processes,
)

needs_bwrap = pytest.mark.skipif(
    not sandbox.available().bubblewrap,
    reason="bubblewrap cannot make a sandbox on this machine: "
    + sandbox.available().bubblewrap_problem,
)
TIMEOUT = 20.0
EXERCISE = "roofline"


def _grades(out: Path) -> dict[str, ExerciseGrade]:
    with Gradebook(out / "gradebook.sqlite") as book:
        return {learner.slug: learner.exercises[0] for learner in book.learners([EXERCISE])}


def _worth(out: Path) -> float:
    with Gradebook(out / "gradebook.sqlite") as book:
        known = book.exercise(EXERCISE)
    assert known is not None
    return known.max_points


def _assert_ordinary(grades: dict[str, ExerciseGrade], worth: float) -> None:
    """good and victim: right, all points; stub: wrong, none."""
    got = {slug: (grades[slug].kind, grades[slug].earned) for slug in ("good", "victim", "stub")}
    assert got == {"good": ("right", worth), "victim": ("right", worth), "stub": ("wrong", 0.0)}


def _grade_argv(folder: Path, out: Path, *extra: str, timeout: str = str(TIMEOUT)) -> list[str]:
    """The command line of `gpulab grade` as the instructor types it."""
    return [
        sys.executable,
        "-m",
        "gpulab",
        "grade",
        str(folder),
        "--out",
        str(out),
        "--exercises",
        EXERCISE,
        "--workers",
        "2",
        "--timeout",
        timeout,
        *extra,
    ]


def _grade(
    folder: Path, out: Path, *extra: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """`gpulab grade` as the instructor runs it."""
    return subprocess.run(
        _grade_argv(folder, out, *extra),
        capture_output=True,
        encoding="utf-8",
        timeout=600,
        env={**os.environ, **(env or {})},
    )


# -- learner text -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "made"),
    [
        ("plain text, as is: é ü 漢 😀", "plain text, as is: é ü 漢 😀"),
        ("lone \ud800 and \udfff", "lone \ufffd and \ufffd"),
        ("\ud83d\ude00 a pair", "😀 a pair"),
        (
            "ESC \x1b[2J, BEL \x07, NUL \x00, C1 \x85",
            "ESC \\x1b[2J, BEL \\x07, NUL \\x00, C1 \\x85",
        ),
        ("lines\r\nkept\n\ttabbed, CR \r alone", "lines\nkept\n\ttabbed, CR \\r alone"),
        (
            "\u202eright-to-left, zero\u200bwidth, \u2028",
            "\\u202eright-to-left, zero\\u200bwidth, \\u2028",
        ),
        ("no\u00a0break space", "no\u00a0break space"),
    ],
)
def test_plain_makes_learner_text_storable_and_visible(text: str, made: str) -> None:
    assert plain(text) == made
    plain(text).encode("utf-8")  # every encoder takes it


@needs_bwrap
def test_hostile_text_is_stored_printed_and_shown_as_text(tmp_path: Path) -> None:
    """A lone surrogate in a check's message crashed the run's recording (V2); markup in zip
    member names crashed the summary and could hyperlink the terminal (V13)."""
    folder, out = tmp_path / "class", tmp_path / "out"
    build(folder, (*ORDINARY, SURROGATE, MARKUP_ZIP, MARKUP_LEARNER))
    done = _grade(folder, out, env={"FORCE_COLOR": "1", "COLUMNS": "500"})
    assert done.returncode == 0, done.stderr[-3000:]
    assert "Traceback" not in done.stderr
    printed = done.stdout + done.stderr
    assert "\x1b]8;" not in printed  # no hyperlink reached the terminal
    for name in (*MARKUP_MEMBERS[:2], MARKUP_FILE):  # each named, as text
        assert name.removeprefix("../") in done.stdout, name
    grades, worth = _grades(out), _worth(out)
    _assert_ordinary(grades, worth)
    assert (grades["zara"].kind, grades["zara"].earned) == ("right", worth)
    with Gradebook(out / "gradebook.sqlite") as book:
        learners = {g.learner: g for g in book.learners([EXERCISE])}
        hidden = book.hidden_messages("mallory", EXERCISE)
        leaked = book.db.execute(
            "SELECT count(*) FROM checks WHERE hidden = 1 AND message != ''"
        ).fetchone()[0]
        problems = " ".join(str(r[0]) for r in book.db.execute("SELECT problem FROM problems"))
        runs = book.db.execute("SELECT status FROM runs").fetchall()
    assert runs == [("finished",)]
    assert learners[MARKUP_NAME].exercises[0].kind == "right"
    mallory = grades["mallory"]
    assert mallory.kind == "wrong" and 0 < mallory.earned < worth  # her other answers count
    message = next(c.message for c in mallory.checks if c.check == "test_arithmetic_intensity")
    assert "ValueError: \ufffd lone \ufffd [link=https://evil.example/]click[/link] [/]" in message
    assert "\\x1b]8;;https://evil.example/" in message and "\\u202eevil" in message
    assert "\x1b" not in message and "\u202e" not in message
    # the hidden checks' messages: kept for the instructor, never in a place feedback reads
    assert "\ufffd lone" in hidden["test_zero_flops"]
    assert leaked == 0
    assert "[/]x.ipynb" in problems and "\x1b" not in problems
    page = (out / "feedback" / "mallory.html").read_text(encoding="utf-8")
    markdown = (out / "feedback" / "mallory.md").read_text(encoding="utf-8")
    assert "\ufffd lone" in page and "\x1b" not in page + markdown
    # a hidden check is named only in its exercise's total, never given a row of its own
    assert '<td class="check">test_zero_flops</td>' not in page
    assert re.search(
        r'<p class="hidden-total">Hidden checks: <span class="points">[^<]+</span>'
        r"[^<]*test_zero_flops",
        page,
    )
    with (out / "grades.csv").open(encoding="utf-8", newline="") as f:
        rows = {row[0]: row for row in csv.reader(f)}
    assert rows[MARKUP_NAME][2] == f"{worth:g}" and float(rows["mallory"][2]) == mallory.earned


# -- a job's failure is the job's ---------------------------------------------------------


@needs_bwrap
def test_a_jobs_failure_is_that_jobs_not_run_grade_and_the_run_goes_on(tmp_path: Path) -> None:
    """Two learners' notebooks become unreadable after the intake: an exception in each job."""
    folder, out = tmp_path / "class", tmp_path / "out"
    gone, folded = (Case(name, ("right",), -1.0, _solution_as_named) for name in ("gone", "dir"))
    build(folder, (*ORDINARY, gone, folded))
    work = out / "submissions"

    def progress(text: str, done: int, total: int) -> None:
        if done == 0:  # planned, and no job started yet
            (work / "gone" / "roofline.ipynb").unlink()
            (work / "dir" / "roofline.ipynb").unlink()
            (work / "dir" / "roofline.ipynb").mkdir()

    summary = grade_class(
        GradeOptions(folder, out, (EXERCISE,), workers=2, timeout=TIMEOUT), progress=progress
    )
    grades, worth = _grades(out), _worth(out)
    _assert_ordinary(grades, worth)
    assert grades["gone"].kind == grades["dir"].kind == "not-run"
    assert "FileNotFoundError" in grades["gone"].message
    assert "OSError" in grades["dir"].message and "not a regular file" in grades["dir"].message
    assert grades["gone"].guards == ()  # nothing of the learner's ran
    assert summary.graded == 5 and not summary.problems
    assert sorted(p.name for p in (out / "feedback").glob("*.html")) == [
        "dir.html",
        "gone.html",
        "good.html",
        "stub.html",
        "victim.html",
    ]
    with (out / "grades.csv").open(encoding="utf-8", newline="") as f:
        rows = list(csv.reader(f))
    assert rows[1][:2] == ["Points possible", NOT_RUN_NOTE]
    cells = {row[1]: row[2:] for row in rows[2:]}
    assert cells["gone"] == ["", ""] and cells["dir"] == ["", ""]  # no grade, not 0
    assert cells["good"] == [f"{worth:g}", f"{worth:g}"]
    assert not (out / ".jobs").exists()
    (work / "dir" / "roofline.ipynb").rmdir()  # the instructor clears the way
    again = grade_class(GradeOptions(folder, out, (EXERCISE,), workers=2, timeout=TIMEOUT))
    assert again.graded == 2 and again.reused == 3  # a not-run grade is tried again
    assert {s: (g.kind, g.earned) for s, g in _grades(out).items() if s in ("gone", "dir")} == {
        "gone": ("right", worth),
        "dir": ("right", worth),
    }


@needs_bwrap
def test_the_hash_stored_is_of_the_notebook_graded(tmp_path: Path) -> None:
    """The victim's copy is swapped for the stub between the intake's hash and the checks."""
    folder, out = tmp_path / "class", tmp_path / "out"
    build(folder, ORDINARY)
    copy = out / "submissions" / "victim" / "roofline.ipynb"
    swapped = stub_bytes()

    def progress(text: str, done: int, total: int) -> None:
        if done == 0:
            copy.write_bytes(swapped)

    grade_class(
        GradeOptions(folder, out, (EXERCISE,), workers=2, timeout=TIMEOUT), progress=progress
    )
    grades, worth = _grades(out), _worth(out)
    assert (grades["victim"].kind, grades["victim"].earned) == ("wrong", 0.0)  # the stub's
    assert grades["victim"].notebook_hash == sha(copy) != sha(folder / "victim" / "roofline.ipynb")
    assert (grades["good"].kind, grades["stub"].kind) == ("right", "wrong")
    # the next run sees the intake's hash differ from the stored one, and grades it again
    again = grade_class(GradeOptions(folder, out, (EXERCISE,), workers=2, timeout=TIMEOUT))
    assert again.graded == 1
    assert (_grades(out)["victim"].kind, _grades(out)["victim"].earned) == ("right", worth)
    assert _grades(out)["victim"].notebook_hash == sha(folder / "victim" / "roofline.ipynb")


# -- one run per output folder ------------------------------------------------------------


@needs_bwrap
def test_a_second_run_into_the_same_out_is_refused_and_the_first_is_unharmed(
    tmp_path: Path,
) -> None:
    folder, other, out = tmp_path / "class", tmp_path / "stubs", tmp_path / "out"
    build(folder, (*ORDINARY, SLOW))
    for name in ("good", "victim"):  # the same learners, handing in stubs
        (other / name).mkdir(parents=True)
        (other / name / "roofline.ipynb").write_bytes(stub_bytes())
    first = subprocess.Popen(
        _grade_argv(folder, out, timeout="8"),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        encoding="utf-8",
    )
    try:
        deadline = time.monotonic() + 120
        while (
            time.monotonic() < deadline
            and first.poll() is None
            and gradebook_rows(out, "SELECT status FROM runs") != [("running",)]
        ):
            time.sleep(0.05)
        assert (out / ".lock").read_text().strip() == str(first.pid)
        with pytest.raises(GradeError, match=rf"another gpulab grade \(pid {first.pid}\)"):
            grade_class(GradeOptions(other, out, (EXERCISE,), workers=2, timeout=TIMEOUT))
        refused = _grade(other, out)
        assert first.poll() is None, "the first run ended before the second was tried"
    finally:
        _, stderr = first.communicate(timeout=600)
    assert refused.returncode == 2 and "Traceback" not in refused.stderr
    assert f"another gpulab grade (pid {first.pid}) is grading into this folder" in refused.stderr
    assert first.returncode == 0, stderr[-3000:]
    grades, worth = _grades(out), _worth(out)
    _assert_ordinary(grades, worth)
    assert grades["slow"].kind == "timeout"
    assert grades["victim"].notebook_hash == sha(out / "submissions" / "victim" / "roofline.ipynb")
    assert grades["victim"].notebook_hash == sha(folder / "victim" / "roofline.ipynb")
    assert gradebook_rows(out, "SELECT status FROM runs") == [("finished",)]
    # once the first run is over, the folder is free again
    after = grade_class(GradeOptions(other, out, (EXERCISE,), workers=2, timeout=TIMEOUT))
    assert after.graded == 2
    assert _grades(out)["victim"].kind == "wrong"


# -- the gradebook's schema ---------------------------------------------------------------


@needs_bwrap
def test_a_gradebook_of_a_newer_schema_is_refused_untouched(tmp_path: Path) -> None:
    folder, out = tmp_path / "class", tmp_path / "out"
    build(folder, ORDINARY)
    out.mkdir()
    with contextlib.closing(sqlite3.connect(out / "gradebook.sqlite")) as db:
        db.execute("CREATE TABLE future (x)")
        db.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
        db.commit()
    before = (out / "gradebook.sqlite").read_bytes()
    done = _grade(folder, out)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert (
        f"written by a newer gpulab (gradebook schema {SCHEMA_VERSION + 1}; this gpulab "
        f"knows schema {SCHEMA_VERSION} and older)" in done.stderr
    )
    assert (out / "gradebook.sqlite").read_bytes() == before
    assert not (out / "submissions").exists() and not (out / "grades.csv").exists()
    with pytest.raises(GradebookError, match="written by a newer gpulab"):
        Gradebook(out / "gradebook.sqlite")


# -- kill -9 --------------------------------------------------------------------------------


@needs_bwrap
def test_a_run_killed_with_sigkill_is_marked_killed_and_its_leftovers_cleared(
    tmp_path: Path,
) -> None:
    """Only the grader is killed, in the middle of a job: the next run into the same folder
    marks it killed and clears what it left (processes, cgroups, folders)."""
    folder, out = tmp_path / "class", tmp_path / "out"
    build(folder, (*ORDINARY, SLOW))
    first = subprocess.Popen(
        _grade_argv(folder, out, timeout="8"),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    tag, orphans = "", []
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and first.poll() is None:
        rows = gradebook_rows(out, "SELECT tag FROM runs WHERE status = 'running'")
        tag = str(rows[0][0]) if rows else ""
        stored = gradebook_rows(out, "SELECT count(*) FROM grades")
        orphans = tagged_processes(tag) if tag else []
        if stored and int(stored[0][0]) >= 1 and orphans:
            break
        time.sleep(0.05)
    assert first.poll() is None and tag and orphans, "run 1 ended before it could be killed"
    os.kill(first.pid, signal.SIGKILL)  # the grader alone
    first.wait()
    # the checks folder of the job it was running stays behind (named by the grader's pid)
    left = list(Path(tempfile.gettempdir()).glob(f"gpulab-check-{first.pid}-*"))
    assert left
    cgroups = str(gradebook_rows(out, "SELECT cgroups FROM runs")[0][0])
    summary = grade_class(GradeOptions(folder, out, (EXERCISE,), workers=2, timeout=8))
    assert gradebook_rows(out, "SELECT id, status FROM runs ORDER BY id") == [
        (1, "killed"),
        (2, "finished"),
    ]
    assert any(
        note.startswith("run 1 was left running by a grader that was killed")
        for note in summary.notes
    )
    assert not tagged_processes(tag)  # whatever of it had outlived it
    assert not [p for p in left if p.exists()]
    folders = [item.rpartition("=")[2] for item in cgroups.partition(":")[2].split(",") if item]
    assert not [f for f in folders if Path(f).exists()]
    assert not (out / ".jobs").exists()
    grades, worth = _grades(out), _worth(out)
    _assert_ordinary(grades, worth)
    assert grades["slow"].kind == "timeout"


# -- the instructor's view ----------------------------------------------------------------


@pytest.mark.skipif(not gpu_missing(), reason="this machine has a GPU: GPU work is graded here")
def test_gpu_work_on_a_cpu_machine_is_checked_without_a_gpu_never_a_grade(tmp_path: Path) -> None:
    """The checks of a GPU exercise that need no GPU are graded and shown to the learner; the
    exercise has no grade (a blank CSV cell, out of the means) until a GPU runs the rest."""
    folder, out = tmp_path / "class", tmp_path / "out"
    for name in ("ada", "bob"):
        (folder / name).mkdir(parents=True)
    shutil.copy(
        SOLUTION.parents[2] / "solutions" / "cuda-programming" / "vector-add.ipynb", folder / "ada"
    )
    shutil.copy(
        SOLUTION.parents[2] / "exercises" / "cuda-programming" / "vector-add.ipynb", folder / "bob"
    )  # as shipped: nothing answered
    summary = grade_class(GradeOptions(folder, out, ("vector-add",), unsafe=True))
    grades = {g.slug: g.exercises[0] for g in summary.learners}
    assert {g.kind for g in grades.values()} == {"partial"}
    ada, bob = grades["ada"], grades["bob"]
    ran = [c for c in ada.checks if c.outcome != "skipped"]
    assert ran and all(c.outcome == "passed" for c in ran)  # the launch part
    assert ada.earned == sum(c.points for c in ran) > 0 and bob.earned == 0
    assert any(c.outcome == "skipped" for c in ada.checks)  # the kernel part
    assert ada.message.startswith("no NVIDIA GPU on the grading machine: ")
    skipped = sum(c.points for c in ada.checks if c.outcome == "skipped")
    assert ada.message == (
        f"no NVIDIA GPU on the grading machine: {skipped:g} of "
        f"{ada.possible:g} points need a GPU and were not graded; the checks "
        "that need none were"
    )
    assert ada.guards and any("address space" in line for line in ada.guards)  # a CPU job's
    with (out / "grades.csv").open(encoding="utf-8", newline="") as f:
        rows = list(csv.reader(f))
    assert rows[1][:2] == ["Points possible", NOT_RUN_NOTE] and float(rows[1][2]) > 0
    assert [row[2:] for row in rows[2:]] == [["", ""], ["", ""]]
    page = (out / "feedback" / "ada.html").read_text(encoding="utf-8")
    assert "checked without a GPU" in page and "no NVIDIA GPU on the grading machine" in page
    again = grade_class(GradeOptions(folder, out, ("vector-add",), unsafe=True))
    assert again.graded == 2 and again.reused == 0  # tried again, as not-run is


# -- one writer -----------------------------------------------------------------------------


def _entry(name: str, gpu: bool) -> ExerciseEntry:
    return ExerciseEntry(name, "lesson", gpu, 1, (), Path(f"{name}.ipynb"), None)


class _Lanes:
    """Stand-in GPUs: each is taken out of rotation after its `fails_after` jobs."""

    def __init__(self, gpus: list[str], fails_after: dict[str, int]) -> None:
        self.gpus = gpus
        self.fails_after = fails_after
        self.jobs: dict[str, int] = dict.fromkeys(gpus, 0)
        self.lock = threading.Lock()

    def after_job(self, gpu: str) -> str:
        with self.lock:
            self.jobs[gpu] += 1
            return "broke" if self.jobs[gpu] >= self.fails_after.get(gpu, 10**9) else ""


def _store(book: Gradebook, jobs: list[Job], lanes: _Lanes | None) -> tuple[Writer, int, int]:
    """Run `jobs` with 16 threads through the one writer; the writer, the grades yielded and
    the most jobs seen running at once."""
    running, most = 0, 0
    lock = threading.Lock()

    def execute(job: Job, gpu: str) -> ExerciseGrade:
        nonlocal running, most
        with lock:
            running += 1
            most = max(most, running)
        try:
            time.sleep(random.Random(f"{job.slug}/{job.entry.name}").uniform(0, 0.01))
            if job.entry.gpu and not gpu:  # as the checks do without a GPU
                rows = (
                    CheckRow("cpu", "t", "passed", 1.0, 1.0),
                    CheckRow("gpu", "t", "skipped", 1.0, 0.0, "needs an NVIDIA GPU"),
                )
                return ExerciseGrade(
                    job.entry.name,
                    "partial",
                    1.0,
                    2.0,
                    "1 of 2 points not graded here",
                    rows,
                    job.guards,
                    0.0,
                    "h",
                )
            if job.slug.endswith("3"):
                raise RuntimeError(f"boom \ud800 in {job.slug}")
            earned = float("nan") if job.slug.endswith("5") else 2.0
            rows = tuple(
                CheckRow(f"c{n}", "t", "passed", 1.0, 1.0, "m \x1b", n == 0, "secret")
                for n in range(2)
            )
            return ExerciseGrade(
                job.entry.name, "right", earned, 2.0, "", rows, job.guards, 0.0, "h"
            )
        finally:
            with lock:
                running -= 1

    run_id = book.start_run(started="t", command="c", version="v", guards=["g"])
    writer = Writer(book, run_id)
    count = 0
    for item in run_jobs(jobs, execute, workers=16, lanes=lanes, no_gpu="no GPU here"):
        if isinstance(item, GpuEvent):
            writer.event(item)
        else:
            assert isinstance(item, Done)
            writer.done(item)
            count += 1
    return writer, count, most


def test_many_threads_grades_reach_the_one_writer_and_none_is_lost(tmp_path: Path) -> None:
    exercises = [_entry(f"cpu{n}", False) for n in range(5)] + [
        _entry(f"gpu{n}", True) for n in range(3)
    ]
    slugs = [f"l{n:02d}" for n in range(40)]
    jobs = [
        Job(slug, entry, Path("nb.ipynb"), "h", "c", 2.0, ("g",))
        for slug in slugs
        for entry in exercises
    ]
    lanes = _Lanes(["0", "1", "2"], {"1": 3})
    with Gradebook(tmp_path / "gradebook.sqlite") as book:
        for slug in slugs:
            book.set_learner(slug, slug, "src")
        writer, count, most = _store(book, jobs, lanes)
        stored = {
            (r[0], r[1]): (r[2], r[3])
            for r in book.db.execute("SELECT learner, exercise, kind, message FROM grades")
        }
        hidden = book.db.execute("SELECT count(*) FROM hidden_messages").fetchone()[0]
        events = book.db.execute("SELECT gpu, event FROM gpu_events").fetchall()
        assert book.db.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    assert most > 1 and count == len(jobs) == 320
    assert set(stored) == {(job.slug, job.entry.name) for job in jobs}
    assert writer.problems == [] and events == [("1", "broke")]
    assert lanes.jobs["1"] == 3 and sum(lanes.jobs.values()) == 3 * len(slugs)
    for (slug, _), (kind, message) in stored.items():
        if slug.endswith("3"):
            assert (kind, message) == (
                "not-run",
                f"not graded: the grader failed on it: RuntimeError: boom \ufffd in {slug}",
            )
        elif slug.endswith("5"):
            assert kind == "not-run" and "its grade could not be stored: IntegrityError" in message
        else:
            assert (kind, message) == ("right", "")
    stored_right = sum(kind == "right" for kind, _ in stored.values())
    assert hidden == stored_right  # one hidden check per stored grade


def test_gpu_jobs_no_lane_took_run_without_a_gpu_and_say_why(tmp_path: Path) -> None:
    jobs = [
        Job(f"l{n}", _entry("gpu", True), Path("nb.ipynb"), "h", "c", 2.0, ("gpu",), ("cpu",))
        for n in (0, 1, 2, 4, 6, 7)
    ]
    with Gradebook(tmp_path / "gradebook.sqlite") as book:
        for job in jobs:
            book.set_learner(job.slug, job.slug, "src")
        _store(book, jobs, _Lanes(["0", "1"], {"0": 1, "1": 1}))
        kinds = book.db.execute(
            "SELECT kind, message, count(*) FROM grades GROUP BY kind, message ORDER BY kind"
        ).fetchall()
    assert kinds == [
        (
            "partial",
            "every GPU was taken out of rotation: 1 of 2 points need a "
            "GPU and were not graded; the checks that need none were",
            4,
        ),
        ("right", "", 2),
    ]
    with Gradebook(tmp_path / "none.sqlite") as book:
        for job in jobs:
            book.set_learner(job.slug, job.slug, "src")
        _store(book, jobs, None)
        assert book.db.execute("SELECT DISTINCT kind, message FROM grades").fetchall() == [
            (
                "partial",
                "no GPU here: 1 of 2 points need a GPU and were not graded; the checks "
                "that need none were",
            )
        ]


def test_the_gradebook_is_written_only_by_the_thread_that_opened_it(tmp_path: Path) -> None:
    with Gradebook(tmp_path / "gradebook.sqlite") as book:
        failed: list[BaseException] = []

        def other() -> None:
            try:
                book.set_learner("x", "x", "src")
            except BaseException as exc:
                failed.append(exc)

        thread = threading.Thread(target=other)
        thread.start()
        thread.join()
        assert [type(e) for e in failed] == [sqlite3.ProgrammingError]
        assert book.db.execute("SELECT count(*) FROM learners").fetchone() == (0,)


def _result(check: str, outcome: str, points: float, *, gpu: bool = False) -> CheckResult:
    return CheckResult(
        check,
        check,
        outcome,
        points,  # type: ignore[arg-type]
        "needs an NVIDIA GPU (no driver)" if gpu else "",
        needs_gpu=gpu,
    )


@pytest.mark.parametrize(
    ("results", "kind"),
    [
        ((("a", "passed", 2.0, False), ("k", "skipped", 5.0, True)), "partial"),
        ((("a", "failed", 2.0, False), ("k", "skipped", 5.0, True)), "partial"),
        ((("k", "skipped", 5.0, True), ("h", "skipped", 1.0, True)), "not-run"),
        ((("a", "passed", 2.0, False), ("s", "skipped", 1.0, False)), "right"),
    ],
)
def test_a_gpu_exercise_without_a_gpu_is_partial_or_not_run_never_a_grade(
    results: tuple[tuple[str, str, float, bool], ...], kind: str
) -> None:
    """Checks skipped for want of a GPU leave the exercise ungraded, whatever the others did;
    a check skipped for another reason does not."""
    status = (
        "failed"
        if any(r[1] == "failed" for r in results)
        else "skipped"
        if any(r[3] for r in results)
        else "passed"
    )
    report = CheckReport(
        "e",
        Path("e.ipynb"),
        status,  # type: ignore[arg-type]
        "" if status != "skipped" else "checks did not run",
        tuple(_result(c, o, p, gpu=g) for c, o, p, g in results),
    )
    got, message, rows = verdict(report)
    assert got == kind and len(rows) == len(results)
    if kind == "partial":
        assert message == (
            "5 of 7 points were not graded here: needs an NVIDIA GPU (no "
            "driver); the checks that need no GPU were"
        )
