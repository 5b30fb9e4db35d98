"""Time limits count a job's own time, not the machine's (the red team's H3).

On a machine that others kept busy, an honest notebook was graded ``timeout``
by a wall clock, and the grade was kept. Now a limit counts the job's CPU time
and the wall time it did not spend waiting for a CPU (`gpulab.grading.sandbox.jobtime`);
a job kept from the CPU past `PATIENCE` times its limit is ``not-run`` (no
verdict, graded again by the next run), while an endless loop or a wait that
never ends is still a timeout. The busy machine is made for real: this process
and its children are held to one CPU, beside spinners in sessions of their own
(each a scheduling group, as another user's processes are).
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import msgspec
import nbformat
import pytest

from gpulab.course import load_course
from gpulab.grading.build import build_all
from gpulab.grading.checks.cells import Cell
from gpulab.grading.checks.learner import Learner, LearnerError
from gpulab.grading.checks.notebook import read_notebook
from gpulab.grading.checks.protocol import CheckResult
from gpulab.grading.checks.runner import CheckReport, run_checks
from gpulab.grading.gradebook.verdict import BUSY, UNGRADED, verdict
from gpulab.grading.sandbox.jobtime import POLL_S, JobClock
from helpers.squares_course import CHECKS, solution_notebook

MANIFEST = """\
[course]
title = "t"

[[lessons]]
id = "basics"
day = 1
title = "Basics"

