"""A check's outcome kept in the learner's progress, where the app's exercise list reads it.

Only a judgement is kept: a report that passed or failed. A notebook that
could not be read, checks that could not run, or checks that all skipped (a
GPU exercise on a machine without a GPU) leave the record as it was.
"""

from __future__ import annotations

from gpulab.course.progress import ExerciseRecord, Progress, ProgressStore
from gpulab.grading.runner import CheckReport

__all__ = ["record_report", "save_report"]


def record_report(report: CheckReport, progress: Progress,
                  at: str | None = None) -> ExerciseRecord | None:
    """Put the report's outcome into `progress`; None (and nothing changed) unless it judged."""
    if report.status not in ("passed", "failed"):
        return None
    return progress.record_check(report.exercise, passed=report.status == "passed",
                                 earned=report.earned, possible=report.possible, at=at)


def save_report(report: CheckReport, store: ProgressStore | None = None) -> str | None:
    """Record the report in the saved progress; a message when that went wrong, else None."""
    if report.status not in ("passed", "failed"):
        return None
    store = store or ProgressStore()
    progress = store.load()
    record_report(report, progress)
    try:
        store.save(progress)
    except OSError as exc:
        return (f"the result was not saved to {store.path}: {exc.strerror or exc}; "
                "the app will show the exercise as it was")
    return store.warning
