"""The learner's progress and reading state, kept as one JSON file.

The file lives in the user's XDG state folder (``~/.local/state/gpulab``), or
in ``$GPULAB_STATE_DIR`` when that is set. It records the last lesson, and per
lesson the selected node, the expanded nodes and the nodes visited; per
exercise the hints revealed and, per workspace (see `gpulab.course.workspace`),
the outcome of its last check; and the history of the learner's predictions
for claims, each with what was then measured.

The records are msgspec structs, defined once: msgspec writes them and reads
them back, refusing a field of the wrong type and saying which
(``$.lessons[...].visited``). Writes are atomic (a temporary file renamed over
the old one). A file that cannot be read is moved aside, never overwritten, so
nothing the learner did is lost.

Several programs write the file: the app, ``gpulab check`` and the check at
the end of an exercise notebook. `Progress.adopt_exercises` lets the app take
in check results written by the others since it loaded the file.
"""

from __future__ import annotations

import datetime as dt
import os
import time
from pathlib import Path
from typing import Literal

import msgspec

from gpulab.files import atomic_write
from gpulab.state import state_dir
from gpulab.timestamps import utc_now

__all__ = [
    "ExerciseRecord",
    "LessonState",
    "Measurement",
    "Prediction",
    "Progress",
    "ProgressStore",
]

VERSION = 1
"""The file's format; fields added later (``workspaces``) are optional, so it stays 1.
Exercise results saved before workspaces existed (``exercises``) are kept under the
workspace named "", which is never in use."""

ExerciseStatus = Literal["failing", "passed"]


class LessonState(msgspec.Struct):
    """How the learner left one lesson."""

    selected: str | None = None
    expanded: list[str] | None = None
    visited: list[str] = msgspec.field(default_factory=list)


class Prediction(msgspec.Struct):
    """A learner's guess for a claim before measuring it, and what was measured."""

    claim: str
    predicted: float
    unit: str
    at: str  # ISO time of the prediction
    measured: float | None = None  # in the claim's unit
    verdict: str = ""  # "agrees", "differs", ... once measured
    device: str = ""


