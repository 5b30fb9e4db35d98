"""Check results for people: text in the terminal, a panel in the notebook.

`check(name)` returns a `CheckedNotebook`, which speaks IPython's display
protocol: a notebook shows its `_repr_html_` (the template ``panel.html.j2``,
rendered by the Jinja2 environment the feedback pages use), a Python prompt
its `__repr__` (the text `gpulab check` prints). Nothing here asks whether it
runs in a kernel.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gpulab.grading.checks.runner import CheckReport, run_checks
from gpulab.grading.learn.record import save_report

__all__ = ["CheckedNotebook", "check", "find_exercise", "report_text"]

_MARK = {"passed": "✓", "failed": "✗", "skipped": "–"}
PANEL = "panel.html.j2"


@dataclass(frozen=True)
class CheckedNotebook:
    """The checks' report on a notebook, as a notebook or a prompt shows it.

    `problem` says why the result could not be kept in the learner's progress
    (empty when it was kept, or when there was nothing to keep).
    """

    report: CheckReport
    problem: str = ""

    def __repr__(self) -> str:
        return report_text(self.report) + (f"\n  ({self.problem})" if self.problem else "")

    def _repr_html_(self) -> str:
        from gpulab.grading.pages import environment

        return environment().get_template(PANEL).render(checked=self)


def find_exercise(name: str) -> Any:
    """The course's exercise entry by name; `GpulabError` names the ones that exist."""
    from gpulab.course import load_course
    from gpulab.errors import GpulabError

    course = load_course()
    for entry in course.exercises():
        if entry.name == name:
            return entry
    known = ", ".join(e.name for e in course.exercises())
    raise GpulabError(f"no exercise named {name!r}\n    hint: the exercises are: {known}")


def report_text(report: CheckReport) -> str:
    """The report as plain text lines."""
    lines = [
        f"{report.exercise}: {report.status}"
        + (f" ({report.earned:g} of {report.possible:g} points)" if report.results else "")
    ]
    if report.message:
        lines.append(f"  {report.message}")
    for result in report.results:
        title = result.title or result.check
        lines.append(f"  {_MARK[result.outcome]} {title}  [{result.earned:g}/{result.points:g}]")
        if result.message and result.outcome != "passed":
            lines.extend(f"      {line}" for line in result.message.splitlines())
    measured = report.measurements(hidden=False)
    if measured:
        lines.append("  measured: what | your prediction | yours | the check's | compared")
        lines.extend("    " + " | ".join(m.cells()) for m in measured)
    return "\n".join(lines)


def check(name: str, notebook: str | None = None) -> CheckedNotebook:
    """Run the checks on the saved notebook; the result shows as a panel in a notebook and
    as text at a Python prompt (`print` it in a script).

    The notebook is `notebook`, else ``<name>.ipynb`` in the working folder (where
    JupyterLab runs a notebook's kernel), else the workspace's. A pass or a failure
    of the workspace's notebook is kept in the learner's progress, for the app.
    """
    from gpulab.course.workspace import current_workspace, require_workspace

    entry = find_exercise(name)
    workspace = current_workspace()
    if notebook is not None:
        path = Path(notebook)
    elif (Path.cwd() / f"{name}.ipynb").is_file():
        path = Path.cwd() / f"{name}.ipynb"
    else:
        path = require_workspace().notebook(entry)
    report = run_checks(entry, path)
    problem = save_report(report, entry, workspace)  # the app's exercise list shows it
    return CheckedNotebook(report, problem or "")
