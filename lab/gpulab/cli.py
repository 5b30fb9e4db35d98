"""The `gpulab` command: argument parsing only; each subcommand calls one function.

Exit status: 0 on success, 2 for bad input (broken course content, an unknown
lesson), 1 for anything else that went wrong. A `GpulabError` is printed as
its message, never as a traceback.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from gpulab import __version__
from gpulab.errors import GpulabError

if TYPE_CHECKING:
    from gpulab.course.catalog import Course

__all__ = ["main"]

BAD_INPUT = 2


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status."""
    parser = _parser()
    args = parser.parse_args(argv)
    handler: Callable[[argparse.Namespace], int] = args.handler
    try:
        if getattr(args, "course", None):
            _use_course(Path(args.course))
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

    probe = commands.add_parser(
        "probe", help="measure this machine: system, NVML, CUDA, microbenchmarks",
        description="Run the probes that measure the lessons' claims on this machine.",
    )
    probe_commands = probe.add_subparsers(title="commands", metavar="COMMAND", required=True)
    probe_list = probe_commands.add_parser("list", help="the probes, what each needs and does",
                                           description="List the probes.")
    probe_list.set_defaults(handler=_probe_list)
    probe_run = probe_commands.add_parser(
        "run", help="run probes by name",
        description="Run probes and print their results as tables, or as JSON with --json "
                    "(the format is `gpulab probe schema`).",
    )
    probe_run.add_argument("names", metavar="NAME", nargs="*",
                           help="probe names from `gpulab probe list`")
    probe_run.add_argument("--all", action="store_true", help="run every probe")
    probe_run.add_argument("--json", action="store_true", help="print JSON for scripts")
    probe_run.add_argument("--recorded", action="store_true",
                           help="show the readings recorded on gpulab's H200 instead of "
                                "measuring this machine (labelled as such)")
    probe_run.set_defaults(handler=_probe_run)
    probe_schema = probe_commands.add_parser(
        "schema", help="print the JSON schema of `probe run --json`",
        description="Print the JSON schema that `gpulab probe run --json` output follows.")
    probe_schema.set_defaults(handler=_probe_schema)

    image = commands.add_parser(
        "image", help="check a container image you built for this machine",
        description="Check a container image you built (docker or podman): run it with the "
                    "GPUs passed in and see that the GPU is visible inside and that the "
                    "driver, the image's CUDA, its nvcc and PyTorch's CUDA agree. Nothing is "
                    "pulled. Exit status 1 if they do not, or the check cannot run.")
    image_commands = image.add_subparsers(dest="image_command", metavar="COMMAND",
                                          required=True)
    image_check = image_commands.add_parser(
        "check", help="run IMAGE with the GPUs and check its versions",
        description="Run IMAGE (on this machine already: docker build -t IMAGE .) with the "
                    "GPUs passed in, and check what it holds against the driver.")
    image_check.add_argument("image", metavar="IMAGE", help="the image's name or id")
    image_check.add_argument("--json", action="store_true", help="print JSON for scripts")
    image_check.set_defaults(handler=_image_check)

    doctor = commands.add_parser(
        "doctor", help="check this machine for the course: driver, CUDA, CuPy, cgroups, NUMA, "
                       "and gpulab's own tools",
        description="The environment check of days 1 and 2 as a checklist, then what the "
                    "course tools need (pytest, JupyterLab, your workspace, bubblewrap for "
                    "grading), with a fix for each item that fails. Exit status 1 if a check "
                    "fails.",
    )
    doctor.add_argument("--json", action="store_true", help="print JSON for scripts")
    doctor.set_defaults(handler=_doctor)

    from gpulab.cli_learn import add_commands

    add_commands(commands)

    grade = commands.add_parser(
        "grade", help="grade a class's notebooks: gradebook, LMS CSV, feedback",
        description="Grade every learner's notebooks under SUBMISSIONS (a folder with one "
                    "folder or zip per learner, or an LMS bulk-download zip). Learner code "
                    "runs sandboxed, one process per learner and exercise. Writes "
                    "gradebook.sqlite, grades.csv and feedback/<learner>.html|md into --out. "
                    "Run the same command again to go on after a stop; grades of unchanged "
                    "notebooks are kept unless --regrade.")
    grade.add_argument("submissions", metavar="SUBMISSIONS", help="folder or bulk zip")
    grade.add_argument("--exercises", nargs="+", metavar="NAME", default=[],
                       help="only these exercises (default: those anyone handed in)")
    grade.add_argument("--out", metavar="DIR", default="grading",
                       help="where the results go (default: ./grading)")
    grade.add_argument("--workers", type=int, default=os.cpu_count() or 1, metavar="N",
                       help="grading processes at a time (default: one per CPU core)")
    grade.add_argument("--gpus", metavar="LIST", default=None,
                       help="GPU indices for GPU exercises, e.g. 0,1 (default: all)")
    grade.add_argument("--regrade", action="store_true",
                       help="grade again what an earlier run already graded")
    grade.add_argument("--timeout", type=float, metavar="SECONDS", default=None,
                       help="per learner and exercise (default: the exercise's time limit)")
    grade.add_argument("--unsafe", action="store_true",
                       help="grade even where no sandbox can hide files from learner code")
    cluster = grade.add_argument_group(
        "on a cluster (needs gpulab[cluster])",
        "Grade on the workers of a Dask scheduler (`gpulab worker ADDRESS` on each node), or "
        "on Slurm pilot jobs that each run `gpulab worker` on a node (--workers: CPU slots "
        "per node). The workers must run this gpulab with this course; this machine stays "
        "the one writer of --out.")
    cluster.add_argument("--cluster", metavar="ADDRESS", default=None,
                         help="a Dask scheduler's address (tcp://head:8786), or slurm")
    cluster.add_argument("--nodes", type=int, default=1, metavar="N",
                         help="slurm: pilot jobs, one node each (default: 1)")
    cluster.add_argument("--gpus-per-node", type=int, default=0, metavar="G",
                         help="slurm: GPUs per node (default: 0)")
    cluster.add_argument("--partition", metavar="P", default="", help="slurm: the partition")
    cluster.add_argument("--walltime", metavar="T", default="1:00:00",
                         help="slurm: each pilot job's time limit (default: 1:00:00)")
    _course_option(grade)
    grade.set_defaults(handler=_grade)

    worker = commands.add_parser(
        "worker", help="serve this node's GPUs and CPU slots to a grading cluster",
        description="Serve this node to the Dask scheduler at ADDRESS for `gpulab grade "
                    "--cluster`: one worker per GPU (one job at a time each) and one with "
                    "--cpu-slots slots. Refuses to serve without bubblewrap unless --unsafe. "
                    "Needs gpulab[cluster] and the course checkout the grader uses (--course). "
                    "Stop it with ctrl-c.")
    worker.add_argument("address", metavar="ADDRESS", help="the scheduler, e.g. tcp://head:8786")
    worker.add_argument("--gpus", metavar="LIST", default=None,
                        help="GPU indices to serve, e.g. 0,1, or none (default: "
                             "CUDA_VISIBLE_DEVICES if set, else every GPU NVML sees)")
    worker.add_argument("--cpu-slots", type=int, default=os.cpu_count() or 1, metavar="N",
                        help="CPU jobs at a time (default: one per CPU core)")
    worker.add_argument("--unsafe", action="store_true",
                        help="serve even where no sandbox can hide files from learner code")
    worker.add_argument("--fake-gpus", action="store_true",
                        help="serve --gpus without NVML checks: for trying a cluster on a "
                             "machine without GPUs")
    for hidden in ("--name", "--nthreads", "--memory-limit", "--local-directory"):
        worker.add_argument(hidden, default=None, help=argparse.SUPPRESS)  # dask-jobqueue's
    worker.add_argument("--death-timeout", type=float, default=60.0, help=argparse.SUPPRESS)
    _course_option(worker)
    worker.set_defaults(handler=_worker)

    book = commands.add_parser(
        "book", help="build the course as a static HTML book that works offline",
        description="Build the course (lessons with their mindmaps, claims, exercises, specs, "
                    "an index) as static HTML pages that work offline and from file://. "
                    "Exit status 2, with every problem as file:line, if a lesson is broken.")
    book.add_argument("--out", metavar="DIR", default=None,
                      help="where the book goes; replaced on each build "
                           "(default: book/_build/html in the checkout)")
    book.add_argument("--open", action="store_true",
                      help="open the front page in the web browser when built")
    _course_option(book)
    book.set_defaults(handler=_book)

    dev = commands.add_parser("dev", help="tools for course authors",
                              description="Tools for course authors.")
    dev_commands = dev.add_subparsers(title="commands", metavar="COMMAND", required=True)
    lint = dev_commands.add_parser(
        "lint-lessons", help="check the manifest, claims and every lesson",
        description="Check course.toml, specs.toml, the claims and every lesson (markmap parity, "
                    "unsourced numbers, links); print each problem "
        "as file:line with a hint. Exit status 2 if anything is wrong.",
    )
    _course_option(lint)
    lint.set_defaults(handler=_lint)
    build = dev_commands.add_parser(
        "build", help="generate exercises/ from solutions/",
        description="Generate every exercises/<lesson>/<name>.ipynb from its solution: answers "
                    "replaced by stubs, outputs cleared.")
    build.add_argument("names", nargs="*", metavar="NAME", help="only these exercises")
    _course_option(build)
    build.set_defaults(handler=_build)
    dev_check = dev_commands.add_parser(
        "check", help="prove every exercise sound: built, failing as shipped, solved",
        description="For every exercise: the generated notebook matches its solution, its "
                    "checks fail as shipped, and the solution passes them (hidden checks too). "
                    "GPU exercises run only with --gpu.")
    dev_check.add_argument("names", nargs="*", metavar="NAME", help="only these exercises")
    dev_check.add_argument("--gpu", action="store_true", help="also check the GPU exercises")
    _course_option(dev_check)
    dev_check.set_defaults(handler=_dev_check)
    return parser


