"""The instructor's commands: grade a class, serve a node to a grading cluster."""

from __future__ import annotations

import argparse
import os
import shlex
import sys
from collections.abc import Callable
from typing import Any

from gpulab.errors import ExitCode, GpulabError

__all__ = ["add_commands"]


def add_commands(commands: Any, course_option: Callable[[argparse.ArgumentParser], None]) -> None:
    """Add `grade` and `worker` to the `gpulab` parser's subcommands; `course_option` adds
    the shared --course option."""
    grade = commands.add_parser(
        "grade",
        help="grade a class's notebooks: gradebook, LMS CSV, feedback",
        description="Grade every learner's notebooks under SUBMISSIONS (a folder with one "
        "folder or zip per learner, or an LMS bulk-download zip). Learner code "
        "runs sandboxed, one process per learner and exercise. Writes "
        "gradebook.sqlite, grades.csv and feedback/<learner>.html|md into --out. "
        "Run the same command again to go on after a stop; grades of unchanged "
        "notebooks are kept unless --regrade.",
    )
    grade.add_argument("submissions", metavar="SUBMISSIONS", help="folder or bulk zip")
    grade.add_argument(
        "--exercises",
        nargs="+",
        metavar="NAME",
        default=[],
        help="only these exercises (default: those anyone handed in)",
    )
    grade.add_argument(
        "--out", metavar="DIR", default="grading", help="where the results go (default: ./grading)"
    )
    grade.add_argument(
        "--workers",
        type=int,
        default=os.cpu_count() or 1,
        metavar="N",
        help="grading processes at a time (default: one per CPU core)",
    )
    grade.add_argument(
        "--gpus",
        metavar="LIST",
        default=None,
        help="GPU indices for GPU exercises, e.g. 0,1 (default: all)",
    )
    grade.add_argument(
        "--regrade", action="store_true", help="grade again what an earlier run already graded"
    )
    grade.add_argument(
        "--timeout",
        type=float,
        metavar="SECONDS",
        default=None,
        help="per learner and exercise (default: the exercise's time limit)",
    )
    grade.add_argument(
        "--unsafe",
        action="store_true",
        help="grade even where no sandbox can hide files from learner code",
    )
    cluster = grade.add_argument_group(
        "on a cluster (needs gpulab[cluster])",
        "Grade on the workers of a Dask scheduler (`gpulab worker ADDRESS` on each node), or "
        "on Slurm pilot jobs that each run `gpulab worker` on a node (--workers: CPU slots "
        "per node). The workers must run this gpulab; they need no course: this machine "
        "sends them its course (--course) as one bundle, and stays the one writer of --out.",
    )
    cluster.add_argument(
        "--cluster",
        metavar="ADDRESS",
        default=None,
        help="a Dask scheduler's address (tcp://head:8786), or slurm",
    )
    cluster.add_argument(
        "--nodes",
        type=int,
        default=1,
        metavar="N",
        help="slurm: pilot jobs, one node each (default: 1)",
    )
    cluster.add_argument(
        "--gpus-per-node",
        type=int,
        default=0,
        metavar="G",
        help="slurm: GPUs per node (default: 0)",
    )
    cluster.add_argument("--partition", metavar="P", default="", help="slurm: the partition")
    cluster.add_argument(
        "--walltime",
        metavar="T",
        default="1:00:00",
        help="slurm: each pilot job's time limit (default: 1:00:00)",
    )
    course_option(grade)
    grade.set_defaults(handler=_grade)

    worker = commands.add_parser(
        "worker",
        help="serve this node's GPUs and CPU slots to a grading cluster",
        description="Serve this node to the Dask scheduler at ADDRESS for `gpulab grade "
        "--cluster`: one worker per GPU (one job at a time each) and one with "
        "--cpu-slots slots. Refuses to serve without bubblewrap unless --unsafe. "
        "Needs gpulab[cluster] and no course: each grader sends its own with the jobs. "
        "Stop it with ctrl-c.",
    )
    worker.add_argument("address", metavar="ADDRESS", help="the scheduler, e.g. tcp://head:8786")
    worker.add_argument(
        "--gpus",
        metavar="LIST",
        default=None,
        help="GPU indices to serve, e.g. 0,1, or none (default: "
        "CUDA_VISIBLE_DEVICES if set, else every GPU NVML sees)",
    )
    worker.add_argument(
        "--cpu-slots",
        type=int,
        default=os.cpu_count() or 1,
        metavar="N",
        help="CPU jobs at a time (default: one per CPU core)",
    )
    worker.add_argument(
        "--unsafe",
        action="store_true",
        help="serve even where no sandbox can hide files from learner code",
    )
    worker.add_argument(
        "--fake-gpus",
        action="store_true",
        help="serve --gpus without NVML checks: for trying a cluster on a machine without GPUs",
    )
    for hidden in ("--name", "--nthreads", "--memory-limit", "--local-directory"):
        worker.add_argument(hidden, default=None, help=argparse.SUPPRESS)  # dask-jobqueue's
    worker.add_argument("--death-timeout", type=float, default=60.0, help=argparse.SUPPRESS)
    # workers needed a course checkout before the grader sent its course; still taken, unused
    worker.add_argument("--course", dest="old_course", default=None, help=argparse.SUPPRESS)
    worker.set_defaults(handler=_worker)


