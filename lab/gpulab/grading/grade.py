"""`gpulab grade`: a class's notebooks graded in one command, safely, in parallel, resumably.

The run: read the submissions (`gpulab.grading.intake`), find which guards
this machine offers (`gpulab.grading.sandbox`) and refuse without a
file-system guard unless ``--unsafe``; note each exercise's worth by running
its checks on the released notebook; then one job per learner and exercise,
each a checks process of its own (`gpulab.grading.runner`) whose learner code
runs sandboxed. CPU jobs run ``--workers`` at a time; beside them each GPU
has a lane that runs GPU jobs one at a time from a queue all lanes share, so
GPU jobs spread over the GPUs as each comes free. After each job NVML must
show the GPU back as it was (no new process, memory back) before its lane
takes the next; a GPU that does not recover is taken out of rotation, its
lane stops and the other GPUs go on with the queue. Every grade is written to the gradebook as it
comes, so a killed run goes on where it stopped; then grades.csv and the
feedback are written from the gradebook.
"""

from __future__ import annotations

import concurrent.futures
import hashlib
import importlib
import queue
import statistics
import sys
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from gpulab.course.manifest import ExerciseEntry
from gpulab.errors import GpulabError
from gpulab.grading import sandbox
from gpulab.grading.gradebook import Gradebook
from gpulab.grading.runner import CheckReport, check_files, run_checks
from gpulab.grading.verdict import KINDS, CheckRow, ExerciseGrade, Kind, LearnerGrades
from gpulab.multicast import NO_MULTICAST

__all__ = ["GradeError", "GradeOptions", "GradeSummary", "grade_class"]


class GradeError(GpulabError):
    """The run cannot start: what is wrong and what to do."""


@dataclass(frozen=True)
class GradeOptions:
    submissions: Path
    out: Path
    exercises: tuple[str, ...] = ()          # default: every exercise someone handed in
    workers: int = 2
    gpus: tuple[str, ...] | None = None      # default: every visible GPU
    regrade: bool = False
    timeout: float | None = None             # per exercise; default: course.toml's limit
    unsafe: bool = False
    policy: sandbox.Policy = field(default_factory=sandbox.Policy)
    gpu_recovery_s: float = 15.0


@dataclass
class GradeSummary:
    learners: list[LearnerGrades]
    exercises: list[str]
    maxima: dict[str, float]
    graded: int = 0                 # jobs run in this run
    reused: int = 0                 # grades kept from an earlier run
    guards: tuple[str, ...] = ()
    gpu_events: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    out: Path = Path()
    tag: str = ""                   # the run's name: its cgroups, its jobs' GPULAB_JOB


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def _sha256(*paths: Path) -> str:
    digest = hashlib.sha256()
    for path in paths:
        digest.update(path.name.encode() + b"\0")
        digest.update(path.read_bytes() if path.is_file() else b"(missing)")
    return digest.hexdigest()


def checks_hash(entry: ExerciseEntry) -> str:
    """What decides a grade besides the learner's notebook: released notebook and checks."""
    import gpulab

    return _sha256(entry.notebook, *check_files(entry, hidden=True)) + f":{gpulab.__version__}"


def verdict(report: CheckReport) -> tuple[Kind, str, tuple[CheckRow, ...]]:
    """Sort a checks report into a kind, a message and the check rows."""
    rows = tuple(CheckRow(r.check, r.title, r.outcome, r.points, r.earned,
                          "" if r.hidden else r.message, r.hidden) for r in report.results)
    if report.status == "invalid":
        return "invalid", report.message, rows
    if report.status == "error":
        if "took longer than" in report.message:
            return "timeout", report.message, rows
        return "not-run", report.message, rows
    if report.status == "skipped":
        return "not-run", report.message or "the checks were skipped", rows
    if report.status == "passed":
        return "right", "", rows
    kinds = {r.kind for r in report.results if r.outcome == "failed"}
    order: tuple[tuple[str, Kind], ...] = (("invalid", "invalid"), ("fault", "gpu-fault"),
                               ("timeout", "timeout"), ("crashed", "crashed"),
                                           ("crash", "crashed"))
    for learner_kind, kind in order:
        if learner_kind in kinds:
            first = next(r for r in report.results
                         if r.outcome == "failed" and r.kind == learner_kind)
            return kind, "" if first.hidden else first.message.split("\n")[0], rows
    return "wrong", "", rows