def _course_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--course", metavar="DIR",
        help="the course to use: a course checkout with lessons/, exercises/ and (for an "
             "instructor) solutions/ with the hidden checks (default: the installed course)")


def _use_course(folder: Path) -> None:
    """Point this process and the processes it starts at the course in `folder`."""
    lessons = folder.expanduser().resolve() / "lessons"
    if not (lessons / "course.toml").is_file():
        raise GpulabError(f"--course {folder}: not a course (it has no lessons/course.toml)\n"
                          "    hint: give the folder of a gpulab course checkout")
    os.environ["GPULAB_COURSE_DIR"] = str(lessons)
    if (lessons.parent / "book" / "templates").is_dir():
        os.environ["GPULAB_BOOK_DIR"] = str(lessons.parent / "book")


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


def _probe_list(args: argparse.Namespace) -> int:
    from rich.console import Console

    from gpulab.probes.registry import cannot_run_here
    from gpulab.probes.render import render_probe_list

    Console().print(render_probe_list(cannot_run_here()))
    return 0


def _probe_run(args: argparse.Namespace) -> int:
    import json

    from gpulab import __version__
    from gpulab.probes import PROBES, ProbeResult, get_probe, run_probe
    from gpulab.probes.registry import exit_status

    if args.all == bool(args.names):
        print("gpulab: name the probes to run, or give --all", file=sys.stderr)
        return BAD_INPUT
    names = [p.name for p in PROBES] if args.all else args.names
    for name in names:
        get_probe(name)  # an unknown name fails before anything runs
    measure: Callable[[str], ProbeResult] = run_probe
    if args.recorded:
        from gpulab.probes.recorded import recorded_results

        recorded = recorded_results()
        missing = [name for name in names if name not in recorded]
        if missing:
            print(f"gpulab: no recorded readings for {', '.join(missing)}", file=sys.stderr)
            return BAD_INPUT
        measure = recorded.__getitem__
    if args.json:
        results = [measure(name).to_dict() for name in names]
        print(json.dumps({"gpulab": __version__, "schema": 1, "results": results}, indent=2))
        return exit_status((r["status"] for r in results), every=args.all)
    from rich.console import Console
    from rich.rule import Rule

    from gpulab.probes.render import render_result

    console = Console()
    statuses: list[str] = []
    for name in names:
        with console.status(f"running {name}…"):
            result = measure(name)
        console.print(Rule(style="dim"))
        console.print(render_result(result))
        statuses.append(result.status)
    return exit_status(statuses, every=args.all)


