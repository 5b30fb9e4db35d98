"""The result of an exercise's checks: each check with its points and what it says, and what
the learner measured beside the check's own figure and their prediction of it."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.text import Text
from textual.widgets import Static

if TYPE_CHECKING:
    from collections.abc import Sequence

    from gpulab.course.progress import ExerciseRecord, Measurement
    from gpulab.grading.checks.runner import CheckReport

__all__ = ["CheckReportPanel", "measured_text", "report_text"]

_MARKS = {"passed": ("✓", "green"), "failed": ("✗", "red"), "skipped": ("–", "dim")}


def report_text(report: CheckReport) -> Text:
    """A finished run: the outcome and points, then each check with what it says."""
    text = Text()
    points = f" — {report.earned:g} of {report.possible:g} points" if report.results else ""
    if report.status == "passed":
        text.append(f"✓ passed{points}", style="bold green")
    elif report.status == "failed":
        text.append(f"✗ failing{points}", style="bold red")
    elif report.status == "skipped":
        text.append("– not checked here", style="bold yellow")
    elif report.status == "timeout":
        text.append("✗ ran out of time", style="bold red")
    else:
        text.append("✗ the checks could not run", style="bold red")
    if report.message:
        text.append(f"\n{report.message}")
    for result in report.results:
        mark, style = _MARKS[result.outcome]
        text.append(f"\n{mark} ", style=style)
        text.append(result.title or result.check)
        text.append(f"  [{result.earned:g}/{result.points:g}]", style="dim")
        if result.message and result.outcome != "passed":
            for line in result.message.splitlines():
                text.append(f"\n    {line}", style="" if result.outcome == "failed" else "dim")
    measured = report.measurements(hidden=False)
    if measured:
        text.append("\n\n")
        text.append_text(measured_text(measured))
    return text


def measured_text(measured: Sequence[Measurement]) -> Text:
    """What the learner measured: per figure their prediction, their figure, the check's
    figure from the same run, and how the two compare (a prediction is never graded)."""
    text = Text("Measured", style="bold")
    text.append("  your prediction → yours · the check's", style="dim")
    for m in measured:
        what, predicted, yours, trusted, compared = m.cells()
        style = {True: "green", False: "red", None: "dim"}[m.agrees]
        text.append(f"\n  {what}: ")
        text.append(predicted, style="italic")
        text.append(f" → {yours} · {trusted}  ")
        text.append(compared, style=style)
    return text


class CheckReportPanel(Static):
    """Hidden until the first run; then "running…", then the report, and why it ran."""

    def show_running(self, notebook: str, why: str = "") -> None:
        """Say that the checks run on `notebook` (and why: "you saved the notebook")."""
        text = Text(f"Running the checks on {notebook}…", style="italic")
        if why:
            text.append(f"  ({why})", style="dim")
        self.update(text)
        self.display = True

    def show_record(self, record: ExerciseRecord) -> None:
        """Before any run here: what the last check (``gpulab check``, the notebook's cell)
        measured, if it measured anything."""
        if not record.measurements:
            return
        text = Text(f"Your last check ({record.status}, {record.at[:16]}):\n", style="dim")
        text.append_text(measured_text(record.measurements))
        self.update(text)
        self.display = True

    def show_report(self, report: CheckReport, *, passed_hint: str = "") -> None:
        text = report_text(report)
        if report.status == "passed" and passed_hint:
            text.append(f"\n\n{passed_hint}", style="italic")
        self.update(text)
        self.display = True
