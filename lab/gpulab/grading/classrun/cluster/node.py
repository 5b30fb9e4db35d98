"""`gpulab worker`: one node's GPUs and CPU slots, served to a Dask scheduler for grading.

One process holds, in one event loop, a Dask worker per GPU (one thread,
resource ``GPU=1``) and one for the CPU slots (N threads, ``CPU_SLOT=N``):
`gpulab.grading.classrun.cluster.serve` starts them; this module is what they do.
Each job runs as it does locally (`gpulab.grading.classrun.run.check_job`): a checks
process of its own, learner code sandboxed, its time limits and kills. A GPU
job's processes get ``CUDA_VISIBLE_DEVICES`` set to its worker's GPU; the
worker's own process never uses CUDA, only NVML (by index) to see that the
GPU recovered after each job (`gpulab.grading.classrun.gpupool`). A GPU that does not
recover takes its worker out of rotation: it refuses GPU jobs from then on.

At start the worker tries the guards (`sandbox.available`) and refuses to
serve without bubblewrap unless ``--unsafe`` (`serve.serve`). It has
no course of its own: each job comes with the grader's course as one bundle
(`gpulab.grading.classrun.cluster.bundle`), which the node checks against the sha256 the
job names and unpacks once per sha256 (`Node.shelf`). Each Dask worker says
what it is (`Station.identity`: gpulab version, guards) to the grader that
asks, and checks each job before running it: against itself (`Station.refuses`)
and against the unpacked course (`course_refuses`: the exercise's checks hash,
computed from what was unpacked, must be the grader's), so a job never runs on
checks other than the grader's. The sandbox policy comes from the grader; the
paths in it are this node's own (the unpacked course, its folders, its run
cgroups). What a worker says (`Station.identity`) and how the grader judges it
(`refusal`) are kept side by side here, as are a grade's plain form and its
reading back.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import sys
import threading
import time
import uuid
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

import msgspec

from gpulab.errors import GpulabError
from gpulab.grading import sandbox
from gpulab.grading.classrun.cluster.bundle import BundleError, Shelf, Unpacked
from gpulab.grading.classrun.gpupool import GpuPool
from gpulab.grading.classrun.run import Job, check_job, not_run
from gpulab.grading.gradebook.verdict import ExerciseGrade, failure

__all__ = [
    "CPU_SLOT",
    "GPU",
    "Expect",
    "Node",
    "Station",
    "WorkerError",
    "course_refuses",
    "grade_from_plain",
    "grade_job",
    "identity",
    "plural",
    "refusal",
    "told",
    "where",
]

GPU, CPU_SLOT = "GPU", "CPU_SLOT"  # the Dask resources of a GPU worker and of CPU slots
_STATIONS: dict[str, Station] = {}  # this process's Dask workers, by worker name


class WorkerError(GpulabError):
    """The worker cannot serve: what is wrong and what to do."""


@dataclass(frozen=True)
class Expect:
    """What every worker must match: this grader's gpulab and guards. (The course comes with
    each job, and each job proves it: `course_refuses`.)"""

    version: str
    bubblewrap: bool  # this grader's jobs run in bubblewrap: the workers' must


def refusal(identity: object, expect: Expect) -> str:
    """Why a worker that says `identity` (`Station.identity`) may not grade for this grader;
    "" when it may."""
    if isinstance(identity, BaseException):
        return f"it could not say what it is ({failure(identity)}): is it a gpulab worker?"
    if not isinstance(identity, dict):
        return "it is not a gpulab worker (start one with: gpulab worker ADDRESS)"
    if identity.get("gpulab") != expect.version:
        return f"it runs gpulab {identity.get('gpulab')}, this grader {expect.version}"
    if expect.bubblewrap and not identity.get("bubblewrap"):
        problem = identity.get("bubblewrap_problem") or "served with --unsafe"
        return f"this grader's jobs run in bubblewrap, which it has not: {problem}"
    return ""


def course_refuses(course: Unpacked, spec: dict[str, Any]) -> str:
    """Why the unpacked `course` cannot grade the job `spec` describes; "" when it can."""
    name = spec["exercise"]
    if name not in course.entries:
        return f"the course bundle {course.digest[:16]}… has no exercise {name}"
    if course.hashes[name] != spec["checks_hash"]:
        return (
            f"the checks of {name} unpacked from the course bundle {course.digest[:16]}… "
            "differ from the grader's"
        )
    return ""


@dataclass
class Node:
    """What the Dask workers of this process share: the guards, the folders, the courses.

    In `folder` (the worker's own): ``private/`` (`root`: its jobs' folders, Dask's,
    and where bundles are unpacked) and ``courses/<sha256>/`` (`shelf`), each a course
    a grader sent; a job's sandbox shows that course's lessons and exercises, as a
    local run shows the checkout's, and neither its solutions nor anything in `root`."""

    guards: sandbox.Guards
    folder: Path
    host: str = field(default_factory=socket.gethostname)
    cgroups: dict[str, str] = field(default_factory=dict)  # run tag -> its cgroups here
    lock: threading.Lock = field(default_factory=threading.Lock)
    shelf: Shelf = field(init=False)

    def __post_init__(self) -> None:
        self.root.mkdir(mode=0o700, exist_ok=True)
        self.shelf = Shelf(self.folder / "courses", self.root)

    @property
    def root(self) -> Path:
        """Its jobs' folders, Dask's, and where bundles are unpacked: private to learner code."""
        return self.folder / "private"

    def policy(self, text: str, course: Unpacked) -> sandbox.Policy:
        """The grader's policy, with the unpacked course, this node's folders and its run
        cgroups."""
        policy = sandbox.Policy.from_json(text)
        with self.lock:
            if policy.tag not in self.cgroups:
                try:
                    self.cgroups[policy.tag] = sandbox.run_cgroups(self.guards.cgroup, policy.tag)
                except OSError:
                    self.cgroups[policy.tag] = ""
            cgroup = self.cgroups[policy.tag]
        return replace(
            policy,
            bubblewrap=bool(self.guards.bubblewrap),
            cgroup=cgroup,
            private=(str(course.root / "solutions"), str(self.root), *policy.private),
            show=(str(course.lessons), str(course.root / "exercises")),
        )

    def close(self) -> None:
        for cgroup in self.cgroups.values():
            sandbox.remove_cgroups(cgroup)
        shutil.rmtree(self.folder, ignore_errors=True)


