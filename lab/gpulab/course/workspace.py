"""The learner's workspace: their own copy of the exercise notebooks, outside the course.

`gpulab init [DIR]` copies every exercise notebook and its visible checks from
the course (``exercises/<lesson>/``, which stays pristine) into a new folder
laid out the same way, as ``rustlings init`` does, and gpulab remembers it:
the app, ``gpulab check NAME`` from any folder, JupyterLab and the progress all
work on it. The course itself is never written to, so ``git pull``, the book
and the author's checks never meet a learner's answers.

The workspace keeps a small record, ``.gpulab/workspace.json``, of the
pristine version (its SHA-256) that each of its files was copied from. When
the course changes (an upgrade of gpulab, a ``git pull``), `sync` adds the new
exercises, brings files the learner never touched up to date, and reports the
notebooks that changed upstream while the learner was working on them; it
never overwrites the learner's work. `reset` restores one pristine notebook
and keeps the learner's as a backup beside it.

Which workspace is in use: ``$GPULAB_WORKSPACE``, else the one remembered in
the state folder (``workspace`` there, a single path).
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gpulab.environment import WORKSPACE
from gpulab.errors import GpulabError
from gpulab.files import atomic_write
from gpulab.state import state_dir

if TYPE_CHECKING:
    from gpulab.course.catalog import Course
    from gpulab.course.manifest import ExerciseEntry

__all__ = [
    "DEFAULT_NAME",
    "SyncReport",
    "Workspace",
    "WorkspaceError",
    "current_workspace",
    "init_workspace",
    "remember",
    "require_workspace",
]

DEFAULT_NAME = "gpulab-exercises"
"""The folder `gpulab init` makes in the working folder when given none."""

RECORD = Path(".gpulab") / "workspace.json"
FORMAT = 1
_README = """\
# Your gpulab workspace

Your own copies of the course's exercise notebooks, one folder per lesson,
each beside its visible checks (`test_<name>.py`). Write your answers here:
gpulab never overwrites this folder's notebooks.

    gpulab                      the app: lessons, exercises, checks, hints
    gpulab open NAME            the notebook in JupyterLab (--no-browser over SSH)
    gpulab check NAME           run its checks on the saved notebook
    gpulab hint NAME            the next hint
    gpulab list                 where you stand
    gpulab reset NAME           start one exercise again (yours is kept as a backup)

`.gpulab/workspace.json` records which version of each file was copied from
the course, so that a new version of the course can add exercises and tell you
which notebooks changed without touching your work.
"""


class WorkspaceError(GpulabError):
    """No workspace, or one that cannot be made, read or written."""


@dataclass(frozen=True)
class SyncReport:
    """What bringing a workspace up to date with its course did and found."""

    added: tuple[str, ...] = ()  # exercises new to the workspace (their files copied in)
    updated: tuple[str, ...] = ()  # exercises whose files the learner never touched, renewed
    changed: tuple[str, ...] = ()  # exercises whose notebook changed upstream and here too

    @property
    def anything(self) -> bool:
        return bool(self.added or self.updated or self.changed)

    def lines(self) -> list[str]:
        """The report for people, a line per kind of change."""
        out = []
        if self.added:
            out.append(f"new in the course, added to your workspace: {', '.join(self.added)}")
        if self.updated:
            out.append(
                f"updated from the course (you had not changed them): {', '.join(self.updated)}"
            )
        if self.changed:
            out.append(
                f"changed in the course since you started them: {', '.join(self.changed)}"
                " (yours are untouched; `gpulab reset NAME` takes the new version and "
                "keeps yours as a backup)"
            )
        return out


@dataclass(frozen=True)
class Workspace:
    """A learner's workspace folder: ``<root>/<lesson>/<name>.ipynb`` per exercise."""

    root: Path
    files: dict[str, str] = field(default_factory=dict, compare=False, hash=False)
    """Each file's path in the workspace and the SHA-256 of the course's version it came from."""

    @property
    def key(self) -> str:
        """The workspace's name in the progress: its absolute path."""
        return str(self.root)

    def notebook(self, entry: ExerciseEntry) -> Path:
        """Where the learner's notebook of an exercise is."""
        return self.root / entry.lesson / entry.notebook.name

    def owns(self, entry: ExerciseEntry, path: Path) -> bool:
        """Whether `path` is this workspace's notebook of the exercise."""
        try:
            return path.resolve() == self.notebook(entry).resolve()
        except OSError:
            return False

    def sync(self, course: Course) -> SyncReport:
        """Add new exercises, update files the learner never touched, report the rest.

        Nothing the learner changed is overwritten. Raises `WorkspaceError` when
        the workspace cannot be written.
        """
        added: list[str] = []
        updated: list[str] = []
        changed: list[str] = []
        files = dict(self.files)
        for entry in course.exercises():
            new_exercise = False
            for relative, source in _course_files(entry):
                if not source.is_file():
                    continue
                pristine = _sha256(source)
                recorded = files.get(relative)
                if recorded == pristine:
                    continue
                target = self.root / relative
                mine = _sha256(target) if target.is_file() else None
                if recorded is None:
                    if mine is None:
                        _copy(source, target)
                        new_exercise = True
                    files[relative] = pristine
                elif mine in (None, recorded, pristine):  # never touched, or already the new one
                    if mine != pristine:
                        _copy(source, target)
                        _add(updated, entry.name)
                    files[relative] = pristine
                elif relative.endswith(".ipynb"):
                    _add(changed, entry.name)  # kept as it is, and reported every time
            if new_exercise:
                added.append(entry.name)
        if files != self.files:
            _write_record(self.root, files)
            self.files.clear()
            self.files.update(files)
        return SyncReport(tuple(added), tuple(updated), tuple(changed))

    def reset(self, course: Course, entry: ExerciseEntry) -> Path | None:
        """Restore the exercise's pristine notebook (and checks); the backup of the learner's
        notebook, or None when it was pristine already or missing."""
        backup = None
        mine = self.notebook(entry)
        if mine.is_file() and _sha256(mine) != _sha256(entry.notebook):
            stamp = dt.datetime.now().strftime("%Y%m%d-%H%M%S")
            backup = mine.with_name(f"{mine.stem}.backup-{stamp}.ipynb")
            try:
                shutil.copy2(mine, backup)
            except OSError as exc:
                raise WorkspaceError(
                    f"{mine}: could not keep a backup ({exc.strerror or exc}); nothing was reset"
                ) from None
        files = dict(self.files)
        for relative, source in _course_files(entry):
            if source.is_file():
                _copy(source, self.root / relative)
                files[relative] = _sha256(source)
        _write_record(self.root, files)
        self.files.clear()
        self.files.update(files)
        return backup


