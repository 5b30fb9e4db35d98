"""A check's outcome kept in the learner's progress, where the app's exercise list reads it.

Only a judgement of the workspace's own notebook is kept: a report that passed
or failed on ``<workspace>/<lesson>/<name>.ipynb``. A notebook that could not be
read, checks that could not run, checks that all skipped (a GPU exercise on a
machine without a GPU), or a check of some other notebook (``gpulab check NAME
--notebook OTHER``, a scratch copy, a backup) leave the record as it was.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from gpulab.course.progress import ExerciseRecord, Progress, ProgressStore
from gpulab.grading.checks.runner import CheckReport

if TYPE_CHECKING:
    from gpulab.course.manifest import ExerciseEntry
    from gpulab.course.workspace import Workspace

__all__ = ["record_report", "save_report", "unrecorded_reason"]


def unrecorded_reason(
    report: CheckReport, entry: ExerciseEntry, workspace: Workspace | None
) -> str | None:
    """Why a judged report is not kept in the progress, or None when it is kept."""
    if report.status not in ("passed", "failed"):
        return None
    if workspace is None:
        return "not kept in your progress: you have no workspace (`gpulab init` makes one)"
    if not workspace.owns(entry, report.notebook):
        return (
            f"not kept in your progress: it is not your workspace's notebook "
            f"{workspace.notebook(entry)}"
        )
    return None


def record_report(
    report: CheckReport,
    entry: ExerciseEntry,
    workspace: Workspace | None,
    progress: Progress,
    at: str | None = None,
) -> ExerciseRecord | None:
    """Put the report's outcome into `progress`; None (and nothing changed) unless it judged
    the workspace's own notebook."""
    if (
        report.status not in ("passed", "failed")
        or workspace is None
        or not workspace.owns(entry, report.notebook)
    ):
        return None
    return progress.record_check(
        report.exercise,
        workspace=workspace.key,
        passed=report.status == "passed",
        earned=report.earned,
        possible=report.possible,
        at=at,
        measurements=report.measurements(),
    )


def save_report(
    report: CheckReport,
    entry: ExerciseEntry,
    workspace: Workspace | None,
    store: ProgressStore | None = None,
) -> str | None:
    """Record the report in the saved progress; a message when it was not kept, else None."""
    reason = unrecorded_reason(report, entry, workspace)
    if reason is not None or report.status not in ("passed", "failed"):
        return reason
    store = store or ProgressStore()
    progress = store.load()
    record_report(report, entry, workspace, progress)
    try:
        store.save(progress)
    except OSError as exc:
        return (
            f"the result was not saved to {store.path}: {exc.strerror or exc}; "
            "the app will show the exercise as it was"
        )
    return store.warning