@dataclass
class Station:
    """One Dask worker of this process: one GPU (a job at a time), or the CPU slots."""

    node: Node
    name: str
    gpu: str = ""  # its GPU's index ("" for the CPU slots)
    slots: int = 1
    pool: GpuPool | None = None  # None: no NVML check after a job (--fake-gpus)
    retired: str = ""  # why its GPU was taken out of rotation

    @property
    def label(self) -> str:
        return f"{self.node.host}:{self.gpu}" if self.gpu else ""

    def identity(self) -> dict[str, Any]:
        """What this worker is, for the grader to compare with its own."""
        import gpulab

        node = self.node
        return {
            "gpulab": str(gpulab.__version__),
            "bubblewrap": bool(node.guards.bubblewrap),
            "bubblewrap_problem": node.guards.bubblewrap_problem,
            "cgroup": node.guards.cgroup,
            "host": node.host,
            "gpu": self.gpu,
            "label": self.label,
            "nvml": self.pool is not None,
            "slots": self.slots,
            "pid": os.getpid(),
            "name": self.name,
        }

    def refuses(self, spec: dict[str, Any]) -> str:
        """Why this worker may not run the job `spec` describes; "" when it may. (Whether its
        course can: `course_refuses`.)"""
        import gpulab

        if self.retired:
            return f"its GPU {self.label} was taken out of rotation: {self.retired}"
        if spec["version"] != gpulab.__version__:
            return f"it runs gpulab {gpulab.__version__}, the grader {spec['version']}"
        if spec["bubblewrap"] and not self.node.guards.bubblewrap:
            problem = self.node.guards.bubblewrap_problem or "served with --unsafe"
            return f"the grader's jobs run in bubblewrap, which it has not: {problem}"
        return ""

    def grade(self, spec: dict[str, Any], notebook: bytes, course: Unpacked) -> ExerciseGrade:
        """Grade the job with `course` as `run.check_job` does locally; messages name the
        grader's copy of the notebook."""
        node = self.node
        entry = course.entries[spec["exercise"]]
        policy = node.policy(spec["policy"], course)
        own = node.root / uuid.uuid4().hex
        intake = own / "in" / Path(spec["notebook"]).name
        job = Job(
            spec["slug"],
            entry,
            intake,
            spec["notebook_hash"],
            spec["checks_hash"],
            float(spec["possible"]),
            node.guards.describe(replace(policy, gpu=entry.gpu)),
            node.guards.describe(replace(policy, gpu=False)),
        )
        try:
            intake.parent.mkdir(parents=True)
            intake.write_bytes(notebook)
            grade = check_job(
                job, self.gpu, policy=policy, timeout=spec["timeout"], folder=own / "jobs"
            )
        except BaseException as exc:  # in a worker thread: a job's failure is its grade
            grade = not_run(job, f"the grader failed on it: {failure(exc)}")
        finally:
            shutil.rmtree(own, ignore_errors=True)
        shown, stored = str(intake), spec["notebook"]
        return replace(
            grade,
            message=grade.message.replace(shown, stored),
            checks=tuple(
                replace(
                    r,
                    message=r.message.replace(shown, stored),
                    instructor_message=r.instructor_message.replace(shown, stored),
                )
                for r in grade.checks
            ),
        )

    def after_job(self, recovery_s: float) -> str:
        """ "" when this worker's GPU (if any) is fit for the next job, else why not."""
        if not self.gpu or self.pool is None:
            return ""
        self.pool.recovery_s = recovery_s
        try:
            why = self.pool.after_job(self.gpu)
        except Exception as exc:
            why = f"could not be checked after a job ({failure(exc)}): taken out of rotation"
        self.retired = why
        return why


