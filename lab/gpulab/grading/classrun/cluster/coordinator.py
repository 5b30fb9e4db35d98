"""One cluster run's loop: which workers may grade, which job goes where, each grade back.

`gpulab.grading.classrun.cluster.client.run_on_cluster` connects to the scheduler and hands the
run's jobs to a `Coordinator`, which checks every worker as it joins (and
retires those that may not grade), puts the course bundle in the cluster once
(`Client.scatter`: a copy on each worker there then, copied from worker to
worker; each job names it as an argument, so a worker that joins later fetches
it with its first job, from one that holds it), sends the jobs to GPU workers
and CPU slots, two per slot at a time, reroutes GPU jobs when no GPU worker is
left, and turns each answer (or each worker lost) into a grade. `Target`
(where the jobs run) and `ClusterError` live here, beside the loop that reads
and raises them; `gpulab.grading.classrun.cluster.client` gives them to the rest of gpulab.
"""

from __future__ import annotations

import contextlib
import json
import time
import uuid
from collections import deque
from collections.abc import Generator
from dataclasses import dataclass, field, replace
from typing import Any

from gpulab.errors import GpulabError
from gpulab.grading import sandbox
from gpulab.grading.classrun.cluster import node as remote
from gpulab.grading.classrun.cluster.bundle import Bundle
from gpulab.grading.classrun.cluster.slurm import wait_for_pilots
from gpulab.grading.classrun.grade_model import Target
from gpulab.grading.classrun.run import Done, GpuEvent, Job, not_run, read_notebook
from gpulab.grading.gradebook.verdict import ExerciseGrade, failure

__all__ = ["SCATTER_BYTES", "ClusterError", "Coordinator", "Timeline"]

SCATTER_BYTES = 2**20  # larger notebooks travel to the cluster on their own
Timeline = list[tuple[str, str, float, float]]  # (GPU or "", worker, start, end) per job


class ClusterError(GpulabError):
    """The cluster cannot grade: no scheduler, no worker, no worker that may."""


@dataclass
class _Task:
    job: Job
    gpu: bool  # sent to a GPU worker
    why: str = ""  # a GPU job sent to a CPU slot: why it runs without a GPU
    data: Any = None  # its notebook, scattered to the cluster
    refused: int = 0  # workers that refused it


