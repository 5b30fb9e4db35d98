"""Measurement that is graded: what a check measured beside the learner, and the learner's
prediction of it, kept from the check's report to the progress, the gradebook, the feedback
page and the notebook's panel.

A real small course: a solution notebook whose answer "measures" (returns a number) and says
its predictions, checks that record both figures with the `measured` fixture, the real runner
(pytest in a process of its own, the learner's code in another), a real SQLite gradebook.
"""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest

from gpulab.course import ProgressStore, load_course
from gpulab.course.manifest import ExerciseEntry
from gpulab.course.progress import Measurement, Progress
from gpulab.grading.build import build_all, solution_path
from gpulab.grading.checks.pytest_plugin import MAX_PREDICTION_TEXT
from gpulab.grading.checks.runner import CheckReport, run_checks
from gpulab.grading.classrun.feedback import feedback_markdown
from gpulab.grading.gradebook import Gradebook
from gpulab.grading.gradebook.verdict import ExerciseGrade, verdict
from gpulab.grading.learn.panel import CheckedNotebook, report_text
from helpers.squares_course import code

MANIFEST = """\
[course]
title = "t"

[[lessons]]
id = "basics"
day = 1
title = "Basics"

[[exercises]]
name = "stopwatch"
lesson = "basics"
gpu = false
time_limit = 30
hidden_points = 1
hints = ["time it"]
"""
LESSON = "---\ntitle: Basics\nday: 1\nobjectives: [x]\n---\n# Basics\n\n- a node\n"
MEASURE = '''def measure(n):
    """How long n steps take, in ms (here: a stand-in that scales with n)."""
    ### BEGIN SOLUTION
    return 0.5 * n
    ### END SOLUTION
'''
PREDICT = '''def predictions():
    """What you expect before measuring."""
    ### BEGIN SOLUTION
    return {"ten_steps": 4.0, "hundred_steps": "about ten times longer"}
    ### END SOLUTION
'''
CHECKS = '''import pytest


@pytest.mark.points(2)
def test_ten_steps(learner, measured):
    """ten steps agree with the check's own figure"""
    yours = learner.call("measure", 10)
    trusted = 5.0
    measured("ten_steps", label="ten steps", unit="ms", yours=yours, trusted=trusted,
             tolerance=0.2)
    assert isinstance(yours, float) and abs(yours - trusted) <= 0.2 * trusted, (
        f"you measured {yours!r} ms, the check 5 ms")


def test_hundred_steps(learner, measured):
    """a hundred steps"""
    yours = learner.call("measure", 100)
    measured("hundred_steps", label="a hundred steps", unit="ms", yours=yours, trusted=50.0,
             tolerance=0.2)
    assert yours == 50.0, "a hundred steps take 50 ms"
'''
HIDDEN = '''def test_secret_steps(learner, measured):
    """secret step counts"""
    yours = learner.call("measure", 7)
    measured("secret", label="seven steps (hidden)", unit="ms", yours=yours, trusted=3.5)
    assert yours == 3.5, "seven steps"
'''


def notebook(measure: str = MEASURE, predict: str = PREDICT) -> nbformat.NotebookNode:
    book = nbformat.v4.new_notebook()
    book.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3"}
    book.cells = [
        nbformat.v4.new_markdown_cell("# Stopwatch"),
        code("import math\n", "setup"),
        code(predict, "answer", "predictions"),
        code(measure, "answer", "measure"),
        code('from gpulab.grading import check\ncheck("stopwatch")', "check"),
    ]
    return book


@pytest.fixture(scope="module")
def course_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("course")
    (root / "lessons").mkdir()
    (root / "lessons" / "course.toml").write_text(MANIFEST)
    (root / "lessons" / "basics.md").write_text(LESSON)
    (root / "solutions" / "basics").mkdir(parents=True)
    (root / "exercises" / "basics").mkdir(parents=True)
    nbformat.write(notebook(), root / "solutions" / "basics" / "stopwatch.ipynb")
    (root / "exercises" / "basics" / "test_stopwatch.py").write_text(CHECKS)
    (root / "solutions" / "basics" / "test_stopwatch_hidden.py").write_text(HIDDEN)
    build_all(load_course(root / "lessons"))
    return root


def entry(root: Path) -> ExerciseEntry:
    (found,) = load_course(root / "lessons").exercises()
    return found


def graded(root: Path, predict: str = PREDICT, measure: str = MEASURE) -> CheckReport:
    """The checks, visible and hidden, on a learner's notebook with these answer cells."""
    path = root / "mine.ipynb"
    nbformat.write(notebook(measure, predict), path)
    return run_checks(entry(root), path, hidden=True)


@pytest.fixture(scope="module")
def solved(course_root: Path) -> CheckReport:
    return run_checks(entry(course_root), solution_path(entry(course_root)), hidden=True)