def grade_from_plain(data: dict[str, Any]) -> ExerciseGrade:
    """An `ExerciseGrade` from its plain form (as JSON gives it back), every field checked
    against its type (msgspec)."""
    return msgspec.convert(data, type=ExerciseGrade)


def where(address: str, said: dict[str, Any] | None) -> str:
    """A worker, for people: its address, host, and GPU or CPU slots (from its identity)."""
    if not said:
        return address
    what = f"GPU {said['label']}" if said.get("gpu") else plural(said.get("slots", 0), "CPU slot")
    return f"{address} ({said.get('host')}, {what})"


def plural(count: int, thing: str) -> str:
    return f"{count} {thing}" + ("" if count == 1 else "s")


def _station(dask_worker: Any) -> Station | None:
    return _STATIONS.get(str(dask_worker.name))


def identity(dask_worker: Any) -> dict[str, Any] | None:
    """Run by the grader on each worker (`Client.run`): what it is; None if not gpulab's."""
    station = _station(dask_worker)
    return station.identity() if station is not None else None


def told(why: str, dask_worker: Any) -> None:
    """Run by the grader on a worker it retires: say why, here, where its operator looks."""
    print(f"gpulab worker {dask_worker.name}: {why}", file=sys.stderr, flush=True)


def grade_job(spec_text: str, notebook: bytes, bundle: bytes) -> str:
    """The Dask task: one job in (a JSON spec, the notebook's bytes, the course bundle's),
    its answer out as JSON: the grade, the GPU, whether the GPU recovered, when it ran and
    where. A worker that may not run it answers ``refused``; a course it cannot grade
    with (a bundle that is not the one the spec names, or whose checks are not the
    grader's) ``not_run``: neither is the learner's doing, and the second not the
    worker's."""
    from distributed import get_worker

    worker = get_worker()
    station = _station(worker)
    answer: dict[str, Any] = {"worker": worker.address, "gpu": ""}
    if station is None:
        return json.dumps({**answer, "refused": "it is not a gpulab worker"})
    spec = json.loads(spec_text)
    answer["gpu"] = station.label
    why = station.refuses(spec)
    if why:
        return json.dumps({**answer, "refused": why})
    try:  # an OSError here is the shelf's: `Station.grade` makes its own the grade
        with station.node.shelf.course(spec["course"], bundle) as course:
            why = course_refuses(course, spec)
            if why:
                return json.dumps({**answer, "not_run": why})
            started = time.time()
            grade = station.grade(spec, notebook, course)
            ended = time.time()
    except BundleError as exc:
        return json.dumps({**answer, "not_run": str(exc)})
    except OSError as exc:  # this node's disk, not the bundle
        return json.dumps({**answer, "refused": f"it cannot unpack the course: {failure(exc)}"})
    retired = station.after_job(float(spec["recovery_s"]))
    return json.dumps(
        {**answer, "grade": asdict(grade), "retired": retired, "started": started, "ended": ended}
    )
