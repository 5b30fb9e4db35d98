"""The exercise screen: where the learner stands, the notebook, its checks, hints, the solution.

`o` opens the learner's notebook in JupyterLab (a server of its own, which
outlives the app); `c` runs the exercise's checks on the saved notebook in a
thread of the app, shows each check with its points, and keeps the outcome in
the progress as ``gpulab check`` does. Hints are revealed one at a time (`h`);
the solution's answer cells (`s`) only once the checks have passed.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

from rich.table import Table
from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.message import Message
from textual.widgets import Footer, Header, Markdown, Static

from gpulab.course import Course, ExerciseEntry
from gpulab.course.progress import state_dir
from gpulab.tui.messages import ProgressChanged
from gpulab.tui.screens.base import LabScreen
from gpulab.tui.state import Keeper
from gpulab.tui.widgets import HintList

if TYPE_CHECKING:
    from gpulab.grading.runner import CheckReport

__all__ = ["LOCKED", "ExerciseScreen"]

LOCKED = "The solution opens once your checks pass."
_MARKS = {"passed": ("✓", "green"), "failed": ("✗", "red"), "skipped": ("–", "dim")}


class ExerciseScreen(LabScreen):
    """One exercise: its facts and state, its checks' results, its hints, its solution."""

    HELP_GROUP = "Exercise"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "back", "Map"),
        Binding("c", "check", "Check"),
        Binding("o", "open_notebook", "Open in JupyterLab"),
        Binding("h", "hint", "Reveal a hint"),
        Binding("s", "solution", "Solution"),
        Binding("l", "lesson", "Open its lesson", show=False),
    ]

    class SolutionRead(Message):
        """The solution's answer cells were read (as Markdown), or why they could not be."""

        def __init__(self, markdown: str) -> None:
            super().__init__()
            self.markdown = markdown

    def __init__(self, course: Course, keeper: Keeper, exercise: ExerciseEntry) -> None:
        super().__init__()
        self.course = course
        self.keeper = keeper
        self.exercise = exercise
        self.title = f"Exercise {exercise.name}"
        self.sub_title = self._lesson_title()

    def compose(self) -> ComposeResult:
        yield Header()
        with VerticalScroll(id="exercise-body"):
            yield Static(id="exercise-facts")
            seen = self.keeper.progress.hints.get(self.exercise.name, 0)
            yield HintList(self.exercise.hints, seen, id="hints")
            yield Static(id="exercise-checks")
            yield Markdown(self._guide(), id="exercise-notes")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#exercise-facts", Static).border_title = "✎ exercise"
        self.query_one(HintList).border_title = "hints"
        self.query_one("#exercise-checks").border_title = "checks"
        self.query_one("#exercise-checks").display = False
        self.query_one("#exercise-notes").border_title = "how to work on it"
        self.exercises_changed()
        if self.exercise.gpu:
            self.lab.find_gpu()

    def on_screen_resume(self) -> None:
        if self.keeper.sync():
            self.lab.exercises_changed()

    def exercises_changed(self) -> None:
        """Show the exercise's state (and that its checks are running, while they are)."""
        self.query_one("#exercise-facts", Static).update(self._facts())
        if self.lab.is_checking(self.exercise.name):
            checks = self.query_one("#exercise-checks", Static)
            checks.update(Text(f"Running the checks on {self._shown(self.exercise.notebook)}…",
                               style="italic"))
            checks.display = True

    def show_report(self, report: CheckReport) -> None:
        """Show each check of a finished run with its points and what it says."""
        checks = self.query_one("#exercise-checks", Static)
        text = _report_text(report)
        if report.status == "passed":
            text.append("\n\nWell done: press s to compare your answers with the solution.",
                        style="italic")
        checks.update(text)
        checks.display = True

    def on_exercise_screen_solution_read(self, event: SolutionRead) -> None:
        notes = self.query_one("#exercise-notes", Markdown)
        notes.border_title = "solution"
        notes.update(event.markdown)

    def _lesson_title(self) -> str:
        try:
            return self.course.entry(self.exercise.lesson).title
        except KeyError:
            return self.exercise.lesson

    def _shown(self, path: Path) -> str:
        """A path of the course, relative to the course's folder."""
        root = self.exercise.notebook.parent.parent.parent
        try:
            return str(path.relative_to(root))
        except ValueError:
            return str(path)

    def _facts(self) -> Table:
        exercise = self.exercise
        grid = Table.grid(padding=(0, 2))
        grid.add_column(style="dim", no_wrap=True)
        grid.add_column()
        grid.add_row("name", Text(exercise.name, style="bold"))
        grid.add_row("lesson", self._lesson_title())
        gpu = Text("needs an NVIDIA GPU", style="bold yellow") if exercise.gpu else Text(
            "runs on the CPU", style="green")
        grid.add_row("runs on", gpu)
        grid.add_row("time limit", f"{exercise.time_limit} s")
        notebook = Text(self._shown(exercise.notebook))
        if not exercise.notebook.is_file():
            notebook.append("  (not found)", style="red")
        grid.add_row("notebook", notebook)
        grid.add_row("status", self.lab.exercise_state(exercise))
        return grid

    def _guide(self) -> str:
        name = self.exercise.name
        return (f"1. Press **o** to open the notebook in JupyterLab (or open "
                f"`{self._shown(self.exercise.notebook)}` in any Jupyter).\n"
                "2. Write your answers where `# TODO` stands, and save the notebook.\n"
                f"3. Press **c** to run the checks (or `gpulab check {name}` in a shell, or "
                "the notebook's last cell): each check says what it expected and what it "
                "found.\n\n"
                "Press **h** for a hint, gentlest first. "
                "The solution (**s**) opens once your checks pass.")

    def action_back(self) -> None:
        self.lab.show_map()

    def action_lesson(self) -> None:
        self.lab.open_lesson(self.exercise.lesson)

    def action_hint(self) -> None:
        hints = self.query_one(HintList)
        if hints.revealed >= len(self.exercise.hints):
            self.notify("No more hints for this exercise.", timeout=3)
            return
        hints.revealed += 1
        self.keeper.progress.hints[self.exercise.name] = hints.revealed
        self.post_message(ProgressChanged(now=True))

    def action_check(self) -> None:
        """Run the checks on the saved notebook (in a thread of the app)."""
        self.lab.check_exercise(self.exercise)

    def action_open_notebook(self) -> None:
        """Start JupyterLab on the learner's notebook, detached from the app."""
        from gpulab.grading import jupyter

        notebook = self.exercise.notebook
        if not notebook.is_file():
            self.notify(f"The notebook {notebook} does not exist in this copy of the course.",
                        title="No notebook", severity="error", timeout=8)
            return
        command = jupyter.jupyter_lab_command(notebook)
        if command is None:
            self.notify(f"JupyterLab is not installed. Install it with\n"
                        f"{jupyter.install_hint()}\nor open {notebook} in any Jupyter.",
                        title="No JupyterLab", severity="error", timeout=15)
            return
        log = state_dir() / "jupyterlab.log"
        try:
            server = jupyter.launch(command, notebook.parent, log)
        except OSError as exc:
            self.notify(f"JupyterLab did not start: {exc.strerror or exc}", title="No JupyterLab",
                        severity="error", timeout=10)
            return
        self.lab.notebook_servers.append(server)
        self.notify(f"Starting JupyterLab on {notebook.name}: it opens in your browser. If it "
                    f"does not, its address is in {log}. Save the notebook, then press c here.",
                    title="JupyterLab", timeout=10)

    def action_solution(self) -> None:
        """Show the solution's answer cells, once the checks have passed."""
        self.keeper.sync()
        record = self.keeper.progress.exercises.get(self.exercise.name)
        notes = self.query_one("#exercise-notes", Markdown)
        if record is None or not record.passed:
            notes.border_title = "solution"
            notes.update(f"*{LOCKED}* Press **c** to run them; **h** gives a hint.")
            self.notify(LOCKED, timeout=4)
            return
        self._read_solution()

    @work(thread=True, exclusive=True, group="solution", exit_on_error=False)
    def _read_solution(self) -> None:
        self.post_message(self.SolutionRead(_solution_markdown(self.exercise)))


