"""The first screen: the course map of days, lessons and exercises.

The first time gpulab runs (no progress saved yet), a line above the footer
says where the keys are. The map is drawn before anything slow happens: the
lessons are parsed (for their reading progress, objectives and breakage) after
first paint, one at a time, and only then is the machine asked whether it has
a GPU. Exercise states are the app's (`GpulabApp.exercise_states`): the map
watches them, and asks the app (by message) for everything it opens.
"""

from __future__ import annotations

import asyncio
from typing import ClassVar, Literal

from textual import getters, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal
from textual.widgets import Footer, Header, Static

from gpulab.course import Course, CourseError, ExerciseEntry, LessonEntry
from gpulab.tui.lab import ExerciseStates
from gpulab.tui.messages import (
    FindGpu,
    OpenExercise,
    OpenGpu,
    OpenLesson,
    OpenNextExercise,
    OpenSearch,
)
from gpulab.tui.screens.base import LabScreen
from gpulab.tui.widgets.course_tree import CourseTree, MapItem
from gpulab.tui.widgets.item_summary import ItemSummary

__all__ = ["FIRST_RUN", "CourseMapScreen", "MapTarget"]

FIRST_RUN = "New here? ? lists the keys, ctrl+p finds everything, n opens your next exercise."
"""The hint the map shows the first time gpulab runs."""

MapTarget = int | str | tuple[Literal["exercise"], str] | None
"""Where to put the map's cursor: a day (number), a lesson (id), ("exercise", name), or
None for the last lesson read."""


class CourseMapScreen(LabScreen):
    """Days → lessons → exercises, with reading progress; enter opens one."""

    HELP_GROUP = "Course map"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding(
            "n",
            "next_exercise",
            "Next exercise",
            tooltip="Open the next exercise you have not passed yet",
        ),
        Binding("slash", "search", "Search", tooltip="Search the lessons"),
        Binding(
            "g", "gpu", "GPU", tooltip="The GPU: what it is, and its clocks, power and load, live"
        ),
        Binding("q", "app.quit", "Quit"),
    ]

    course_tree = getters.query_one(CourseTree)
    summary = getters.query_one(ItemSummary)

    def __init__(self, course: Course, *, first_run: bool = False) -> None:
        super().__init__()
        self.course = course
        self.first_run = first_run
        """No progress was saved before: a line says where the keys are."""
        self.title = course.title
        self.sub_title = "course map"
        self.target: MapTarget = None
        """Where to put the cursor when the map shows next."""
        self._scanned: set[str] = set()

    def compose(self) -> ComposeResult:
        yield Header()
        with Horizontal(id="map-body"):
            yield CourseTree(self.course, id="course-tree")
            yield ItemSummary(id="item-summary")
        if self.first_run:
            yield Static(FIRST_RUN, id="first-run")
        yield Footer()

    def on_mount(self) -> None:
        tree, progress = self.course_tree, self.lab.progress
        for entry in self.course.entries:
            if entry.problems:
                tree.show_status(entry, "broken")
            elif entry.id not in progress.lessons or not progress.lessons[entry.id].visited:
                tree.show_status(entry, 0.0)
        last = progress.last_lesson
        ids = [e.id for e in self.course.entries]
        tree.select_lesson(last if last in ids else ids[0])
        tree.focus()
        self.watch(self.app, "exercise_states", self._show_states)
        if any(exercise.gpu for exercise in self.course.exercises()):
            self.call_after_refresh(self.post_message, FindGpu())

    def on_screen_resume(self) -> None:
        self.call_after_refresh(self.scan_progress)
        target, self.target = self.target, None
        self.go_to(target)

    def _show_states(self, states: ExerciseStates) -> None:
        """Show each exercise's state in the tree, and in the summary if it shows one."""
        for name, state in states.items():
            self.course_tree.show_exercise(name, state)
        node = self.course_tree.cursor_node
        if node is not None and node.data is not None and not isinstance(node.data, int):
            self._show_summary(node.data)

    def go_to(self, target: MapTarget) -> None:
        """Put the cursor on a day, a lesson, an exercise, or the last lesson read."""
        tree = self.course_tree
        if isinstance(target, int):
            tree.select_day(target)
        elif isinstance(target, tuple):
            tree.select_exercise(target[1])
        elif target is not None:
            tree.select_lesson(target)
        elif self.lab.progress.last_lesson is not None:
            tree.select_lesson(self.lab.progress.last_lesson)

    def on_course_tree_chosen(self, event: CourseTree.Chosen) -> None:
        if isinstance(event.item, LessonEntry):
            self.post_message(OpenLesson(event.item.id))
        else:
            self.post_message(OpenExercise(event.item.name))

    def on_course_tree_highlighted(self, event: CourseTree.Highlighted) -> None:
        self._show_summary(event.item)

    def _show_summary(self, item: MapItem) -> None:
        if isinstance(item, int):
            self.summary.show_day(item, [e for e in self.course.entries if e.day == item])
        elif isinstance(item, ExerciseEntry):
            try:
                title = self.course.entry(item.lesson).title
            except KeyError:
                title = item.lesson
            self.summary.show_exercise(
                item,
                title,
                self.lab.progress.hints.get(item.name, 0),
                self.lab.exercise_states.get(item.name),
            )
        else:
            self._summarise(item)

    def _summarise(self, entry: LessonEntry) -> None:
        """Summarise a lesson; one not parsed yet is summarised without its objectives
        (the scan after first paint fills them in)."""
        exercises = self.course.exercises(entry.id)
        every = self.lab.exercise_states
        states = {
            exercise.name: every[exercise.name] for exercise in exercises if exercise.name in every
        }
        if entry.id not in self._scanned and not entry.problems:
            self.summary.show_lesson(entry, None, (), 0.0, exercises, states)
            return
        try:
            lesson = self.course.lesson(entry.id)
        except CourseError as exc:
            self.course_tree.show_status(entry, "broken")
            self.summary.show_lesson(entry, None, exc.problems, 0.0, exercises, states)
            return
        fraction = self.lab.progress.fraction(entry.id, set(lesson.by_key))
        self.summary.show_lesson(entry, lesson, (), fraction, exercises, states)

    @work(exclusive=True, group="scan-progress")
    async def scan_progress(self) -> None:
        """Parse each lesson in turn (after first paint) to show progress and breakage."""
        tree = self.course_tree
        for entry in self.course.entries:
            await asyncio.sleep(0)
            first = entry.id not in self._scanned
            self._scanned.add(entry.id)
            if entry.problems:
                continue
            try:
                lesson = self.course.lesson(entry.id)
            except CourseError:
                tree.show_status(entry, "broken")
            else:
                tree.show_status(entry, self.lab.progress.fraction(entry.id, set(lesson.by_key)))
            node = tree.cursor_node
            if first and node is not None and node.data is entry:
                self._summarise(entry)

    def action_next_exercise(self) -> None:
        self.post_message(OpenNextExercise())

    def action_search(self) -> None:
        self.post_message(OpenSearch())

    def action_gpu(self) -> None:
        self.post_message(OpenGpu())