class Measurement(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """One figure an exercise asks the learner to measure, as a check recorded it.

    `yours` is what the learner's code measured, `trusted` what the check measured
    itself in the same run (None where either gave no number), `tolerance` the
    relative distance the check allows (None where it judges otherwise), and
    `predicted` what the learner's ``predictions()`` said before measuring (a number
    or a few words; None when it said nothing). A prediction is shown beside the
    measurement, never graded.
    """

    key: str
    label: str
    unit: str
    yours: float | None = None
    trusted: float | None = None
    tolerance: float | None = None
    predicted: float | str | None = None

    @property
    def agrees(self) -> bool | None:
        """Whether `yours` lies within `tolerance` of `trusted`; None where that cannot be said."""
        if self.yours is None or self.trusted is None or self.tolerance is None:
            return None
        return abs(self.yours - self.trusted) <= self.tolerance * abs(self.trusted)

    def cells(self) -> tuple[str, str, str, str, str]:
        """The row every view shows (terminal, notebook panel, feedback page, app): what was
        measured, the learner's prediction, their figure, the check's, and how they compare."""

        def figure(value: float | str | None) -> str:
            if value is None:
                return "—"
            if isinstance(value, str):
                return value
            return f"{value:.3g} {self.unit}".strip()

        if self.yours is None or self.trusted is None:
            compare = "no figure to compare"
        else:
            ratio = f"{self.yours / self.trusted:.2f}× the check's" if self.trusted else ""
            agrees = self.agrees
            word = "" if agrees is None else ("agrees" if agrees else "differs")
            within = f" (±{self.tolerance:.0%})" if self.tolerance is not None else ""
            compare = ", ".join(part for part in (f"{word}{within}" if word else "", ratio) if part)
        return (
            self.label or self.key,
            figure(self.predicted),
            figure(self.yours),
            figure(self.trusted),
            compare,
        )


class ExerciseRecord(msgspec.Struct, omit_defaults=True):
    """How the learner's last check of an exercise went, with the figures it measured."""

    status: ExerciseStatus
    earned: float
    possible: float
    at: str  # ISO time of the check
    measurements: list[Measurement] = msgspec.field(default_factory=list)

    @property
    def passed(self) -> bool:
        return self.status == "passed"


class Progress(msgspec.Struct):
    """Everything gpulab remembers for the learner."""

    last_lesson: str | None = None
    theme: str | None = None
    lessons: dict[str, LessonState] = msgspec.field(default_factory=dict)
    hints: dict[str, int] = msgspec.field(default_factory=dict)
    predictions: list[Prediction] = msgspec.field(default_factory=list)
    workspaces: dict[str, dict[str, ExerciseRecord]] = msgspec.field(default_factory=dict)
    """Per workspace (its path), the last check of each exercise in it."""

    def lesson(self, lesson_id: str) -> LessonState:
        """The state of one lesson, created on first use."""
        return self.lessons.setdefault(lesson_id, LessonState())

    def visit(self, lesson_id: str, key: str) -> None:
        """Record that the learner has looked at a node."""
        visited = self.lesson(lesson_id).visited
        if key not in visited:
            visited.append(key)

    def fraction(self, lesson_id: str, keys: set[str]) -> float:
        """Share of the lesson's nodes the learner has visited (0 to 1)."""
        if not keys:
            return 0.0
        visited = set(self.lessons.get(lesson_id, LessonState()).visited)
        return len(visited & keys) / len(keys)

    def exercises(self, workspace: str) -> dict[str, ExerciseRecord]:
        """The last check of each exercise in a workspace, by exercise name (read only)."""
        return dict(self.workspaces.get(workspace, {}))

    def record_check(
        self,
        name: str,
        *,
        workspace: str,
        passed: bool,
        earned: float,
        possible: float,
        at: str | None = None,
        measurements: list[Measurement] | None = None,
    ) -> ExerciseRecord:
        """Remember the outcome of a check of exercise `name` in a workspace (`at`: now), with
        the figures its checks measured and the learner's predictions of them."""
        record = ExerciseRecord(
            "passed" if passed else "failing",
            float(earned),
            float(possible),
            at or utc_now(),
            list(measurements or []),
        )
        self.workspaces.setdefault(workspace, {})[name] = record
        return record

    def forget_check(self, name: str, *, workspace: str) -> None:
        """Forget an exercise's last check in a workspace (its notebook was reset)."""
        self.workspaces.get(workspace, {}).pop(name, None)

    def adopt_exercises(self, other: Progress) -> list[str]:
        """Take `other`'s exercise records that are newer than ours; the names taken."""
        taken = []
        for workspace, records in other.workspaces.items():
            ours = self.workspaces.setdefault(workspace, {})
            for name, record in records.items():
                mine = ours.get(name)
                if mine is None or _instant(record.at) > _instant(mine.at):
                    ours[name] = record
                    taken.append(name)
        return taken

    def adopt_hints(self, other: Progress) -> bool:
        """Take hints revealed elsewhere (``gpulab hint``); True when any was new."""
        newer = {
            name: count for name, count in other.hints.items() if count > self.hints.get(name, 0)
        }
        self.hints.update(newer)
        return bool(newer)


class ProgressStore:
    """Loads and saves `Progress` at `path` (default: progress.json in `state_dir()`)."""

    def __init__(self, path: Path | None = None) -> None:
        self.path = path or state_dir() / "progress.json"
        self.warning: str | None = None

    def load(self) -> Progress:
        """The saved progress, or a fresh one.

        An unreadable file is renamed to ``progress.json.broken-<time>`` and
        `warning` says so, naming the field that was wrong (``$.lessons[...].visited``);
        the learner starts afresh without losing it.
        """
        try:
            raw = self.path.read_bytes()
        except FileNotFoundError:
            return Progress()
        except OSError as exc:
            self.warning = f"could not read {self.path}: {exc.strerror}; progress starts afresh"
            return Progress()
        try:
            return _decode(raw)
        except msgspec.DecodeError as exc:
            kept = self.path.with_name(f"{self.path.name}.broken-{int(time.time())}")
            os.replace(self.path, kept)
            self.warning = (
                f"{self.path} was unreadable ({exc}); it was kept as {kept.name} "
                "and progress starts afresh"
            )
            return Progress()

    def peek(self) -> Progress | None:
        """The progress as saved now, or None when there is none or it cannot be read.

        Unlike `load`, it never moves a file aside: it is for looking at what
        another program (``gpulab check``) wrote since `load`.
        """
        try:
            return _decode(self.path.read_bytes())
        except (OSError, msgspec.DecodeError):
            return None

    def save(self, progress: Progress) -> None:
        """Write atomically; the old file stays intact if anything fails (a value that
        cannot be encoded raises TypeError before anything is written)."""
        atomic_write(self.path, _encode(progress))


class _SavedProgress(Progress, kw_only=True):
    """The file as saved: a `Progress`, its format's version, and (in files written before
    workspaces existed) the exercise results that were then kept outside any workspace."""

    version: int
    before_workspaces: dict[str, ExerciseRecord] = msgspec.field(
        default_factory=dict, name="exercises"
    )

    def __post_init__(self) -> None:
        if self.version != VERSION:  # msgspec reports it as a ValidationError
            raise ValueError(
                f"not a gpulab progress file of version {VERSION} (its version is {self.version})"
            )


def _decode(raw: bytes) -> Progress:
    """The progress in a file's bytes; msgspec's DecodeError, naming the field, otherwise."""
    saved = msgspec.json.decode(raw, type=_SavedProgress)
    progress = Progress(**{name: getattr(saved, name) for name in Progress.__struct_fields__})
    if saved.before_workspaces:
        progress.workspaces.setdefault("", {}).update(saved.before_workspaces)
    return progress


def _encode(progress: Progress) -> bytes:
    """The file's bytes: the version and every field, keys sorted, one space per level."""
    data = {"version": VERSION, **msgspec.structs.asdict(progress)}
    return msgspec.json.format(msgspec.json.encode(data, order="sorted"), indent=1) + b"\n"


def _instant(at: str) -> dt.datetime:
    """An ISO time as an aware datetime (a time without zone is taken as UTC; junk as the past)."""
    try:
        when = dt.datetime.fromisoformat(at)
    except ValueError:
        return dt.datetime.min.replace(tzinfo=dt.UTC)
    return when if when.tzinfo is not None else when.replace(tzinfo=dt.UTC)
