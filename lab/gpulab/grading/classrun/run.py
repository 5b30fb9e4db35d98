"""A grading run's jobs: run in parallel, each grade handed to one writer.

CPU jobs run `workers` at a time in a thread pool; beside them each GPU has
a lane (`gpulab.grading.classrun.gpupool`) that runs GPU jobs one at a time from a
queue all lanes share. No job writes anything. `run_jobs` yields each job's
grade, as it comes, in the thread that iterates it; that thread is the run's
one writer (`Writer`), which alone uses the gradebook's connection.

Every job yields exactly one grade. Whatever a job raises (the runner, the
verdict, copying the notebook, anything) becomes that job's ``not-run`` grade
with the exception's type and message as its reason, and the run goes on; a
grade that cannot be stored is stored as ``not-run`` saying why.

A job grades a copy: `check_job` copies the intake's notebook into the job's
own folder (``OUT/.jobs/<slug>/``), hashes that copy and gives that copy to
the checks, so the hash stored is of the very bytes the checks read, whatever
happens to the intake's file meanwhile.
"""

from __future__ import annotations

import concurrent.futures
import hashlib
import os
import queue
import stat
import threading
import time
from collections.abc import Callable, Generator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Protocol

from gpulab.course.manifest import ExerciseEntry
from gpulab.course.paths import CoursePaths
from gpulab.environment import COURSE_DIR
from gpulab.grading import sandbox
from gpulab.grading.checks.notebook import MAX_BYTES
from gpulab.grading.checks.runner import run_checks
from gpulab.grading.gradebook import Gradebook
from gpulab.grading.gradebook.verdict import ExerciseGrade, failure, verdict
from gpulab.multicast import NO_MULTICAST
from gpulab.timestamps import utc_now

__all__ = [
    "Done",
    "GpuEvent",
    "Job",
    "Lanes",
    "Writer",
    "check_job",
    "copy_notebook",
    "not_run",
    "now",
    "read_notebook",
    "run_jobs",
]


@dataclass(frozen=True)
class Job:
    """One learner's notebook of one exercise, to be graded."""

    slug: str
    entry: ExerciseEntry
    notebook: Path  # the intake's copy
    notebook_hash: str  # the intake's hash of it
    checks_hash: str
    possible: float
    guards: tuple[str, ...]  # the isolation in force while it runs
    cpu_guards: tuple[str, ...] = ()  # a GPU job's, when it runs without a GPU (default: guards)


@dataclass(frozen=True)
class Done:
    """A job's grade, and the GPU it ran on ("" for a CPU job or none)."""

    job: Job
    grade: ExerciseGrade
    gpu: str = ""


@dataclass(frozen=True)
class GpuEvent:
    """A GPU taken out of rotation, and why."""

    gpu: str
    text: str


@dataclass(frozen=True)
class _LaneEnd:
    gpu: str


class Lanes(Protocol):
    """GPUs that run GPU jobs: `gpulab.grading.classrun.gpupool.GpuPool`."""

    @property
    def gpus(self) -> list[str]: ...

    def after_job(self, gpu: str) -> str:
        """ "" when `gpu` is fit for the next job, else why it is taken out of rotation."""
        ...


Execute = Callable[[Job, str], ExerciseGrade]


now = utc_now
"""The time a grade, a run or an event is stored with (`gpulab.timestamps.utc_now`)."""


def not_run(job: Job, why: str) -> ExerciseGrade:
    """A job that was not graded: no points, no guards (nothing of the learner's ran)."""
    return ExerciseGrade(
        job.entry.name,
        "not-run",
        0.0,
        job.possible,
        f"not graded: {why}",
        notebook_hash=job.notebook_hash,
    )