[[exercises]]
name = "squares"
lesson = "basics"
gpu = false
time_limit = 30
hints = ["multiply"]
"""


@pytest.fixture
def course_root(tmp_path: Path) -> Path:
    (tmp_path / "lessons").mkdir()
    (tmp_path / "lessons" / "course.toml").write_text(MANIFEST)
    (tmp_path / "lessons" / "basics.md").write_text(
        "---\ntitle: Basics\nday: 1\nobjectives: [x]\n---\n# Basics\n\n- a node\n"
    )
    (tmp_path / "solutions" / "basics").mkdir(parents=True)
    (tmp_path / "exercises" / "basics").mkdir(parents=True)
    nbformat.write(solution_notebook(), tmp_path / "solutions" / "basics" / "squares.ipynb")
    (tmp_path / "exercises" / "basics" / "test_squares.py").write_text(CHECKS)
    build_all(load_course(tmp_path / "lessons"))
    return tmp_path


def _exercise(root: Path) -> object:
    (found,) = load_course(root / "lessons").exercises()
    return found


def _answered(root: Path, answer: str) -> Path:
    notebook = read_notebook(root / "exercises" / "basics" / "squares.ipynb")
    for cell in notebook.cells:
        if cell.get("metadata", {}).get("gpulab", {}).get("role") == "answer":
            cell.source = answer
    path = root / "mine.ipynb"
    nbformat.write(notebook, path)
    return path


SQUARE = "def square(x):\n    return x * x\n"


@contextlib.contextmanager
def busy_machine(spinners: int = 16) -> Iterator[None]:
    """This process and what it starts held to one CPU, beside `spinners` processes that
    spin there, each in a session (a scheduling group) of its own."""
    allowed = os.sched_getaffinity(0)
    cpu = min(allowed)
    crowd = [
        subprocess.Popen(
            [sys.executable, "-S", "-c", f"import os; os.sched_setaffinity(0, {{{cpu}}})\n"
             "while True: pass"],
            start_new_session=True,
        )
        for _ in range(spinners)
    ]  # fmt: skip
    os.sched_setaffinity(0, {cpu})
    try:
        yield
    finally:
        os.sched_setaffinity(0, allowed)
        for process in crowd:
            process.kill()
            process.wait()


def test_checks_the_machine_keeps_from_the_cpu_are_not_run_never_timeout(
    course_root: Path,
) -> None:
    """A right answer whose checks could not get a CPU: no verdict (not-run, graded again by
    the next run). By the wall clock they ran past their limit: a timeout, kept."""
    with busy_machine():
        report = run_checks(
            _exercise(course_root),  # type: ignore[arg-type]
            _answered(course_root, SQUARE),
            timeout=1.5,
        )
    assert report.status == "error", report
    assert report.message.startswith("the grading machine was too busy"), report.message
    assert "waited" in report.message and "for a CPU" in report.message
    kind, message, _ = verdict(report)
    assert kind == "not-run" and kind in UNGRADED
    assert message == report.message


def test_a_call_the_machine_keeps_from_the_cpu_is_busy_not_timeout() -> None:
    """The same for one call into the learner's code: the worker, starved, answers nothing
    within four times the call's limit; that is "busy", which makes the exercise not-run.
    (A call's clock starts counting CPU at its first look, half a second in, and counts that
    half second as the job's own time.)"""
    work = "def square(x):\n    sum(range(4 * 10**7))  # half a second of CPU\n    return x * x\n"
    cells = [Cell("answer square", work)]
    with (
        busy_machine(),
        Learner(cells, timeout=1.0) as learner,
        pytest.raises(LearnerError) as raised,
    ):
        learner.call("square", 3)
    assert raised.value.kind == "busy", raised.value
    assert "too busy to run your code" in str(raised.value)
    with Learner(cells, timeout=10.0) as learner:  # the machine idle again: an answer
        assert learner.call("square", 3) == 9


@pytest.mark.parametrize(
    ("call_timeout", "timeout", "said"),
    [
        (60.0, 2.0, "the checks took longer than 2 s and were stopped"),
        (1.0, 30.0, "your code ran longer than 1 s and was stopped"),
    ],
    ids=["whole-run", "one-call"],
)
def test_a_wait_that_never_ends_is_a_timeout(
    course_root: Path, call_timeout: float, timeout: float, said: str
) -> None:
    """A sleep uses no CPU, and waits for no CPU either: its own time runs as the wall clock
    does, and it is a timeout at its limit, not at four times it."""
    sleeper = "import time\n\n\ndef square(x):\n    time.sleep(600)\n"
    report = run_checks(
        _exercise(course_root),  # type: ignore[arg-type]
        _answered(course_root, sleeper),
        call_timeout=call_timeout,
        timeout=timeout,
    )
    if timeout < call_timeout:
        assert (report.status, report.message) == ("timeout", said)
    else:
        assert report.status == "failed"
        assert said in report.results[0].message and report.results[0].kind == "timeout"
    assert verdict(report)[0] == "timeout"


def test_the_clock_counts_cpu_time_and_own_wall_time() -> None:
    """An endless loop runs out by its CPU time, a sleep by its own wall time; the clock says
    which, with how much of each it had."""
    for code, used in (("while True: pass", "s of CPU"), ("import time; time.sleep(60)", "own")):
        child = subprocess.Popen([sys.executable, "-S", "-c", code])
        clock = JobClock(child.pid, 1.0, fresh=True)
        try:
            with pytest.raises(TimeoutError) as raised:  # Starved, after 4 s at most, fails
                while True:
                    time.sleep(POLL_S / 5)
                    clock.check()
        finally:
            child.kill()
            child.wait()
        assert str(raised.value).startswith("1 s used: ") and used in str(raised.value)
        if used == "own":
            assert clock.used()[1].cpu_s < 0.5


def test_a_busy_check_is_no_verdict_whatever_else_failed() -> None:
    """A check that failed as "busy" makes the exercise not-run, before any other failure;
    a hidden one's message is never shown."""
    busy = CheckResult("test_a", "a", "failed", 2.0, "while calling a(): too busy", kind="busy")
    wrong = CheckResult("test_b", "b", "failed", 1.0, "b gave 3, not 4")
    timeout = CheckResult("test_c", "c", "failed", 1.0, "ran longer", kind="timeout")
    report = CheckReport("squares", Path("x.ipynb"), "failed", "", (wrong, timeout, busy))
    assert verdict(report)[:2] == ("not-run", "while calling a(): too busy")
    hidden = CheckReport(
        "squares", Path("x.ipynb"), "failed", "", (msgspec.structs.replace(busy, hidden=True),)
    )
    assert verdict(hidden)[:2] == ("not-run", BUSY)
