"""Build the book: check the course, render every page, copy the assets.

The build first reads every lesson, so a broken course fails before a page is
written, with the linter's file:line messages for every broken lesson. Pages
are rendered into a fresh folder beside the output and moved into place at
the end (see `gpulab.book.output`): a failed build leaves the previous book
as it was. The figures the lessons place are drawn from gpulab's H200 recording,
never from the machine that builds the book (`gpulab.book.figures`).
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from jinja2 import Environment, FileSystemLoader, StrictUndefined, TemplateError

from gpulab.book.index import IndexEntry, a_to_z, plain_text, search_json
from gpulab.book.lesson_page import (
    answer_at,
    claim_card,
    mindmap_data,
    mindmap_json,
    node_anchor,
    outline,
)
from gpulab.book.markdown import MarkdownRenderer, pygments_css
from gpulab.book.notebooks import NotebookRenderer
from gpulab.book.output import (
    MARKER,
    BookError,
    check_out,
    put_in_place,
    work_folder,
    write_error,
)
from gpulab.book.toc import contents
from gpulab.course.catalog import shipped_dir
from gpulab.course.problems import CourseError, Problem
from gpulab.environment import BOOK_DIR

if TYPE_CHECKING:
    from gpulab.book.figures import BookFigures
    from gpulab.course.catalog import Course
    from gpulab.course.specs_model import Source, Specs
    from gpulab.course.tree import Lesson

__all__ = ["BookResult", "Progress", "build_book", "check_course", "default_out", "find_book_dir"]

Progress = Callable[[str, int, int], None]
"""Called before each step with what it does, the steps done and the steps in all."""


@dataclass(frozen=True)
class BookResult:
    """A built book: where it is, its pages (relative to it), and how long it took."""

    out: Path
    pages: tuple[str, ...]
    seconds: float

    @property
    def front(self) -> Path:
        return self.out / "index.html"


def find_book_dir() -> Path:
    """The folder that holds the book's templates/ and assets/: installed copy or checkout."""
    return shipped_dir("book", BOOK_DIR)


def default_out() -> Path:
    """Where the book goes by default: book/_build/html in the checkout, or under the
    working folder when gpulab is installed (never inside the installed package)."""
    book = find_book_dir()
    if BOOK_DIR.get() or (Path(__file__).resolve().parent.parent in book.parents):
        return Path.cwd() / "book" / "_build" / "html"
    return book / "_build" / "html"


def check_course(course: Course) -> list[Problem]:
    """What keeps the book from being built: every broken lesson, bad specs, and
    exercises whose notebook is missing, and figures placed that do not exist. Lint
    warnings do not count."""
    from gpulab.course.lesson import unknown_figures
    from gpulab.figures import FIGURE_IDS

    problems: list[Problem] = []
    seen: set[str] = set()
    for entry in course.entries:
        if entry.problems:
            problems.extend(entry.problems)
            continue
        if entry.id in seen:
            continue
        seen.add(entry.id)
        try:
            problems.extend(unknown_figures(course.lesson(entry.id), FIGURE_IDS))
        except CourseError as exc:
            problems.extend(exc.problems)
    try:
        course.specs  # noqa: B018 (read for its errors)
    except CourseError as exc:
        problems.extend(exc.problems)
    for exercise in course.exercises():
        if not exercise.notebook.is_file():
            problems.append(
                Problem(
                    course.manifest.path,
                    exercise.line,
                    f"exercise {exercise.name!r}: its notebook "
                    f"exercises/{exercise.lesson}/{exercise.notebook.name} does not exist",
                    "run `gpulab dev build` to generate it from its solution",
                )
            )
    return problems


def build_book(course: Course, out: Path, *, progress: Progress | None = None) -> BookResult:
    """Build the whole book into `out`; raises `CourseError` naming every problem.

    `out` must be a new or empty folder, or a book built before (it is replaced).
    """
    started = time.perf_counter()
    out = check_out(out)
    problems = check_course(course)
    if problems:
        raise CourseError(problems)
    work = work_folder(out)
    try:
        builder = _Builder(course, work, find_book_dir(), progress)
        pages = builder.build()
        (work / MARKER).write_text(
            "built by `gpulab book`; the whole folder is replaced on the next build\n",
            encoding="utf-8",
        )
        put_in_place(work, out)
    except OSError as exc:
        raise write_error(exc, "cannot build the book") from None
    finally:
        if work.exists():
            shutil.rmtree(work, ignore_errors=True)
    return BookResult(out, tuple(pages), time.perf_counter() - started)