def _image_check(args: argparse.Namespace) -> int:
    import json

    from gpulab.probes.container_image import image_check

    result = image_check(args.image)
    if args.json:
        print(json.dumps(result.to_dict(), indent=2))
    else:
        from rich.console import Console

        from gpulab.probes.render import render_result

        Console().print(render_result(result))
    return 0 if result.status == "ok" else 1


def _probe_schema(args: argparse.Namespace) -> int:
    from importlib.resources import files

    sys.stdout.write(files("gpulab.probes").joinpath("result.schema.json").read_text())
    return 0


def _doctor(args: argparse.Namespace) -> int:
    import json

    from gpulab.grading.readiness import learner_checks
    from gpulab.probes.doctor import doctor

    if args.json:
        checks = doctor() + learner_checks()
        print(json.dumps([c.to_dict() for c in checks], indent=2))
        return 1 if any(c.status == "fail" for c in checks) else 0
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    console = Console()
    with console.status("checking this machine…"):
        checks = doctor() + learner_checks()
    marks = {"pass": ("✓", "green"), "warn": ("!", "yellow"), "fail": ("✗", "bold red"),
             "skip": ("–", "dim")}
    table = Table(box=None, show_header=False, pad_edge=False)
    table.add_column(width=1)
    table.add_column(style="bold", no_wrap=True)
    table.add_column(overflow="fold")
    for check in checks:
        mark, style = marks[check.status]
        found = Text(check.found)
        if check.fix:
            found.append(f"\nfix: {check.fix}", style="italic")
        table.add_row(Text(mark, style=style), check.name, found)
    console.print(table)
    counts = {status: sum(c.status == status for c in checks) for status in marks}
    console.print(f"\n{counts['pass']} fine, {counts['warn']} to look at, "
                  f"{counts['fail']} failed, {counts['skip']} skipped")
    failed = counts["fail"]
    return 1 if failed else 0


