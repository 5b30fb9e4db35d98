"""The intake of a class's submissions for a grading run: folders and zips in, private copies out.

`collect(submissions, exercises, work)` finds each learner's notebooks for the
requested exercises, copies each one into ``work/<slug>/<exercise>.ipynb`` and
returns an `Intake`. Grading then works only on these copies. SUBMISSIONS is a
folder, or a bulk zip from a learning platform that is read like a folder:

- ``<learner>/<exercise>.ipynb``, the notebook at most three sub-folders deep;
- ``<learner>.zip`` holding the same;
- Moodle: ``<Full Name>_<id>_assignsubmission_file_/`` (or ``_onlinetext_``),
  and flat ``<Full Name>_<id>_assignsubmission_file_<file>``;
- Canvas: flat ``<name>_<id>_<id>_<file>`` or ``<name>_LATE_<id>_<id>_<file>``;
  ``roofline-2.ipynb`` is a re-submission of roofline and the highest number wins.

Submissions are untrusted. Zips are never extracted wholesale: each member
needed is streamed with its bytes counted against `ZipLimits`, and members
that are links, encrypted, or named outside the zip are refused. Links in a
submissions folder are not followed. Whatever cannot be read becomes a problem
string that names the path; only a SUBMISSIONS path that is unusable as a whole
raises `IntakeError`::

    GpulabError
    └── IntakeError            SUBMISSIONS (or the work folder) cannot be used at all
"""

from __future__ import annotations

import contextlib
import hashlib
import lzma
import os
import re
import shutil
import stat
import struct
import tempfile
import unicodedata
import zipfile
import zlib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

from gpulab.errors import GpulabError
from gpulab.grading.notebook import MAX_BYTES

__all__ = ["Intake", "IntakeError", "LearnerSubmission", "ZipLimits", "collect"]

MIB = 2**20
CHUNK = 64 * 1024          # bytes read at a time, so a cap is passed by less than this
MAX_FOLDERS = 3            # sub-folders a notebook may sit in below the learner's folder or zip
_MOODLE = re.compile(r"(?P<name>.+)_(?P<id>\d+)_assignsubmission_(?:file|onlinetext)_(?P<file>.*)",
                     re.S)
_CANVAS = re.compile(r"(?P<name>.+?)_(?:LATE_)?(?P<id>\d+)_\d+_(?P<file>.+)", re.S)
_RESUBMITTED = re.compile(r"(?P<stem>.+)-(?P<n>\d{1,9})", re.S)
_EXERCISE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
# What reading a hostile zip can raise, besides our own refusals.
_ZIP_ERRORS = (zipfile.BadZipFile, zipfile.LargeZipFile, zlib.error, lzma.LZMAError, EOFError,
               NotImplementedError, RuntimeError, OSError, ValueError, struct.error, KeyError)


class IntakeError(GpulabError):
    """SUBMISSIONS cannot be used at all: missing, not a folder or zip, or not a readable zip."""


@dataclass(frozen=True)
class ZipLimits:
    """How much of a zip the intake reads; a member or zip over a limit is refused with a problem.

    Sizes are counted on the bytes really unpacked, never taken from a zip's
    headers. `max_total_bytes` covers one outermost zip with every zip inside
    it; `max_ratio` applies to members that unpack to more than 1 MiB;
    `max_depth` is how many zips deep a notebook may lie below SUBMISSIONS
    (a learner's zip is 1; SUBMISSIONS itself, even a bulk zip, is 0).
    """

    max_members: int = 2000
    max_member_bytes: int = MAX_BYTES
    max_total_bytes: int = 512 * MIB
    max_ratio: int = 200
    max_depth: int = 2


@dataclass(frozen=True)
class LearnerSubmission:
    """One learner's notebooks, copied into the work folder, and what kept others out."""

    learner: str                  # display name, e.g. "Ada Lovelace" or "ada"
    slug: str                     # [A-Za-z0-9._-] only, unique in the class: feedback/<slug>.html
    notebooks: dict[str, Path]    # exercise -> the private copy, work/<slug>/<exercise>.ipynb
    hashes: dict[str, str]        # exercise -> sha256 hex of the copy's bytes
    problems: dict[str, str]      # exercise -> why it cannot be graded; never also in notebooks
    source: Path                  # the folder or zip it came from (SUBMISSIONS when several)