# -- GPUs ---------------------------------------------------------------------------------

class GpuPool:
    """The GPUs GPU jobs may use, each checked after every job it ran.

    Each GPU gets a lane of its own in `_run_jobs`: one job at a time, taken
    from the queue all lanes share, so the jobs spread over the GPUs as they
    come free and a GPU that fails stops only its own lane.
    """

    def __init__(self, gpus: Sequence[str], recovery_s: float,
                 event: Callable[[str, str], None]) -> None:
        self.gpus = list(dict.fromkeys(gpus))
        self.recovery_s = recovery_s
        self.event = event
        self.baseline: dict[str, tuple[set[int], int]] = {}
        for gpu in self.gpus:
            state = _gpu_state(gpu)
            if state is None:
                have = _visible_gpus()
                raise GradeError(f"--gpus {','.join(self.gpus)}: NVML cannot read GPU {gpu}; "
                                 + (f"this machine's GPUs are {', '.join(have)}" if have
                                    else "this machine has no NVIDIA GPU NVML can read"))
            self.baseline[gpu] = state

    def recovered(self, gpu: str) -> bool:
        """After a job: wait until NVML shows the GPU as before; False (logged) if it does not."""
        before_pids, before_used = self.baseline[gpu]
        deadline = time.monotonic() + self.recovery_s
        state = _gpu_state(gpu)
        while state is not None:
            pids, used = state
            if pids <= before_pids and used <= before_used + 64 * 2**20:
                return True
            if time.monotonic() > deadline:
                break
            time.sleep(0.2)
            state = _gpu_state(gpu)
        if state is None:
            self.event(gpu, "NVML cannot read this GPU any more: taken out of rotation")
        else:
            extra = sorted(state[0] - before_pids)
            self.event(gpu, f"did not recover within {self.recovery_s:g} s after a job "
                            f"(processes {extra or 'none new'}, "
                            f"{(state[1] - before_used) / 2**20:.0f} MiB more in use): "
                            "taken out of rotation")
        return False


def _gpu_state(gpu: str) -> tuple[set[int], int] | None:
    """(compute process ids, memory used in bytes) of GPU `gpu` (an index), via NVML."""
    try:
        pynvml = importlib.import_module("pynvml")
        pynvml.nvmlInit()
        try:
            handle = pynvml.nvmlDeviceGetHandleByIndex(int(gpu))
            pids = {p.pid for p in pynvml.nvmlDeviceGetComputeRunningProcesses(handle)}
            used = int(pynvml.nvmlDeviceGetMemoryInfo(handle).used)
            return pids, used
        finally:
            pynvml.nvmlShutdown()
    except Exception:  # NVML's errors are many classes; any means "cannot tell"
        return None


def _visible_gpus() -> list[str]:
    from gpulab.grading.gpu import gpu_missing

    if gpu_missing():
        return []
    try:
        pynvml = importlib.import_module("pynvml")
        pynvml.nvmlInit()
        try:
            count = pynvml.nvmlDeviceGetCount()
        finally:
            pynvml.nvmlShutdown()
    except Exception:  # as above
        return []
    return [str(i) for i in range(count)]


# -- the run ------------------------------------------------------------------------------

@dataclass(frozen=True)
class Job:
    slug: str
    entry: ExerciseEntry
    notebook: Path
    notebook_hash: str