def run_jobs(
    jobs: Sequence[Job], execute: Execute, *, workers: int, lanes: Lanes | None, no_gpu: str
) -> Generator[Done | GpuEvent, None, None]:
    """Run every job; yield each one's grade (and each GPU event) as it comes.

    CPU jobs run in `workers` threads, GPU jobs in one lane per GPU of
    `lanes`. GPU jobs that no lane took (there is no GPU: `no_gpu` says why,
    or every GPU was taken out of rotation) run with the CPU jobs, without a
    GPU: their checks that need none are graded, the others are not run, and
    the grade is ``partial`` (or ``not-run`` where every check needs a GPU),
    saying why. When the caller stops iterating (ctrl-c), what still runs is
    never yielded.
    """
    outbox: queue.Queue[Done | GpuEvent | _LaneEnd] = queue.Queue()
    waiting: queue.Queue[Job] = queue.Queue()
    stopping = threading.Event()
    cpu_jobs = [job for job in jobs if not job.entry.gpu]
    for job in jobs:
        if job.entry.gpu:
            waiting.put(job)
    gpus = list(lanes.gpus) if lanes is not None and not waiting.empty() else []

    def graded(job: Job, gpu: str) -> Done:
        try:
            return Done(job, execute(job, gpu), gpu)
        except BaseException as exc:  # in a worker thread: a job's failure is its grade
            return Done(job, not_run(job, f"the grader failed on it: {failure(exc)}"), gpu)

    def cpu(job: Job) -> None:
        outbox.put(graded(job, ""))

    def without_gpu(job: Job, why: str) -> None:
        done = graded(job, "")
        grade = done.grade
        if grade.kind == "partial":
            left = sum(r.points for r in grade.checks if r.outcome == "skipped")
            grade = replace(
                grade,
                message=f"{why}: {left:g} of {grade.possible:g} points need "
                "a GPU and were not graded; the checks that need "
                "none were",
            )
        elif grade.kind == "not-run" and all(r.outcome == "skipped" for r in grade.checks):
            grade = replace(grade, message=f"not graded: {why}")
        outbox.put(replace(done, grade=grade))

    def lane(gpu: str) -> None:
        """One GPU's jobs, one at a time, until none is left or the GPU fails."""
        assert lanes is not None
        try:
            while not stopping.is_set():
                try:
                    job = waiting.get_nowait()
                except queue.Empty:
                    return
                outbox.put(graded(job, gpu))
                try:
                    why = lanes.after_job(gpu)
                except Exception as exc:
                    why = (
                        f"could not be checked after a job ({failure(exc)}): taken out of rotation"
                    )
                if why:
                    outbox.put(GpuEvent(gpu, why))
                    return
        finally:
            outbox.put(_LaneEnd(gpu))

    pool = concurrent.futures.ThreadPoolExecutor(max_workers=max(1, workers))
    gpu_pool = concurrent.futures.ThreadPoolExecutor(max_workers=max(1, len(gpus)))
    finished = False
    try:
        for gpu in gpus:
            gpu_pool.submit(lane, gpu)
        for job in cpu_jobs:
            pool.submit(cpu, job)
        cpu_left, lanes_left = len(cpu_jobs), len(gpus)
        left_over = False
        while True:
            if not lanes_left and not left_over:  # no lane will take what waits
                left_over = True
                why = no_gpu if not gpus else "every GPU was taken out of rotation"
                while not waiting.empty():
                    pool.submit(without_gpu, waiting.get_nowait(), why)
                    cpu_left += 1
            if not (cpu_left or lanes_left):
                break
            item = outbox.get()
            if isinstance(item, _LaneEnd):
                lanes_left -= 1
                continue
            if isinstance(item, Done) and not item.gpu:
                cpu_left -= 1
            yield item
        finished = True
    finally:
        stopping.set()
        for executor in (pool, gpu_pool):
            executor.shutdown(wait=finished, cancel_futures=True)