@dataclass(frozen=True)
class Intake:
    """Every learner found, sorted by slug, and the entries that could not be read at all."""

    learners: tuple[LearnerSubmission, ...]
    problems: tuple[str, ...]     # each "path: what is wrong"


class _Refused(Exception):
    """One entry that will not be read, and why (the path is added by the caller)."""


@dataclass(eq=False)
class _Budget:
    """The bytes unpacked so far from one outermost zip and every zip inside it."""

    where: str
    used: int = 0


@dataclass(eq=False)
class _Archive:
    """An open zip, the budget it draws on, and how many zips deep it lies."""

    zip: zipfile.ZipFile
    budget: _Budget
    depth: int


@dataclass(frozen=True)
class _Entry:
    """A file or folder in a submissions folder or zip, not yet read."""

    parts: tuple[str, ...]            # its path below the folder or zip
    where: str                        # that path as messages show it
    is_dir: bool = False
    refused: str | None = None        # why it must not be read
    path: Path | None = None          # on disk
    info: zipfile.ZipInfo | None = None
    archive: _Archive | None = None   # the zip that holds it


@dataclass
class _Candidate:
    """A notebook offered for one exercise: copied to `staged`, or refused with `problem`."""

    where: str
    rank: int | None                  # Canvas re-submission number; None outside the Canvas rule
    staged: Path | None = None
    sha256: str = ""
    problem: str = ""


@dataclass
class _Learner:
    name: str
    sources: set[str] = field(default_factory=set)
    candidates: dict[str, list[_Candidate]] = field(default_factory=dict)


def collect(submissions: Path, exercises: Sequence[str], work: Path, *,
            limits: ZipLimits = ZipLimits()) -> Intake:
    """Find every learner's notebooks for `exercises` in `submissions` and copy them into `work`."""
    for name in exercises:
        if not _EXERCISE.fullmatch(name):
            raise ValueError(f"exercise name {name!r} cannot name a file safely")
    return _Run(Path(submissions), frozenset(exercises), Path(work), limits).collect()