class _Builder:
    """Renders the pages of one book into `out`."""

    def __init__(
        self, course: Course, out: Path, book_dir: Path, progress: Progress | None
    ) -> None:
        templates, assets = book_dir / "templates", book_dir / "assets"
        for folder in (templates, assets):
            if not folder.is_dir():
                raise BookError(
                    f"the book's {folder.name} folder {folder} is missing: "
                    "reinstall gpulab, or set GPULAB_BOOK_DIR to a folder "
                    "that holds templates/ and assets/"
                )
        self.course = course
        self.out = out
        self.assets = assets
        self.progress = progress
        self.env = Environment(
            loader=FileSystemLoader(templates),
            autoescape=True,
            undefined=StrictUndefined,
            trim_blocks=True,
            lstrip_blocks=True,
            keep_trailing_newline=True,
        )
        self.ids = list(dict.fromkeys(e.id for e in course.entries))
        self.entries = {e.id: e for e in reversed(course.entries)}  # the first of a duplicate
        self.lessons: dict[str, Lesson] = {i: course.lesson(i) for i in self.ids}
        self.renderer = MarkdownRenderer(self.ids)
        self.toc = contents(course)
        self.index: list[IndexEntry] = []
        self.pages: list[str] = []
        self.done = 0
        self.total = len(self.ids) + len(course.exercises()) + 4

    # -- the steps --------------------------------------------------------
    def build(self) -> list[str]:
        self.step("assets")
        self.copy_assets()
        from gpulab.book.figures import BookFigures
        from gpulab.probes.recorded import recorded_results

        recorded = recorded_results()
        figures = BookFigures(self.course, recorded)
        for lesson_id in self.ids:
            self.step(f"lesson {lesson_id}")
            self.lesson_page(lesson_id, recorded, figures)
        notebooks = NotebookRenderer(self.ids)
        exercises = self.course.exercises()
        for number, exercise in enumerate(exercises):
            self.step(f"exercise {exercise.name}")
            self.exercise_page(number, notebooks)
        self.step("specs")
        self.specs_page()
        self.step("front page")
        self.front_page()
        self.step("search and index")
        self.search_page()
        return self.pages

    def step(self, what: str) -> None:
        if self.progress is not None:
            self.progress(what, self.done, self.total)
        self.done += 1

    def write(self, page: str, template: str, **context: Any) -> None:
        depth = page.count("/")
        try:
            html = self.env.get_template(template).render(
                root="../" * depth,
                page=page,
                course_title=self.course.title,
                toc=self.toc,
                **context,
            )
        except TemplateError as exc:
            where = getattr(exc, "filename", None) or template
            line = getattr(exc, "lineno", None)
            raise BookError(f"book template {where}{f':{line}' if line else ''}: {exc}") from None
        target = self.out / page
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(html, encoding="utf-8")
        self.pages.append(page)

    def copy_assets(self) -> None:
        shutil.copytree(self.assets, self.out / "assets")
        (self.out / "assets" / "pygments.css").write_text(pygments_css(), encoding="utf-8")

    # -- pages ------------------------------------------------------------
    def lesson_page(self, lesson_id: str, recorded: dict[str, Any], figures: BookFigures) -> None:
        lesson, entry = self.lessons[lesson_id], self.entries[lesson_id]
        renderer = self.renderer
        href = f"lessons/{lesson_id}.html"
        self.index.append(
            IndexEntry(
                lesson.title, href, f"Day {entry.day}", "lesson", " ".join(lesson.front.objectives)
            )
        )
        cited: list[str] = []
        for node in lesson.nodes:
            cited.extend(c for c in node.claims if c not in cited)
            if node.parent is not None:
                answer = answer_at(node)
                asked = node.notes[:answer]  # search must not give an answer away
                text = " ".join(
                    [plain_text(n.markdown) for n in asked]
                    + [
                        figures.caption_text(m.id)
                        for m in node.figures
                        if answer is None or (m.at is not None and m.at <= answer)
                    ]
                )
                self.index.append(
                    IndexEntry(
                        node.title, f"{href}#{node_anchor(node.key)}", lesson.title, "node", text
                    )
                )
        cards = [
            claim_card(self.course.claims[c], recorded) for c in cited if c in self.course.claims
        ]
        before, after = self.course.neighbour(lesson_id, -1), self.course.neighbour(lesson_id, 1)
        self.write(
            href,
            "lesson.html",
            lesson=lesson,
            entry=entry,
            objectives=[renderer.inline(o) for o in lesson.front.objectives],
            mindmap=mindmap_json(mindmap_data(lesson, renderer)),
            options=mindmap_json(lesson.front.markmap),
            outline=outline(lesson, renderer, figures.page()),
            cards=cards,
            exercises=self.course.exercises(lesson_id),
            previous=self._link(before),
            next=self._link(after),
        )

    def _link(self, lesson_id: str | None) -> dict[str, str] | None:
        if lesson_id is None:
            return None
        return {"href": f"{lesson_id}.html", "title": self.entries[lesson_id].title}

    def exercise_page(self, number: int, notebooks: NotebookRenderer) -> None:
        exercises = self.course.exercises()
        exercise = exercises[number]
        body = notebooks.render(exercise, self.course.manifest.path)
        href = f"exercises/{exercise.name}.html"
        lesson = self.entries[exercise.lesson]
        self.index.append(
            IndexEntry(exercise.name, href, lesson.title, "exercise", plain_text(body))
        )
        neighbours = [
            exercises[i] if 0 <= i < len(exercises) else None for i in (number - 1, number + 1)
        ]
        self.write(
            href,
            "exercise.html",
            exercise=exercise,
            lesson=lesson,
            notebook=body,
            hints=[self.renderer.inline(h) for h in exercise.hints],
            previous=neighbours[0],
            next=neighbours[1],
        )

    def specs_page(self) -> None:
        specs = self.course.specs
        links = self._source_links(specs)
        for table in (*specs.gpus.values(), *specs.topics.values()):
            self.index.append(
                IndexEntry(
                    table.title,
                    f"specs.html#{table.kind}-{table.id}",
                    "Specs",
                    table.kind,
                    " ".join(k.replace("_", " ") for k in table.values),
                )
            )
        gpus = list(specs.gpus.values())
        keys = list(dict.fromkeys(key for gpu in gpus for key in gpu.values))
        self.write(
            "specs.html",
            "specs.html",
            specs=specs,
            gpus=gpus,
            keys=keys,
            topics=list(specs.topics.values()),
            source_href=links,
        )

    def _source_links(self, specs: Specs) -> dict[str, str]:
        """Each source's link: its URL, or a copy of its file inside the book."""
        links: dict[str, str] = {}
        sources: list[Source] = [*specs.sources.values()]
        sources += [v.source for v in specs.values()]
        for source in sources:
            if source.url:
                links[source.id] = source.url
            elif source.path and source.id not in links:
                target = self.out / "sources" / source.path
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(specs.path.parent / source.path, target)
                links[source.id] = f"sources/{source.path}"
        return links

    def front_page(self) -> None:
        days = []
        for day, entries in self.course.days():
            lessons = [
                (e, self.lessons[e.id], self.course.exercises(e.id))
                for e in entries
                if e.id in self.lessons
            ]
            days.append((day, lessons))
        objectives = {
            lesson_id: [self.renderer.inline(o) for o in lesson.front.objectives]
            for lesson_id, lesson in self.lessons.items()
        }
        self.write(
            "index.html",
            "front.html",
            days=days,
            objectives=objectives,
            plan_days=self.course.manifest.plan_days,
            first=self._link(self.ids[0]) if self.ids else None,
        )

    def search_page(self) -> None:
        self.write(
            "search.html",
            "search.html",
            index_json=search_json(self.index),
            groups=a_to_z(self.index),
        )
