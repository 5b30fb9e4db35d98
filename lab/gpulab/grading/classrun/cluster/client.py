"""`gpulab grade --cluster`: the run's jobs graded by the workers of a Dask scheduler.

Intake, each exercise's worth, the stored grades and planning stay in the run
(`gpulab.grading.classrun.grade`), before any job, so resume works unchanged; this
process alone writes the gradebook, from the grades `run_on_cluster` yields as
they arrive, as `gpulab.grading.classrun.run.run_jobs` yields them locally. Each job is
one Dask task with plain inputs (the notebook's bytes, a JSON spec) and a plain
answer (the `ExerciseGrade` as JSON, and whether the GPU recovered), run by a
``gpulab worker`` (`gpulab.grading.classrun.cluster.node`):

- a GPU job takes ``GPU=1`` of a worker that has one GPU and one thread, so one
  job runs per GPU at a time; a CPU job takes a ``CPU_SLOT``. Jobs go out two
  per slot at a time: the scheduler never holds a whole class's notebooks;
- the course goes with the jobs: packed here into one bundle named by its
  sha256 (`gpulab.grading.classrun.cluster.bundle`), a copy put on each worker (one that
  joins later fetches it with its first job), which checks it against its
  sha256, unpacks it once and grades with it; a worker needs no course of its
  own;
- every worker is checked (version, guards) before the first job and when it
  joins; one that differs is refused: told why, retired, named in the run's
  problems. Each job checks its worker again before it runs, and proves the
  unpacked course: its checks hash must be the grader's, else it is not run;
- a learner's timeout, crash or GPU fault is a verdict, never an exception, so
  Dask retries nothing of the learner's; a worker lost mid-job is retried
  elsewhere, up to ``distributed.scheduler.allowed-failures`` times, then the
  job is ``not-run``, "worker lost";
- a GPU that does not recover after a job is a `GpuEvent` and retires its
  worker; with no GPU worker left, GPU jobs run on CPU slots, as locally.

This module connects to the scheduler (or starts the Slurm pilot jobs) and hands
the jobs to the loop that does all this, `gpulab.grading.classrun.cluster.coordinator`,
where `Target` and `ClusterError` are defined too.
"""

from __future__ import annotations

import contextlib
from collections.abc import Generator, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gpulab.course.paths import CoursePaths
from gpulab.grading import sandbox
from gpulab.grading.classrun.cluster import node as remote
from gpulab.grading.classrun.cluster.bundle import Bundle, pack
from gpulab.grading.classrun.cluster.coordinator import ClusterError, Coordinator, Timeline
from gpulab.grading.classrun.cluster.slurm import SbatchErrors, slurm_cluster
from gpulab.grading.classrun.grade_model import Target
from gpulab.grading.classrun.run import Done, GpuEvent, Job
from gpulab.grading.gradebook.verdict import failure

if TYPE_CHECKING:
    from gpulab.course.catalog import Course

__all__ = ["ALLOWED_FAILURES", "need_distributed", "run_on_cluster"]

ALLOWED_FAILURES = 2  # worker deaths a job may cause before it is not-run


def run_on_cluster(
    target: Target,
    jobs: list[Job],
    *,
    course: Course,
    policy: sandbox.Policy,
    timeout: float | None,
    recovery_s: float,
    notes: list[str],
    problems: list[str],
    timeline: Timeline | None = None,
    bundle: Bundle | None = None,
) -> Generator[Done | GpuEvent, None, None]:
    """Grade `jobs` on the cluster; yield each grade (and each GPU event) as it arrives.

    Refused workers go to `problems`, the workers used and lost to `notes`. The
    workers get `course` as `bundle` (default: packed here from the course's checkout).
    """
    import gpulab

    expect = remote.Expect(str(gpulab.__version__), policy.bubblewrap)
    if not jobs:
        return
    bundle = bundle or pack(CoursePaths.of_manifest(Path(course.manifest.path).resolve()).root)
    need_distributed(slurm=target.address == "slurm")  # (it sets its loggers up on import)
    sbatch = SbatchErrors() if target.address == "slurm" else None
    with sbatch or contextlib.nullcontext(), _client(target) as client:
        yield from Coordinator(
            client,
            target,
            expect,
            policy,
            timeout,
            recovery_s,
            notes,
            problems,
            timeline,
            bundle,
            sbatch=sbatch.said if sbatch else [],
        ).run(jobs)


def need_distributed(*, slurm: bool = False) -> None:
    """Refuse in words where gpulab[cluster] is not installed: Dask's distributed, and for
    Slurm pilot jobs (`slurm`) dask-jobqueue too; a worker and a scheduler's address need
    only the first."""
    try:
        import distributed  # noqa: F401

        if slurm:
            import dask_jobqueue  # noqa: F401
    except ImportError as exc:
        raise ClusterError(
            f"grading on a cluster needs gpulab[cluster] ({exc}): pip install 'gpulab[cluster]'"
        ) from None


@contextlib.contextmanager
def _client(target: Target) -> Iterator[Any]:
    need_distributed(slurm=target.address == "slurm")
    import dask
    from distributed import Client

    cluster = None
    if target.address == "slurm":
        with dask.config.set({"distributed.scheduler.allowed-failures": ALLOWED_FAILURES}):
            cluster = slurm_cluster(target)
    try:
        client = Client(cluster or target.address, timeout=30, set_as_default=False)
    except (OSError, TimeoutError) as exc:
        _close(cluster)
        raise ClusterError(
            f"cannot reach the Dask scheduler at {target.address}: {failure(exc)}"
        ) from None
    try:
        if cluster is not None:
            cluster.scale(jobs=target.nodes)
        yield client
    finally:
        client.close()
        _close(cluster)


def _close(cluster: Any) -> None:
    """End the pilot jobs. dask-jobqueue's close asserts on a pilot sbatch refused (it stays
    "created"); that must not hide why the run stopped, and a pilot left running ends
    on its own when its worker loses the scheduler (`gpulab worker`'s death timeout)."""
    if cluster is not None:
        with contextlib.suppress(Exception):
            cluster.close()
