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

from gpulab.grading.checks.runner import CheckReport

__all__ = ["CheckedNotebook", "check", "report_text"]

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
    from gpulab.course import load_course
    from gpulab.grading.learn.check import check_and_keep

    checked = check_and_keep(load_course().exercise(name), notebook, beside=Path.cwd())
    return CheckedNotebook(checked.report, checked.problem)
