"""The first screen: the course map of days, lessons and exercises.

The first time gpulab runs (no progress saved yet), a line above the footer
says where the keys are. The map is drawn before anything slow happens: the
lessons are parsed (for their reading progress, objectives and breakage) after
first paint, one at a time, and only then is the machine asked whether it has
a GPU.
"""

from __future__ import annotations

import asyncio
from typing import ClassVar, Literal

from textual import work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal
from textual.widgets import Footer, Header, Static

from gpulab.course import Course, CourseError, ExerciseEntry, LessonEntry
from gpulab.tui.screens.base import LabScreen
from gpulab.tui.state import Keeper
from gpulab.tui.widgets.course_tree import CourseTree
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
        Binding("n", "next_exercise", "Next exercise",
                tooltip="Open the next exercise you have not passed yet"),
        Binding("slash", "search", "Search", tooltip="Search the lessons"),
        Binding("g", "gpu", "GPU", tooltip="The GPU: what it is, and its clocks, power and "
                "load, live"),
        Binding("q", "app.quit", "Quit"),
    ]

    def __init__(self, course: Course, keeper: Keeper) -> None:
        super().__init__()
        self.course = course
        self.keeper = keeper
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
        if self.keeper.first_run:
            yield Static(FIRST_RUN, id="first-run")
        yield Footer()

    def on_mount(self) -> None:
        tree = self.query_one(CourseTree)
        for entry in self.course.entries:
            if entry.problems:
                tree.show_status(entry, "broken")
            elif entry.id not in self.keeper.progress.lessons or not (
                self.keeper.progress.lessons[entry.id].visited
            ):
                tree.show_status(entry, 0.0)
        last = self.keeper.progress.last_lesson
        ids = [e.id for e in self.course.entries]
        tree.select_lesson(last if last in ids else ids[0])
        tree.focus()
        self._label_exercises()
        if any(exercise.gpu for exercise in self.course.exercises()):
            self.call_after_refresh(self.lab.find_gpu)

    def on_screen_resume(self) -> None:
        self.keeper.sync()
        self.exercises_changed()
        self.call_after_refresh(self.scan_progress)
        target, self.target = self.target, None
        self.go_to(target)

    def exercises_changed(self) -> None:
        """Show each exercise's state in the tree, and in the summary if it shows one."""
        self._label_exercises()
        node = self.query_one(CourseTree).cursor_node
        if node is not None and node.data is not None and not isinstance(node.data, int):
            self.on_course_tree_highlighted(CourseTree.Highlighted(node.data))

    def _label_exercises(self) -> None:
        tree = self.query_one(CourseTree)
        for exercise in self.course.exercises():
            tree.show_exercise(exercise.name, self.lab.exercise_state(exercise))

    def go_to(self, target: MapTarget) -> None:
        """Put the cursor on a day, a lesson, an exercise, or the last lesson read."""
        tree = self.query_one(CourseTree)
        if isinstance(target, int):
            tree.select_day(target)
        elif isinstance(target, tuple):
            tree.select_exercise(target[1])
        elif target is not None:
            tree.select_lesson(target)
        elif self.keeper.progress.last_lesson is not None:
            tree.select_lesson(self.keeper.progress.last_lesson)

    def on_course_tree_chosen(self, event: CourseTree.Chosen) -> None:
        if isinstance(event.item, LessonEntry):
            self.lab.open_lesson(event.item.id)
        else:
            self.lab.open_exercise(event.item.name)

    def on_course_tree_highlighted(self, event: CourseTree.Highlighted) -> None:
        summary = self.query_one(ItemSummary)
        item = event.item
        if isinstance(item, int):
            summary.show_day(item, [e for e in self.course.entries if e.day == item])
        elif isinstance(item, ExerciseEntry):
            try:
                title = self.course.entry(item.lesson).title
            except KeyError:
                title = item.lesson
            summary.show_exercise(item, title, self.keeper.progress.hints.get(item.name, 0),
                                  self.lab.exercise_state(item))
        else:
            self._summarise(item)

    def _summarise(self, entry: LessonEntry) -> None:
        """Summarise a lesson; one not parsed yet is summarised without its objectives
        (the scan after first paint fills them in)."""
        summary = self.query_one(ItemSummary)
        exercises = self.course.exercises(entry.id)
        states = {exercise.name: self.lab.exercise_state(exercise) for exercise in exercises}
        if entry.id not in self._scanned and not entry.problems:
            summary.show_lesson(entry, None, (), 0.0, exercises, states)
            return
        try:
            lesson = self.course.lesson(entry.id)
        except CourseError as exc:
            self.query_one(CourseTree).show_status(entry, "broken")
            summary.show_lesson(entry, None, exc.problems, 0.0, exercises, states)
            return
        fraction = self.keeper.progress.fraction(entry.id, set(lesson.by_key))
        summary.show_lesson(entry, lesson, (), fraction, exercises, states)

    @work(exclusive=True, group="scan-progress")
    async def scan_progress(self) -> None:
        """Parse each lesson in turn (after first paint) to show progress and breakage."""
        tree = self.query_one(CourseTree)
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
                tree.show_status(entry, self.keeper.progress.fraction(entry.id,
                                                                      set(lesson.by_key)))
            node = tree.cursor_node
            if first and node is not None and node.data is entry:
                self._summarise(entry)

    def action_next_exercise(self) -> None:
        self.lab.open_next_exercise()

    def action_search(self) -> None:
        self.lab.open_search(None)

    def action_gpu(self) -> None:
        self.lab.open_gpu()
