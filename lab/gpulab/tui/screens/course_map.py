"""The first screen: the course map of days, lessons and exercises."""

from __future__ import annotations

import asyncio
from typing import ClassVar

from textual import work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal
from textual.widgets import Footer, Header

from gpulab.course import Course, CourseError, ExerciseEntry, LessonEntry
from gpulab.tui.screens.base import LabScreen
from gpulab.tui.state import Keeper
from gpulab.tui.widgets import CourseTree, ItemSummary

__all__ = ["CourseMapScreen"]


class CourseMapScreen(LabScreen):
    """Days → lessons → exercises, with reading progress; enter opens one."""

    HELP_GROUP = "Course map"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("slash", "search", "Search"),
        Binding("g", "gpu", "GPU"),
        Binding("q", "app.quit", "Quit"),
    ]

    def __init__(self, course: Course, keeper: Keeper) -> None:
        super().__init__()
        self.course = course
        self.keeper = keeper
        self.title = course.title
        self.sub_title = "course map"
        self.target: int | str | None = None
        """A day (number) or lesson (id) to put the cursor on when the map shows next."""

    def compose(self) -> ComposeResult:
        yield Header()
        with Horizontal(id="map-body"):
            yield CourseTree(self.course, id="course-tree")
            yield ItemSummary(id="item-summary")
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
            self.lab.find_gpu()

    def on_screen_resume(self) -> None:
        self.keeper.sync()
        self.exercises_changed()
        self.scan_progress()
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

    def go_to(self, target: int | str | None) -> None:
        """Put the cursor on a day (number), a lesson (id), or the last lesson read."""
        tree = self.query_one(CourseTree)
        if isinstance(target, int):
            tree.select_day(target)
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
        summary = self.query_one(ItemSummary)
        exercises = self.course.exercises(entry.id)
        states = {exercise.name: self.lab.exercise_state(exercise) for exercise in exercises}
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
            if entry.problems:
                continue
            try:
                lesson = self.course.lesson(entry.id)
            except CourseError:
                tree.show_status(entry, "broken")
                continue
            tree.show_status(entry, self.keeper.progress.fraction(entry.id, set(lesson.by_key)))

    def action_search(self) -> None:
        self.lab.open_search(None)

    def action_gpu(self) -> None:
        self.lab.open_gpu()