def _report_text(report: CheckReport) -> Text:
    """A finished run: the outcome and points, then each check with what it says."""
    text = Text()
    points = f" — {report.earned:g} of {report.possible:g} points" if report.results else ""
    if report.status == "passed":
        text.append(f"✓ passed{points}", style="bold green")
    elif report.status == "failed":
        text.append(f"✗ failing{points}", style="bold red")
    elif report.status == "skipped":
        text.append("– not checked here", style="bold yellow")
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
    return text


def _solution_markdown(exercise: ExerciseEntry) -> str:
    """The solution's answer cells as Markdown code blocks (blocking: read in a thread)."""
    from gpulab.grading.build import solution_path
    from gpulab.grading.notebook import NotebookError, answer_cells, read_notebook

    path = solution_path(exercise)
    try:
        answers = answer_cells(read_notebook(path), path)
    except NotebookError as exc:
        return f"The solution cannot be shown: {exc}"
    parts = [f"The solution's answers, from `{path.name}`: compare them with yours."]
    for part, cell in answers.items():
        longest = max((len(run) for run in re.findall(r"`+", cell.source)), default=0)
        fence = "`" * max(3, longest + 1)
        parts.append(f"**{part}**\n\n{fence}python\n{cell.source.rstrip()}\n{fence}")
    if len(parts) == 1:
        parts.append("*The solution has no answer cells.*")
    return "\n\n".join(parts)
