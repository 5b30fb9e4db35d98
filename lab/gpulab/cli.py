"""The `gpulab` command: argument parsing only; each subcommand calls one function.

Exit status: a `gpulab.errors.ExitCode`: 0 on success, 2 for bad input
(broken course content, an unknown lesson), 1 for anything else that went
wrong, 130 after ctrl-c. A `GpulabError` is printed as its message, never as a
traceback. Nothing below the command line reads `sys.argv` or writes
`os.environ`: what a subcommand needs of them is handed over as arguments.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from gpulab import __version__
from gpulab.environment import BOOK_DIR, COURSE_DIR
from gpulab.errors import ExitCode, GpulabError
from gpulab.pipes import drop_stdout

if TYPE_CHECKING:
    from gpulab.course.catalog import Course

__all__ = ["main"]


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status."""
    parser = _parser()
    args = parser.parse_args(argv)
    args.command_line = list(sys.argv[1:] if argv is None else argv)
    handler: Callable[[argparse.Namespace], int] = args.handler
    try:
        if getattr(args, "course", None):
            _use_course(Path(args.course))
        status = handler(args)
        sys.stdout.flush()  # a reader that went away shows here, not at exit
        return status
    except GpulabError as exc:
        print(f"gpulab: {exc}", file=sys.stderr)
        return ExitCode.BAD_INPUT
    except KeyboardInterrupt:
        return ExitCode.INTERRUPTED
    except BrokenPipeError:  # e.g. `gpulab show x | head`: the reader has what it wanted
        drop_stdout()
        return ExitCode.OK


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="gpulab",
        description="A learning lab for AI infrastructure. With no command, opens the app.",
    )
    parser.add_argument("--version", action="version", version=f"gpulab {__version__}")
    parser.set_defaults(handler=_app)
    commands = parser.add_subparsers(title="commands", metavar="COMMAND")

    lessons = commands.add_parser(
        "lessons",
        help="list the lessons in teaching order",
        description="List the lessons in teaching order.",
    )
    lessons.set_defaults(handler=_lessons)

    show = commands.add_parser(
        "show",
        help="print a lesson's mindmap as an indented outline",
        description="Print a lesson's mindmap as an indented outline (no TUI; scriptable).",
    )
    show.add_argument("lesson", metavar="LESSON", help="lesson id, as `gpulab lessons` lists it")
    show.add_argument("--notes", action="store_true", help="print each node's notes under it")
    show.add_argument("--depth", type=int, metavar="N", help="stop N levels below the root")
    show.set_defaults(handler=_show)

    specs = commands.add_parser(
        "specs",
        help="datasheet values of the GPUs the lessons cite, with sources",
        description="Print the GPUs of lessons/specs.toml side by side; name one GPU or "
        "topic to see every value with its note and source.",
    )
    specs.add_argument(
        "names",
        metavar="NAME",
        nargs="*",
        help="GPU or topic ids (e.g. h200 a100-80gb); all GPUs if none",
    )
    specs.set_defaults(handler=_specs)

    from gpulab.cli_probe import add_commands as add_probe_commands

    add_probe_commands(commands)

    from gpulab.cli_learn import add_commands

    add_commands(commands)

    from gpulab.cli_grade import add_commands as add_grade_commands

    add_grade_commands(commands, _course_option)

    book = commands.add_parser(
        "book",
        help="build the course as a static HTML book that works offline",
        description="Build the course (lessons with their mindmaps, claims, exercises, specs, "
        "an index) as static HTML pages that work offline and from file://. "
        "Exit status 2, with every problem as file:line, if a lesson is broken.",
    )
    book.add_argument(
        "--out",
        metavar="DIR",
        type=_folder_argument,
        default=None,
        help="where the book goes; replaced on each build (default: book/_build/html in "
        "a course checkout; with gpulab installed from a wheel, book/_build/html in the "
        "current folder)",
    )
    book.add_argument(
        "--open", action="store_true", help="open the front page in the web browser when built"
    )
    _course_option(book)
    book.set_defaults(handler=_book)

    dev = commands.add_parser(
        "dev", help="tools for course authors", description="Tools for course authors."
    )
    dev_commands = dev.add_subparsers(title="commands", metavar="COMMAND", required=True)
    lint = dev_commands.add_parser(
        "lint-lessons",
        help="check the manifest, claims and every lesson",
        description="Check course.toml, specs.toml, the claims and every lesson (markmap parity, "
        "unsourced numbers, links); print each problem "
        "as file:line with a hint. Exit status 2 if anything is wrong.",
    )
    _course_option(lint)
    lint.set_defaults(handler=_lint)
    build = dev_commands.add_parser(
        "build",
        help="generate exercises/ from solutions/",
        description="Generate every exercises/<lesson>/<name>.ipynb from its solution: answers "
        "replaced by stubs, outputs cleared.",
    )
    build.add_argument("names", nargs="*", metavar="NAME", help="only these exercises")
    _course_option(build)
    build.set_defaults(handler=_build)
    dev_check = dev_commands.add_parser(
        "check",
        help="prove every exercise sound: built, failing as shipped, solved",
        description="For every exercise: the generated notebook matches its solution, its "
        "checks fail as shipped, and the solution passes them (hidden checks too). "
        "GPU exercises run only with --gpu.",
    )
    dev_check.add_argument("names", nargs="*", metavar="NAME", help="only these exercises")
    dev_check.add_argument("--gpu", action="store_true", help="also check the GPU exercises")
    _course_option(dev_check)
    dev_check.set_defaults(handler=_dev_check)
    return parser


def _folder_argument(text: str) -> str:
    """A folder named on the command line; an empty name (`--out ''`) is refused rather
    than read as the default."""
    if not text.strip():
        raise argparse.ArgumentTypeError("an empty name is no folder: name one, or leave --out out")
    return text


