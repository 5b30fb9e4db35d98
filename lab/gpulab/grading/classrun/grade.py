"""`gpulab grade`: a class's notebooks graded in one command, safely, in parallel, resumably.

The run:

1. holds its output folder (`gpulab.grading.classrun.outdir`): a second run into the
   same ``--out`` is refused at once, naming the first one's pid;
2. opens the gradebook (refused if a newer gpulab wrote it), marks the runs
   an earlier, killed grader left ``running`` as ``killed``, and removes what
   they left: processes, cgroups, job folders, temporary folders;
3. reads the submissions (`gpulab.grading.intake`), finds which guards this
   machine offers (`gpulab.grading.sandbox`) and refuses without a
   file-system guard unless ``--unsafe``; notes each exercise's worth by
   running its checks on the released notebook; plans the jobs and the
   grades that need none against the gradebook (`gpulab.grading.classrun.plan`);
4. runs one job per learner and exercise (`gpulab.grading.classrun.run`): a checks
   process of its own (`gpulab.grading.checks.runner`) whose learner code runs
   sandboxed, on a copy of the notebook that is hashed as it is graded. CPU
   jobs run ``--workers`` at a time; each GPU has a lane
   (`gpulab.grading.classrun.gpupool`). Jobs return their grades and this thread
   alone writes them, as they come, so a killed run goes on where it
   stopped; a job that fails is that job's ``not-run`` grade, never the run's
   end;
5. writes grades.csv and every learner's feedback from the gradebook.

What a run is given (`GradeOptions`) and gives back (`GradeSummary`), and the
errors that stop it before it grades (`GradeError`), are defined in
`gpulab.grading.classrun.grade_model`; the key its grades are kept under (`checks_hash`)
in `gpulab.grading.classrun.fingerprint`. All are importable from here.
"""

from __future__ import annotations

import contextlib
import uuid
from dataclasses import replace
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

from gpulab.course.catalog import UnknownExercise
from gpulab.course.manifest import ExerciseEntry
from gpulab.course.paths import CoursePaths
from gpulab.grading import sandbox
from gpulab.grading.checks.runner import check_files, remove_stale_folders, run_checks
from gpulab.grading.classrun import outdir
from gpulab.grading.classrun.fingerprint import checks_hash, gpulab_version
from gpulab.grading.classrun.gpupool import GpuPool, GpuPoolError, visible_gpus
from gpulab.grading.classrun.grade_model import GradeError, GradeOptions, GradeSummary, Progress
from gpulab.grading.classrun.plan import plan
from gpulab.grading.classrun.run import Done, Job, Writer, check_job, now, run_jobs
from gpulab.grading.gradebook import Gradebook
from gpulab.grading.gradebook.verdict import failure, plain

if TYPE_CHECKING:
    from gpulab.course.catalog import Course
    from gpulab.grading.intake import Intake

__all__ = ["grade_class"]


def grade_class(
    options: GradeOptions,
    *,
    course: Course | None = None,
    progress: Progress | None = None,
) -> GradeSummary:
    """Grade every submission under `options.submissions`; write the gradebook, CSV, feedback."""
    from gpulab.course import load_course

    course = course or load_course()
    entries = {e.name: e for e in course.exercises()}
    for name in options.exercises:
        try:
            course.exercise(name)
        except UnknownExercise as exc:
            raise GradeError(str(exc)) from None
    if not options.submissions.exists():
        raise GradeError(f"{options.submissions}: no such folder or zip file")
    guards = sandbox.available()
    if not guards.bubblewrap and not options.unsafe:
        raise GradeError(sandbox.refusal(guards, "grade"))
    try:
        (options.out / "feedback").mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise GradeError(f"{options.out}: cannot write the results there: {exc.strerror}") from None
    try:
        with outdir.claim(options.out), Gradebook(options.out / "gradebook.sqlite") as book:
            return _Run(options, course, entries, guards, book, progress).grade()
    except outdir.OutBusy as exc:
        raise GradeError(str(exc)) from None