class _Run:
    """The state of one `collect` call."""

    def __init__(self, root: Path, exercises: frozenset[str], work: Path,
                 limits: ZipLimits) -> None:
        self.root, self.exercises, self.work, self.limits = root, exercises, work, limits
        self.learners: dict[tuple[str, ...], _Learner] = {}
        self.problems: list[str] = []
        self.scratch = work
        self.count = 0

    def collect(self) -> Intake:
        root, shown = self.root, _clean(self.root)
        if not root.exists():
            raise IntakeError(f"{shown}: no such folder or zip file; give the folder or the "
                              ".zip that holds the class's submissions")
        if not (root.is_dir() or (root.is_file() and root.suffix.lower() == ".zip")):
            raise IntakeError(f"{shown}: not a folder or a .zip file; give the folder or the "
                              ".zip that holds the class's submissions")
        if root.is_dir() and self.work.resolve().is_relative_to(root.resolve()):
            raise IntakeError(f"{_clean(self.work)}: the work folder lies inside {shown}; "
                              "choose one outside the submissions")
        try:
            self.work.mkdir(parents=True, exist_ok=True)
            self.scratch = Path(tempfile.mkdtemp(prefix=".intake-", dir=self.work))
        except OSError as exc:
            raise IntakeError(f"{_clean(self.work)}: cannot make the work folder: "
                              f"{_reason(exc)}") from None
        try:
            if root.is_dir():
                try:
                    entries = list(_list_folder(root, self.problems, 1 + MAX_FOLDERS))
                except OSError as exc:
                    raise IntakeError(f"{shown}: cannot read this folder: {_reason(exc)}"
                                      ) from None
                for entry in entries:
                    self._root_entry(entry)
            else:
                bulk = self._open_zip(root, shown)
                if isinstance(bulk, str):
                    raise IntakeError(bulk)
                with bulk:
                    for entry in _list_zip(_Archive(bulk, _Budget(shown), 0), shown):
                        self._root_entry(entry)
            return self._finish()
        finally:
            shutil.rmtree(self.scratch, ignore_errors=True)

    def _open_zip(self, path: Path, where: str) -> zipfile.ZipFile | str:
        """An open zip, or why it cannot be used, said as a problem."""
        try:
            opened = zipfile.ZipFile(path)
        except _ZIP_ERRORS as exc:
            return f"{where}: not a readable zip file: {_reason(exc)}"
        if len(opened.infolist()) > self.limits.max_members:
            opened.close()
            return (f"{where}: {len(opened.infolist())} entries, more than the "
                    f"{self.limits.max_members} a zip may hold")
        return opened

    def _learner(self, key: tuple[str, ...], name: str, source: str) -> _Learner:
        learner = self.learners.setdefault(key, _Learner(_clean(name)))
        learner.sources.add(source)
        return learner

    def _root_entry(self, entry: _Entry) -> None:
        """Sort one entry of SUBMISSIONS to its learner."""
        if len(entry.parts) <= 1 and entry.refused:
            self.problems.append(f"{entry.where}: {entry.refused}")
            return
        name, top = entry.parts[0], _clean(self.root)
        if len(entry.parts) == 1 and not entry.is_dir:
            flat = _MOODLE.fullmatch(name) or _CANVAS.fullmatch(name)
            if flat and flat["file"]:
                kind = "moodle" if flat.re is _MOODLE else "canvas"
                learner = self._learner((kind, flat["name"], flat["id"]), flat["name"], top)
                self._learner_entry(learner, (flat["file"],), entry, canvas=kind == "canvas")
            elif name.lower().endswith(".zip"):
                learner = self._learner(("plain", name[:-4]), name[:-4], entry.where)
                self._learner_entry(learner, entry.parts, entry)
            elif name.lower().endswith(".ipynb"):
                self.problems.append(f"{entry.where}: not inside a learner's folder or zip; "
                                     "put it in a folder named for the learner")
            return
        folder = _MOODLE.fullmatch(name)
        if folder and not folder["file"]:
            key: tuple[str, ...] = ("moodle", folder["name"], folder["id"])
            learner = self._learner(key, folder["name"], f"{top}/{_clean(name)}")
        else:
            learner = self._learner(("plain", name), name, f"{top}/{_clean(name)}")
        if len(entry.parts) > 1:
            self._learner_entry(learner, entry.parts[1:], entry)

    def _learner_entry(self, learner: _Learner, parts: tuple[str, ...], entry: _Entry, *,
                       canvas: bool = False) -> None:
        """Take one entry of a learner's folder or zip: a notebook, a zip, or nothing."""
        if entry.is_dir:
            return
        name = parts[-1] if parts else ""
        exercise, rank = self._exercise(name, canvas)
        if len(parts) - 1 > MAX_FOLDERS:
            if entry.refused:
                self.problems.append(f"{entry.where}: {entry.refused}")
        elif entry.refused:
            if exercise is None:
                self.problems.append(f"{entry.where}: {entry.refused}")
            else:
                offer = _Candidate(entry.where, rank, problem=entry.refused)
                learner.candidates.setdefault(exercise, []).append(offer)
        elif name.lower().endswith(".zip"):
            self._read_zip(entry, lambda inner: self._learner_entry(learner, inner.parts, inner))
        elif exercise is not None:
            offer = _Candidate(entry.where, rank)
            staged = self._scratch_file(".ipynb")
            try:
                offer.sha256 = self._unpack(entry, staged, self.limits.max_member_bytes)
                offer.staged = staged
            except _Refused as refusal:
                offer.problem = str(refusal)
            learner.candidates.setdefault(exercise, []).append(offer)

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

    def _read_zip(self, entry: _Entry, visit: Callable[[_Entry], None]) -> None:
        """Open a learner's zip (unpacking it first if it lies in a zip) and visit its entries."""
        depth = (entry.archive.depth if entry.archive else 0) + 1
        if depth > self.limits.max_depth:
            self.problems.append(f"{entry.where}: a zip nested {depth} deep, past the limit "
                                 f"of {self.limits.max_depth}; not opened")
            return
        with contextlib.ExitStack() as stack:
            if entry.archive is None:
                assert entry.path is not None
                path, budget = entry.path, _Budget(entry.where)
            else:
                budget = entry.archive.budget
                path = self._scratch_file(".zip")
                stack.callback(path.unlink, missing_ok=True)
                try:
                    self._unpack(entry, path, self.limits.max_total_bytes - budget.used)
                except _Refused as refusal:
                    self.problems.append(f"{entry.where}: {refusal}")
                    return
            opened = self._open_zip(path, entry.where)
            if isinstance(opened, str):
                self.problems.append(opened)
                return
            archive = _Archive(stack.enter_context(opened), budget, depth)
            for inner in _list_zip(archive, entry.where):
                visit(inner)

    def _scratch_file(self, suffix: str) -> Path:
        self.count += 1
        return self.scratch / f"{self.count}{suffix}"

    def _unpack(self, entry: _Entry, dest: Path, cap: int) -> str:
        """Copy `entry` to `dest`, counting bytes as they come; the sha256 hex of the copy.

        Raises `_Refused` (and leaves no `dest`) once the copy passes `cap`, the
        zip's total, or its ratio: at most `cap` + `CHUNK` bytes are ever read.
        """
        archive, limits = entry.archive, self.limits
        packed = max(entry.info.compress_size, 1) if entry.info else 1
        digest, size = hashlib.sha256(), 0
        try:
            with self._open(entry) as source, dest.open("xb") as out:
                while chunk := source.read(CHUNK):
                    size += len(chunk)
                    if size > cap:
                        raise _Refused(f"larger than {_mib(cap)} when unpacked")
                    if archive is not None:
                        archive.budget.used += len(chunk)
                        if archive.budget.used > limits.max_total_bytes:
                            raise _Refused(f"{archive.budget.where} unpacks to more than "
                                           f"{_mib(limits.max_total_bytes)} in all")
                        if size > MIB and size > limits.max_ratio * packed:
                            raise _Refused(f"unpacks to more than {limits.max_ratio} times "
                                           "its packed size (a zip bomb?)")
                    out.write(chunk)
                    digest.update(chunk)
        except _Refused:
            dest.unlink(missing_ok=True)
            raise
        except _ZIP_ERRORS as exc:
            dest.unlink(missing_ok=True)
            raise _Refused(f"cannot be read: {_reason(exc)}") from None
        return digest.hexdigest()

    def _open(self, entry: _Entry) -> IO[bytes]:
        if entry.archive is not None and entry.info is not None:
            return entry.archive.zip.open(entry.info)
        assert entry.path is not None
        # No link is followed, and a FIFO put where a file was cannot block the run.
        fd = os.open(entry.path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                raise _Refused("not a regular file")
            return os.fdopen(fd, "rb")
        except BaseException:
            os.close(fd)
            raise

    def _finish(self) -> Intake:
        """Settle each exercise of each learner, move the chosen copies into place, name slugs."""
        taken: set[str] = set()
        done: list[LearnerSubmission] = []
        for _, learner in sorted(self.learners.items(), key=lambda kv: (kv[1].name, kv[0])):
            slug = _unique(_slug(learner.name), taken)
            folder = self.work / slug
            notebooks: dict[str, Path] = {}
            hashes: dict[str, str] = {}
            problems: dict[str, str] = {}
            for exercise in sorted(self.exercises):
                offers = _settle(learner.candidates.get(exercise, []))
                target = folder / f"{exercise}.ipynb"
                try:
                    if len(offers) == 1 and offers[0].staged is not None:
                        folder.mkdir(exist_ok=True)
                        os.replace(offers[0].staged, target)
                        notebooks[exercise], hashes[exercise] = target, offers[0].sha256
                        continue
                    if folder.is_dir():
                        target.unlink(missing_ok=True)   # no stale copy from an earlier run
                except OSError as exc:
                    problems[exercise] = f"{_clean(target)}: cannot write it: {_reason(exc)}"
                    continue
                if len(offers) > 1:
                    places = ", ".join(offer.where for offer in offers)
                    problems[exercise] = (f"{len(offers)} notebooks for {exercise}: {places}; "
                                          "the learner should hand in one")
                elif offers:
                    problems[exercise] = f"{offers[0].where}: {offers[0].problem}"
            sources = sorted(learner.sources)
            source = Path(sources[0] if len(sources) == 1 else _clean(self.root))
            done.append(LearnerSubmission(learner.name, slug, notebooks, hashes, problems,
                                          source))
        return Intake(tuple(sorted(done, key=lambda s: s.slug)), tuple(self.problems))


def _settle(offers: list[_Candidate]) -> list[_Candidate]:
    """The offers that stand: of Canvas re-submissions only the highest number counts."""
    numbers = [offer.rank for offer in offers if offer.rank is not None]
    if not numbers:
        return offers
    return [offer for offer in offers if offer.rank is None or offer.rank == max(numbers)]


def _list_folder(root: Path, problems: list[str], levels: int) -> Iterator[_Entry]:
    """The entries below `root`, down to `levels` folders; links are listed refused, not followed.

    An unreadable `root` raises `OSError`; an unreadable folder below it is a problem.
    """

    def walk(folder: str, parts: tuple[str, ...]) -> Iterator[_Entry]:
        try:
            with os.scandir(folder) as listing:
                items = sorted(listing, key=lambda item: item.name)
        except OSError as exc:
            if not parts:
                raise
            problems.append(f"{_clean(folder)}: cannot read this folder: {_reason(exc)}")
            return
        for item in items:
            here, where = (*parts, item.name), _clean(item.path)
            if _ignored(item.name):
                continue
            try:
                if item.is_symlink():
                    yield _Entry(here, where, refused="a symbolic link, not followed")
                elif item.is_dir(follow_symlinks=False):
                    yield _Entry(here, where, is_dir=True)
                    if len(here) <= levels:
                        yield from walk(item.path, here)
                elif item.is_file(follow_symlinks=False):
                    yield _Entry(here, where, path=Path(item.path))
                else:
                    yield _Entry(here, where, refused="not a regular file")
            except OSError as exc:
                yield _Entry(here, where, refused=f"cannot be read: {_reason(exc)}")

    return walk(os.fspath(root), ())


def _list_zip(archive: _Archive, where: str) -> Iterator[_Entry]:
    """The members of a zip; those that must not be read are listed with the reason."""
    for info in archive.zip.infolist():
        name = info.filename
        parts = tuple(part for part in re.split(r"[/\\]", name) if part not in ("", "."))
        shown = f"{where}/{_clean(name)}"
        if name.startswith(("/", "\\")) or re.match(r"[A-Za-z]:", name) or ".." in parts:
            yield _Entry((), shown, refused="a path outside the zip (absolute or with ..), "
                         "not read")
        elif stat.S_ISLNK(info.external_attr >> 16):
            yield _Entry(parts, shown, refused="a symbolic link, not read")
        elif info.flag_bits & 0x1:
            yield _Entry(parts, shown, refused="encrypted; submit it without a password")
        elif parts and not any(_ignored(part) for part in parts):
            yield _Entry(parts, shown, is_dir=info.is_dir(), info=info, archive=archive)


def _ignored(name: str) -> bool:
    """Hidden files and folders (.ipynb_checkpoints, .DS_Store) and macOS zip litter."""
    return name.startswith(".") or name == "__MACOSX"


def _slug(name: str) -> str:
    """A file-name stem for a learner: ASCII letters, digits, '.', '_' and '-', lowercased."""
    text = unicodedata.normalize("NFKD", name).encode("ascii", "ignore").decode("ascii")
    text = re.sub(r"[^A-Za-z0-9._-]", "", re.sub(r"\s+", "-", text.strip()))
    return text.lower().lstrip(".-")[:64] or "learner"


def _unique(slug: str, taken: set[str]) -> str:
    found, number = slug, 1
    while found in taken:
        number += 1
        found = f"{slug}-{number}"
    taken.add(found)
    return found


def _clean(text: str | os.PathLike[str]) -> str:
    """Text safe to show and to write as UTF-8: undecodable bytes and control characters as '�'."""
    text = os.fspath(text)
    try:
        raw = text.encode("utf-8", "surrogateescape")   # a file name's undecodable bytes
    except UnicodeEncodeError:
        raw = text.encode("utf-8", "surrogatepass")
    text = raw.decode("utf-8", "replace")
    return "".join(char if char.isprintable() else "\ufffd" for char in text)


def _mib(size: int) -> str:
    return f"{size / MIB:g} MiB"


def _reason(exc: BaseException) -> str:
    text = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
    return _clean(text or type(exc).__name__)
