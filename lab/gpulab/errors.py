"""How gpulab fails: the exception hierarchy, and the exit status of every command.

Every error a user can meet derives from one root, so the CLI and the app can
catch it in one place and show its message instead of a traceback. Each
subclass lives beside the code that raises it; this tree lists them all, and
`tests/test_errors.py` keeps it true::

    GpulabError
    ├── CourseError            bad course content (gpulab.course.problems): one or more
    │                          Problem records, each with file, line and a fix
    ├── WorkspaceError         no workspace, or one that cannot be made, read or written
    ├── UnknownExercise        no exercise of that name (gpulab.course.catalog)
    ├── UnknownProbe           a probe name that does not exist (gpulab.probes.registry)
    ├── NvmlUnavailable        NVML cannot be used here: no library, driver or GPU
    ├── ReplayMismatch         a recorded NVML session asked a call it does not hold
    ├── KernelError            a kernel topic or function that does not exist
    ├── BookError              the book cannot be written (its output folder)
    ├── JupyterError           JupyterLab is missing, did not start, or would not stop
    ├── NotebookError          a notebook that cannot be used: which file, what is wrong
    ├── LearnerError           the learner's code gave no answer (gpulab.grading.checks.learner)
    │   └── KernelAnswerError  the learner's kernel did not compile, launch or finish
    ├── MachineError           a recorded machine or NVML session that is not there
    ├── IntakeError            SUBMISSIONS cannot be read at all
    ├── GradeError             a grading run cannot start: what is wrong, what to do
    ├── GradebookError         the gradebook file cannot be used
    ├── FeedbackError          feedback or grades.csv cannot be written
    ├── OutBusy                another grading run holds the output folder
    ├── GpuPoolError           a GPU given to a grading run that NVML cannot read
    ├── ClusterError           the cluster cannot grade: no scheduler, no worker that may
    ├── BundleError            a course that cannot be packed for a cluster's workers, or
    │                          a bundle a worker cannot use (gpulab.grading.classrun.cluster.bundle)
    └── WorkerError            a cluster worker cannot serve

Every `gpulab` command ends with an `ExitCode`, here beside the errors it
reports: 2 (`BAD_INPUT`) when a command could not do what it was asked (any of
these: the input, a file, or this machine stood in the way) and 1 (`FAILED`)
when it ran and found a failure (a check failed, a probe failed, a machine is
not ready): the first is the tool's "could not", the second the answer "no".
The command line (`gpulab.cli` and its `cli_*` modules) returns one from each
subcommand; nothing below it exits the process. argparse's own usage errors
exit with 2 as well, so `BAD_INPUT` means the same whoever says it.
"""

from __future__ import annotations

from enum import IntEnum

__all__ = ["ExitCode", "GpulabError"]


class ExitCode(IntEnum):
    """What a `gpulab` command's exit status says."""

    OK = 0
    """It did what was asked (a check passed or was skipped, a probe ran, a class was graded)."""
    FAILED = 1
    """It ran, and what it judged failed: a check, a probe that could not run here, a doctor
    item, a lesson's claims measured against this machine."""
    BAD_INPUT = 2
    """What it was given is wrong: an unknown name, broken course content, a bad option
    (with the problem as file:line where there is a file)."""
    INTERRUPTED = 130
    """The user pressed ctrl-c (128 + SIGINT, as a shell reports it)."""


class GpulabError(Exception):
    """Root of every error gpulab raises on purpose.

    The message says what was wrong, where, and what to do about it.
    """