def _grade(args: argparse.Namespace) -> int:
    from pathlib import Path

    from gpulab.grading.grade import GradeOptions, main

    names = [n for item in args.exercises for n in item.split(",") if n]
    gpus = tuple(g for g in args.gpus.split(",") if g) if args.gpus is not None else None
    if args.workers < 1:
        print("gpulab grade: --workers must be at least 1", file=sys.stderr)
        return BAD_INPUT
    if gpus is not None and not all(g.isdigit() for g in gpus):
        print(f"gpulab grade: --gpus {args.gpus!r}: give GPU indices as nvidia-smi numbers "
              "them, e.g. 0,1", file=sys.stderr)
        return BAD_INPUT
    slurm_only = args.nodes != 1 or args.gpus_per_node or args.partition
    if slurm_only and args.cluster != "slurm":
        print("gpulab grade: --nodes, --gpus-per-node and --partition go with --cluster slurm",
              file=sys.stderr)
        return BAD_INPUT
    if args.cluster and gpus is not None:
        print("gpulab grade: on a cluster each node's GPUs are chosen where it runs: gpulab "
              "worker ADDRESS --gpus LIST", file=sys.stderr)
        return BAD_INPUT
    cluster = None
    if args.cluster:
        from gpulab.grading.cluster import Target

        cluster = Target(args.cluster, args.nodes, args.gpus_per_node, args.workers,
                         args.partition, args.walltime,
                         wait_s=1800.0 if args.cluster == "slurm" else 120.0)
    options = GradeOptions(Path(args.submissions), Path(args.out), tuple(names), args.workers,
                           gpus, args.regrade, args.timeout, args.unsafe, cluster=cluster)
    try:
        return main(options)
    except GpulabError as exc:
        print(f"gpulab grade: {exc}", file=sys.stderr)
        return BAD_INPUT