@dataclass
class Coordinator:
    """One run's jobs on one cluster, from this process (the run's one writer)."""

    client: Any
    target: Target
    expect: remote.Expect
    policy: sandbox.Policy
    timeout: float | None
    recovery_s: float
    notes: list[str]
    problems: list[str]
    timeline: Timeline | None
    bundle: Bundle  # the course, for the workers
    sbatch: list[str] = field(default_factory=list)  # what sbatch refused
    workers: dict[str, dict[str, Any]] = field(default_factory=dict)  # accepted: address ->
    seen: set[str] = field(default_factory=set)  # identity
    waiting: dict[bool, deque[_Task]] = field(
        default_factory=lambda: {True: deque(), False: deque()}
    )
    running: dict[Any, _Task] = field(default_factory=dict)
    had_gpus: bool = False
    stalled_since: float | None = None
    completed: Any = None  # distributed.as_completed over `running`
    course: Any = None  # the bundle's future, once scattered

    def run(self, jobs: list[Job]) -> Generator[Done | GpuEvent, None, None]:
        from distributed import as_completed

        self._start()
        for job in jobs:
            self.waiting[job.entry.gpu].append(_Task(job, job.entry.gpu))
        self.completed = as_completed(loop=self.client.loop)
        looked = time.monotonic()
        try:
            while self.running or self.waiting[True] or self.waiting[False]:
                if time.monotonic() - looked > 0.5:
                    self._survey()
                    looked = time.monotonic()
                yield from self._reroute()
                yield from self._submit()
                ready = self.completed.next_batch(block=False)
                if not ready:
                    time.sleep(0.05)
                for future in ready:
                    task = self.running.pop(future, None)
                    if task is not None:
                        yield from self._collect(future, task)
        finally:
            with contextlib.suppress(Exception):  # ctrl-c: what still runs is dropped
                self.client.cancel(
                    [
                        *self.running,
                        *(t.data for t in self.running.values() if t.data is not None),
                        *([self.course] if self.course is not None else []),
                    ]
                )

    def _start(self) -> None:
        """Wait for the workers, read what each is, and say which grade."""
        address = self.target.address
        slurm = address == "slurm"
        per_node = self.target.gpus_per_node + (1 if self.target.cpu_slots else 0)
        try:
            if slurm:
                joined, lost = wait_for_pilots(
                    self.client,
                    self.target,
                    self.target.nodes * per_node,
                    self._present,
                    self.sbatch,
                )
                if lost and not joined:
                    raise ClusterError(
                        f"no gpulab worker joined the Dask scheduler of the "
                        f"Slurm pilot jobs: {lost}"
                    )
                if lost:
                    self.problems.append(lost)
            else:
                self.client.wait_for_workers(1, timeout=self.target.wait_s)
        except TimeoutError:
            if not self._present():
                raise ClusterError(
                    f"no worker joined the Dask scheduler at {address} within "
                    f"{self.target.wait_s:g} s; start one on each node: gpulab "
                    f"worker {address}"
                ) from None
        counts = [-1]  # until those starting together have joined (1 s)
        while len(counts) < 50 and counts[-10:] != counts[-1:] * 10:
            time.sleep(0.1)
            counts.append(len(self._present()))
        before = len(self.problems)
        self._survey()
        if not self.workers:
            raise ClusterError(
                f"no worker of the Dask scheduler at {address} may grade this "
                "class: " + "; ".join(self.problems[before:])
            )
        self.had_gpus = any(i["gpu"] for i in self.workers.values())
        gpus = sorted(i["label"] for i in self.workers.values() if i["gpu"])
        slots = sum(i["slots"] for i in self.workers.values() if not i["gpu"])
        hosts = {i["host"] for i in self.workers.values()}
        n = remote.plural
        self.notes.append(
            f"graded on the Dask cluster at {self.client.scheduler.address}: "
            f"{n(len(self.workers), 'worker')} on {n(len(hosts), 'host')}; "
            f"GPUs: {', '.join(gpus) or 'none'}; {n(slots, 'CPU slot')}"
        )

    def _present(self) -> dict[str, Any]:
        """The scheduler's workers, asked now. Not `Client.scheduler_info()`: the client's
        periodic update (every 2 s; in distributed >= 2025 without the workers) may replace
        its answer between the fetch and the return, and a survey would see no worker."""
        return dict(self.client.sync(self.client.scheduler.identity)["workers"])

    def _survey(self) -> None:
        """Check the workers that joined since the last look; note those that left."""
        present = set(self._present())
        for address in [a for a in self.workers if a not in present]:
            self.notes.append(
                f"worker {remote.where(address, self.workers.pop(address))} left "
                "the cluster; its job, if any, runs again elsewhere"
            )
        new = sorted(present - self.seen)
        self.seen |= present
        if not new:
            return
        found = self.client.run(remote.identity, workers=new, on_error="return")
        for address in new:
            said = found.get(address)
            why = remote.refusal(said, self.expect)
            if not why and said["gpu"]:
                twin = [a for a, i in self.workers.items() if i["label"] == said["label"]]
                why = f"GPU {said['label']} is served already, by {twin[0]}" if twin else ""
            if why:
                self._refuse(address, said if isinstance(said, dict) else None, why)
            else:
                self.workers[address] = said

    def _refuse(self, address: str, said: dict[str, Any] | None, why: str) -> None:
        said = said or self.workers.get(address)
        self.problems.append(f"worker {remote.where(address, said)} refused: {why}")
        self._retire(address, f"refused by the grader: {why}")

    def _retire(self, address: str, why: str) -> None:
        self.workers.pop(address, None)
        self.seen.add(address)
        try:
            self.client.run(remote.told, why, workers=[address], on_error="ignore")
            self.client.retire_workers(workers=[address], close_workers=True)
        except Exception as exc:  # a worker gone already, or a scheduler that refuses
            self.notes.append(f"worker {address} could not be retired: {failure(exc)}")

    def _reroute(self) -> Generator[Done, None, None]:
        """With no GPU worker left, GPU jobs run on CPU slots; with no CPU slot for
        `Target.wait_s`, the jobs that need one are not run."""
        gpu_workers = [a for a, i in self.workers.items() if i["gpu"]]
        if not gpu_workers and (self.waiting[True] or any(t.gpu for t in self.running.values())):
            why = (
                f"no GPU worker in the Dask cluster at {self.target.address}"
                if not self.had_gpus
                else "every GPU worker was taken out of rotation or lost"
            )
            for future, task in list(self.running.items()):
                if task.gpu and not future.done():
                    self._drop(future)
                    self.waiting[False].append(replace(task, gpu=False, why=why, data=None))
            while self.waiting[True]:
                self.waiting[False].append(
                    replace(self.waiting[True].popleft(), gpu=False, why=why)
                )
        cpu_work = self.waiting[False] or any(not t.gpu for t in self.running.values())
        if not cpu_work or any(not i["gpu"] for i in self.workers.values()):
            self.stalled_since = None
            return
        self.stalled_since = self.stalled_since or time.monotonic()
        if time.monotonic() - self.stalled_since < self.target.wait_s:
            return
        why = f"no CPU slot in the cluster at {self.target.address} for {self.target.wait_s:g} s"
        for future, task in list(self.running.items()):
            if not task.gpu:
                self._drop(future)
                yield Done(task.job, not_run(task.job, why))
        while self.waiting[False]:
            yield Done((task := self.waiting[False].popleft()).job, not_run(task.job, why))

    def _drop(self, future: Any) -> None:
        task = self.running.pop(future)
        self.client.cancel([future, *([task.data] if task.data is not None else [])])

    def _submit(self) -> Generator[Done, None, None]:
        """Send waiting jobs while each kind has fewer than two per slot out."""
        for gpu in (True, False):
            slots = sum(
                1 if gpu else i["slots"] for i in self.workers.values() if bool(i["gpu"]) == gpu
            )
            out = sum(1 for t in self.running.values() if t.gpu == gpu)
            while self.waiting[gpu] and out < 2 * slots:
                task = self.waiting[gpu].popleft()
                try:
                    data = read_notebook(task.job.notebook)
                except Exception as exc:  # as a local job that cannot copy its notebook
                    yield Done(
                        task.job, not_run(task.job, f"the grader failed on it: {failure(exc)}")
                    )
                    continue
                payload: Any = data
                if len(data) > SCATTER_BYTES:
                    payload = task.data = self.client.scatter(data, hash=False)
                future = self.client.submit(
                    remote.grade_job,
                    self._spec(task.job),
                    payload,
                    self._course(),
                    pure=False,
                    key=f"gpulab-{task.job.slug}-{task.job.entry.name}-{uuid.uuid4().hex[:8]}",
                    resources={remote.GPU: 1} if gpu else {remote.CPU_SLOT: 1},
                )
                self.running[future] = task
                self.completed.add(future)
                out += 1

    def _course(self) -> Any:
        """The course bundle's future: scattered to every worker the first time, and again
        if the cluster lost it (every worker that held it died: Dask forgets scattered
        data it cannot recompute, and cancels the jobs that named it, running ones too,
        which `_collect` sends again). A copy on each from the start, rather than one the
        others fetch, is what keeps one worker's death from doing that."""
        if self.course is not None and self.course.status == "finished":
            return self.course
        if self.course is None:
            self.notes.append(
                f"the course went to the workers as one bundle of {self.bundle.size} "
                f"(sha256 {self.bundle.digest[:16]}…), unpacked once by each"
            )
        key = f"gpulab-course-{self.bundle.digest[:16]}-{uuid.uuid4().hex[:8]}"
        self.course = self.client.scatter({key: self.bundle.data}, broadcast=True)[key]
        return self.course

    def _spec(self, job: Job) -> str:
        return json.dumps(
            {
                "slug": job.slug,
                "exercise": job.entry.name,
                "notebook": str(job.notebook),
                "notebook_hash": job.notebook_hash,
                "checks_hash": job.checks_hash,
                "course": self.bundle.digest,
                "possible": job.possible,
                "policy": self.policy.to_json(),
                "timeout": self.timeout or float(job.entry.time_limit),
                "recovery_s": self.recovery_s,
                "version": self.expect.version,
                "bubblewrap": self.expect.bubblewrap,
            }
        )

    def _collect(self, future: Any, task: _Task) -> Generator[Done | GpuEvent, None, None]:
        """One job's answer: its grade; or, from a worker that refused it, the job again."""
        from distributed import KilledWorker

        if task.data is not None:
            self.client.cancel([task.data])
        if future.status == "cancelled":  # not by this grader: send it again
            self.waiting[task.gpu].append(replace(task, data=None))
            return
        if future.status == "error":  # not the learner's (that is a verdict): the cluster's
            exc = future.exception()
            future.release()
            yield Done(
                task.job,
                not_run(
                    task.job,
                    "worker lost: every Dask worker that ran it died"
                    if isinstance(exc, KilledWorker)
                    else f"the grader failed on it: {failure(exc)}",
                ),
            )
            return
        answer = json.loads(future.result())
        future.release()
        if "not_run" in answer:  # the course it came with: the grader's, not the worker's
            yield Done(task.job, not_run(task.job, answer["not_run"]))
            return
        if "refused" in answer:
            if answer["worker"] in self.workers:
                self._refuse(answer["worker"], None, answer["refused"])
            if task.refused >= 5:
                yield Done(
                    task.job,
                    not_run(
                        task.job, f"every worker it was sent to refused it: {answer['refused']}"
                    ),
                )
            else:
                self.waiting[task.gpu].appendleft(
                    replace(task, data=None, refused=task.refused + 1)
                )
            return
        grade = remote.grade_from_plain(answer["grade"])
        if task.why:
            grade = _without_gpu(grade, task.why)
        if self.timeline is not None:
            self.timeline.append(
                (answer["gpu"], answer["worker"], answer["started"], answer["ended"])
            )
        yield Done(task.job, grade, answer["gpu"])
        if answer["retired"]:
            yield GpuEvent(answer["gpu"], answer["retired"])
            self._retire(answer["worker"], f"GPU {answer['gpu']} {answer['retired']}")


def _without_gpu(grade: ExerciseGrade, why: str) -> ExerciseGrade:
    """A GPU job graded on a CPU slot, as `run.run_jobs` words it locally."""
    if grade.kind == "partial":
        return replace(grade, message=f"{why}: {grade.message}")
    if grade.kind == "not-run" and all(r.outcome == "skipped" for r in grade.checks):
        return replace(grade, message=f"not graded: {why}")
    return grade
