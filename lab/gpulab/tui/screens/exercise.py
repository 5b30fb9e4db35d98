"""The exercise screen: the task, where the learner stands, checks, hints, the solution.

The task (parts, functions to write, points) is read from the course's notebook
and visible checks in a thread as the screen opens. While the screen is open it
watches the learner's notebook in the workspace, as ``rustlings watch`` does:
saving it re-runs the checks (`w` stops and starts watching). `c` runs them on
demand, in a thread of the app, never two at once; the outcome is kept in the
progress as ``gpulab check`` keeps it. `o` opens the notebook in the
workspace's JupyterLab and shows its address (with the token, `y` copies it)
and the ``ssh -L`` line. Hints are revealed one at a time (`h`); the
solution's answer cells (`s`) only once the checks have passed. What the screen
writes (the facts, how to work on the exercise, the solution's answers) is made by
`gpulab.tui.exercise_text`.

The screen asks the app for the checks (`CheckExercise`) and tells it of each
hint revealed (`HintRevealed`); it watches the app's `workspace`, `checking`
and `exercise_states`, and the app hands it each finished report (`show_report`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from rich.text import Text
from textual import getters, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.message import Message
from textual.timer import Timer
from textual.widgets import Footer, Header, Markdown, Static

from gpulab.course import Course, ExerciseEntry
from gpulab.tui.clipboard import TMUX_PASTE, in_tmux
from gpulab.tui.exercise_text import (
    NO_SOLUTIONS,
    exercise_facts,
    exercise_guide,
    has_solutions,
    solution_markdown,
)
from gpulab.tui.learner import NO_WORKSPACE
from gpulab.tui.messages import (
    CheckExercise,
    FindGpu,
    HintRevealed,
    OpenLesson,
    OpenNextExercise,
    ShowMap,
)
from gpulab.tui.screens.base import LabScreen
from gpulab.tui.text import inline_markdown
from gpulab.tui.watch import NotebookWatch
from gpulab.tui.widgets import CheckReportPanel, HintList, JupyterPanel, TaskPanel

if TYPE_CHECKING:
    from pathlib import Path

    from gpulab.course.workspace import Workspace
    from gpulab.grading.checks.runner import CheckReport
    from gpulab.tui.task import Task

__all__ = ["LOCKED", "WATCH_INTERVAL", "ExerciseScreen"]

LOCKED = "The solution opens once your checks pass."
WATCH_INTERVAL = 1.0
"""Seconds between two looks at the learner's notebook while watching it."""


