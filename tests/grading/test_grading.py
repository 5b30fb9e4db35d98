"""Exercises end to end on a small course: build, check, and broken learner notebooks.

Everything here is real: nbformat notebooks on disk, the worker process that
runs the learner's cells, pytest running the checks in a process of its own,
and the `gpulab` command.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

import nbformat
import pytest

from gpulab.course import ProgressStore, load_course
from gpulab.grading.build import build_all, check_all, solution_path
from gpulab.grading.checks.cells import strip_solution
from gpulab.grading.checks.gpu import gpu_missing
from gpulab.grading.checks.notebook import NotebookError, read_notebook
from gpulab.grading.checks.runner import run_checks
from gpulab.grading.gradebook.verdict import verdict
from helpers.squares_course import ANSWER, CHECKS, solution_notebook

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
hidden_points = 1
hints = ["multiply"]
"""
LESSON = "---\ntitle: Basics\nday: 1\nobjectives: [x]\n---\n# Basics\n\n- a node\n"

HIDDEN = '''def test_square_large(learner):
    """squares a large number"""
    assert learner.call("square", 10**6) == 10**12, "large numbers too"
'''


def solution(answer: str = ANSWER) -> nbformat.NotebookNode:
    return solution_notebook(setup="import math\nSCALE = 1\n", answer=answer, explore=True)


@pytest.fixture
def course_root(tmp_path: Path) -> Path:
    (tmp_path / "lessons").mkdir()
    (tmp_path / "lessons" / "course.toml").write_text(MANIFEST)
    (tmp_path / "lessons" / "basics.md").write_text(LESSON)
    (tmp_path / "solutions" / "basics").mkdir(parents=True)
    (tmp_path / "exercises" / "basics").mkdir(parents=True)
    nbformat.write(solution(), tmp_path / "solutions" / "basics" / "squares.ipynb")
    (tmp_path / "exercises" / "basics" / "test_squares.py").write_text(CHECKS)
    (tmp_path / "solutions" / "basics" / "test_squares_hidden.py").write_text(HIDDEN)
    build_all(load_course(tmp_path / "lessons"))
    return tmp_path


def entry(root: Path) -> object:
    (found,) = load_course(root / "lessons").exercises()
    return found


def learner_copy(root: Path, answer: str) -> Path:
    """The exercise as a learner saved it, with `answer` typed into the answer cell."""
    notebook = read_notebook(root / "exercises" / "basics" / "squares.ipynb")
    for cell in notebook.cells:
        if cell.get("metadata", {}).get("gpulab", {}).get("role") == "answer":
            cell.source = answer
    path = root / "mine.ipynb"
    nbformat.write(notebook, path)
    return path


def test_build_strips_answers_and_outputs(course_root: Path) -> None:
    built = read_notebook(course_root / "exercises" / "basics" / "squares.ipynb")
    (answer,) = [c for c in built.cells if c.metadata.get("gpulab", {}).get("role") == "answer"]
    assert answer.source == (
        'def square(x):\n    """x times x."""\n'
        "    # TODO: write your answer here\n"
        "    raise NotImplementedError\n"
    )
    assert answer.metadata["gpulab"] == {"role": "answer", "part": "square"}
    assert all(c.get("outputs", []) == [] for c in built.cells)


def test_unsolved_fails_and_solution_passes_with_points(course_root: Path) -> None:
    shipped = run_checks(entry(course_root))  # type: ignore[arg-type]
    assert shipped.status == "failed"
    assert [r.outcome for r in shipped.results] == ["failed", "failed"]
    assert "NotImplementedError" in shipped.results[0].message
    solved = run_checks(
        entry(course_root),
        solution_path(entry(course_root)),  # type: ignore[arg-type]
        hidden=True,
    )
    assert solved.status == "passed"
    assert (solved.earned, solved.possible) == (4, 4)
    assert [r.title for r in solved.results] == [
        "squares small numbers",
        "squares a float",
        "squares a large number",
    ]
    assert solved.results[2].hidden


def test_dev_check_proves_the_exercise(course_root: Path) -> None:
    lines: list[str] = []
    assert check_all(load_course(course_root / "lessons"), report=lines.append) == []
    assert lines == ["✓ squares"]
    stale = course_root / "exercises" / "basics" / "squares.ipynb"
    stale.write_text(stale.read_text().replace("TODO", "DONE"))
    (problem,) = check_all(load_course(course_root / "lessons"), report=lines.append)
    assert problem.message == "differs from what its solution generates"