def open_workspace(root: Path) -> Workspace:
    """The workspace at `root`; `WorkspaceError` if it is not one."""
    root = root.expanduser().resolve()
    record = root / RECORD
    try:
        data = json.loads(record.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise WorkspaceError(
            f"{root} is not a gpulab workspace (it has no {RECORD})\n"
            "    hint: make one with `gpulab init DIR`"
        ) from None
    except (OSError, ValueError) as exc:
        raise WorkspaceError(
            f"{record}: cannot be read ({exc})\n    hint: move the folder "
            "aside and make a new workspace with `gpulab init DIR`"
        ) from None
    files = data.get("files") if isinstance(data, dict) else None
    if not isinstance(files, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in files.items()
    ):
        raise WorkspaceError(f"{record}: not a gpulab workspace record (no 'files' table)")
    return Workspace(root, dict(files))


def init_workspace(course: Course, folder: Path | None = None) -> tuple[Workspace, bool]:
    """Make a workspace at `folder` (default: ./gpulab-exercises) and remember it.

    An existing workspace is taken into use again (and brought up to date); any
    other existing folder that is not empty is refused, so nothing is ever
    overwritten. Returns the workspace and whether it was made now.
    """
    root = (folder or Path.cwd() / DEFAULT_NAME).expanduser().resolve()
    if (root / RECORD).is_file():
        workspace = open_workspace(root)
        remember(workspace)
        return workspace, False
    if root.exists() and not root.is_dir():
        raise WorkspaceError(f"{root} is a file: choose a new folder for the workspace")
    if root.is_dir() and any(root.iterdir()):
        raise WorkspaceError(
            f"{root} already exists and is not empty: gpulab will not write "
            "into it\n    hint: give a new folder, e.g. `gpulab init "
            f"{root.name}-2`"
        )
    try:
        root.mkdir(parents=True, exist_ok=True)
        (root / "README.md").write_text(_README, encoding="utf-8")
    except OSError as exc:
        raise WorkspaceError(f"cannot make the workspace {root}: {exc.strerror or exc}") from None
    workspace = Workspace(root, {})
    workspace.sync(course)
    if not (root / RECORD).is_file():  # a course without exercises still makes a workspace
        _write_record(root, {})
    remember(workspace)
    return workspace, True


def remembered_file() -> Path:
    """The file in the state folder that names the workspace in use."""
    return state_dir() / "workspace"


def remember(workspace: Workspace) -> None:
    """Make `workspace` the one gpulab uses from now on."""
    path = remembered_file()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(path, f"{workspace.root}\n", mode=0o644)
    except OSError as exc:
        raise WorkspaceError(
            f"could not remember the workspace in {path}: {exc.strerror or exc}"
        ) from None


def current_workspace() -> Workspace | None:
    """The workspace in use (``$GPULAB_WORKSPACE``, else the remembered one), or None.

    Raises `WorkspaceError` when the one named is gone or broken, so that the
    learner hears why, instead of silently getting none.
    """
    named = WORKSPACE.get()
    if not named:
        try:
            named = remembered_file().read_text(encoding="utf-8").strip()
        except OSError:
            return None
        if not named:
            return None
    return open_workspace(Path(named))


def require_workspace() -> Workspace:
    """The workspace in use; `WorkspaceError` with the way to make one when there is none."""
    workspace = current_workspace()
    if workspace is None:
        raise WorkspaceError(
            "you have no workspace yet: `gpulab init` copies the exercises "
            f"into ./{DEFAULT_NAME} (or `gpulab init DIR`), then try again"
        )
    return workspace


def _course_files(entry: ExerciseEntry) -> list[tuple[str, Path]]:
    """An exercise's files in the course, as (path in the workspace, path in the course)."""
    checks = entry.notebook.parent / f"test_{entry.name.replace('-', '_')}.py"
    return [(f"{entry.lesson}/{path.name}", path) for path in (entry.notebook, checks)]


def _add(names: list[str], name: str) -> None:
    if name not in names:
        names.append(name)


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _copy(source: Path, target: Path) -> None:
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(target, source.read_bytes(), mode=0o644)
    except OSError as exc:
        raise WorkspaceError(f"cannot write {target}: {exc.strerror or exc}") from None


def _write_record(root: Path, files: dict[str, str]) -> None:
    data: dict[str, Any] = {"format": FORMAT, "files": dict(sorted(files.items()))}
    target = root / RECORD
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(target, json.dumps(data, indent=1) + "\n", mode=0o644)
    except OSError as exc:
        raise WorkspaceError(f"cannot write {target}: {exc.strerror or exc}") from None