def grade_class(options: GradeOptions, *, course: Any = None,
                progress: Callable[[str, int, int], None] | None = None,
                command: str = "gpulab grade") -> GradeSummary:
    """Grade every submission under `options.submissions`; write the gradebook, CSV, feedback."""
    from gpulab.course import load_course
    from gpulab.grading import feedback, intake

    course = course or load_course()
    entries = {e.name: e for e in course.exercises()}
    unknown = [name for name in options.exercises if name not in entries]
    if unknown:
        raise GradeError(f"no exercise named {', '.join(unknown)} in the course; the "
                         f"exercises are: {', '.join(entries)}")
    if not options.submissions.exists():
        raise GradeError(f"{options.submissions}: no such folder or zip file")
    guards = sandbox.available()
    if not guards.bubblewrap and not options.unsafe:
        raise GradeError(f"refusing to grade: no guard can hide the course and the other "
                         f"learners' files from learner code ({guards.bubblewrap_problem}). "
                         "Install bubblewrap, or pass --unsafe to grade without it.")
    out = options.out
    try:
        (out / "feedback").mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise GradeError(f"{out}: cannot write the results there: {exc.strerror}") from None
    work = out / "submissions"
    course_root = Path(course.manifest.path).resolve().parent.parent
    tag = uuid.uuid4().hex[:12]

    names = list(options.exercises) or list(entries)
    taken = intake.collect(options.submissions, names, work)
    if not options.exercises:     # the exercises someone handed in, in course order
        handed = {e for learner in taken.learners for e in (*learner.notebooks,
                                                              *learner.problems)}
        names = [n for n in names if n in handed]
    summary = GradeSummary([], names, {}, problems=list(taken.problems), out=out, tag=tag)
    unhidden = [name for name in names if not check_files(entries[name], hidden=True)[-1].is_file()]
    if unhidden:
        raise GradeError(f"the course at {course_root} has no hidden checks for "
                         f"{', '.join(unhidden)} (an installed course ships none): grading "
                         "needs the course checkout with solutions/; give it with --course DIR")
    if not names:
        raise GradeError(f"{options.submissions}: no notebook of any exercise was found "
                         "(each learner's folder or zip should hold <exercise>.ipynb files)"
                         + ("; " + "; ".join(taken.problems[:3]) if taken.problems else ""))

    with Gradebook(out / "gradebook.sqlite") as book:
        try:
            cgroups = sandbox.run_cgroups(guards.cgroup, tag)
        except OSError:
            cgroups = ""            # the guards line then says that no cgroup was used
        policy = replace(options.policy, bubblewrap=bool(guards.bubblewrap), tag=tag,
                         cgroup=cgroups,
                         hide=(str(course_root), str(options.submissions.resolve()),
                               str(out.resolve()), *options.policy.hide),
                         show=(str(Path(course.manifest.path).resolve().parent),
                               str(course_root / "exercises"), *options.policy.show))
        in_force = summary.guards = guards.describe(policy)
        status, run_id = "stopped", None
        try:
            run_id = book.start_run(started=_now(), command=command,
                                    version=_version(), guards=in_force)
            hashes = {name: checks_hash(entries[name]) for name in names}
            for name in names:                      # what each exercise is worth
                known = book.exercise(name)
                if known and known[0] == hashes[name]:
                    summary.maxima[name] = known[1]
                    continue
                report = run_checks(entries[name], entries[name].notebook, hidden=True)
                worth = sum(r.points for r in report.results)
                if not report.results:
                    raise GradeError(f"the checks of {name} do not run on its released "
                                     f"notebook: {report.message}")
                book.set_exercise(name, hashes[name], worth, entries[name].gpu)
                summary.maxima[name] = worth
            done = {} if options.regrade else book.graded()
            jobs: list[Job] = []
            for learner in taken.learners:
                book.set_learner(learner.slug, learner.learner, str(learner.source))
                for name in names:
                    notebook_hash = learner.hashes.get(name, "")
                    before = done.get((learner.slug, name))
                    if before and before[:2] == (notebook_hash, hashes[name]) and \
                            before[2] != "not-run":
                        summary.reused += 1
                        continue
                    if name in learner.notebooks:
                        jobs.append(Job(learner.slug, entries[name], learner.notebooks[name],
                                        notebook_hash))
                        continue
                    problem = learner.problems.get(name)
                    grade = ExerciseGrade(name, "invalid" if problem else "missing", 0.0,
                                          summary.maxima[name],
                                          problem or "no notebook was handed in",
                                          notebook_hash=notebook_hash)
                    book.record(learner.slug, grade, checks_hash=hashes[name], gpu="",
                                run_id=run_id, graded_at=_now())
            _run_jobs(jobs, options, policy, in_force, summary, book, run_id, hashes, progress)
            status = "finished"
        finally:
            sandbox.remove_cgroups(cgroups)
            if run_id is not None:
                book.end_run(run_id, finished=_now(), status=status)
        summary.learners = book.learners(names)

    title = getattr(course, "title", "gpulab")
    for learner_grades in summary.learners:
        feedback.write_feedback(learner_grades, out / "feedback", title=title, run_at=_now(),
                                maxima=summary.maxima)
    feedback.write_grades_csv(summary.learners, names, summary.maxima, out / "grades.csv")
    return summary