@pytest.mark.skipif(gpu_missing() is None, reason="this machine has a GPU: its checks run")
def test_dev_check_proves_a_gpu_exercise_on_its_checks_that_need_no_gpu(course_root: Path) -> None:
    """Without a GPU, a GPU exercise's CPU checks are proved (failing as shipped, passing on
    the solution), and the report says how many points that leaves to a GPU machine."""
    manifest = course_root / "lessons" / "course.toml"
    manifest.write_text(MANIFEST.replace("gpu = false", "gpu = true"))
    hidden = course_root / "solutions" / "basics" / "test_squares_hidden.py"
    hidden.write_text("import pytest\n\n\n@pytest.mark.gpu\n" + HIDDEN)
    lines: list[str] = []
    assert check_all(load_course(course_root / "lessons"), report=lines.append) == []
    assert lines == [
        "✓ squares: the checks that need no GPU (3 of 4 points); the others need "
        "a GPU (--gpu on one)"
    ]
    solution_file = solution_path(entry(course_root))  # type: ignore[arg-type]
    nbformat.write(solution("def square(x):\n    return x + x\n"), solution_file)
    build_all(load_course(course_root / "lessons"))
    problems = check_all(load_course(course_root / "lessons"), report=[].append)
    assert [p.message.split(":")[0] for p in problems] == ["the solution does not pass"]


@pytest.mark.gpu
@pytest.mark.skipif(gpu_missing() is not None, reason=str(gpu_missing()))
def test_dev_check_on_a_gpu_names_the_checks_this_machine_cannot_run(course_root: Path) -> None:
    """On a GPU machine, a check that needs more than it has (two GPUs, say) is named as not
    proven there; the exercise is not failed for it while its other checks ran and passed.
    A check that fails still fails the solution."""
    manifest = course_root / "lessons" / "course.toml"
    manifest.write_text(MANIFEST.replace("gpu = false", "gpu = true"))
    hidden = course_root / "solutions" / "basics" / "test_squares_hidden.py"
    more = '\n\n@pytest.mark.gpu\ndef test_two(learner):\n    pytest.skip("needs two GPUs")\n'
    hidden.write_text("import pytest\n\n\n@pytest.mark.gpu\n" + HIDDEN + more)
    manifest.write_text(manifest.read_text().replace("hidden_points = 1", "hidden_points = 2"))
    lines: list[str] = []
    course = load_course(course_root / "lessons")
    assert check_all(course, gpu=True, report=lines.append) == []
    assert lines == ["✓ squares: not run on this machine, so not proven: test_two (needs two GPUs)"]
    hidden.write_text("import pytest\n\n\n" + HIDDEN.replace("10**12", "0") + more)
    problems = check_all(load_course(course_root / "lessons"), gpu=True, report=lines.append)
    assert [p.message.split(":")[0] for p in problems] == ["the solution does not pass"]


def test_dev_check_keeps_the_hidden_points_the_learner_is_told_true(course_root: Path) -> None:
    manifest = course_root / "lessons" / "course.toml"
    for said, wrong in (("hidden_points = 3\n", "says 3"), ("", "does not say")):
        manifest.write_text(MANIFEST.replace("hidden_points = 1\n", said))
        (problem,) = check_all(load_course(course_root / "lessons"), report=[].append)
        assert problem.message == (
            f"exercise 'squares': hidden_points {wrong}, but its hidden checks are worth 1"
        )
        assert problem.hint == "set hidden_points = 1" and problem.line == 10  # name = "squares"


@pytest.mark.parametrize(
    ("answer", "message"),
    [
        ("def square(x) return x", "SyntaxError"),
        ("def square(x):\n    return x + x\n", "square(3) gave 6, not 9: multiply x by itself"),
        ("raise RuntimeError('boom')\n", "RuntimeError: boom"),
        ("def square(x):\n    while True:\n        pass\n", "ran longer than 2 s"),
        ("import sys\nsys.exit(3)\n", "the code called sys.exit(3)"),
        ("import os\nos._exit(0)\n", "the worker process ended"),
        ("def square(x):\n    return {1, 2}\n", "not plain JSON data"),
        ("def square(x):\n    print('9')\n    return None\n", "gave None, not 0"),
        ("def sqr(x):\n    return x * x\n", "no function named 'square'"),
        ("def square(x):\n    return 'x' * 3_000_000\n", "larger than 1 MiB"),
    ],
)
def test_a_broken_answer_gets_a_clear_message(course_root: Path, answer: str, message: str) -> None:
    report = run_checks(
        entry(course_root),
        learner_copy(course_root, answer),  # type: ignore[arg-type]
        call_timeout=2,
    )
    assert report.status == "failed"
    assert message in report.results[0].message, report.results[0].message
    assert "Traceback" not in report.results[0].message
    assert "gpulab/grading" not in report.results[0].message


