"""What a grading run is given, what it gives back, and the error that refuses it.

`GradeOptions` is what ``gpulab grade`` asks of a run (`gpulab.grading.classrun.grade`),
`GradeSummary` what the run hands back for the report (`gpulab.grading.classrun.report`),
and `Progress` how it tells of each job as it ends.

Errors that stop a run before it grades::

    GpulabError
    ├── GradeError          what is wrong with the run's input, and what to do
    └── GradebookError      the gradebook file cannot be used (gpulab.grading.gradebook)
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from gpulab.errors import GpulabError
from gpulab.grading import sandbox
from gpulab.grading.gradebook.verdict import LearnerGrades

__all__ = ["GradeError", "GradeOptions", "GradeSummary", "Progress", "Target"]

Progress = Callable[[str, int, int], None]


class GradeError(GpulabError):
    """The run cannot start: what is wrong and what to do."""


@dataclass(frozen=True)
class Target:
    """Where the jobs run: a running scheduler's address, or Slurm pilot jobs (``slurm``)."""

    address: str  # tcp://head:8786, or "slurm"
    nodes: int = 1  # Slurm: pilot jobs, one per node
    gpus_per_node: int = 0
    cpu_slots: int = 1  # Slurm: CPU slots per node
    partition: str = ""
    walltime: str = "1:00:00"
    wait_s: float = 120.0  # for a first worker (Slurm: for the pilot jobs to start)


@dataclass(frozen=True)
class GradeOptions:
    submissions: Path
    out: Path
    exercises: tuple[str, ...] = ()  # default: every exercise someone handed in
    workers: int = 2
    gpus: tuple[str, ...] | None = None  # default: every visible GPU
    regrade: bool = False
    timeout: float | None = None  # per exercise; default: course.toml's limit
    unsafe: bool = False
    policy: sandbox.Policy = field(default_factory=sandbox.Policy)
    gpu_recovery_s: float = 15.0
    cluster: Target | None = None  # None: the jobs run here, not on a cluster
    command: str = "gpulab grade"  # as the instructor typed it: the gradebook keeps it


@dataclass
class GradeSummary:
    learners: list[LearnerGrades]
    exercises: list[str]
    maxima: dict[str, float]
    graded: int = 0  # jobs run in this run
    reused: int = 0  # grades kept from an earlier run
    guards: tuple[str, ...] = ()
    gpu_events: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)  # learner text: made plain, not markup
    notes: list[str] = field(default_factory=list)  # what was cleared of earlier runs
    out: Path = Path()
    tag: str = ""  # the run's name: its cgroups, its jobs' GPULAB_JOB
    run_id: int = 0
