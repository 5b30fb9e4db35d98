"""Grading on Slurm: pilot jobs through dask-jobqueue, and knowing when one never comes.

`gpulab grade --cluster slurm` starts a Dask scheduler in the grader and one
pilot job per node (`slurm_cluster`), each running ``gpulab worker``. A pilot
job that sbatch refused, that ended, or that Slurm can never start as asked
would leave the grader waiting in silence; `wait_for_pilots` asks squeue about
the pilots that have not joined and says why at once (`lost_pilots`). What
sbatch said when it refused one reaches the grader's message, not the screen as
a library's traceback (`SbatchErrors`).
"""

from __future__ import annotations

import contextlib
import logging
import re
import subprocess
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from gpulab.grading.classrun.cluster import node as remote

if TYPE_CHECKING:
    from gpulab.grading.classrun.grade_model import Target

__all__ = ["NEVER_STARTS", "SbatchErrors", "lost_pilots", "slurm_cluster", "wait_for_pilots"]

_SAID = re.compile(r"^sbatch: error: (.+)$", re.M)


class SbatchErrors(logging.Handler):
    """While installed (a context manager), what dask-jobqueue logs when sbatch fails (a
    traceback through tornado's and distributed's loggers) is kept here, not printed:
    `said` holds sbatch's own error lines."""

    LOGGERS = ("tornado.application", "distributed.deploy.spec", "distributed.deploy.cluster")

    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.said: list[str] = []
        self._saved: list[tuple[logging.Logger, list[logging.Handler], bool]] = []

    def emit(self, record: logging.LogRecord) -> None:
        text = record.getMessage() + (str(record.exc_info[1]) if record.exc_info else "")
        for line in _SAID.findall(text.replace("\\n", "\n")):
            if line not in self.said:
                self.said.append(line)

    def __enter__(self) -> SbatchErrors:
        for name in self.LOGGERS:
            logger = logging.getLogger(name)
            self._saved.append((logger, list(logger.handlers), logger.propagate))
            logger.handlers = [self]
            logger.propagate = False
        return self

    def __exit__(self, *exc: object) -> None:
        for logger, handlers, propagate in self._saved:
            logger.handlers = handlers
            logger.propagate = propagate


def slurm_cluster(target: Target) -> Any:
    """A `dask_jobqueue.SLURMCluster` whose pilot jobs each run ``gpulab worker`` on a node
    (its scheduler runs in this process; nothing is submitted until it is scaled)."""
    from dask_jobqueue import SLURMCluster

    cores = target.cpu_slots + target.gpus_per_node
    return SLURMCluster(
        cores=max(1, cores),
        processes=1,
        memory=f"{4 * max(1, cores)}GiB",
        queue=target.partition or None,
        walltime=target.walltime,
        job_extra_directives=[f"--gres=gpu:{target.gpus_per_node}"] if target.gpus_per_node else [],
        job_name="gpulab-worker",
        worker_command="gpulab worker",
        worker_extra_args=[
            "--cpu-slots",
            str(target.cpu_slots),
            *([] if target.gpus_per_node else ["--gpus", "none"]),
        ],
        scheduler_options={"dashboard_address": ":0"},
    )


def wait_for_pilots(
    client: Any,
    target: Target,
    count: int,
    present: Callable[[], dict[str, Any]],
    sbatch: Sequence[str] = (),
) -> tuple[list[str], str]:
    """Wait for `count` Dask workers of the pilot jobs, at most `Target.wait_s`
    (TimeoutError), but only while a pilot whose worker has not joined may still join.
    The names of the workers that joined, and "" when all did, else why the others never
    will (sbatch refused them, they ended, or Slurm can never start them), said at once
    rather than after the wait. `present` asks the scheduler for its workers; `sbatch`
    holds what sbatch said when it refused a pilot (`SbatchErrors.said`)."""
    deadline = time.monotonic() + target.wait_s
    while (left := deadline - time.monotonic()) > 0:
        with contextlib.suppress(TimeoutError):
            client.wait_for_workers(count, timeout=min(5.0, left))
            return [str(i.get("name")) for i in present().values()], ""
        joined = [str(i.get("name")) for i in present().values()]
        lost = lost_pilots(getattr(client, "cluster", None), joined, target, sbatch)
        if lost is not None:
            return joined, lost
    raise TimeoutError


# Why a pending job waits that does not pass by itself: its request exceeds what its
# partition, account or QOS allows, or matches no node (squeue's %r).
NEVER_STARTS = (
    "PartitionConfig",
    "PartitionNodeLimit",
    "PartitionTimeLimit",
    "BadConstraints",
    "InvalidAccount",
    "InvalidQOS",
)


def lost_pilots(
    cluster: Any, joined: list[str], target: Target, sbatch: Sequence[str] = ()
) -> str | None:
    """None while a pilot job of `cluster` (a dask-jobqueue cluster) whose worker has not
    joined may still join (it is queued, running or being submitted, or squeue cannot
    tell); else why those that have not joined never will ("" when every one joined).
    A pilot's Dask workers are named after it: <pilot>-cpu, <pilot>-gpu<i>."""
    try:
        pilots = {str(name): job for name, job in list(cluster.workers.items())}
    except (AttributeError, RuntimeError):  # no such cluster, or its loop changed it
        return None
    waiting = {
        name: job
        for name, job in pilots.items()
        if not any(worker.startswith(f"{name}-") for worker in joined)
    }
    ids = [str(job.job_id) for job in waiting.values() if getattr(job, "job_id", None)]
    states: dict[str, str] = {}
    if ids:
        try:
            said = subprocess.run(
                ["squeue", "-h", "-o", "%i %T %r", "-j", ",".join(ids)],
                capture_output=True,
                text=True,
                timeout=30,
                check=False,
            )
        except (OSError, subprocess.SubprocessError):
            return None
        if said.returncode != 0 and "Invalid job id" not in said.stderr:
            return None
        for line in said.stdout.splitlines():
            job_id, _, rest = line.strip().partition(" ")
            states[job_id] = rest
    if not pilots or any(
        states.get(i, "").partition(" ")[2] not in NEVER_STARTS for i in ids if i in states
    ):
        return None
    refused = len(waiting) - len(ids)
    ended = [i for i in ids if i not in states]
    stuck = [f"{i} ({states[i]})" for i in ids if i in states]
    cores = max(1, target.cpu_slots + target.gpus_per_node)
    words = []
    if refused:
        words.append(
            f"sbatch refused {remote.plural(refused, 'pilot job')}: "
            + ("; ".join(sbatch) if sbatch else "(it gave no reason)")
        )
    if ended:
        words.append(
            f"Slurm job {', '.join(ended)} ended before its gpulab worker joined "
            f"(see {', '.join(f'slurm-{i}.out' for i in ended)} in the folder gpulab "
            "grade runs in)"
        )
    if stuck:
        words.append(
            f"Slurm job {', '.join(stuck)} can never start as asked: each pilot asks "
            f"for {cores} CPUs (one per CPU slot, --workers, and per GPU), "
            f"{4 * cores} GiB of memory, {target.gpus_per_node} GPUs and "
            f"--walltime {target.walltime}"
        )
    return "; ".join(words)
