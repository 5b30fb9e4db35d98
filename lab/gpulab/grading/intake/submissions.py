"""The intake of a class's submissions for a grading run: folders and zips in, private copies out.

`collect(submissions, exercises, work)` finds each learner's notebooks for the
requested exercises, copies each one into ``work/<slug>/<exercise>.ipynb`` and
returns an `Intake`. Grading then works only on these copies: every notebook
path it returns (`LearnerSubmission.notebooks`) lies in `work`, never in
SUBMISSIONS or a zip; `source` only says where a learner was found.
SUBMISSIONS is a folder, or a bulk zip from a learning platform that is read
like a folder:

- ``<learner>/<exercise>.ipynb``, the notebook at most three sub-folders deep;
- ``<learner>.zip`` holding the same;
- Moodle: ``<Full Name>_<id>_assignsubmission_file_/`` (or ``_onlinetext_``),
  and flat ``<Full Name>_<id>_assignsubmission_file_<file>``;
- Canvas: flat ``<name>_<id>_<id>_<file>`` or ``<name>_LATE_<id>_<id>_<file>``;
  ``roofline-2.ipynb`` is a re-submission of roofline and the highest number wins.

A learner is a folder or zip name, or a platform's name and id: their
identity. A learner the gradebook already holds (`held`) keeps the slug it
gave them; a newcomer's slug comes from their name alone, and newcomers whose
names give one slug, or a slug another learner holds, are told apart by a hash
of their own name and reported (`gpulab.grading.intake.names`). A slug never moves.

Submissions are untrusted, and are read only through `gpulab.grading.intake.entries`.
Zips are never extracted wholesale: a zip's end records, and the directory
headers really there, are counted before its list of members is read
(`gpulab.grading.intake.zipread`); each member needed is streamed with its bytes
counted against `ZipLimits`; members that are links, encrypted, or named
outside the zip are refused; and one learner's hand-in opens at most
`ZipLimits.max_zips` zips, nested no deeper than `ZipLimits.max_depth`, each
refused before it is unpacked. Links in a submissions folder are not followed.
Whatever is passed over that could have been a submission (a link, a FIFO, a
folder or notebook too deep, a file named like a notebook that is not one)
becomes a problem line that names the path; only a SUBMISSIONS path that is
unusable as a whole raises `IntakeError`. One learner's hand-in gives at most
`MAX_PROBLEMS` such lines, and one more that counts the rest
(`gpulab.grading.intake.handin`); a learner's name is shown at most `MAX_NAME`
characters long, a line `gpulab.grading.intake.names.MAX_TEXT`. Hidden files and
folders (.ipynb_checkpoints) and macOS litter are passed over without a word. ::

    GpulabError
    └── IntakeError            SUBMISSIONS (or the work folder) cannot be used at all
"""

from __future__ import annotations

import contextlib
import re
import shutil
import tempfile
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from gpulab.errors import GpulabError
from gpulab.grading.intake.entries import (
    MAX_FOLDERS,
    Archive,
    Budget,
    Entry,
    Refused,
    list_folder,
    list_zip,
    open_checked,
    unpack,
)
from gpulab.grading.intake.handin import Candidate, HandIn
from gpulab.grading.intake.names import (
    MAX_NAME,
    Holder,
    Key,
    clean,
    flat,
    identity,
    looks_like,
    reason,
    settle_slugs,
    slug,
)
from gpulab.grading.intake.zipread import ZipLimits

__all__ = ["Intake", "IntakeError", "LearnerSubmission", "collect"]


_RESUBMITTED = re.compile(r"(?P<stem>.+)-(?P<n>\d{1,9})", re.S)
_EXERCISE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")


class IntakeError(GpulabError):
    """SUBMISSIONS cannot be used at all: missing, not a folder or zip, or not a readable zip."""


@dataclass(frozen=True)
class LearnerSubmission:
    """One learner's notebooks, copied into the work folder, and what kept others out."""

    learner: str  # display name, e.g. "Ada Lovelace" or "ada"
    slug: str  # [a-z0-9._-] only, unique in the class: feedback/<slug>.html
    notebooks: dict[str, Path]  # exercise -> the private copy, work/<slug>/<exercise>.ipynb:
    # the only file of the learner's a grading job should read
    hashes: dict[str, str]  # exercise -> sha256 hex of the copy's bytes
    problems: dict[str, str]  # exercise -> why it cannot be graded; never also in notebooks
    source: Path  # where it came from, to show (SUBMISSIONS when several); a
    # path inside a zip names no file, and none is opened again
    identity: str = ""  # who the learner is, as the gradebook keeps it with the slug


@dataclass(frozen=True)
class Intake:
    """Every learner found, sorted by slug, and what was passed over or could not be read."""

    learners: tuple[LearnerSubmission, ...]
    problems: tuple[str, ...]  # each "path: what is wrong", printable text