def _grade(args: argparse.Namespace) -> int:
    from pathlib import Path

    from gpulab.grading.classrun.grade_model import GradeOptions
    from gpulab.grading.classrun.report import main

    names = [n for item in args.exercises for n in item.split(",") if n]
    gpus = tuple(g for g in args.gpus.split(",") if g) if args.gpus is not None else None
    if args.workers < 1:
        print("gpulab grade: --workers must be at least 1", file=sys.stderr)
        return ExitCode.BAD_INPUT
    if gpus is not None and not all(g.isdigit() for g in gpus):
        print(
            f"gpulab grade: --gpus {args.gpus!r}: give GPU indices as nvidia-smi numbers "
            "them, e.g. 0,1",
            file=sys.stderr,
        )
        return ExitCode.BAD_INPUT
    slurm_only = args.nodes != 1 or args.gpus_per_node or args.partition
    if slurm_only and args.cluster != "slurm":
        print(
            "gpulab grade: --nodes, --gpus-per-node and --partition go with --cluster slurm",
            file=sys.stderr,
        )
        return ExitCode.BAD_INPUT
    if args.cluster and gpus is not None:
        print(
            "gpulab grade: on a cluster each node's GPUs are chosen where it runs: gpulab "
            "worker ADDRESS --gpus LIST",
            file=sys.stderr,
        )
        return ExitCode.BAD_INPUT
    cluster = None
    if args.cluster:
        from gpulab.grading.classrun.grade_model import Target

        cluster = Target(
            args.cluster,
            args.nodes,
            args.gpus_per_node,
            args.workers,
            args.partition,
            args.walltime,
            wait_s=1800.0 if args.cluster == "slurm" else 120.0,
        )
    options = GradeOptions(
        Path(args.submissions),
        Path(args.out),
        tuple(names),
        args.workers,
        gpus,
        args.regrade,
        args.timeout,
        args.unsafe,
        cluster=cluster,
        command=shlex.join(["gpulab", *args.command_line]),
    )
    try:
        return main(options)
    except GpulabError as exc:
        print(f"gpulab grade: {exc}", file=sys.stderr)
        return ExitCode.BAD_INPUT


def _worker(args: argparse.Namespace) -> int:
    gpus = (
        None
        if args.gpus is None
        else [g for g in args.gpus.split(",") if g and args.gpus != "none"]
    )
    if gpus is not None and not all(g.isdigit() for g in gpus):
        print(
            f"gpulab worker: --gpus {args.gpus!r}: give GPU indices as nvidia-smi numbers "
            "them, e.g. 0,1",
            file=sys.stderr,
        )
        return ExitCode.BAD_INPUT
    from gpulab.grading.classrun.cluster.serve import serve

    if args.old_course:
        print(
            "gpulab worker: --course is not needed: each grader sends its course with the "
            "jobs (ignored)",
            file=sys.stderr,
        )
    try:
        return serve(
            args.address,
            gpus=gpus,
            cpu_slots=args.cpu_slots,
            unsafe=args.unsafe,
            fake_gpus=args.fake_gpus,
            name=args.name or "",
            death_timeout=args.death_timeout,
            local_directory=args.local_directory,
        )
    except GpulabError as exc:
        print(f"gpulab worker: {exc}", file=sys.stderr)
        return ExitCode.BAD_INPUT