def test_each_check_keeps_both_figures_and_the_prediction(solved: CheckReport) -> None:
    assert solved.status == "passed"
    assert solved.measurements() == [
        Measurement("ten_steps", "ten steps", "ms", 5.0, 5.0, 0.2, 4.0),
        Measurement(
            "hundred_steps", "a hundred steps", "ms", 50.0, 50.0, 0.2, "about ten times longer"
        ),
        Measurement("secret", "seven steps (hidden)", "ms", 3.5, 3.5, None, None),
    ]
    assert [m.key for m in solved.measurements(hidden=False)] == ["ten_steps", "hundred_steps"]
    first = solved.measurements()[0]
    assert first.agrees is True
    assert first.cells() == (
        "ten steps",
        "4 ms",
        "5 ms",
        "5 ms",
        "agrees (±20%), 1.00× the check's",
    )


def test_a_wrong_figure_is_kept_and_said_to_differ(course_root: Path) -> None:
    report = graded(course_root, measure=MEASURE.replace("0.5 * n", "1.0 * n"))
    assert report.status == "failed"
    ten = report.measurements()[0]
    assert (ten.yours, ten.trusted, ten.agrees) == (10.0, 5.0, False)
    assert ten.cells()[4] == "differs (±20%), 2.00× the check's"


def test_no_prediction_is_no_prediction_never_a_failure(course_root: Path) -> None:
    stub = "def predictions():\n    raise NotImplementedError\n"
    report = graded(course_root, predict=stub)
    assert report.status == "passed"  # a prediction is never graded
    assert [m.predicted for m in report.measurements()] == [None, None, None]
    assert report.measurements()[0].cells()[1] == "—"


def test_hostile_predictions_are_cut_or_left_out(course_root: Path) -> None:
    hostile = (
        "def predictions():\n"
        "    return {'ten_steps': 'x' * 5000, 'hundred_steps': True, 'secret': [1, 2]}\n"
    )
    report = graded(course_root, predict=hostile)
    ten, hundred, secret = report.measurements()
    assert isinstance(ten.predicted, str) and len(ten.predicted) == MAX_PREDICTION_TEXT
    assert ten.predicted.endswith("…")
    assert hundred.predicted is None and secret.predicted is None
    # NaN is refused as an answer anywhere, and a reply past the size limit is refused whole
    for said in ("{'ten_steps': float('nan')}", "{'ten_steps': 'x' * 2 * 10**6}", "[4.0]"):
        report = graded(course_root, predict=f"def predictions():\n    return {said}\n")
        assert report.status == "passed"
        assert [m.predicted for m in report.measurements()] == [None, None, None]
    # a figure that is no finite number is kept as no figure, not passed on
    report = graded(course_root, measure=MEASURE.replace("0.5 * n", "'fast'"))
    assert report.measurements()[0].yours is None
    assert report.measurements()[0].cells()[4] == "no figure to compare"


def test_the_progress_keeps_them(solved: CheckReport, tmp_path: Path) -> None:
    store = ProgressStore(tmp_path / "progress.json")
    progress = Progress()
    progress.record_check(
        "stopwatch",
        workspace="w",
        passed=True,
        earned=solved.earned,
        possible=solved.possible,
        measurements=solved.measurements(),
    )
    store.save(progress)
    again = store.load()
    assert store.warning is None
    assert again.exercises("w")["stopwatch"].measurements == solved.measurements()


def test_a_progress_file_from_before_measurements_still_reads(tmp_path: Path) -> None:
    path = tmp_path / "progress.json"
    path.write_text(
        '{"version": 1, "workspaces": {"w": {"squares": '
        '{"status": "passed", "earned": 3, "possible": 3, "at": "2026-12-01T00:00:00+00:00"}}}}'
    )
    store = ProgressStore(path)
    assert store.load().exercises("w")["squares"].measurements == []
    assert store.warning is None


def test_gradebook_feedback_and_panel_show_them(solved: CheckReport, tmp_path: Path) -> None:
    kind, message, rows = verdict(solved)
    grade = ExerciseGrade("stopwatch", kind, solved.earned, solved.possible, message, rows)
    book = Gradebook(tmp_path / "gradebook.sqlite")
    run = book.start_run(started="2026-12-07", command="gpulab grade", version="t", guards=[])
    book.set_learner("ada", "Ada", "ada.ipynb")
    book.record("ada", grade, checks_hash="h", gpu="", run_id=run, graded_at="2026-12-07")
    (learner,) = book.learners(["stopwatch"])
    (back,) = learner.exercises
    assert [m for c in back.checks for m in c.measurements] == solved.measurements()
    page = feedback_markdown(learner, title="Course", run_at="2026-12-07", maxima={})
    assert "| ten steps | 4 ms | 5 ms | 5 ms | agrees (±20%), 1.00× the check's |" in page
    assert "about ten times longer" in page
    assert "seven steps" not in page  # a hidden check's figures stay the instructor's
    text = report_text(solved)
    assert "ten steps | 4 ms | 5 ms | 5 ms" in text and "seven steps" not in text
    html = CheckedNotebook(solved)._repr_html_()
    assert "gpulab-measured" in html and "about ten times longer" in html
