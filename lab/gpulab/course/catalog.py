"""The course as a whole: manifest, claims and lessons, loaded lazily.

`load_course()` finds the course (``$GPULAB_COURSE_DIR``, the package's own
copy, or the source checkout) and reads the manifest and claims. Lessons are
parsed on first use; a broken lesson raises `CourseError` for itself alone.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator, Sequence
from dataclasses import dataclass
from difflib import get_close_matches
from itertools import groupby
from pathlib import Path
from typing import TYPE_CHECKING

from gpulab.course.claims import Claim, load_claims
from gpulab.course.manifest import ExerciseEntry, LessonEntry, Manifest, load_manifest
from gpulab.course.paths import INSTALLED
from gpulab.course.problems import CourseError, Problem
from gpulab.course.source import read_text
from gpulab.environment import COURSE_DIR, Variable
from gpulab.errors import GpulabError

if TYPE_CHECKING:
    from gpulab.course.specs_model import Specs
    from gpulab.course.tree import Lesson, Node

__all__ = [
    "Course",
    "SearchHit",
    "UnknownExercise",
    "find_course_dir",
    "load_course",
    "shipped_dir",
]


def find_course_dir() -> Path:
    """The `lessons/` folder to read: env override, installed copy, or checkout."""
    return shipped_dir("lessons", COURSE_DIR)


def shipped_dir(name: str, variable: Variable) -> Path:
    """A folder of the course beside the package: `$variable`, the copy a wheel ships
    under gpulab/_course/, or the checkout's own."""
    override = variable.get()
    if override:
        return Path(override).expanduser().resolve()
    installed = INSTALLED / name
    if installed.is_dir():
        return installed
    package = INSTALLED.parent
    return package.parent.parent / name  # lab/gpulab -> the checkout


class UnknownExercise(GpulabError):
    """No exercise of the course has the name asked for."""

    def __init__(self, name: str, known: Sequence[str]) -> None:
        self.name = name
        close = [k for k in known if k.casefold() == name.casefold()] or get_close_matches(
            name, known, n=1
        )
        also = f" (did you mean {close[0]}?)" if close else ""
        super().__init__(
            f"no exercise named {name!r}{also}\n    hint: the exercises are: {', '.join(known)}"
        )


@dataclass(frozen=True)
class SearchHit:
    """A node whose label or notes contain the query."""

    lesson: str
    key: str
    line: int
    title: str
    snippet: str
    in_label: bool