def _course_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--course",
        metavar="DIR",
        help="the course to use: a course checkout with lessons/, exercises/ and (for an "
        "instructor) solutions/ with the hidden checks (default: the installed course)",
    )


def _use_course(folder: Path) -> None:
    """Point this process and the processes it starts at the course in `folder`."""
    lessons = folder.expanduser().resolve() / "lessons"
    if not (lessons / "course.toml").is_file():
        raise GpulabError(
            f"--course {folder}: not a course (it has no lessons/course.toml)\n"
            "    hint: give the folder of a gpulab course checkout"
        )
    os.environ[COURSE_DIR.name] = str(lessons)
    if (lessons.parent / "book" / "templates").is_dir():
        os.environ[BOOK_DIR.name] = str(lessons.parent / "book")


def _app(args: argparse.Namespace) -> int:
    from gpulab.tui import run_app  # imported late: the CLI's other commands stay light

    run_app()
    return ExitCode.OK


def _lessons(args: argparse.Namespace) -> int:
    from gpulab.course import load_course

    course = load_course()
    broken = 0
    for day, entries in course.days():
        for entry in entries:
            mark = ""
            if entry.problems:
                mark, broken = f"  (broken: {entry.problems[0].message})", broken + 1
            print(f"day {day:>2}  {entry.id:<24} {entry.title}{mark}")
    return ExitCode.BAD_INPUT if broken else ExitCode.OK


def _show(args: argparse.Namespace) -> int:
    from gpulab.course import load_course, outline

    if args.depth is not None and args.depth < 0:
        print("gpulab: --depth must be 0 or more", file=sys.stderr)
        return ExitCode.BAD_INPUT
    lesson = load_course().lesson(args.lesson)
    sys.stdout.write(outline(lesson, notes=args.notes, depth=args.depth))
    return ExitCode.OK


def _build(args: argparse.Namespace) -> int:
    from gpulab.grading.build import build_all

    course = _authoring_course()
    unknown = _unknown_exercises(course, args.names)
    if unknown:
        return unknown
    for path in build_all(course, args.names):
        print(f"wrote {path}")
    return ExitCode.OK


def _authoring_course() -> Course:
    """The course, if it has the solutions an author's command needs."""
    from gpulab.course import load_course
    from gpulab.course.paths import CoursePaths

    course = load_course()
    solutions = CoursePaths.of_manifest(course.manifest.path).solutions
    if not solutions.is_dir():
        raise GpulabError(
            f"this course has no solutions/ ({solutions.parent}): the installed "
            "course ships none\n    hint: give a course checkout with "
            "--course DIR"
        )
    return course


def _unknown_exercises(course: Course, names: list[str]) -> int:
    """Print an error for names that are not exercises; ExitCode.BAD_INPUT if there were any."""
    from gpulab.course.catalog import UnknownExercise

    wrong = []
    for name in names:
        try:
            course.exercise(name)
        except UnknownExercise as exc:
            wrong.append(str(exc))
    for said in wrong:
        print(f"gpulab: {said}", file=sys.stderr)
    return ExitCode.BAD_INPUT if wrong else ExitCode.OK


def _dev_check(args: argparse.Namespace) -> int:
    from gpulab.grading.build import check_all

    course = _authoring_course()
    unknown = _unknown_exercises(course, args.names)
    if unknown:
        return unknown
    problems = check_all(course, args.names, gpu=args.gpu, report=print)
    for problem in problems:
        print(problem, file=sys.stderr)
    return ExitCode.BAD_INPUT if problems else ExitCode.OK


def _specs(args: argparse.Namespace) -> int:
    from rich.console import Console

    from gpulab.course import load_course
    from gpulab.course.specs_view import specs_view

    Console().print(specs_view(load_course().specs, args.names))
    return ExitCode.OK


def _lint(args: argparse.Namespace) -> int:
    from gpulab.course import load_course
    from gpulab.figures import FIGURE_IDS

    course = load_course()
    problems = course.lint(figures=FIGURE_IDS)
    for problem in problems:
        print(problem)
    lessons = len(course.entries)
    if problems:
        print(f"{len(problems)} problem(s) in {lessons} lesson(s)", file=sys.stderr)
        return ExitCode.BAD_INPUT
    print(f"{lessons} lessons, {len(course.claims)} claims: no problems")
    return ExitCode.OK


def _book(args: argparse.Namespace) -> int:
    from pathlib import Path

    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

    from gpulab.book import build_book, default_out
    from gpulab.course import CourseError, load_course

    out = Path(args.out) if args.out else default_out()
    console = Console(stderr=True)
    course = load_course()
    with Progress(
        TextColumn("building the book"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.description}"),
        console=console,
        transient=True,
    ) as bar:
        task = bar.add_task("", total=None)

        def step(what: str, done: int, total: int) -> None:
            bar.update(task, description=what, completed=done, total=total)

        try:
            result = build_book(course, out, progress=step)
        except CourseError as exc:
            bar.stop()
            for problem in exc.problems:
                print(problem)
            broken = sorted({p.path.name for p in exc.problems})
            print(
                f"gpulab book: not built: {len(exc.problems)} problem(s) in {', '.join(broken)}",
                file=sys.stderr,
            )
            return ExitCode.BAD_INPUT
    print(f"built {len(result.pages)} pages in {result.seconds:.1f} s: {result.front}")
    if args.open:
        import webbrowser

        if not webbrowser.open(result.front.as_uri()):
            print(
                f"gpulab book: no web browser to open; open {result.front.as_uri()}",
                file=sys.stderr,
            )
    return ExitCode.OK