def _version() -> str:
    import gpulab

    return str(gpulab.__version__)


def _run_jobs(jobs: list[Job], options: GradeOptions, policy: sandbox.Policy,
              in_force: tuple[str, ...], summary: GradeSummary, book: Gradebook, run_id: int,
              hashes: dict[str, str],
              progress: Callable[[str, int, int], None] | None) -> None:
    gpu_jobs = [j for j in jobs if j.entry.gpu]
    pool: GpuPool | None = None
    if gpu_jobs:
        gpus = list(options.gpus) if options.gpus is not None else _visible_gpus()

        def event(gpu: str, text: str) -> None:
            summary.gpu_events.append(f"GPU {gpu}: {text}")
            book.gpu_event(run_id, _now(), gpu, text)

        if gpus:
            pool = GpuPool(gpus, options.gpu_recovery_s, event)
    total, finished = len(jobs), 0
    lock = threading.Lock()
    stopping = threading.Event()      # ctrl-c: what is still running is not recorded

    def not_run(job: Job, why: str) -> None:
        grade = ExerciseGrade(job.entry.name, "not-run", 0.0, summary.maxima[job.entry.name],
                              f"not graded: {why}", guards=in_force,
                              notebook_hash=job.notebook_hash)
        book.record(job.slug, grade, checks_hash=hashes[job.entry.name], gpu="",
                    run_id=run_id, graded_at=_now())
        _tick()

    def one(job: Job, gpu: str = "") -> None:
        started = time.monotonic()
        env = {sandbox.ENV: replace(policy, gpu=job.entry.gpu).to_json(), **NO_MULTICAST}
        if gpu:
            env["CUDA_VISIBLE_DEVICES"] = gpu
        report = run_checks(job.entry, job.notebook, hidden=True, env=env,
                            timeout=options.timeout)
        if stopping.is_set():
            return
        kind, message, rows = verdict(report)
        earned = sum(r.earned for r in rows)
        grade = ExerciseGrade(job.entry.name, kind, earned, summary.maxima[job.entry.name],
                              message, rows, in_force, round(time.monotonic() - started, 3),
                              job.notebook_hash)
        book.record(job.slug, grade, checks_hash=hashes[job.entry.name], gpu=gpu,
                    run_id=run_id, graded_at=_now())
        _tick(f"{job.slug} · {job.entry.name}: {kind}")

    waiting: queue.Queue[Job] = queue.Queue()
    for job in gpu_jobs:
        waiting.put(job)

    def lane(gpu: str) -> None:
        """One GPU's jobs, one at a time, until none is left or the GPU fails."""
        assert pool is not None
        while not stopping.is_set():
            try:
                job = waiting.get_nowait()
            except queue.Empty:
                return
            try:
                one(job, gpu)
            finally:
                healthy = pool.recovered(gpu)
            if not healthy:
                return

    def _tick(text: str = "") -> None:
        nonlocal finished
        with lock:
            finished += 1
            summary.graded += 1
            if progress is not None:
                progress(text, finished, total)

    if progress is not None:
        progress("", 0, total)
    cpu = concurrent.futures.ThreadPoolExecutor(max_workers=max(1, options.workers))
    lanes = concurrent.futures.ThreadPoolExecutor(max_workers=len(pool.gpus) if pool else 1)
    try:
        futures = [lanes.submit(lane, gpu) for gpu in (pool.gpus if pool else [])]
        futures += [cpu.submit(one, job) for job in jobs if not job.entry.gpu]
        for future in concurrent.futures.as_completed(futures):
            future.result()
        # What the lanes left: no GPU at all, or every GPU taken out of rotation.
        why = ("no NVIDIA GPU on the grading machine" if pool is None
               else "every GPU was taken out of rotation")
        while not waiting.empty():
            not_run(waiting.get_nowait(), why)
    except BaseException:
        stopping.set()
        for executor in (cpu, lanes):
            executor.shutdown(wait=False, cancel_futures=True)
        raise
    for executor in (cpu, lanes):
        executor.shutdown(wait=True)