class Course:
    """The manifest, the claims, and the lessons parsed on demand."""

    def __init__(self, manifest: Manifest, claims: dict[str, Claim]) -> None:
        self.manifest = manifest
        self.claims = claims
        self._lessons: dict[str, Lesson] = {}
        self._specs: Specs | None = None

    @property
    def specs(self) -> Specs:
        """specs.toml beside the manifest, read on first use; raises `CourseError`."""
        if self._specs is None:
            from gpulab.course.specs import load_specs

            self._specs = load_specs(self.manifest.path.parent / "specs.toml")
        return self._specs

    @property
    def title(self) -> str:
        return self.manifest.title

    @property
    def entries(self) -> tuple[LessonEntry, ...]:
        return self.manifest.lessons

    def entry(self, lesson_id: str) -> LessonEntry:
        """The manifest entry of a lesson; `KeyError` if there is none."""
        for entry in self.manifest.lessons:
            if entry.id == lesson_id:
                return entry
        raise KeyError(lesson_id)

    def lesson(self, lesson_id: str) -> Lesson:
        """The parsed lesson; raises `CourseError` if it is broken."""
        if lesson_id in self._lessons:
            return self._lessons[lesson_id]
        try:
            entry = self.entry(lesson_id)
        except KeyError:
            known = ", ".join(e.id for e in self.entries)
            raise CourseError.unknown(
                self.manifest.path, f"no lesson {lesson_id!r}", f"known lessons: {known}"
            ) from None
        if entry.problems:
            raise CourseError(entry.problems)
        from gpulab.course.lesson import parse_lesson  # the parser loads on first use

        lesson = parse_lesson(read_text(entry.path), entry.path, entry.id, self.claims)
        self._lessons[lesson_id] = lesson
        return lesson

    def days(self) -> Iterator[tuple[int, list[LessonEntry]]]:
        """Lessons grouped by plan day, in teaching order."""
        for day, group in groupby(self.entries, key=lambda e: e.day):
            yield day, list(group)

    def exercises(self, lesson_id: str | None = None) -> list[ExerciseEntry]:
        """Every exercise, or those of one lesson, in manifest order."""
        return [e for e in self.manifest.exercises if lesson_id in (None, e.lesson)]

    def exercise(self, name: str) -> ExerciseEntry:
        """The exercise called `name`; `UnknownExercise` names the close ones and all."""
        for entry in self.manifest.exercises:
            if entry.name == name:
                return entry
        raise UnknownExercise(name, [e.name for e in self.manifest.exercises])

    def neighbour(self, lesson_id: str, step: int) -> str | None:
        """The id of the lesson `step` places away in teaching order."""
        ids = [e.id for e in self.entries]
        index = ids.index(lesson_id) + step
        return ids[index] if 0 <= index < len(ids) else None

    def lint(self, figures: Collection[str] | None = None) -> list[Problem]:
        """Every problem in the course: manifest, specs, lessons, their agreement,
        unsourced numbers and links that lead nowhere.

        `figures` is the set of figure ids there are (`gpulab.figures.FIGURE_IDS`,
        which the course may not import itself); given, a lesson that places any
        other id is a problem at its marker's line. Not given, figure ids go unchecked.
        """
        from gpulab.course.facts import check_links, check_numbers
        from gpulab.course.lesson import unknown_figures
        from gpulab.course.mentions import (
            check_exercise_mentions,
            listed_exercises,
            unlisted_exercises,
        )
        from gpulab.course.recordings import check_recorded
        from gpulab.course.shape import check_shape

        problems = list(self.manifest.problems)
        specs: Specs | None
        try:
            specs = self.specs
            problems.extend(check_recorded(specs))
        except CourseError as exc:
            problems.extend(exc.problems)
            specs = None
        lesson_ids = [e.id for e in self.entries]
        seen: set[str] = set()
        cited: set[str] = set()
        listed: set[str] = set()
        every_lesson_read = True
        for entry in self.entries:
            if entry.problems:
                problems.extend(entry.problems)
                every_lesson_read = False
                continue
            if entry.id in seen:
                continue
            seen.add(entry.id)
            try:
                lesson = self.lesson(entry.id)
            except CourseError as exc:
                problems.extend(exc.problems)
                every_lesson_read = False
                continue
            cited.update(c for node in lesson.nodes for c in node.claims)
            problems.extend(lesson.problems)
            if figures is not None:
                problems.extend(unknown_figures(lesson, figures))
            problems.extend(check_links(lesson, lesson_ids))
            problems.extend(check_exercise_mentions(lesson, self.manifest.exercises))
            listed |= listed_exercises(lesson)
            problems.extend(check_shape(lesson))
            if specs is not None:
                problems.extend(check_numbers(lesson, self.claims, specs))
            front = lesson.front
            if front.title != entry.title:
                problems.append(
                    Problem(
                        entry.path,
                        front.line + 1,
                        f"title {front.title!r} differs from course.toml's {entry.title!r}",
                        "make them the same",
                    )
                )
            if front.day != entry.day:
                problems.append(
                    Problem(
                        entry.path,
                        front.line + 1,
                        f"day {front.day} differs from course.toml's {entry.day}",
                        "make them the same",
                    )
                )
        if every_lesson_read:  # an exercise listed only by a broken lesson is listed
            problems.extend(unlisted_exercises(self.manifest.path, self.manifest.exercises, listed))
        if every_lesson_read:  # a claim cited only by a broken lesson is not unused
            for claim in self.claims.values():
                if claim.id not in cited and claim.path is not None:
                    problems.append(
                        Problem(
                            claim.path,
                            claim.line,
                            f"claim {claim.id!r} is not cited by any lesson",
                            f"cite it with <!-- claim: {claim.id} --> or remove it",
                        )
                    )
        return problems

    def search(self, query: str, lesson_id: str | None = None) -> list[SearchHit]:
        """Nodes whose label or notes contain `query` (case-insensitive).

        Searches one lesson, or every lesson that parses when `lesson_id` is
        None; label matches come before note matches within a lesson.
        """
        needle = query.strip().casefold()
        if not needle:
            return []
        ids = [lesson_id] if lesson_id else list(dict.fromkeys(e.id for e in self.entries))
        hits: list[SearchHit] = []
        for each in ids:
            try:
                lesson = self.lesson(each)
            except CourseError:
                continue
            in_notes: list[SearchHit] = []
            for node in lesson.nodes:
                if needle in node.text.casefold():
                    hits.append(SearchHit(each, node.key, node.line, node.title, node.text, True))
                    continue
                for note in node.notes:
                    if needle in note.markdown.casefold():
                        snippet = _snippet(note.markdown, needle)
                        in_notes.append(
                            SearchHit(each, node.key, note.line, node.title, snippet, False)
                        )
                        break
            hits.extend(in_notes)
        return hits

    def node(self, lesson_id: str, key: str) -> Node | None:
        """A node by lesson and key, or None when it no longer exists."""
        try:
            return self.lesson(lesson_id).by_key.get(key)
        except CourseError:
            return None


def load_course(lessons_dir: Path | None = None) -> Course:
    """Load the course's manifest and claims; raises `CourseError` if unreadable."""
    folder = lessons_dir or find_course_dir()
    manifest = load_manifest(folder / "course.toml")
    claims = load_claims(folder / "claims")
    return Course(manifest, claims)


def _snippet(text: str, needle: str, width: int = 70) -> str:
    """About `width` characters of `text` around the first `needle`, on one line."""
    flat = " ".join(text.split())
    at = max(flat.casefold().find(needle), 0)
    start = max(0, at - width // 3)
    end = min(len(flat), start + width)
    return ("…" if start else "") + flat[start:end] + ("…" if end < len(flat) else "")
