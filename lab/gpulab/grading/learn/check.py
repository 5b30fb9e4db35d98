"""One check of a learner's notebook, the same from the app, `gpulab check` and a
notebook's ``check("name")``.

1. `find_notebook`: which notebook is meant: the one the learner named, else one
   of the exercise's name beside the caller (a notebook's kernel runs in the
   notebook's folder), else the workspace's own;
2. `judge`: the exercise's checks run on it (`run_checks`); whatever goes wrong
   becomes the report's ``error``, never an exception;
3. `keep`: a pass or a failure of the workspace's own notebook goes into the
   saved progress (`gpulab.grading.learn.record`), before anything is printed.

`check_and_keep` does the three for the command line and the notebook. The app
runs `judge` in a thread and records the report into the progress it holds
(`record_report`), which it then saves itself.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from gpulab.grading.checks.runner import CheckReport, run_checks
from gpulab.grading.learn.record import save_report

if TYPE_CHECKING:
    from gpulab.course.manifest import ExerciseEntry
    from gpulab.course.progress import ProgressStore
    from gpulab.course.workspace import Workspace

__all__ = ["Checked", "check_and_keep", "find_notebook", "judge"]


@dataclass(frozen=True)
class Checked:
    """A judged notebook: the checks' report, and why it was not kept in the learner's
    progress ("" when it was, or when there was nothing to keep)."""

    report: CheckReport
    problem: str = ""


def find_notebook(
    entry: ExerciseEntry, given: str | Path | None = None, *, beside: Path | None = None
) -> tuple[Path, Workspace | None]:
    """The notebook to check, and the workspace in use (None before ``gpulab init``).

    `given` where the learner named one; else ``<name>.ipynb`` in `beside` where there is
    one; else the workspace's notebook (`WorkspaceError` says why there is none).
    """
    from gpulab.course.workspace import current_workspace, require_workspace

    workspace = current_workspace()
    if given is not None:
        return Path(given), workspace
    if beside is not None and (beside / f"{entry.name}.ipynb").is_file():
        return beside / f"{entry.name}.ipynb", workspace
    workspace = workspace or require_workspace()
    return workspace.notebook(entry), workspace


def judge(entry: ExerciseEntry, notebook: Path) -> CheckReport:
    """The checks' report on `notebook`; a failure to run them is the report's error."""
    try:
        return run_checks(entry, notebook)
    except Exception as exc:  # the checks' failure must become a report
        return CheckReport(
            entry.name, notebook, "error", f"the checks failed: {type(exc).__name__}: {exc}"
        )


def check_and_keep(
    entry: ExerciseEntry,
    given: str | Path | None = None,
    *,
    beside: Path | None = None,
    store: ProgressStore | None = None,
) -> Checked:
    """Find the notebook, judge it, and keep the verdict in the saved progress (before the
    caller shows it: a reader that stops early, ``| head``, loses nothing)."""
    notebook, workspace = find_notebook(entry, given, beside=beside)
    report = judge(entry, notebook)
    return Checked(report, save_report(report, entry, workspace, store) or "")
