"""The `gpulab` command: argument parsing only; each subcommand calls one function.

Exit status: 0 on success, 2 for bad input (broken course content, an unknown
lesson), 1 for anything else that went wrong. A `GpulabError` is printed as
its message, never as a traceback.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence

from gpulab import __version__
from gpulab.errors import GpulabError

__all__ = ["main"]

BAD_INPUT = 2


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status."""
    parser = _parser()
    args = parser.parse_args(argv)
    handler: Callable[[argparse.Namespace], int] = args.handler
    try:
        return handler(args)
    except GpulabError as exc:
        print(f"gpulab: {exc}", file=sys.stderr)
        return BAD_INPUT
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # e.g. `gpulab show x | head`
        sys.stderr.close()
        return 0


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="gpulab",
        description="A learning lab for AI infrastructure. With no command, opens the app.",
    )
    parser.add_argument("--version", action="version", version=f"gpulab {__version__}")
    parser.set_defaults(handler=_app)
    commands = parser.add_subparsers(title="commands", metavar="COMMAND")

    lessons = commands.add_parser("lessons", help="list the lessons in teaching order",
                                  description="List the lessons in teaching order.")
    lessons.set_defaults(handler=_lessons)

    show = commands.add_parser(
        "show", help="print a lesson's mindmap as an indented outline",
        description="Print a lesson's mindmap as an indented outline (no TUI; scriptable).",
    )
    show.add_argument("lesson", metavar="LESSON", help="lesson id, as `gpulab lessons` lists it")
    show.add_argument("--notes", action="store_true", help="print each node's notes under it")
    show.add_argument("--depth", type=int, metavar="N", help="stop N levels below the root")
    show.set_defaults(handler=_show)

    specs = commands.add_parser(
        "specs", help="datasheet values of the GPUs the lessons cite, with sources",
        description="Print the GPUs of lessons/specs.toml side by side; name one GPU or "
                    "topic to see every value with its note and source.",
    )
    specs.add_argument("names", metavar="NAME", nargs="*",
                       help="GPU or topic ids (e.g. h200 a100-80gb); all GPUs if none")
    specs.set_defaults(handler=_specs)

    dev = commands.add_parser("dev", help="tools for course authors",
                              description="Tools for course authors.")
    dev_commands = dev.add_subparsers(title="commands", metavar="COMMAND", required=True)
    lint = dev_commands.add_parser(
        "lint-lessons", help="check the manifest, claims and every lesson",
        description="Check course.toml, specs.toml, the claims and every lesson (markmap parity, "
                    "unsourced numbers, links); print each problem "
        "as file:line with a hint. Exit status 2 if anything is wrong.",
    )
    lint.set_defaults(handler=_lint)
    return parser


def _app(args: argparse.Namespace) -> int:
    from gpulab.tui import run_app  # imported late: the CLI's other commands stay light

    run_app()
    return 0


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
    return BAD_INPUT if broken else 0


def _show(args: argparse.Namespace) -> int:
    from gpulab.course import load_course, outline

    if args.depth is not None and args.depth < 0:
        print("gpulab: --depth must be 0 or more", file=sys.stderr)
        return BAD_INPUT
    lesson = load_course().lesson(args.lesson)
    sys.stdout.write(outline(lesson, notes=args.notes, depth=args.depth))
    return 0


def _specs(args: argparse.Namespace) -> int:
    from rich.console import Console

    from gpulab.course import load_course
    from gpulab.course.specs_view import specs_view

    Console().print(specs_view(load_course().specs, args.names))
    return 0


def _lint(args: argparse.Namespace) -> int:
    from gpulab.course import load_course

    course = load_course()
    problems = course.lint()
    for problem in problems:
        print(problem)
    lessons = len(course.entries)
    if problems:
        print(f"{len(problems)} problem(s) in {lessons} lesson(s)", file=sys.stderr)
        return BAD_INPUT
    print(f"{lessons} lessons, {len(course.claims)} claims: no problems")
    return 0