class Writer:
    """The run's one writer: stores each grade and event in the gradebook, in its own thread.

    A grade that cannot be stored is stored as ``not-run`` with the reason; if
    even that fails, the reason goes to `problems`. Nothing here raises.
    """

    def __init__(self, book: Gradebook, run_id: int) -> None:
        self.book = book
        self.run_id = run_id
        self.problems: list[str] = []
        self.events: list[str] = []

    def grade(
        self, slug: str, grade: ExerciseGrade, *, checks_hash: str, gpu: str = ""
    ) -> ExerciseGrade:
        """Store `grade`; the grade the gradebook holds now."""
        try:
            self.book.record(
                slug, grade, checks_hash=checks_hash, gpu=gpu, run_id=self.run_id, graded_at=now()
            )
            return grade
        except Exception as exc:
            why = f"its grade could not be stored: {failure(exc)}"
        fallback = ExerciseGrade(
            grade.exercise,
            "not-run",
            0.0,
            grade.possible,
            f"not graded: {why}",
            notebook_hash=grade.notebook_hash,
        )
        try:
            self.book.record(
                slug,
                fallback,
                checks_hash=checks_hash,
                gpu=gpu,
                run_id=self.run_id,
                graded_at=now(),
            )
        except Exception as exc:
            self.problems.append(
                f"{slug} · {grade.exercise}: {why}; nor as not run: {failure(exc)}"
            )
        return fallback

    def done(self, done: Done) -> ExerciseGrade:
        return self.grade(done.job.slug, done.grade, checks_hash=done.job.checks_hash, gpu=done.gpu)

    def event(self, event: GpuEvent) -> None:
        line = f"GPU {event.gpu}: {event.text}"
        self.events.append(line)
        try:
            self.book.gpu_event(self.run_id, now(), event.gpu, event.text)
        except Exception as exc:
            self.problems.append(f"{line} (not stored: {failure(exc)})")


def check_job(
    job: Job, gpu: str, *, policy: sandbox.Policy, timeout: float | None, folder: Path
) -> ExerciseGrade:
    """Grade one job: copy its notebook into `folder`/<slug>/, hash the copy, check the copy.

    Messages name the notebook as the intake stored it (the copy is gone after the job).
    """
    started = time.monotonic()
    own = folder / job.slug
    own.mkdir(parents=True, exist_ok=True)
    copy = own / job.notebook.name
    try:
        notebook_hash = copy_notebook(job.notebook, copy)
        # the checks and the released notebook read the course the exercise is of (specs.toml),
        # wherever it lies: a checkout, or a cluster worker's unpacked bundle
        course = CoursePaths.of_notebook(job.entry.notebook.resolve())
        # a GPU job with no GPU to run on gets neither the device files nor a CUDA device
        env = {
            sandbox.ENV: replace(policy, gpu=job.entry.gpu and bool(gpu)).to_json(),
            "CUDA_VISIBLE_DEVICES": gpu,
            COURSE_DIR.name: str(course.lessons),
            **NO_MULTICAST,
        }
        report = run_checks(job.entry, copy, hidden=True, env=env, timeout=timeout)
    finally:
        copy.unlink(missing_ok=True)
    kind, message, rows = verdict(report)
    shown, stored = str(copy), str(job.notebook)
    rows = tuple(
        replace(
            r,
            message=r.message.replace(shown, stored),
            instructor_message=r.instructor_message.replace(shown, stored),
        )
        for r in rows
    )
    guards = job.cpu_guards if job.entry.gpu and not gpu and job.cpu_guards else job.guards
    return ExerciseGrade(
        job.entry.name,
        kind,
        sum(r.earned for r in rows),
        job.possible,
        message.replace(shown, stored),
        rows,
        guards,
        round(time.monotonic() - started, 3),
        notebook_hash,
    )


def copy_notebook(source: Path, target: Path) -> str:
    """Copy `source` (a regular file, not through a link, at most the notebook size limit) to
    `target`; the sha256 of the bytes copied."""
    fd = os.open(source, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(f"{source}: not a regular file any more")
    except BaseException:
        os.close(fd)
        raise
    with os.fdopen(fd, "rb") as file:
        data = file.read(MAX_BYTES + 1)
    if len(data) > MAX_BYTES:
        raise OSError(f"{source}: over the notebook size limit now ({MAX_BYTES // 2**20} MiB)")
    target.write_bytes(data)
    return hashlib.sha256(data).hexdigest()


def read_notebook(path: Path) -> bytes:
    """The notebook's bytes, read as `copy_notebook` reads them: a regular file, not
    through a link, at most the notebook size limit."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    with os.fdopen(fd, "rb") as file:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(f"{path}: not a regular file any more")
        data = file.read(MAX_BYTES + 1)
    if len(data) > MAX_BYTES:
        raise OSError(f"{path}: over the notebook size limit now ({MAX_BYTES // 2**20} MiB)")
    return data
