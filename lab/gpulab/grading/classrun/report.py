"""`gpulab grade` for people: a progress bar while it runs, a summary when it ends.

Much of what a run reports comes from learners: the file names in the
intake's problems, and through them whatever a zip member is called. The
gradebook has made that text plain (`gpulab.grading.gradebook.verdict.plain`); here it
is shown as text, never read as Rich markup, so a name like ``[/]x.ipynb``
or ``[link=…]`` is printed as it is.
"""

from __future__ import annotations

import statistics
from collections import Counter
from typing import TYPE_CHECKING, Any

from gpulab.errors import ExitCode
from gpulab.grading.gradebook.verdict import KINDS, UNGRADED
from gpulab.grading.sandbox.policy import unguaranteed

if TYPE_CHECKING:
    from gpulab.grading.classrun.grade_model import GradeOptions, GradeSummary

__all__ = ["main", "summary_table"]


def summary_table(summary: GradeSummary) -> Any:
    """A rich renderable: scores, their spread, and what went wrong by kind.

    An exercise's mean, and a learner's score, count only what was graded: a
    ``not-run`` or ``partial`` grade is no grade.
    """
    from rich.console import Group
    from rich.table import Table
    from rich.text import Text

    total_max = sum(summary.maxima.get(e, 0.0) for e in summary.exercises) or 1.0
    scores = []  # each learner's share of what was graded for them
    for learner in summary.learners:
        graded = [e for e in learner.exercises if e.kind not in UNGRADED]
        possible = sum(summary.maxima.get(e.exercise, 0.0) for e in graded)
        if possible:
            scores.append(sum(e.earned for e in graded) / possible * 100)
    table = Table(
        title=f"{len(summary.learners)} learners × {len(summary.exercises)} exercises",
        show_lines=False,
    )
    table.add_column("exercise")
    table.add_column("worth", justify="right")
    table.add_column("mean", justify="right")
    table.add_column("outcomes")
    everything: Counter[str] = Counter()
    for name in summary.exercises:
        grades = [
            e for learner in summary.learners for e in learner.exercises if e.exercise == name
        ]
        counts: Counter[str] = Counter(e.kind for e in grades)
        everything.update(counts)
        earned = [e.earned for e in grades if e.kind not in UNGRADED]
        mean = _num(statistics.fmean(earned)) if earned else "–"
        table.add_row(Text(name), _num(summary.maxima.get(name, 0.0)), mean, _outcomes(counts))
    table.add_section()
    table.add_row("all", _num(total_max), "", _outcomes(everything))
    spread = Table(title="score distribution (% of the total)")
    spread.add_column("score")
    spread.add_column("learners", justify="right")
    spread.add_column("")
    buckets = Counter(min(int(s // 10), 9) for s in scores)
    most = max(buckets.values(), default=1)
    for b in range(9, -1, -1):
        label = f"{b * 10}–{b * 10 + 10}%" if b < 9 else "90–100%"
        spread.add_row(label, str(buckets.get(b, 0)), "█" * round(20 * buckets.get(b, 0) / most))
    parts: list[Any] = [table, spread]
    if scores:
        parts.append(
            Text(
                f"mean {statistics.fmean(scores):.1f} %, median "
                f"{statistics.median(scores):.1f} %; {summary.graded} graded now, "
                f"{summary.reused} kept from an earlier run"
            )
        )
    if everything.get("partial"):
        parts.append(
            Text(
                f"partial: {everything['partial']} GPU exercise(s) checked without a "
                "GPU (their feedback shows those checks); no grade yet, a blank cell "
                "in grades.csv: run the same command on a machine with a GPU to "
                "grade them whole",
                style="yellow",
            )
        )
    return Group(*parts)


def _outcomes(counts: Counter[str]) -> str:
    """ "right 12 · wrong 3 · timeout 1": the kinds in their fixed order, non-zero ones only."""
    return " · ".join(f"{kind} {counts[kind]}" for kind in KINDS if counts.get(kind))


def _num(value: float) -> str:
    return f"{value:g}" if value == int(value) else f"{value:.2f}"


def main(options: GradeOptions) -> int:
    """The CLI's body: progress bar, run, summary; exit status 0 when the run finished."""
    from rich.console import Console
    from rich.markup import escape
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
    from rich.text import Text

    from gpulab.grading.classrun.grade import grade_class

    console = Console(stderr=True)
    bar = Progress(
        TextColumn("grading"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("{task.description}"),
        console=console,
        transient=False,
    )
    task = bar.add_task("", total=None)

    def progress(text: str, done: int, total: int) -> None:
        if not bar.live.is_started:  # drawn from the first step: a refusal draws no bar
            bar.start()
        bar.update(task, completed=done, total=total, description=escape(text))

    try:
        try:
            summary = grade_class(options, progress=progress)
        finally:
            if bar.live.is_started:
                bar.stop()
    except KeyboardInterrupt:
        console.print(
            "[yellow]stopped.[/] The grades so far are in the gradebook; run the "
            "same command again to go on where it stopped."
        )
        return ExitCode.INTERRUPTED
    out = Console()
    for line in summary.notes:
        out.print(Text(line, style="dim"))
    out.print(summary_table(summary))
    for line in summary.gpu_events:
        out.print(Text(line, style="red"))
    for line in summary.problems:
        out.print(Text.assemble(("problem:", "yellow"), " ", line))
    out.print(
        Text("isolation in force: " + "; ".join(g for g in summary.guards if not unguaranteed(g)))
    )
    for line in summary.guards:
        if unguaranteed(line):
            out.print(Text.assemble(("not guaranteed here:", "yellow"), " ", line))
    out.print(
        Text(
            f"gradebook: {summary.out / 'gradebook.sqlite'}\nLMS CSV:   "
            f"{summary.out / 'grades.csv'}\nfeedback:  {summary.out / 'feedback'}/"
        )
    )
    return ExitCode.OK
