"""Check results for people: a table in the terminal, a panel in the notebook."""

from __future__ import annotations

import html
import importlib
from pathlib import Path
from typing import Any

from gpulab.grading.record import save_report
from gpulab.grading.runner import CheckReport, run_checks

__all__ = ["check", "find_exercise", "report_html", "report_text"]

_MARK = {"passed": "✓", "failed": "✗", "skipped": "–"}


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
    lines = [f"{report.exercise}: {report.status}"
             + (f" ({report.earned:g} of {report.possible:g} points)" if report.results else "")]
    if report.message:
        lines.append(f"  {report.message}")
    for result in report.results:
        title = result.title or result.check
        lines.append(f"  {_MARK[result.outcome]} {title}  [{result.earned:g}/{result.points:g}]")
        if result.message and result.outcome != "passed":
            lines.extend(f"      {line}" for line in result.message.splitlines())
    return "\n".join(lines)


def report_html(report: CheckReport) -> str:
    """The report as a small HTML table for the notebook's result panel."""
    colour = {"passed": "#1a7f37", "failed": "#cf222e", "skipped": "#6e7781"}
    head = (f"<b>{html.escape(report.exercise)}</b>: "
            f"<span style='color:{colour.get(report.status, '#cf222e')}'>{report.status}</span>")
    if report.results:
        head += f" — {report.earned:g} of {report.possible:g} points"
    rows = []
    for result in report.results:
        message = html.escape(result.message).replace("\n", "<br>") \
            if result.outcome != "passed" else ""
        rows.append(f"<tr><td style='color:{colour[result.outcome]}'>{_MARK[result.outcome]}</td>"
                    f"<td>{html.escape(result.title or result.check)}</td>"
                    f"<td>{result.earned:g}/{result.points:g}</td><td>{message}</td></tr>")
    body = f"<p>{html.escape(report.message)}</p>" if report.message else ""
    table = f"<table class='gpulab-checks'>{''.join(rows)}</table>" if rows else ""
    return f"<div class='gpulab-result'>{head}{body}{table}</div>"


def check(name: str, notebook: str | None = None) -> Any:
    """Run the checks on the saved notebook; show a panel in Jupyter, text elsewhere.

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
    try:
        in_kernel = importlib.import_module("IPython").get_ipython() is not None
    except ImportError:
        in_kernel = False
    if not in_kernel:
        print(report_text(report) + (f"\n  ({problem})" if problem else ""))
        return report
    ipywidgets = importlib.import_module("ipywidgets")
    note = ("<p style='color:#6e7781'>The checks read the saved notebook: save (Ctrl+S) "
            "before you check.</p>")
    if problem:
        note += f"<p style='color:#9a6700'>{html.escape(problem)}</p>"
    panel = ipywidgets.HTML(value=report_html(report) + note)
    panel.add_class("gpulab-result-panel")
    return panel