class _Run:
    """One run, holding its output folder and its gradebook: this thread is the one writer."""

    def __init__(
        self,
        options: GradeOptions,
        course: Course,
        entries: dict[str, ExerciseEntry],
        guards: sandbox.Guards,
        book: Gradebook,
        progress: Progress | None,
    ) -> None:
        self.options, self.course, self.entries = options, course, entries
        self.guards, self.book, self.progress = guards, book, progress
        self.out = options.out
        self.tag = uuid.uuid4().hex[:12]
        self.gpus: list[str] = []  # the GPUs that run GPU jobs: none, they run without one

    def grade(self) -> GradeSummary:
        from gpulab.grading import intake

        summary = GradeSummary([], [], {}, out=self.out, tag=self.tag)
        summary.notes = self._clear_dead_runs()
        course_root = CoursePaths.of_manifest(Path(self.course.manifest.path).resolve()).root
        names = list(self.options.exercises) or list(self.entries)
        taken = intake.collect(
            self.options.submissions, names, self.out / "submissions", held=self.book.holders()
        )
        if not self.options.exercises:  # the exercises someone handed in, in course order
            handed = {
                e for learner in taken.learners for e in (*learner.notebooks, *learner.problems)
            }
            names = [n for n in names if n in handed]
        summary.exercises = names
        unhidden = [n for n in names if not check_files(self.entries[n], hidden=True)[-1].is_file()]
        if unhidden:
            raise GradeError(
                f"the course at {course_root} has no hidden checks for "
                f"{', '.join(unhidden)} (an installed course ships none): grading "
                "needs the course checkout with solutions/; give it with --course "
                "DIR"
            )
        if not names:
            raise GradeError(
                f"{self.options.submissions}: no notebook of any exercise was "
                "found (each learner's folder or zip should hold <exercise>.ipynb "
                "files)" + ("; " + plain("; ".join(taken.problems[:3])) if taken.problems else "")
            )
        try:
            cgroups = sandbox.run_cgroups(self.guards.cgroup, self.tag)
        except OSError:
            cgroups = ""  # the guards lines then say that no cgroup was used
        policy = replace(
            self.options.policy,
            bubblewrap=bool(self.guards.bubblewrap),
            tag=self.tag,
            cgroup=cgroups,
            private=(
                str(course_root / "solutions"),
                str(self.options.submissions.resolve()),
                str(self.out.resolve()),
                *self.options.policy.private,
            ),
            show=(
                str(Path(self.course.manifest.path).resolve().parent),
                str(course_root / "exercises"),
                *self.options.policy.show,
            ),
        )
        here = self.options.cluster is None  # on a cluster the workers have the GPUs
        gpu_work = here and any(self.entries[n].gpu for n in names)
        self.gpus = (
            (list(self.options.gpus) if self.options.gpus is not None else visible_gpus())
            if gpu_work
            else []
        )
        in_force = {gpu: self.guards.describe(replace(policy, gpu=gpu)) for gpu in (False, True)}
        if here and not self.gpus:  # GPU exercises then run without a GPU, as CPU jobs do
            in_force[True] = in_force[False]
        summary.guards = _run_guards(in_force, {self.entries[n].gpu for n in names})
        status, run_id = "stopped", None
        try:
            run_id = self.book.start_run(
                started=now(),
                command=self.options.command,
                version=gpulab_version(),
                guards=summary.guards,
                tag=self.tag,
                cgroups=cgroups,
            )
            summary.run_id = run_id
            writer = Writer(self.book, run_id)
            jobs = self._plan(taken, names, in_force, summary, writer)
            self._run(jobs, policy, summary, writer)
            status = "finished"
        finally:
            sandbox.remove_cgroups(cgroups)
            outdir.end_processes(self.tag)  # nothing of its jobs outlives the run
            outdir.remove_jobs(self.out)
            if run_id is not None:
                self.book.end_run(run_id, finished=now(), status=status)
        assert run_id is not None
        summary.learners = self.book.learners(names)
        problems = [*taken.problems, *writer.problems, *self._write_outputs(summary)]
        try:
            self.book.add_problems(run_id, problems)
            summary.problems = self.book.problems(run_id)
        except Exception as exc:  # the gradebook is the door that cleans them; else clean here
            summary.problems = [plain(p) for p in problems]
            summary.problems.append(f"the problems above could not be stored: {failure(exc)}")
        return summary

    def _clear_dead_runs(self) -> list[str]:
        """Mark runs left `running` as killed; remove what they and other dead runs left."""
        notes = []
        for dead in self.book.mark_killed(finished=now()):
            ended = outdir.end_processes(dead.tag)  # then nothing makes a job cgroup
            sandbox.remove_cgroups(dead.cgroups)
            notes.append(
                f"run {dead.id} was left running by a grader that was killed: marked "
                f"killed" + (f"; {ended} of its processes ended" if ended else "")
            )
        outdir.remove_jobs(self.out)
        removed = remove_stale_folders()
        if removed:
            notes.append(f"{len(removed)} temporary folders of ended graders removed")
        cgroups = sandbox.remove_stale_cgroups(self.guards.cgroup)  # any --out's dead runs
        if cgroups:
            notes.append(f"{len(cgroups)} cgroups of ended graders removed")
        return notes

    def _plan(
        self,
        taken: Intake,
        names: list[str],
        in_force: dict[bool, tuple[str, ...]],
        summary: GradeSummary,
        writer: Writer,
    ) -> list[Job]:
        """What each exercise is worth, the grades that need no job (stored now), and the
        jobs (`gpulab.grading.classrun.plan`)."""
        hashes = {name: checks_hash(self.entries[name]) for name in names}
        for name in names:
            entry = self.entries[name]
            known = self.book.exercise(name)
            if known and known.checks_hash == hashes[name]:
                summary.maxima[name] = known.max_points
                continue
            report = run_checks(entry, entry.notebook, hidden=True)
            if not report.results:
                raise GradeError(
                    f"the checks of {name} do not run on its released notebook: {report.message}"
                )
            summary.maxima[name] = sum(r.points for r in report.results)
            self.book.set_exercise(name, hashes[name], summary.maxima[name], entry.gpu)
        stored = {} if self.options.regrade else self.book.graded()
        learners = []
        for learner in taken.learners:
            try:
                self.book.set_learner(
                    learner.slug, learner.learner, str(learner.source), identity=learner.identity
                )
            except Exception as exc:
                writer.problems.append(
                    f"{learner.slug}: not graded, the learner could not be stored: {failure(exc)}"
                )
                continue
            learners.append(learner)
        planned = plan(
            learners,
            [self.entries[name] for name in names],
            hashes=hashes,
            maxima=summary.maxima,
            stored=stored,
            guards=in_force,
        )
        for settled in planned.settled:
            writer.grade(settled.slug, settled.grade, checks_hash=settled.checks_hash)
        summary.reused += planned.reused
        return planned.jobs

    def _run(
        self, jobs: list[Job], policy: sandbox.Policy, summary: GradeSummary, writer: Writer
    ) -> None:
        lanes = None
        if any(job.entry.gpu for job in jobs) and self.gpus and self.options.cluster is None:
            try:
                lanes = GpuPool(self.gpus, self.options.gpu_recovery_s)
            except GpuPoolError as exc:
                raise GradeError(str(exc)) from None
        execute = partial(
            check_job, policy=policy, timeout=self.options.timeout, folder=self.out / outdir.JOBS
        )
        total = len(jobs)
        if self.progress is not None:
            self.progress("", 0, total)
        if self.options.cluster is None:
            results = run_jobs(
                jobs,
                execute,
                workers=self.options.workers,
                lanes=lanes,
                no_gpu="no NVIDIA GPU on the grading machine",
            )
        else:  # the same jobs on a Dask cluster's workers
            from gpulab.grading.classrun.cluster.client import run_on_cluster

            results = run_on_cluster(
                self.options.cluster,
                jobs,
                course=self.course,
                policy=policy,
                timeout=self.options.timeout,
                recovery_s=self.options.gpu_recovery_s,
                notes=summary.notes,
                problems=writer.problems,
            )
        with (
            contextlib.closing(results),
            lanes or contextlib.nullcontext(),
        ):  # ctrl-c: the jobs running are dropped
            for item in results:
                if isinstance(item, Done):
                    stored = writer.done(item)
                    summary.graded += 1
                    if self.progress is not None:
                        self.progress(
                            f"{item.job.slug} · {item.job.entry.name}: {stored.kind}",
                            summary.graded,
                            total,
                        )
                else:
                    writer.event(item)
        summary.gpu_events = writer.events

    def _write_outputs(self, summary: GradeSummary) -> list[str]:
        """Every learner's feedback, then grades.csv; what could not be written, as problems."""
        from gpulab.grading.classrun import feedback

        problems = []
        title = self.course.title
        for learner_grades in summary.learners:
            try:
                feedback.write_feedback(
                    learner_grades,
                    self.out / "feedback",
                    title=title,
                    run_at=now(),
                    maxima=summary.maxima,
                )
            except Exception as exc:
                problems.append(f"feedback of {learner_grades.slug}: not written: {failure(exc)}")
        try:
            feedback.write_grades_csv(
                summary.learners, summary.exercises, summary.maxima, self.out / "grades.csv"
            )
        except Exception as exc:
            problems.append(f"grades.csv: not written: {failure(exc)}")
        return problems


def _run_guards(in_force: dict[bool, tuple[str, ...]], kinds: set[bool]) -> tuple[str, ...]:
    """The run's guards: those of its CPU jobs, those of its GPU jobs, or both, said apart."""
    if kinds == {True}:
        return in_force[True]
    if kinds != {False, True}:
        return in_force[False]
    return (
        *in_force[False],
        *(f"GPU jobs: {line}" for line in in_force[True] if line not in in_force[False]),
    )
