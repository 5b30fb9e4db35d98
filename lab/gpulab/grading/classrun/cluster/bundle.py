"""The course as one bundle for a cluster's workers: packed by the grader, unpacked by each.

`gpulab grade --cluster` packs what a worker needs of the course (`pack`) into
one tar, the same bytes for the same course on any machine (entries sorted; no
times, owners or modes of the grader's; no compression, so its size bounds what
a worker writes), named by its sha256 (`Bundle.digest`):

- ``lessons/``: the manifest, and ``specs.toml``, which released notebooks and
  checks read through ``GPULAB_COURSE_DIR``;
- ``exercises/``: the released notebooks and their visible checks;
- of ``solutions/``, every file but the solution notebooks: the hidden checks
  and whatever they import or read. Grading never runs a solution, so none
  leaves the grader.

Nothing under a hidden folder, ``__pycache__`` or ``.ipynb_checkpoints``, and no
compiled Python; a link or a special file is refused (the workers get plain
files), and so is a bundle over `MAX_BYTES`, naming its largest files.

The bundle reaches the workers through Dask (`gpulab.grading.classrun.cluster.coordinator`
scatters it once; each worker fetches it with its first job). A worker keeps the
courses it was sent on a `Shelf`: it checks the bytes against the sha256 the job
names, unpacks each bundle once (`unpack`: plain files and folders only, under
the three folders above) into ``<folder>/<sha256>/``, and grades with that
course, whose ``solutions/`` its jobs' sandboxes keep private.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import os
import shutil
import tarfile
import threading
import uuid
from collections import OrderedDict
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gpulab.course.manifest import ExerciseEntry, load_manifest
from gpulab.course.paths import CoursePaths
from gpulab.course.problems import CourseError
from gpulab.errors import GpulabError
from gpulab.grading.classrun.fingerprint import checks_hash

__all__ = ["KEEP", "MAX_BYTES", "MAX_FILES", "Bundle", "BundleError", "Shelf", "pack", "unpack"]

MAX_BYTES = 64 * 2**20  # a bundle's size, as packed and as unpacked
MAX_FILES = 10_000
KEEP = 8  # courses a worker keeps unpacked when none of their jobs runs
PARTS = ("lessons", "exercises", "solutions")
_SKIPPED = ("__pycache__", ".ipynb_checkpoints")
_BLOCK = 512  # a tar header, and the unit file contents are padded to
_DATA_FILTER: dict[str, Any] = {"filter": "data"} if hasattr(tarfile, "data_filter") else {}
"""tarfile's "data" filter (Python 3.11.4 and newer), beside `_check`: nothing that leaves
the folder, no mode bit a plain file should not have."""


class BundleError(GpulabError):
    """A course that cannot be packed for the workers, or a bundle a worker cannot use."""


@dataclass(frozen=True)
class Bundle:
    """A course packed for the workers: the tar's bytes and their sha256 (hex)."""

    data: bytes = field(repr=False)
    digest: str

    @property
    def size(self) -> str:
        """Its size, for people."""
        return f"{len(self.data) / 2**20:.1f} MiB"