def collect(
    submissions: Path,
    exercises: Sequence[str],
    work: Path,
    *,
    limits: ZipLimits | None = None,
    held: Iterable[Holder] = (),
) -> Intake:
    """Find every learner's notebooks for `exercises` in `submissions` and copy them into `work`.

    `held` are the slugs the gradebook has given (`Gradebook.holders`): those
    learners keep theirs, and no newcomer gets one.
    """
    for name in exercises:
        if not _EXERCISE.fullmatch(name):
            raise ValueError(f"exercise name {name!r} cannot name a file safely")
    return _Run(
        Path(submissions), frozenset(exercises), Path(work), limits or ZipLimits(), tuple(held)
    ).collect()


class _Run:
    """The state of one `collect` call."""

    def __init__(
        self,
        root: Path,
        exercises: frozenset[str],
        work: Path,
        limits: ZipLimits,
        held: tuple[Holder, ...],
    ) -> None:
        self.root, self.exercises, self.work, self.limits = root, exercises, work, limits
        self.held = held
        self.learners: dict[Key, HandIn] = {}
        self.problems: list[str] = []
        self.scratch = work
        self.count = 0

    def collect(self) -> Intake:
        root, shown = self.root, clean(self.root)
        if not root.exists():
            raise IntakeError(
                f"{shown}: no such folder or zip file; give the folder or the "
                ".zip that holds the class's submissions"
            )
        if not (root.is_dir() or (root.is_file() and root.suffix.lower() == ".zip")):
            raise IntakeError(
                f"{shown}: not a folder or a .zip file; give the folder or the "
                ".zip that holds the class's submissions"
            )
        if root.is_dir() and self.work.resolve().is_relative_to(root.resolve()):
            raise IntakeError(
                f"{clean(self.work)}: the work folder lies inside {shown}; "
                "choose one outside the submissions"
            )
        try:
            self.work.mkdir(parents=True, exist_ok=True)
            self.scratch = Path(tempfile.mkdtemp(prefix=".intake-", dir=self.work))
        except OSError as exc:
            raise IntakeError(
                f"{clean(self.work)}: cannot make the work folder: {reason(exc)}"
            ) from None
        try:
            if root.is_dir():
                try:
                    entries = list(list_folder(root, self.problems))
                except OSError as exc:
                    raise IntakeError(f"{shown}: cannot read this folder: {reason(exc)}") from None
                for entry in entries:
                    self._root_entry(entry)
            else:
                bulk = open_checked(root, shown, self.limits)
                if isinstance(bulk, str):
                    raise IntakeError(bulk)
                with bulk:
                    for entry in list_zip(Archive(bulk, Budget(shown), 0), shown):
                        self._root_entry(entry)
            return self._finish()
        finally:
            shutil.rmtree(self.scratch, ignore_errors=True)

    def _learner(self, key: Key, source: str) -> HandIn:
        """The learner of `key`, ("plain", name) or (platform, name, id), found in `source`."""
        if key not in self.learners:
            self.learners[key] = HandIn(clean(key[1], MAX_NAME), slug(clean(key[1]), *key[2:]))
        learner = self.learners[key]
        learner.sources.add(source)
        return learner

    def _root_entry(self, entry: Entry) -> None:
        """Sort one entry of SUBMISSIONS to its learner."""
        if len(entry.parts) <= 1 and entry.refused:
            self.problems.append(f"{entry.where}: {entry.refused}")
            return
        name, top = entry.parts[0], clean(self.root)
        parsed = flat(name)
        if len(entry.parts) == 1 and not entry.is_dir:
            if parsed and parsed[3]:
                learner = self._learner(parsed[:3], top)
                self._learner_entry(learner, (parsed[3],), entry, canvas=parsed[0] == "canvas")
            elif name.lower().endswith(".zip"):
                learner = self._learner(("plain", name[:-4]), entry.where)
                self._learner_entry(learner, entry.parts, entry)
            elif name.lower().endswith(".ipynb"):
                self.problems.append(
                    f"{entry.where}: not inside a learner's folder or zip; "
                    "put it in a folder named for the learner"
                )
            return
        if parsed and parsed[0] == "moodle" and not parsed[3]:
            learner = self._learner(parsed[:3], f"{top}/{clean(name)}")
        else:
            learner = self._learner(("plain", name), f"{top}/{clean(name)}")
        if len(entry.parts) > 1:
            self._learner_entry(learner, entry.parts[1:], entry)

    def _learner_entry(
        self, learner: HandIn, parts: tuple[str, ...], entry: Entry, *, canvas: bool = False
    ) -> None:
        """Take one entry of a learner's folder or zip: a notebook, a zip, or nothing."""
        name = parts[-1] if parts else ""
        exercise, rank = self._exercise(name, canvas)
        meant = exercise or looks_like(name, self.exercises)
        if entry.is_dir:
            if exercise is not None:
                learner.near.setdefault(exercise, []).append(
                    f"{entry.where}: a folder, not a notebook"
                )
        elif len(parts) - 1 > MAX_FOLDERS:
            if entry.refused:
                learner.problem(f"{entry.where}: {entry.refused}", self.problems)
            elif name.lower().endswith(".zip"):
                learner.problem(
                    f"{entry.where}: more than {MAX_FOLDERS} folders deep in "
                    "the learner's zip; not opened",
                    self.problems,
                )
            elif meant:
                learner.near.setdefault(meant, []).append(
                    f"{entry.where}: more than {MAX_FOLDERS} folders deep in the learner's "
                    "zip; not read"
                )
        elif entry.refused:
            if exercise is None:
                learner.problem(f"{entry.where}: {entry.refused}", self.problems)
            else:
                offer = Candidate(entry.where, rank, problem=entry.refused)
                learner.candidates.setdefault(exercise, []).append(offer)
        elif name.lower().endswith(".zip"):
            self._read_zip(
                learner, entry, lambda inner: self._learner_entry(learner, inner.parts, inner)
            )
        elif exercise is not None:
            offer = Candidate(entry.where, rank)
            staged = self._scratch_file(".ipynb")
            try:
                offer.sha256 = unpack(entry, staged, self.limits.max_member_bytes, self.limits)
                offer.staged = staged
            except Refused as refusal:
                offer.problem = str(refusal)
            learner.candidates.setdefault(exercise, []).append(offer)
        elif meant:
            learner.near.setdefault(meant, []).append(
                f"{entry.where}: named like {meant}.ipynb but not that; not read"
            )

    def _exercise(self, name: str, canvas: bool) -> tuple[str | None, int | None]:
        """The requested exercise a file name is the notebook of, and its Canvas number."""
        if not name.endswith(".ipynb"):
            return None, None
        stem = name[: -len(".ipynb")]
        if stem in self.exercises:
            return stem, 0 if canvas else None
        again = _RESUBMITTED.fullmatch(stem) if canvas else None
        if again and again["stem"] in self.exercises:
            return again["stem"], int(again["n"])
        return None, None

    def _read_zip(self, learner: HandIn, entry: Entry, visit: Callable[[Entry], None]) -> None:
        """Open a learner's zip (unpacking it first if it lies in a zip) and visit its entries.

        A zip too deep, or past the learner's `ZipLimits.max_zips`, is refused
        before a byte of it is unpacked; one whose directory holds too much,
        before its directory is parsed.
        """
        depth = (entry.archive.depth if entry.archive else 0) + 1
        if depth > self.limits.max_depth:
            learner.problem(
                f"{entry.where}: a zip nested {depth} deep, past the limit "
                f"of {self.limits.max_depth}; not opened",
                self.problems,
            )
            return
        if learner.zips >= self.limits.max_zips:
            learner.unopened.append(entry.where)
            return
        learner.zips += 1
        with contextlib.ExitStack() as stack:
            if entry.archive is None:
                assert entry.path is not None
                path, budget = entry.path, Budget(entry.where)
            else:
                budget = entry.archive.budget
                path = self._scratch_file(".zip")
                stack.callback(path.unlink, missing_ok=True)
                try:
                    unpack(entry, path, self.limits.max_total_bytes - budget.used, self.limits)
                except Refused as refusal:
                    learner.problem(f"{entry.where}: {refusal}", self.problems)
                    return
            opened = open_checked(path, entry.where, self.limits)
            if isinstance(opened, str):
                learner.problem(opened, self.problems)
                return
            archive = Archive(stack.enter_context(opened), budget, depth)
            for inner in list_zip(archive, entry.where):
                visit(inner)

    def _scratch_file(self, suffix: str) -> Path:
        self.count += 1
        return self.scratch / f"{self.count}{suffix}"

    def _finish(self) -> Intake:
        """Settle each learner's slug and each of their exercises (`HandIn.settle`), and what
        their hand-ins held past their limits."""
        slugs, clashes = settle_slugs(
            {
                key: (learner.name, learner.slug, sorted(learner.sources))
                for key, learner in self.learners.items()
            },
            self.held,
        )
        self.problems += clashes
        done: list[LearnerSubmission] = []
        for key, learner in self.learners.items():
            settled = learner.settle(self.exercises, self.work / slugs[key], self.problems)
            self.problems += learner.past_limits(self.limits.max_zips)
            sources = sorted(learner.sources)
            done.append(
                LearnerSubmission(
                    learner.name,
                    slugs[key],
                    settled.notebooks,
                    settled.hashes,
                    settled.problems,
                    Path(sources[0] if len(sources) == 1 else clean(self.root)),
                    identity(key),
                )
            )
        return Intake(
            tuple(sorted(done, key=lambda s: s.slug)),
            tuple(clean(problem) for problem in self.problems),
        )
