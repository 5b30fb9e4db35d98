"""The course map as a tree: days, their lessons, and each lesson's exercises."""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual.binding import Binding, BindingType
from textual.message import Message
from textual.widgets import Tree
from textual.widgets.tree import TreeNode

from gpulab.course import Course, ExerciseEntry, LessonEntry
from gpulab.course.standing import GPU_CHECKS, NO_GPU
from gpulab.tui.text import progress_bar

__all__ = ["CourseTree", "MapItem", "exercise_label"]

MapItem = int | LessonEntry | ExerciseEntry
"""What a map node stands for: a day (its number), a lesson, or an exercise."""

_BAR = 8


def exercise_label(exercise: ExerciseEntry, state: Text | None = None) -> Text:
    """``✎ name  needs GPU · not started``; without a GPU, just the state, which says so:
    ``✎ name  needs an NVIDIA GPU`` or ``✎ name  failing (0/7) · GPU checks need a GPU``."""
    text = Text("✎ ", style="yellow")
    text.append(exercise.name, style="bold")
    text.append("  ")
    state = state or Text("not started", style="dim")
    if state.plain == NO_GPU or state.plain.endswith(GPU_CHECKS):
        text.append_text(state)
        return text
    if exercise.gpu:
        text.append("needs GPU", style="bold yellow")
    else:
        text.append("CPU", style="green")
    text.append(" · ", style="dim")
    text.append_text(state)
    return text


class CourseTree(Tree[MapItem]):
    """Days → lessons → exercises; a lesson shows its reading progress or ✗ broken."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("enter", "select_cursor", "Open"),
    ]

    class Chosen(Message):
        """The learner chose a lesson or an exercise (enter or click)."""

        def __init__(self, item: LessonEntry | ExerciseEntry) -> None:
            super().__init__()
            self.item = item

    class Highlighted(Message):
        """The cursor moved to another day, lesson or exercise."""

        def __init__(self, item: MapItem) -> None:
            super().__init__()
            self.item = item

    def __init__(self, course: Course, *, id: str | None = None) -> None:
        super().__init__(course.title, id=id)
        self.show_root = False
        self.auto_expand = False
        self.guide_depth = 3
        self._lessons: dict[str, TreeNode[MapItem]] = {}
        self._days: dict[int, TreeNode[MapItem]] = {}
        self._status: dict[str, float | str | None] = {}
        self._exercises: dict[str, tuple[ExerciseEntry, TreeNode[MapItem]]] = {}
        for day, entries in course.days():
            lessons = "lesson" if len(entries) == 1 else "lessons"
            label = Text(f"Day {day}", style="bold")
            label.append(f"  {len(entries)} {lessons}", style="dim")
            day_node = self.root.add(label, data=day, expand=True)
            self._days.setdefault(day, day_node)
            for entry in entries:
                exercises = course.exercises(entry.id)
                node = day_node.add(
                    self._lesson_label(entry, None, bool(exercises)),
                    data=entry,
                    expand=True,
                    allow_expand=bool(exercises),
                )
                self._lessons.setdefault(entry.id, node)
                for exercise in exercises:
                    leaf = node.add_leaf(exercise_label(exercise), data=exercise)
                    self._exercises.setdefault(exercise.name, (exercise, leaf))
        self.root.expand()

    def on_tree_node_highlighted(self, event: Tree.NodeHighlighted[MapItem]) -> None:
        event.stop()
        if event.node.data is not None:
            self.post_message(self.Highlighted(event.node.data))

    def on_tree_node_selected(self, event: Tree.NodeSelected[MapItem]) -> None:
        event.stop()
        item = event.node.data
        if isinstance(item, int):
            event.node.toggle()
        elif item is not None:
            self.post_message(self.Chosen(item))

    def show_status(self, entry: LessonEntry, status: float | str | None) -> None:
        """Show a lesson's reading fraction, a reason it is broken, or unknown (None)."""
        node = self._lessons.get(entry.id)
        if node is None or self._status.get(entry.id, "unset") == status:
            return
        self._status[entry.id] = status
        node.set_label(self._lesson_label(entry, status, node.allow_expand))

    def show_exercise(self, name: str, state: Text) -> None:
        """Show where the learner stands on an exercise (see `exercise_state`)."""
        found = self._exercises.get(name)
        if found is not None:
            exercise, node = found
            label = exercise_label(exercise, state)
            if label != node.label:
                node.set_label(label)

    def status(self, lesson_id: str) -> float | str | None:
        """What `show_status` last showed for a lesson."""
        return self._status.get(lesson_id)

    def select_lesson(self, lesson_id: str) -> None:
        """Put the cursor on a lesson (expanding its day)."""
        node = self._lessons.get(lesson_id)
        if node is not None:
            self._move_to(node)

    def select_exercise(self, name: str) -> None:
        """Put the cursor on an exercise (expanding its day and lesson)."""
        found = self._exercises.get(name)
        if found is not None:
            self._move_to(found[1])

    def select_day(self, day: int) -> None:
        """Put the cursor on a day, expanded."""
        node = self._days.get(day)
        if node is not None:
            node.expand()
            self._move_to(node)

    def _move_to(self, node: TreeNode[MapItem]) -> None:
        parent = node.parent
        while parent is not None:
            parent.expand()
            parent = parent.parent
        self._tree_lines  # noqa: B018 - rebuild the lines so `node.line` is current
        self.move_cursor(node)
        self.scroll_to_node(node, animate=False)

    @staticmethod
    def _lesson_label(entry: LessonEntry, status: float | str | None, branch: bool) -> Text:
        text = Text("" if branch else "  ")  # line up with lessons that show ▼
        if isinstance(status, str):
            text.append(f"{'✗ broken':<{_BAR + 5}}", style="bold red")
        elif status is None:
            text.append(" " * (_BAR + 5))
        else:
            text.append_text(progress_bar(status, _BAR))
        text.append("  ")
        text.append(entry.title, style="red" if isinstance(status, str) else "")
        return text