def pack(root: Path, *, limit: int = MAX_BYTES) -> Bundle:
    """What a worker needs of the course at `root`, as one deterministic tar."""
    files = _files(root)
    total = sum(_BLOCK + -(-path.stat().st_size // _BLOCK) * _BLOCK for _, path in files)
    if total > limit:
        largest = sorted(files, key=lambda item: -item[1].stat().st_size)[:3]
        raise BundleError(
            f"the course at {root} makes a bundle of {total / 2**20:.1f} MiB for the "
            f"workers, over the {limit / 2**20:g} MiB they take; its largest files: "
            + ", ".join(f"{name} ({path.stat().st_size / 2**20:.1f} MiB)" for name, path in largest)
            + ". Keep data sets and other large files out of lessons/, exercises/ and solutions/"
        )
    if len(files) > MAX_FILES:
        raise BundleError(
            f"the course at {root} has {len(files)} files for the workers, over the "
            f"{MAX_FILES} a bundle holds"
        )
    folders = {str(Path(name).parent) for name, _ in files} | set(PARTS)
    folders |= {str(parent) for name in list(folders) for parent in Path(name).parents}
    folders.discard(".")
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for name, path in sorted([*((f, None) for f in folders), *files], key=lambda i: i[0]):
            info = tarfile.TarInfo(name)
            info.mtime, info.uid, info.gid, info.uname, info.gname = 0, 0, 0, "", ""
            if path is None:
                info.type, info.mode = tarfile.DIRTYPE, 0o755
                tar.addfile(info)
                continue
            data = path.read_bytes()
            info.size, info.mode = len(data), 0o644
            tar.addfile(info, io.BytesIO(data))
    data = buffer.getvalue()
    return Bundle(data, hashlib.sha256(data).hexdigest())


def _files(root: Path) -> list[tuple[str, Path]]:
    """The files of the course a bundle holds: (name in the bundle, path here)."""
    found: list[tuple[str, Path]] = []
    for part in PARTS:
        top = root / part
        if top.is_symlink() or not top.is_dir():
            raise BundleError(
                f"{top}: not a folder; a course checkout has lessons/, exercises/ and solutions/"
            )
        for folder, dirs, names in os.walk(top):
            here = Path(folder)
            for name in [*dirs, *names]:
                path = here / name
                if path.is_symlink() or not (path.is_dir() or path.is_file()):
                    raise BundleError(
                        f"{path}: a link or a special file; the workers get plain files "
                        "and folders only: put the file itself there"
                    )
            dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d not in _SKIPPED)
            for name in sorted(names):
                if name.startswith(".") or name.endswith((".pyc", ".pyo")):
                    continue
                if part == "solutions" and name.endswith(".ipynb"):
                    continue  # a solution: never run in grading, never sent
                found.append(((here / name).relative_to(root).as_posix(), here / name))
    return found


def unpack(data: bytes, folder: Path) -> None:
    """Unpack a bundle's bytes into `folder` (made here; it must not exist): plain files and
    folders only, each under one of the course's three folders, by a relative name."""
    if len(data) > MAX_BYTES:
        raise BundleError(f"the course bundle is over the {MAX_BYTES // 2**20} MiB a worker takes")
    try:
        with tarfile.open(fileobj=io.BytesIO(data), mode="r:") as tar:
            members = tar.getmembers()
            if len(members) > MAX_FILES:
                raise BundleError(f"the course bundle holds over {MAX_FILES} entries")
            for member in members:
                _check(member)
            folder.mkdir(mode=0o755)
            tar.extractall(folder, members=members, **_DATA_FILTER)
    except tarfile.TarError as exc:
        raise BundleError(f"the course bundle is not a tar a worker can unpack: {exc}") from None


def _check(member: tarfile.TarInfo) -> None:
    """Refuse what a bundle never holds: links, devices, absolute or climbing names."""
    name = member.name
    parts = name.split("/")
    if not (member.isfile() or member.isdir()):
        raise BundleError(f"the course bundle holds {name!r}, which is not a plain file or folder")
    if name.startswith("/") or parts[0] not in PARTS or any(p in ("", ".", "..") for p in parts):
        raise BundleError(
            f"the course bundle holds {name!r}: a bundle holds lessons/, exercises/ and "
            "solutions/, by relative names"
        )


@dataclass
class Unpacked:
    """One course a grader sent, unpacked: its root, title, exercises and their checks
    hashes (computed from what was unpacked)."""

    digest: str
    root: Path
    title: str
    entries: dict[str, ExerciseEntry]
    hashes: dict[str, str]
    users: int = 0  # jobs that grade with it now

    @property
    def lessons(self) -> Path:
        return CoursePaths(self.root).lessons


@dataclass
class Shelf:
    """A worker's courses, unpacked into `folder`/<sha256>/ once each; unpacking happens in
    `staging` (a private folder on the same file system) and is moved in whole. Beyond
    `KEEP`, the courses used least lately and not in use are removed."""

    folder: Path
    staging: Path
    courses: OrderedDict[str, Unpacked] = field(default_factory=OrderedDict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    @contextlib.contextmanager
    def course(self, digest: str, data: bytes) -> Iterator[Unpacked]:
        """The course of the bundle `data`, which must be the bytes whose sha256 is
        `digest` (else `BundleError`), unpacked the first time it comes."""
        got = hashlib.sha256(data).hexdigest()
        if got != digest:
            raise BundleError(
                f"the course bundle it came with is not the one the grader named: its "
                f"sha256 is {got[:16]}…, the job names {digest[:16]}… ({len(data)} bytes): "
                "not unpacked, nothing of it used"
            )
        with self.lock:
            course = self.courses.get(digest) or self._unpack(digest, data)
            course.users += 1
            self.courses.move_to_end(digest)
            self._trim()
        try:
            yield course
        finally:
            with self.lock:
                course.users -= 1

    def _unpack(self, digest: str, data: bytes) -> Unpacked:
        target = self.folder / digest
        staged = self.staging / f"unpack-{uuid.uuid4().hex}"
        try:
            unpack(data, staged)
            self.folder.mkdir(parents=True, exist_ok=True)
            shutil.rmtree(target, ignore_errors=True)  # what `_trim` could not remove
            staged.rename(target)
            manifest = load_manifest(CoursePaths(target).manifest)
        except CourseError as exc:
            shutil.rmtree(target, ignore_errors=True)
            raise BundleError(f"the course bundle holds no usable course.toml: {exc}") from None
        finally:
            shutil.rmtree(staged, ignore_errors=True)  # gone already once moved in
        entries = {e.name: e for e in manifest.exercises}
        course = Unpacked(
            digest,
            target,
            manifest.title,
            entries,
            {name: checks_hash(entry) for name, entry in entries.items()},
        )
        self.courses[digest] = course
        return course

    def _trim(self) -> None:
        idle = [d for d, c in self.courses.items() if not c.users]
        for digest in idle[: max(0, len(self.courses) - KEEP)]:
            shutil.rmtree(self.courses.pop(digest).root, ignore_errors=True)
