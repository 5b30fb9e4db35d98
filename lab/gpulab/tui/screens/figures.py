"""The figures: every plot and diagram of the course, by lesson, and the highlighted one
drawn beside the list; enter draws it full-size.

A figure is listed under the first lesson that places it (the others are named
under its title), and one no lesson places under "Not placed in a lesson". A
plot is drawn from the learner's own results of this session where they cover
it, else from gpulab's recording (`SavedResults.figure`), and drawn again when a
result comes in; a diagram shows structure, drawn from gpulab's recording,
specs.toml and the course. The list marks plots ▦ and diagrams ◇. f on a lesson
and the command palette open this screen (`OpenFigures`), at a figure if they
name one.
"""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual import getters
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.reactive import reactive
from textual.widgets import Footer, Header, OptionList, Static
from textual.widgets.option_list import Option

from gpulab.course import Course
from gpulab.figures import FIGURES
from gpulab.figures.diagrams import DIAGRAMS
from gpulab.tui.diagrams import DIAGRAM_BADGE, diagrams_of
from gpulab.tui.figures import FIGURE_BADGE, placements
from gpulab.tui.screens.base import LabScreen
from gpulab.tui.widgets.diagram_view import DiagramView
from gpulab.tui.widgets.figure_view import FigureView

__all__ = ["UNPLACED", "FiguresScreen"]

UNPLACED = "Not placed in a lesson"
"""The heading of the figures that no lesson places."""


class FiguresScreen(LabScreen):
    """Every plot and diagram by lesson; the highlighted one drawn beside the list (enter:
    full-size)."""

    HELP_GROUP = "Figures"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding(
            "escape", "back", "Back", tooltip="Back to where you were (from full-size: to the list)"
        ),
        Binding(
            "enter",
            "full_size",
            "Full size",
            priority=True,
            tooltip="Draw the figure on the whole screen, or go back to the list",
        ),
        Binding("n", "step(1)", "Next figure"),
        Binding("p", "step(-1)", "Previous figure", show=False),
    ]

    full_size: reactive[bool] = reactive(False, init=False)
    """Whether the figure takes the whole screen (the list hidden)."""

    figure_list = getters.query_one("#figure-list", OptionList)
    view = getters.query_one("#figure-view", FigureView)
    diagram_view = getters.query_one("#diagram-view", DiagramView)
    places = getters.query_one("#figure-places", Static)

    def __init__(self, course: Course, figure_id: str | None = None) -> None:
        super().__init__()
        self.course = course
        self.lessons = placements(course)
        """The lessons that place each figure, by figure id."""
        self.order = self._order()
        """The figures in the order listed."""
        self.start = figure_id if figure_id in self.order else self.order[0]
        self.shown = self.start
        """The id of the figure shown."""
        self.title = "Figures"
        self.sub_title = (
            f"{len(FIGURES)} plots drawn from probe data, {len(DIAGRAMS)} diagrams of structure"
        )

    def _order(self) -> list[str]:
        known = [*FIGURES, *DIAGRAMS]
        order = [
            i
            for e in self.course.entries
            for i in known
            if self.lessons.get(i) and self.lessons[i][0] == e.id
        ]
        return order + [i for i in known if i not in order]

    @property
    def figure_id(self) -> str:
        """The id of the figure shown (a plot's or a diagram's)."""
        return self.shown

    def compose(self) -> ComposeResult:
        yield Header()
        with Horizontal(id="figures-body"):
            yield OptionList(*self._options(), id="figure-list")
            with Vertical(id="figure-pane"):
                yield Static(id="figure-places")
                plot = self.start if self.start in FIGURES else next(iter(FIGURES))
                yield FigureView(self.lab.figure(plot), full=True, id="figure-view")
                yield DiagramView(None, full=True, id="diagram-view")
        yield Footer()

    def _options(self) -> list[Option | None]:
        options: list[Option | None] = []
        heading = None
        for figure_id in self.order:
            lessons = self.lessons.get(figure_id, [])
            here = self._lesson_title(lessons[0]) if lessons else UNPLACED
            if here != heading:
                if options:
                    options.append(None)
                options.append(Option(Text(here, style="bold"), disabled=True))
                heading = here
            options.append(Option(self._entry(figure_id), id=figure_id))
        return options

    def _lesson_title(self, lesson_id: str) -> str:
        entry = self.course.entry(lesson_id)
        return f"Day {entry.day} · {entry.title}"

    def _entry(self, figure_id: str) -> Text:
        if figure_id in DIAGRAMS:
            diagram = diagrams_of(self.course).data(figure_id)
            text = Text(f"{DIAGRAM_BADGE} ", style="bold")
            text.append(diagram.title)
            if not diagram.drawable:
                text.append(" (not drawn)", style="dim")
            return text
        data = self.lab.figure(figure_id)
        text = Text(f"{FIGURE_BADGE} ", style="bold")
        text.append(FIGURES[figure_id].title)
        if not data.drawable:
            text.append(" (not drawn)", style="dim")
        elif data.source.startswith("your GPU"):
            text.append(" (your GPU)", style="green")
        return text

    def on_mount(self) -> None:
        self.select(self.start)
        self.figure_list.focus()
        self.watch(self.app, "measured", self._redraw, init=False)

    def select(self, figure_id: str) -> None:
        """Highlight a figure in the list and draw it."""
        if figure_id in self.order:
            self.figure_list.highlighted = self.figure_list.get_option_index(figure_id)
            self._show(figure_id)

    def _show(self, figure_id: str) -> None:
        self.shown = figure_id
        diagram = figure_id in DIAGRAMS
        self.view.display = not diagram
        self.diagram_view.display = diagram
        if diagram:
            self.diagram_view.data = diagrams_of(self.course).data(figure_id)
        else:
            self.view.data = self.lab.figure(figure_id)
        others = self.lessons.get(figure_id, [])
        where = ", ".join(self.course.entry(i).title for i in others)
        self.places.update(Text(f"In the lessons: {where}" if where else UNPLACED, style="dim"))

    def _redraw(self) -> None:
        """The learner's own results changed: list and draw the figures from them."""
        for figure_id in self.order:
            if figure_id in FIGURES:
                self.figure_list.replace_option_prompt(figure_id, self._entry(figure_id))
        self._show(self.figure_id)

    def on_option_list_option_highlighted(self, event: OptionList.OptionHighlighted) -> None:
        if event.option.id is not None:
            self._show(event.option.id)

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        self.select(event.option.id or self.figure_id)  # a click
        self.full_size = True

    def watch_full_size(self, full: bool) -> None:
        self.set_class(full, "-full-size")
        if not full:
            self.figure_list.focus()

    def action_full_size(self) -> None:
        """Draw the figure on the whole screen, or show the list again."""
        self.full_size = not self.full_size

    def action_back(self) -> None:
        if self.full_size:
            self.full_size = False
        else:
            self.app.pop_screen()

    def action_step(self, step: int) -> None:
        """Show the next (or previous) figure in the list."""
        index = self.order.index(self.figure_id) + step
        if 0 <= index < len(self.order):
            self.select(self.order[index])
        else:
            self.notify(f"This is the {'last' if step > 0 else 'first'} figure.", timeout=3)