class ExerciseScreen(LabScreen):
    """One exercise: its task and state, its checks' results, its hints, its solution."""

    HELP_GROUP = "Exercise"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "back", "Back", tooltip="Back to where you came from"),
        Binding("c", "check", "Check", tooltip="Run the checks on your saved notebook"),
        Binding("o", "open_notebook", "Jupyter", tooltip="Open in JupyterLab"),
        Binding("h", "hint", "Hint", tooltip="Reveal a hint"),
        Binding("s", "solution", "Solution", tooltip="The solution, once your checks pass"),
        Binding(
            "n",
            "next_exercise",
            "Next exercise",
            show=False,
            tooltip="Open the next exercise you have not passed yet",
        ),
        Binding(
            "w",
            "watch",
            "Watch",
            show=False,
            tooltip="Stop or start watching: saving the notebook runs the checks",
        ),
        Binding(
            "y",
            "copy_address",
            "Copy the address",
            show=False,
            tooltip="Copy JupyterLab's address (with its token)",
        ),
        Binding("l", "lesson", "Open its lesson", show=False),
    ]

    facts = getters.query_one("#exercise-facts", Static)
    no_workspace = getters.query_one("#no-workspace", Static)
    jupyter = getters.query_one(JupyterPanel)
    checks = getters.query_one(CheckReportPanel)
    hints = getters.query_one(HintList)
    task_panel = getters.query_one(TaskPanel)
    notes = getters.query_one("#exercise-notes", Markdown)

    class SolutionRead(Message):
        """The solution's answer cells were read (as Markdown), or why they could not be."""

        def __init__(self, markdown: str) -> None:
            super().__init__()
            self.markdown = markdown

    class TaskRead(Message):
        """The exercise's task was read from its notebook and visible checks."""

        def __init__(self, task: Task) -> None:
            super().__init__()
            self.task = task

    class JupyterLabOpened(Message):
        """JupyterLab has the notebook open (`url`), or did not start (`url` empty)."""

        def __init__(self, url: str, text: str, ssh: str = "") -> None:
            super().__init__()
            self.url = url
            self.text = text
            self.ssh = ssh

    def __init__(self, course: Course, exercise: ExerciseEntry) -> None:
        super().__init__()
        self.course = course
        self.exercise = exercise
        self.title = f"Exercise {exercise.name}"
        self.sub_title = self._lesson_title()
        self.exercise_task: Task | None = None
        self.notebook: Path | None = None
        """The learner's notebook in their workspace; None without a workspace."""
        self.notebook_watch: NotebookWatch | None = None
        self.watching = True
        """Whether saving the notebook runs the checks (`w` switches it)."""
        self._watch_timer: Timer | None = None
        self._check_again = False
        self._why = ""  # why the checks asked for last were run
        self._running_shown = False

    def compose(self) -> ComposeResult:
        yield Header()
        with VerticalScroll(id="exercise-body"):
            yield Static(id="exercise-facts")
            yield Static(inline_markdown(NO_WORKSPACE), id="no-workspace")
            yield JupyterPanel(id="jupyter")
            yield CheckReportPanel(id="exercise-checks")
            seen = self.lab.progress.hints.get(self.exercise.name, 0)
            yield HintList(self.exercise.hints, seen, id="hints")
            yield TaskPanel("*Reading the task…*", id="task")
            yield Markdown(exercise_guide(self.exercise.name, self.notebook), id="exercise-notes")
        yield Footer()

    def on_mount(self) -> None:
        self.facts.border_title = "✎ exercise"
        self.no_workspace.border_title = "no workspace yet"
        self.hints.border_title = "hints"
        self.checks.border_title = "checks"
        self.checks.display = False
        record = self.lab.exercise_record(self.exercise)
        if record is not None:
            self.checks.show_record(record)
        self.task_panel.border_title = "the task"
        self.notes.border_title = "how to work on it"
        self.watch(self.app, "workspace", self._workspace_changed)
        self.watch(self.app, "exercise_states", self._show_facts)
        self.watch(self.app, "checking", self._checking_changed)
        self._read_task()
        self._watch_timer = self.set_interval(WATCH_INTERVAL, self._look_at_notebook)
        if self.exercise.gpu:
            self.post_message(FindGpu())

    def on_exercise_screen_task_read(self, event: TaskRead) -> None:
        self.exercise_task = event.task
        self.task_panel.show_task(event.task)

    async def on_exercise_screen_solution_read(self, event: SolutionRead) -> None:
        await self._show_notes("solution", event.markdown)

    async def _show_notes(self, title: str, markdown: str) -> None:
        """Show `markdown` in the notes box at the foot of the screen, and scroll to it."""
        notes = self.notes
        notes.border_title = title
        await notes.update(markdown)
        self.call_after_refresh(notes.scroll_visible, animate=False, top=True)

    def on_exercise_screen_jupyter_lab_opened(self, event: JupyterLabOpened) -> None:
        panel = self.jupyter
        if not event.url:
            panel.show_failed(event.text)
            self.notify(
                "See the panel for the end of its log.",
                title="JupyterLab did not start",
                severity="error",
                timeout=8,
            )
        else:
            panel.show_opened(event.url, event.ssh, event.text.splitlines())
        panel.scroll_visible(animate=False)

    def _show_facts(self) -> None:
        """Show the exercise's facts and where the learner stands on it."""
        self.facts.update(
            exercise_facts(
                self.exercise,
                lesson=self._lesson_title(),
                path=self.notebook,
                shown=self._notebook_shown(),
                status=self.lab.exercise_states.get(self.exercise.name, Text("")),
                watching=self.watching,
            )
        )

    def _checking_changed(self, checking: frozenset[str]) -> None:
        """Say that the checks run, once they do (and why: "you saved the notebook")."""
        running = self.exercise.name in checking
        if running and not self._running_shown:
            self.checks.show_running(self._notebook_shown(), self._why)
        self._running_shown = running
        if not running:
            self._why = ""

    def show_report(self, report: CheckReport) -> None:
        """Show each check of a finished run with its points and what it says."""
        panel = self.checks
        panel.show_report(
            report,
            passed_hint="Well done: press s to compare your answers "
            "with the solution, or n for the next exercise."
            if has_solutions(self.exercise)
            else "Well done: press n for the next exercise.",
        )
        panel.scroll_visible(animate=False)
        if self._check_again:  # saved again while the checks ran
            self._check_again = False
            self._run_checks("you saved the notebook")

    def _workspace_changed(self, workspace: Workspace | None) -> None:
        """Show the facts, the no-workspace box or not, and watch the workspace's notebook."""
        self.notebook = workspace.notebook(self.exercise) if workspace is not None else None
        self.no_workspace.display = self.notebook is None
        self.notebook_watch = NotebookWatch(self.notebook) if self.notebook is not None else None
        self.notes.update(exercise_guide(self.exercise.name, self.notebook))
        self._show_facts()

    def _look_at_notebook(self) -> None:
        """The watch timer: a saved notebook runs the checks (later, if they are running)."""
        if self.notebook_watch is None or not self.watching or not self.notebook_watch.poll():
            return
        if self.exercise.name in self.lab.checking:
            self._check_again = True
        else:
            self._run_checks("you saved the notebook")

    def _run_checks(self, why: str = "") -> None:
        """Ask the app to run the checks; the panel says so once they run."""
        self._why = why
        self.post_message(CheckExercise(self.exercise))

    @work(thread=True, exclusive=True, group="task", exit_on_error=False)
    def _read_task(self) -> None:
        from gpulab.tui.task import read_task

        self.post_message(self.TaskRead(read_task(self.exercise)))

    def _lesson_title(self) -> str:
        try:
            return self.course.entry(self.exercise.lesson).title
        except KeyError:
            return self.exercise.lesson

    def _notebook_shown(self) -> str:
        """The learner's notebook, as a path in the workspace (or why there is none)."""
        return (
            str(self.notebook) if self.notebook is not None else "(no workspace yet: gpulab init)"
        )

    def action_back(self) -> None:
        """Back to the lesson this was opened from, or to the map, on this exercise."""
        from gpulab.tui.screens.lesson import LessonScreen

        stack = self.app.screen_stack
        if len(stack) > 2 and isinstance(stack[-2], LessonScreen) and stack[-1] is self:
            self.app.pop_screen()
            return
        self.post_message(ShowMap(exercise=self.exercise.name))

    def action_lesson(self) -> None:
        self.post_message(OpenLesson(self.exercise.lesson))

    def action_next_exercise(self) -> None:
        self.post_message(OpenNextExercise(self.exercise.name))

    def action_hint(self) -> None:
        hints = self.hints
        if hints.revealed >= len(self.exercise.hints):
            self.notify("No more hints for this exercise.", timeout=3)
            return
        hints.revealed += 1
        self.post_message(HintRevealed(self.exercise.name, hints.revealed))
        self.call_after_refresh(hints.scroll_visible, animate=False)

    def action_check(self) -> None:
        """Have the checks run on the saved notebook (in a thread of the app)."""
        if self.notebook is None:
            self.notify(NO_WORKSPACE, title="No workspace", severity="error", timeout=10)
        elif self.exercise.name in self.lab.checking:
            self.notify(f"{self.exercise.name} is being checked already.", timeout=3)
        else:
            self._run_checks()

    def action_watch(self) -> None:
        """Stop or start running the checks on every save."""
        self.watching = not self.watching
        if self.notebook_watch is not None:  # what is saved now is not news
            self.notebook_watch = NotebookWatch(self.notebook_watch.path)
        self._show_facts()

    def action_open_notebook(self) -> None:
        """Open the learner's notebook in the workspace's JupyterLab (started or reused)."""
        notebook, workspace = self.notebook, self.lab.workspace
        if notebook is None or workspace is None:
            self.notify(NO_WORKSPACE, title="No workspace", severity="error", timeout=10)
            return
        if not notebook.is_file():
            self.notify(
                f"{notebook} is missing: `gpulab reset {self.exercise.name}` brings it back.",
                title="No notebook",
                severity="error",
                timeout=10,
            )
            return
        self.jupyter.show_starting(notebook.name)
        self._open_in_jupyterlab(workspace, notebook)

    @work(thread=True, exclusive=True, group="jupyterlab", exit_on_error=False)
    def _open_in_jupyterlab(self, workspace: Workspace, notebook: Path) -> None:
        from gpulab.grading.learn.jupyter import JupyterError, open_notebook

        try:
            opened = open_notebook(workspace, notebook)
        except JupyterError as exc:
            self.post_message(self.JupyterLabOpened("", str(exc)))
            return
        self.post_message(
            self.JupyterLabOpened(opened.url, "\n".join(opened.lines()), opened.server.ssh)
        )

    def action_copy_address(self) -> None:
        """Put JupyterLab's address (with its token) on the clipboard."""
        url = self.jupyter.url
        if not url:
            self.notify("Press o first: JupyterLab's address shows once it runs.", timeout=4)
            return
        self.app.copy_to_clipboard(url)
        where = (
            f"in tmux's paste buffer ({TMUX_PASTE}), and on the clipboard where tmux passes it on"
            if in_tmux()
            else "on the clipboard (where the terminal allows)"
        )
        self.notify(f"JupyterLab's address is {where}.", timeout=6)

    async def action_solution(self) -> None:
        """Show the solution's answer cells, once the checks have passed; in a course that
        ships none (an installed one), say so."""
        if not has_solutions(self.exercise):
            await self._show_notes("solution", NO_SOLUTIONS)
            self.notify(NO_SOLUTIONS, timeout=6)
            return
        record = self.lab.exercise_record(self.exercise)
        if record is None or not record.passed:
            await self._show_notes(
                "solution", f"*{LOCKED}* Press **c** to run them; **h** gives a hint."
            )
            self.notify(LOCKED, timeout=4)
            return
        self._read_solution()

    @work(thread=True, exclusive=True, group="solution", exit_on_error=False)
    def _read_solution(self) -> None:
        self.post_message(self.SolutionRead(solution_markdown(self.exercise)))