def test_checks_that_run_past_the_time_limit_are_a_timeout_status(course_root: Path) -> None:
    """A timeout is said by the report's status, which the verdict reads (never its text)."""
    pid_file = course_root / "learner.pid"
    endless = learner_copy(
        course_root,
        "import os\n\n\ndef square(x):\n"
        f"    open({str(pid_file)!r}, 'w').write(str(os.getpid()))\n"
        "    while True:\n        pass\n",
    )
    report = run_checks(
        entry(course_root),
        endless,
        call_timeout=30,  # type: ignore[arg-type]
        timeout=3,
    )
    assert (report.status, report.message) == (
        "timeout",
        "the checks took longer than 3 s and were stopped",
    )
    assert verdict(report)[0] == "timeout"
    assert verdict(replace(report, status="error"))[0] == "not-run"  # the words alone: no
    # the learner's endless loop ended with the checks process that was stopped
    learner = int(pid_file.read_text())
    deadline = time.monotonic() + 10
    while _running(learner) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _running(learner), f"the learner's process {learner} outlived its checks"


def _running(pid: int) -> bool:
    """Whether `pid` is a live process (a zombie waiting to be reaped is not)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]
    except OSError:
        return False
    return state != "Z"


def test_missing_answer_cell_and_invalid_json(course_root: Path) -> None:
    notebook = read_notebook(course_root / "exercises" / "basics" / "squares.ipynb")
    notebook.cells = [
        c for c in notebook.cells if c.metadata.get("gpulab", {}).get("role") != "answer"
    ]
    path = course_root / "gone.ipynb"
    nbformat.write(notebook, path)
    report = run_checks(entry(course_root), path)  # type: ignore[arg-type]
    assert report.status == "failed"
    assert "the answer cell for square is missing" in report.results[0].message
    broken = course_root / "broken.ipynb"
    broken.write_text('{"cells": [')
    invalid = run_checks(entry(course_root), broken)  # type: ignore[arg-type]
    assert invalid.status == "invalid"
    assert invalid.message.startswith(f"{broken}:1: not valid notebook JSON")


def test_strip_solution_keeps_indentation_and_rejects_unclosed() -> None:
    text = "x = 1\n    ### BEGIN SOLUTION\n    y = 2\n    ### END SOLUTION\nz = 3"
    assert strip_solution(text) == (
        "x = 1\n    # TODO: write your answer here\n    raise NotImplementedError\nz = 3"
    )
    with pytest.raises(NotebookError, match="never closed"):
        strip_solution("### BEGIN SOLUTION\nx = 1")
    with pytest.raises(NotebookError, match="without"):
        strip_solution("### END SOLUTION")


def _gpulab(
    env: dict[str, str], *args: str, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "gpulab", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=timeout,
    )


def test_gpulab_check_command(course_root: Path) -> None:
    state = course_root / "state"
    env = {
        "GPULAB_COURSE_DIR": str(course_root / "lessons"),
        "PATH": "/usr/bin:/bin",
        "GPULAB_STATE_DIR": str(state),
    }
    released = course_root / "exercises" / "basics" / "squares.ipynb"
    pristine = released.read_bytes()

    def record(workspace: Path) -> object:
        records = ProgressStore(state / "progress.json").load().exercises(str(workspace))
        return records.get("squares")

    nowhere = _gpulab(env, "check", "squares")
    assert nowhere.returncode == 2 and "you have no workspace yet: `gpulab init`" in nowhere.stderr
    made = _gpulab(env, "init", str(course_root / "ws"))
    assert made.returncode == 0, made.stderr
    workspace = (course_root / "ws").resolve()
    mine = workspace / "basics" / "squares.ipynb"
    assert mine.read_bytes() == pristine

    # another notebook is judged, but never kept as the workspace's result
    done = _gpulab(env, "check", "squares", "--notebook", str(solution_path(entry(course_root))))  # type: ignore[arg-type]
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.splitlines()[0] == "squares: passed (3 of 3 points)"
    assert "not kept in your progress: it is not your workspace's notebook" in done.stderr
    assert record(workspace) is None

    failing = _gpulab(env, "check", "squares")
    assert failing.returncode == 1
    assert "✗ squares small numbers  [0/2]" in failing.stdout
    failed = record(workspace)
    assert (failed.status, failed.earned, failed.possible) == ("failing", 0, 3)  # type: ignore[attr-defined]

    shutil.copy(solution_path(entry(course_root)), mine)  # type: ignore[arg-type]
    by_path = _gpulab(env, "check", str(mine))  # a notebook's path names its exercise
    assert by_path.returncode == 0, by_path.stdout + by_path.stderr
    passed = record(workspace)
    assert (passed.status, passed.earned, passed.possible) == ("passed", 3, 3)  # type: ignore[attr-defined]

    broken = course_root / "broken.ipynb"
    broken.write_text("{")
    invalid = _gpulab(env, "check", "squares", "--notebook", str(broken), timeout=60)
    assert invalid.returncode == 2
    assert record(workspace) == passed
    unknown = _gpulab(env, "check", "nope", timeout=60)
    assert unknown.returncode == 2 and "no exercise named 'nope'" in unknown.stderr
    assert released.read_bytes() == pristine  # the course's copy was never written


def test_gpulab_reset_keeps_the_learners_notebook(course_root: Path) -> None:
    state = course_root / "state"
    env = {
        "GPULAB_COURSE_DIR": str(course_root / "lessons"),
        "PATH": "/usr/bin:/bin",
        "GPULAB_STATE_DIR": str(state),
    }
    assert _gpulab(env, "init", str(course_root / "ws")).returncode == 0
    mine = (course_root / "ws" / "basics" / "squares.ipynb").resolve()
    shutil.copy(solution_path(entry(course_root)), mine)  # type: ignore[arg-type]
    solved = mine.read_bytes()
    assert _gpulab(env, "check", "squares").returncode == 0
    reset = _gpulab(env, "reset", "squares")
    assert reset.returncode == 0, reset.stderr
    (backup,) = mine.parent.glob("squares.backup-*.ipynb")
    assert backup.read_bytes() == solved and f"Yours is kept as {backup}" in reset.stdout
    assert (
        mine.read_bytes() == (course_root / "exercises" / "basics" / "squares.ipynb").read_bytes()
    )
    progress = ProgressStore(state / "progress.json").load()
    assert progress.exercises(str(mine.parents[1])) == {}  # the old pass is forgotten
    again = _gpulab(env, "reset", "squares")  # pristine: no second backup
    assert again.returncode == 0 and len(list(mine.parent.glob("squares.backup-*"))) == 1
    mine.unlink()  # deleted by mistake
    missing = _gpulab(env, "open", "squares", "--no-browser")
    assert missing.returncode == 2
    assert f"{mine} is missing: `gpulab reset squares` brings it back" in missing.stderr
    assert _gpulab(env, "reset", "squares").returncode == 0 and mine.is_file()


def test_the_solution_runs_top_to_bottom_in_a_real_kernel(course_root: Path) -> None:
    from nbclient import NotebookClient

    from gpulab.course.workspace import init_workspace

    state = course_root / "state"
    env = {"GPULAB_COURSE_DIR": str(course_root / "lessons"), "GPULAB_STATE_DIR": str(state)}
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("GPULAB_STATE_DIR", str(state))
        workspace, _ = init_workspace(load_course(course_root / "lessons"), course_root / "ws")
    path = workspace.root / "basics" / "squares.ipynb"  # solved in the workspace
    shutil.copy(solution_path(entry(course_root)), path)  # type: ignore[arg-type]
    notebook = read_notebook(path)
    NotebookClient(
        notebook,
        timeout=120,
        kernel_name="python3",
        resources={"metadata": {"path": str(path.parent)}},
    ).execute(env=env)
    explore = [c for c in notebook.cells if c.metadata.get("gpulab", {}).get("role") == "explore"]
    assert explore[0].outputs[0]["text"] == "9\n"
    (panel,) = notebook.cells[-1].outputs  # the check cell shows one result
    data = panel["data"]
    assert data["text/plain"].startswith("squares: passed (3 of 3 points)")
    shown = data["text/html"]
    assert 'class="gpulab-result-panel"' in shown and "passed</span> — 3 of 3 points" in shown
    assert shown.count("✓") == data["text/plain"].count("✓") >= 2  # every check passed
    assert "✗" not in shown and "save (Ctrl+S)" in shown
    # the notebook's check keeps the result for the app, like `gpulab check`
    record = ProgressStore(state / "progress.json").load().exercises(workspace.key)["squares"]
    assert (record.status, record.earned, record.possible) == ("passed", 3, 3)