def _worker(args: argparse.Namespace) -> int:
    gpus = None if args.gpus is None else [g for g in args.gpus.split(",")
                                           if g and args.gpus != "none"]
    if gpus is not None and not all(g.isdigit() for g in gpus):
        print(f"gpulab worker: --gpus {args.gpus!r}: give GPU indices as nvidia-smi numbers "
              "them, e.g. 0,1", file=sys.stderr)
        return BAD_INPUT
    from gpulab.grading.cluster_worker import serve

    try:
        return serve(args.address, gpus=gpus, cpu_slots=args.cpu_slots, unsafe=args.unsafe,
                     fake_gpus=args.fake_gpus, name=args.name or "",
                     death_timeout=args.death_timeout, local_directory=args.local_directory)
    except GpulabError as exc:
        print(f"gpulab worker: {exc}", file=sys.stderr)
        return BAD_INPUT


def _build(args: argparse.Namespace) -> int:
    from gpulab.grading.build import build_all

    course = _authoring_course()
    unknown = _unknown_exercises(course, args.names)
    if unknown:
        return unknown
    for path in build_all(course, args.names):
        print(f"wrote {path}")
    return 0


def _authoring_course() -> Course:
    """The course, if it has the solutions an author's command needs."""
    from gpulab.course import load_course
    from gpulab.course.paths import CoursePaths

    course = load_course()
    solutions = CoursePaths.of_manifest(course.manifest.path).solutions
    if not solutions.is_dir():
        raise GpulabError(f"this course has no solutions/ ({solutions.parent}): the installed "
                          "course ships none\n    hint: give a course checkout with "
                          "--course DIR")
    return course


def _unknown_exercises(course: Course, names: list[str]) -> int:
    """Print an error for names that are not exercises; BAD_INPUT if there were any."""
    known = {entry.name for entry in course.exercises()}
    wrong = [name for name in names if name not in known]
    if wrong:
        print(f"gpulab: no exercise named {', '.join(wrong)}\n    hint: the exercises are "
              f"{', '.join(sorted(known))}", file=sys.stderr)
        return BAD_INPUT
    return 0


def _dev_check(args: argparse.Namespace) -> int:
    from gpulab.grading.build import check_all

    course = _authoring_course()
    unknown = _unknown_exercises(course, args.names)
    if unknown:
        return unknown
    problems = check_all(course, args.names, gpu=args.gpu, report=print)
    for problem in problems:
        print(problem, file=sys.stderr)
    return BAD_INPUT if problems else 0


def _specs(args: argparse.Namespace) -> int:
    from rich.console import Console

    from gpulab.course import load_course
    from gpulab.course.specs_view import specs_view

    Console().print(specs_view(load_course().specs, args.names))
    return 0


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
        return BAD_INPUT
    print(f"{lessons} lessons, {len(course.claims)} claims: no problems")
    return 0


def _book(args: argparse.Namespace) -> int:
    from pathlib import Path

    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

    from gpulab.book import build_book, default_out
    from gpulab.course import CourseError, load_course

    out = Path(args.out) if args.out else default_out()
    console = Console(stderr=True)
    course = load_course()
    with Progress(TextColumn("building the book"), BarColumn(), MofNCompleteColumn(),
                  TextColumn("{task.description}"), console=console, transient=True) as bar:
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
            print(f"gpulab book: not built: {len(exc.problems)} problem(s) in "
                  f"{', '.join(broken)}", file=sys.stderr)
            return BAD_INPUT
    print(f"built {len(result.pages)} pages in {result.seconds:.1f} s: {result.front}")
    if args.open:
        import webbrowser

        if not webbrowser.open(result.front.as_uri()):
            print(f"gpulab book: no web browser to open; open {result.front.as_uri()}",
                  file=sys.stderr)
    return 0
