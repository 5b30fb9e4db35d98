"""The learner's commands: init, list, open, check, hint, reset.

Each works on the learner's workspace (`gpulab.course.workspace`), from any
folder: `gpulab init` makes it and gpulab remembers it. Like the rest of the
CLI, a `GpulabError` is printed as its message with exit status 2.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gpulab.errors import ExitCode

if TYPE_CHECKING:
    from gpulab.course.catalog import Course
    from gpulab.course.progress import Progress, ProgressStore
    from gpulab.course.workspace import Workspace

__all__ = ["add_commands"]

_MARKS = {"passed": "✓ ", "failing": "✗ "}
_STYLES = {"passed": "green", "failing": "red", "no-gpu": "yellow", "not-started": "dim"}
"""How `gpulab list` marks and colours each kind of `gpulab.course.standing.Standing`."""


def add_commands(commands: Any) -> None:
    """Add the learner's commands to the `gpulab` parser's subcommands."""
    init = commands.add_parser(
        "init",
        help="make your workspace: your own copy of the exercises",
        description="Copy every exercise notebook and its visible checks into DIR (default: "
        "./gpulab-exercises), a new folder, and use it from now on: the app, "
        "`gpulab check`, `gpulab open` and your progress work on it. An existing "
        "workspace is taken into use again and brought up to date; any other "
        "folder that is not empty is refused.",
    )
    init.add_argument("folder", metavar="DIR", nargs="?", help="where the workspace goes")
    init.set_defaults(handler=_init)

    listing = commands.add_parser(
        "list",
        help="where you stand: exercises passed, lessons read",
        description="Your progress: each exercise's last check in your workspace, and how "
        "much of each lesson you have read.",
    )
    listing.set_defaults(handler=_list)

    check = commands.add_parser(
        "check",
        help="run an exercise's checks on your notebook",
        description="Run an exercise's checks on your workspace's notebook and print each "
        "check with its points; a pass or a failure is kept in your progress, "
        "which the app shows. Exit status 1 if a check fails.",
    )
    check.add_argument(
        "exercise",
        metavar="EXERCISE",
        help="exercise name (e.g. namespaces), or the path of a notebook",
    )
    check.add_argument(
        "--notebook",
        metavar="PATH",
        help="check this notebook instead (its result is not kept in your "
        "progress unless it is your workspace's own)",
    )
    check.set_defaults(handler=_check)

    open_ = commands.add_parser(
        "open",
        help="open an exercise's notebook in JupyterLab",
        description="Start (or reuse) your workspace's JupyterLab server, open the notebook in "
        "a web browser where there is a display, and print its address with the "
        "token and the ssh -L line to reach it from another machine. Works as "
        "root. The server runs on until `gpulab open --stop`.",
    )
    open_.add_argument(
        "exercise",
        metavar="EXERCISE",
        nargs="?",
        help="exercise name (default: the workspace's folder)",
    )
    open_.add_argument(
        "--no-browser", action="store_true", help="only print the address (e.g. over SSH)"
    )
    open_.add_argument("--stop", action="store_true", help="stop the workspace's JupyterLab")
    open_.set_defaults(handler=_open)

    hint = commands.add_parser(
        "hint",
        help="reveal an exercise's next hint",
        description="Print the hints you have seen for an exercise and reveal the next one, "
        "gentlest first (the app shows the same hints).",
    )
    hint.add_argument("exercise", metavar="EXERCISE", help="exercise name")
    hint.set_defaults(handler=_hint)

    reset = commands.add_parser(
        "reset",
        help="start an exercise again from its pristine notebook",
        description="Restore the exercise's notebook in your workspace as the course ships "
        "it. Your notebook is kept beside it as <name>.backup-<time>.ipynb.",
    )
    reset.add_argument("exercise", metavar="EXERCISE", help="exercise name")
    reset.set_defaults(handler=_reset)


def _init(args: argparse.Namespace) -> int:
    from gpulab.course import load_course
    from gpulab.course.workspace import init_workspace

    course = load_course()
    folder = Path(args.folder) if args.folder else None
    workspace, made = init_workspace(course, folder)
    count = len(course.exercises())
    if made:
        print(
            f"Made your workspace {workspace.root}: {count} exercises, one folder per "
            "lesson.\ngpulab uses it from now on, from any folder."
        )
    else:
        print(f"{workspace.root} is your workspace again.")
        for line in workspace.sync(course).lines():
            print(f"  {line}")
    print(
        "\nNext: `gpulab` for the app, `gpulab open NAME` for a notebook in JupyterLab, "
        "`gpulab check NAME` to check it, `gpulab list` for where you stand."
    )
    return ExitCode.OK


def _workspace(course: Course) -> Workspace:
    """The workspace in use, brought up to date with the course (told on stderr)."""
    from gpulab.course.workspace import require_workspace

    workspace = require_workspace()
    for line in workspace.sync(course).lines():
        print(f"gpulab: {line}", file=sys.stderr)
    return workspace


def _progress(store: ProgressStore) -> Progress:
    """The saved progress; where the file could not be read (and was kept aside as
    ``progress.json.broken-<time>``), the learner is told so on stderr."""
    progress = store.load()
    if store.warning:
        print(f"gpulab: {store.warning}", file=sys.stderr)
    return progress


def _check(args: argparse.Namespace) -> int:
    from gpulab.course import load_course
    from gpulab.grading.learn.check import check_and_keep
    from gpulab.grading.learn.panel import report_text
    from gpulab.pipes import drop_stdout

    course = load_course()
    name, notebook = args.exercise, args.notebook
    if name.endswith(".ipynb"):  # `gpulab check some/folder/namespaces.ipynb`
        notebook = notebook or name
        name = Path(name).stem.split(".backup-")[0]
    entry = course.exercise(name)
    if notebook is None:
        _workspace(course)  # brought up to date before its notebook is judged
    checked = check_and_keep(entry, notebook)  # kept before it is printed
    report = checked.report
    try:
        print(report_text(report))
        sys.stdout.flush()
    except BrokenPipeError:  # the exit status is still the checks' verdict
        drop_stdout()
    if checked.problem:
        print(f"gpulab: {checked.problem}", file=sys.stderr)
    if report.status in ("invalid", "error"):
        return ExitCode.BAD_INPUT
    return ExitCode.OK if report.status in ("passed", "skipped") else ExitCode.FAILED


def _open(args: argparse.Namespace) -> int:
    from gpulab.course import load_course
    from gpulab.grading.learn.jupyter import open_notebook, stop_server

    course = load_course()
    if args.stop:
        from gpulab.course.workspace import require_workspace

        if args.exercise:
            print("gpulab open: --stop takes no exercise", file=sys.stderr)
            return ExitCode.BAD_INPUT
        workspace = require_workspace()
        stopped = stop_server(workspace)
        print(
            f"stopped JupyterLab (pid {stopped.pid})"
            if stopped is not None
            else f"no JupyterLab was running for {workspace.root}"
        )
        return ExitCode.OK
    workspace = _workspace(course)
    target = workspace.notebook(course.exercise(args.exercise)) if args.exercise else workspace.root
    if not target.exists():
        print(
            f"gpulab open: {target} is missing: `gpulab reset {args.exercise}` brings it back",
            file=sys.stderr,
        )
        return ExitCode.BAD_INPUT
    opened = open_notebook(workspace, target, browser=not args.no_browser)
    print("\n".join(opened.lines()))
    return ExitCode.OK


def _hint(args: argparse.Namespace) -> int:
    from gpulab.course import ProgressStore, load_course

    entry = load_course().exercise(args.exercise)
    progress = _progress(store := ProgressStore())
    seen = min(progress.hints.get(entry.name, 0), len(entry.hints))
    fresh = seen < len(entry.hints)
    if fresh:
        seen += 1
        progress.hints[entry.name] = seen
        store.save(progress)
    for number, text in enumerate(entry.hints[:seen], start=1):
        print(f"Hint {number} of {len(entry.hints)}: {text}\n")
    left = len(entry.hints) - seen
    print(
        f"{left} more hint{'s' if left != 1 else ''}: run this again for the next."
        if left
        else "No more hints: you have seen them all."
    )
    return ExitCode.OK


def _reset(args: argparse.Namespace) -> int:
    from gpulab.course import ProgressStore, load_course

    course = load_course()
    entry = course.exercise(args.exercise)
    workspace = _workspace(course)
    backup = workspace.reset(course, entry)
    progress = _progress(store := ProgressStore())
    progress.forget_check(entry.name, workspace=workspace.key)
    store.save(progress)
    print(f"{workspace.notebook(entry)} is as the course ships it again.")
    if backup is not None:
        print(f"Yours is kept as {backup}.")
    return ExitCode.OK


def _list(args: argparse.Namespace) -> int:
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    from gpulab.course import CourseError, ProgressStore, load_course
    from gpulab.course.standing import standing
    from gpulab.course.workspace import current_workspace
    from gpulab.probes.device import present

    course = load_course()
    progress = _progress(ProgressStore())
    workspace = current_workspace()
    console = Console()
    records = {}
    if workspace is None:
        console.print("No workspace yet: `gpulab init` makes one; your checks are kept there.\n")
    else:
        for line in workspace.sync(course).lines():
            console.print(f"[yellow]{line}[/]")
        records = progress.exercises(workspace.key)
        console.print(f"Workspace: {workspace.root}\n")
    exercises = course.exercises()
    passed = sum(1 for e in exercises if (r := records.get(e.name)) is not None and r.passed)
    failing = sum(1 for e in exercises if (r := records.get(e.name)) is not None and not r.passed)
    gpu_here = present() if any(e.gpu for e in exercises) else None
    table = Table(box=None, header_style="bold", pad_edge=False)
    for column in ("exercise", "lesson", "runs on", "status"):
        table.add_column(column)
    for entry in exercises:
        found = standing(entry, records.get(entry.name), gpu_here)
        status = Text(_MARKS.get(found.kind, "") + found.words, style=_STYLES[found.kind])
        if found.note:
            status.append(f" · {found.note}", style="yellow")
        table.add_row(entry.name, entry.lesson, "GPU" if entry.gpu else "CPU", status)
    console.print(
        f"Exercises: {passed} of {len(exercises)} passed, {failing} failing, "
        f"{len(exercises) - passed - failing} not started"
    )
    console.print(table)
    lessons = Table(box=None, header_style="bold", pad_edge=False)
    for column in ("day", "lesson", "read"):
        lessons.add_column(column)
    started = 0
    for lesson in course.entries:
        try:
            keys = set(course.lesson(lesson.id).by_key)
        except CourseError:
            lessons.add_row(str(lesson.day), lesson.id, Text("broken", style="red"))
            continue
        fraction = progress.fraction(lesson.id, keys)
        started += fraction > 0
        lessons.add_row(str(lesson.day), lesson.id, f"{round(fraction * 100)}%")
    console.print(f"\nLessons: {started} of {len(course.entries)} started")
    console.print(lessons)
    return ExitCode.OK