# -- the report for people ----------------------------------------------------------------

def summary_table(summary: GradeSummary) -> Any:
    """A rich renderable: scores, their spread, and what went wrong by kind."""
    from rich.console import Group
    from rich.table import Table

    total_max = sum(summary.maxima.get(e, 0.0) for e in summary.exercises) or 1.0
    scores = [learner.earned / total_max * 100 for learner in summary.learners]
    table = Table(title=f"{len(summary.learners)} learners × {len(summary.exercises)} "
                        "exercises", show_lines=False)
    table.add_column("exercise")
    table.add_column("worth", justify="right")
    table.add_column("mean", justify="right")
    table.add_column("outcomes")
    everything: Counter[str] = Counter()
    for name in summary.exercises:
        grades = [e for learner in summary.learners for e in learner.exercises
                  if e.exercise == name]
        counts: Counter[str] = Counter(e.kind for e in grades)
        everything.update(counts)
        mean = statistics.fmean(e.earned for e in grades) if grades else 0.0
        table.add_row(name, _num(summary.maxima.get(name, 0.0)), _num(mean),
                      _outcomes(counts))
    table.add_section()
    table.add_row("all", _num(total_max), "", _outcomes(everything))
    spread = Table(title="score distribution (% of the total)")
    spread.add_column("score")
    spread.add_column("learners", justify="right")
    spread.add_column("")
    buckets = Counter(min(int(s // 10), 9) for s in scores)
    most = max(buckets.values(), default=1)
    for b in range(9, -1, -1):
        label = f"{b * 10}–{b * 10 + 10}%" if b < 9 else "90–100%"
        spread.add_row(label, str(buckets.get(b, 0)), "█" * round(20 * buckets.get(b, 0) / most))
    parts: list[Any] = [table, spread]
    if scores:
        from rich.text import Text

        parts.append(Text(f"mean {statistics.fmean(scores):.1f} %, median "
                          f"{statistics.median(scores):.1f} %; {summary.graded} graded now, "
                          f"{summary.reused} kept from an earlier run"))
    return Group(*parts)


def _outcomes(counts: Counter[str]) -> str:
    """"right 12 · wrong 3 · timeout 1": the kinds in their fixed order, non-zero ones only."""
    return " · ".join(f"{kind} {counts[kind]}" for kind in KINDS if counts.get(kind))


def _num(value: float) -> str:
    return f"{value:g}" if value == int(value) else f"{value:.2f}"


def main(options: GradeOptions) -> int:
    """The CLI's body: progress bar, run, summary; exit status 0 when the run finished."""
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    console = Console(stderr=True)
    bar = Progress(TextColumn("grading"), BarColumn(), MofNCompleteColumn(),
                   TimeElapsedColumn(), TextColumn("{task.description}"), console=console,
                   transient=False)
    task = bar.add_task("", total=None)

    def progress(text: str, done: int, total: int) -> None:
        if not bar.live.is_started:     # drawn from the first step: a refusal draws no bar
            bar.start()
        bar.update(task, completed=done, total=total, description=text)

    try:
        try:
            summary = grade_class(options, progress=progress,
                                  command="gpulab grade " + " ".join(sys.argv[2:]))
        finally:
            if bar.live.is_started:
                bar.stop()
    except KeyboardInterrupt:
        console.print("[yellow]stopped.[/] The grades so far are in the gradebook; run the "
                      "same command again to go on where it stopped.")
        return 130
    out = Console()
    out.print(summary_table(summary))
    for line in summary.gpu_events:
        out.print(f"[red]{line}[/]")
    for line in summary.problems:
        out.print(f"[yellow]could not read[/] {line}")
    out.print("isolation in force: " + "; ".join(summary.guards))
    out.print(f"gradebook: {summary.out / 'gradebook.sqlite'}\nLMS CSV:   "
              f"{summary.out / 'grades.csv'}\nfeedback:  {summary.out / 'feedback'}/")
    return 0

