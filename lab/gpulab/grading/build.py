"""`gpulab dev build` and `gpulab dev check`: exercises generated from solutions, and proof.

`build_all` writes every ``exercises/<lesson>/<name>.ipynb`` from its
solution. `check_all` proves each exercise sound: the shipped notebook is
exactly what its solution generates, its checks fail on it as shipped (every
check that is not skipped), and the solution passes every check, hidden ones
too. On a machine without a GPU (or without --gpu) a GPU exercise is proved
on the checks that need no GPU; the others are skipped, and say so. On a GPU
machine a check that needs more than it has (two GPUs, two NUMA nodes) is named
as not run, so not proven there.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from gpulab.course.catalog import Course
from gpulab.course.manifest import ExerciseEntry
from gpulab.course.paths import CoursePaths
from gpulab.course.problems import Problem
from gpulab.grading.checks.cells import to_exercise
from gpulab.grading.checks.notebook import (
    NotebookError,
    notebook_text,
    read_notebook,
    write_notebook,
)
from gpulab.grading.checks.runner import CheckReport, run_checks

__all__ = ["build_all", "build_text", "check_all", "solution_path", "stray_files"]


def solution_path(entry: ExerciseEntry) -> Path:
    """solutions/<lesson>/<name>.ipynb beside exercises/."""
    return CoursePaths.of_notebook(entry.notebook).solution(entry.lesson, entry.name)


def build_text(entry: ExerciseEntry) -> str:
    """The exercise notebook, as text, that the solution generates."""
    source = solution_path(entry)
    return notebook_text(to_exercise(read_notebook(source), source))


def build_all(course: Course, names: Sequence[str] = ()) -> list[Path]:
    """Write every exercise notebook (or those named) from its solution; the paths written."""
    written = []
    for entry in _chosen(course, names):
        source = solution_path(entry)
        write_notebook(to_exercise(read_notebook(source), source), entry.notebook)
        written.append(entry.notebook)
    return written


def check_all(
    course: Course,
    names: Sequence[str] = (),
    *,
    gpu: bool = False,
    report: Callable[[str], object] = print,
) -> list[Problem]:
    """Every exercise (or those named) built, failing as shipped and solved; the problems.
    Checking them all also finds stray files: ones in exercises/ or solutions/ that belong
    to no exercise (a renamed exercise's leftovers ship to learners otherwise)."""
    problems: list[Problem] = [] if names else stray_files(course)
    for entry in _chosen(course, names):
        cpu_only = entry.gpu and not gpu
        found, solved = _check_one(entry, cpu_only=cpu_only)
        problems.extend(found)
        if not cpu_only:
            unrun = [r for r in solved.results if r.outcome == "skipped"]
            said = "; ".join(f"{r.check} ({r.message})" for r in unrun)
            report(
                f"{'✓' if not found else '✗'} {entry.name}"
                + (f": not run on this machine, so not proven: {said}" if unrun else "")
            )
            continue
        ran = sum(r.points for r in solved.results if r.outcome != "skipped")
        worth = sum(r.points for r in solved.results)
        report(
            f"{'✓' if not found else '✗'} {entry.name}: the checks that need no GPU "
            f"({ran:g} of {worth:g} points); the others need a GPU (--gpu on one)"
        )
    return problems


def _chosen(course: Course, names: Sequence[str]) -> list[ExerciseEntry]:
    return [entry for entry in course.exercises() if not names or entry.name in names]


def _hidden_points(entry: ExerciseEntry, shipped: CheckReport) -> list[Problem]:
    """course.toml's hidden_points must be what the hidden checks are worth: the learner is
    told that number (never the checks)."""
    if not shipped.results:
        return []  # the checks did not run: said elsewhere
    worth = sum(r.points for r in shipped.results if r.hidden)
    if entry.hidden_points == worth:
        return []
    said = "does not say" if entry.hidden_points is None else f"says {entry.hidden_points:g}"
    return [
        Problem(
            _manifest_of(entry),
            entry.line,
            f"exercise {entry.name!r}: hidden_points {said}, but its hidden checks are "
            f"worth {worth:g}",
            f"set hidden_points = {worth:g}",
        )
    ]


def _manifest_of(entry: ExerciseEntry) -> Path:
    """The course.toml that lists the exercise."""
    return CoursePaths.of_notebook(entry.notebook).manifest


def _check_one(
    entry: ExerciseEntry, *, cpu_only: bool = False
) -> tuple[list[Problem], CheckReport]:
    """The exercise's problems, and its solution's report. `cpu_only`: a GPU exercise on a
    machine without a GPU, whose checks that need one are skipped: those that run must
    fail as shipped and pass on the solution, as everywhere."""
    source = solution_path(entry)
    try:
        expected = build_text(entry)
    except NotebookError as exc:
        return [Problem(source, None, str(exc))], CheckReport(entry.name, source, "error")
    if not entry.notebook.is_file() or entry.notebook.read_text(encoding="utf-8") != expected:
        return [
            Problem(
                entry.notebook,
                None,
                "differs from what its solution generates",
                "run gpulab dev build and commit the result",
            )
        ], CheckReport(entry.name, source, "error")
    shipped = run_checks(entry, entry.notebook, hidden=True)
    problems = _hidden_points(entry, shipped)
    if shipped.status in ("invalid", "timeout", "error"):
        problems.append(
            Problem(
                entry.notebook, None, f"the checks could not run on the exercise: {shipped.message}"
            )
        )
    else:
        passing = [r.check for r in shipped.results if r.outcome == "passed"]
        if passing:
            problems.append(
                Problem(
                    entry.notebook,
                    None,
                    f"checks pass on the unsolved exercise: {', '.join(passing)}",
                    "a check must fail until the learner answers",
                )
            )
    solved = run_checks(entry, source, hidden=True)
    failing = [f"{r.check}: {r.message}" for r in solved.results if r.outcome == "failed"]
    ran = any(r.outcome == "passed" for r in solved.results)
    if not failing and solved.status in ("passed", "skipped") and (cpu_only or ran):
        # skipped on a GPU machine: checks that need what it lacks (two GPUs, two NUMA
        # nodes), each named by `check_all` as not proven here
        return problems, solved
    if solved.status != "passed":
        detail = "; ".join(failing) or solved.message
        problems.append(Problem(source, None, f"the solution does not pass: {detail}"))
    return problems, solved


def stray_files(course: Course) -> list[Problem]:
    """Files under exercises/ and solutions/ that are no exercise's notebook, checks or
    solution (a README aside)."""
    paths = CoursePaths.of_manifest(course.manifest.path)
    expected = {
        p
        for e in course.exercises()
        for p in (
            paths.notebook(e.lesson, e.name),
            paths.visible_checks(e.lesson, e.name),
            paths.solution(e.lesson, e.name),
            paths.hidden_checks(e.lesson, e.name),
        )
    }
    problems = []
    for folder in (paths.exercises, paths.solutions):
        for path in sorted(p for p in folder.rglob("*") if p.is_file()):
            if (
                path.name == "README.md"
                or {"__pycache__", ".ipynb_checkpoints"} & set(path.relative_to(folder).parts)
                or path in expected
            ):
                continue
            problems.append(
                Problem(
                    paths.manifest,
                    None,
                    f"{path.relative_to(paths.root)} belongs to no exercise in course.toml",
                    "remove it, or add its exercise to course.toml",
                )
            )
    return problems
