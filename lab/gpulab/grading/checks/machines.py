"""Recorded machines for the system exercises: small file trees and NVML sessions.

A check that compares a learner's reading with "this machine" passes a
constant wherever the machine is dull (one NUMA node, no cgroup limit, no
driver). So the checks also hand the learner's functions other machines,
kept under ``gpulab/grading/checks/machines/`` (its README says which are real and
which were constructed):

- ``<name>/machine.json`` and ``<name>/tree/``: the files a machine's readers
  look at (``/etc/os-release``, ``/proc/self/...``, ``/sys/...``), as a tree
  under a root folder. Symbolic links (namespace links, ``os-release``) and
  empty folders cannot travel in a wheel, so machine.json lists them, with
  small inline files, and ``materialize`` builds the whole tree in a folder.
  machine.json also holds the answers expected on that machine, which only
  the trusted side (the checks) reads.
- ``nvml/<name>.json``: NVML sessions as `gpulab.probes.nvml.Recorder` writes them;
  `pynvml_from` makes a ``pynvml`` module that answers from one.

The worker (`gpulab.grading.checks.worker`) builds trees and swaps ``pynvml`` on
request, so the learner's own functions read them as they would the real
machine's files. Everything here is public: it ships in the wheel and the
sandboxed worker sees it.
"""

from __future__ import annotations

import functools
import json
import re
import shutil
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

from gpulab.errors import GpulabError

__all__ = [
    "FOLDER",
    "Machine",
    "MachineError",
    "NotRecorded",
    "changed",
    "load_machine",
    "machine_names",
    "materialize",
    "nvml_expected",
    "nvml_names",
    "nvml_recording",
    "pynvml_from",
]

FOLDER = Path(__file__).resolve().parent / "machines"
_NAME = re.compile(r"[a-z0-9][a-z0-9-]*")


class MachineError(GpulabError):
    """A recorded machine or NVML session that is not there, or a bad change to one."""


class NotRecorded(RuntimeError):
    """Learner code asked a recorded NVML session for a call it does not hold."""


@dataclass(frozen=True)
class Machine:
    """One recorded machine: what it is, how to build its tree, and its expected answers."""

    name: str
    kind: str  # "real" or "constructed" (README.md says why)
    about: str  # one line, for messages: "a two-socket server ..."
    expected: dict[str, Any]  # answers by exercise, then by function
    files: dict[str, str]  # small files written beside the tree (dotfiles, empties)
    links: dict[str, str]  # symbolic links: path -> target
    dirs: tuple[str, ...]  # empty folders

    def text(self, path: str) -> str:
        """The text of the machine's file `path` ("/sys/devices/system/cpu/online")."""
        relative = path.lstrip("/")
        if relative in self.files:
            return self.files[relative]
        try:
            return _inside(FOLDER / self.name / "tree", relative).read_text(encoding="utf-8")
        except OSError as exc:
            raise MachineError(f"machine {self.name!r} holds no file {path}") from exc

    def want(self, exercise: str) -> dict[str, Any]:
        """The answers expected of `exercise`'s functions on this machine."""
        found = self.expected.get(exercise)
        if not isinstance(found, dict):
            raise MachineError(f"machine {self.name!r} holds no answers for {exercise!r}")
        return found


def _checked(name: str, what: str) -> str:
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise MachineError(f"not a {what} name: {name!r}")
    return name


def machine_names() -> list[str]:
    """The recorded machines' names, sorted."""
    return sorted(p.parent.name for p in FOLDER.glob("*/machine.json"))


@functools.cache
def load_machine(name: str) -> Machine:
    """The recorded machine `name` (MachineError if there is none)."""
    path = FOLDER / _checked(name, "machine") / "machine.json"
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise MachineError(f"no recorded machine {name!r} ({path}: {exc})") from None
    return Machine(
        name,
        str(data["kind"]),
        str(data["about"]),
        dict(data.get("expected", {})),
        dict(data.get("files", {})),
        dict(data.get("links", {})),
        tuple(data.get("dirs", ())),
    )


def _inside(root: Path, relative: str) -> Path:
    """`relative` under `root`, refusing absolute paths and '..' that would leave it."""
    parts = Path(relative).parts
    if not relative or Path(relative).is_absolute() or ".." in parts:
        raise MachineError(f"not a path inside a machine: {relative!r}")
    return root.joinpath(*parts)


def _remove(path: Path) -> None:
    if path.is_symlink() or path.is_file():
        path.unlink()
    elif path.is_dir():
        shutil.rmtree(path)


def materialize(
    name: str,
    root: Path,
    *,
    files: Mapping[str, str | None] | None = None,
    links: Mapping[str, str | None] | None = None,
) -> Path:
    """Build machine `name`'s tree in the empty or missing folder `root`; return `root`.

    `files` and `links` change it first: a path (relative to the machine's
    "/") maps to a file's new text or a link's new target, or to None to
    remove what is there (a folder with all it holds).
    """
    machine = load_machine(name)
    tree = FOLDER / name / "tree"
    if tree.is_dir():
        shutil.copytree(tree, root, dirs_exist_ok=True)
    root.mkdir(parents=True, exist_ok=True)
    for folder in machine.dirs:
        _inside(root, folder).mkdir(parents=True, exist_ok=True)
    planned: list[tuple[str, str | None, bool]] = [
        *((path, text, False) for path, text in machine.files.items()),
        *((path, target, True) for path, target in machine.links.items()),
        *((path, text, False) for path, text in (files or {}).items()),
        *((path, target, True) for path, target in (links or {}).items()),
    ]
    for relative, value, is_link in planned:
        path = _inside(root, relative)
        _remove(path)
        if value is None:
            continue
        if not isinstance(value, str):
            raise MachineError(f"{relative}: a file's text or a link's target is a string")
        path.parent.mkdir(parents=True, exist_ok=True)
        if is_link:
            path.symlink_to(value)
        else:
            path.write_text(value, encoding="utf-8")
    return root


# ---- NVML sessions -------------------------------------------------------------------------


def nvml_names() -> list[str]:
    """The recorded NVML sessions' names, sorted."""
    return sorted(p.stem for p in (FOLDER / "nvml").glob("*.json"))


@functools.cache
def nvml_recording(name: str) -> dict[str, Any]:
    """The NVML session `name`, as `gpulab.probes.nvml.Replay` reads it."""
    path = FOLDER / "nvml" / f"{_checked(name, 'NVML recording')}.json"
    try:
        data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise MachineError(f"no NVML recording {name!r} ({path}: {exc})") from None
    return data


def nvml_expected(name: str, exercise: str = "env-report") -> dict[str, Any]:
    """What `exercise`'s NVML functions should answer from session `name`
    (``nvml/expected/<exercise>.json``, read only by the trusted side)."""
    path = FOLDER / "nvml" / "expected" / f"{_checked(exercise, 'exercise')}.json"
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise MachineError(f"no NVML answers for {exercise!r} ({path}: {exc})") from None
    found = data.get(_checked(name, "NVML recording"))
    if not isinstance(found, dict):
        raise MachineError(f"nvml/expected/{exercise}.json holds no answers for {name!r}")
    return found


def changed(name: str, answers: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Session `name` with some answers replaced: each of `answers` is a recorded call
    (``{"call": ..., "args": [...], "result": ...}``, or ``"error": {"value": N}`` in
    place of the result) that takes the place of every answer the session holds to the
    same call with the same arguments. A hidden check draws fresh values this way."""
    data = dict(nvml_recording(name))
    keys = set()
    for answer in answers:
        if not (
            isinstance(answer, Mapping)
            and isinstance(answer.get("call"), str)
            and answer["call"].startswith("nvml")
            and isinstance(answer.get("args"), list)
            and ("result" in answer) != ("error" in answer)
        ):
            raise MachineError(f"not an NVML answer: {answer!r:.200}")
        keys.add(json.dumps([answer["call"], answer["args"]], sort_keys=True))
    data["calls"] = [
        *(
            entry
            for entry in data["calls"]
            if json.dumps([entry["call"], entry["args"]], sort_keys=True) not in keys
        ),
        *(dict(answer) for answer in answers),
    ]
    return data


def pynvml_from(name: str, answers: Sequence[Mapping[str, Any]] = ()) -> ModuleType:
    """A ``pynvml`` module that answers every ``nvml*`` call from session `name` (with
    `answers` in place of its own, `changed`).

    Its other names (the NVMLError classes, the constants) are the real
    pynvml's, so ``except pynvml.NVMLError`` works as it does on a GPU
    machine; a call the session does not hold raises NotRecorded, naming it.
    """
    from gpulab.probes.nvml import Replay, ReplayMismatch, pynvml_module

    real = pynvml_module()
    replay = Replay(
        changed(name, answers) if answers else nvml_recording(name),
        f"the recorded NVML session {name!r}",
    )
    module = ModuleType("pynvml", f"pynvml answering from the recorded NVML session {name!r}")
    missing = set(replay.data.get("missing", ()))
    for key, value in vars(real).items():
        if key.startswith("__"):
            continue
        if key.startswith("nvml") and callable(value) and not isinstance(value, type):
            if key not in missing:
                setattr(module, key, _answering(getattr(replay, key), name, ReplayMismatch))
            continue
        setattr(module, key, value)
    return module


def _answering(call: Any, session: str, mismatch: type[Exception]) -> Any:
    """`call` from a Replay, saying in the learner's terms when the session lacks an answer."""

    def answer(*args: Any) -> Any:
        try:
            return call(*args)
        except mismatch as exc:
            first = (
                str(exc)
                .splitlines()[0]
                .replace(f"the recorded NVML session {session!r}", "this recording")
            )
            raise NotRecorded(
                f"the recorded NVML session {session!r} was asked a call it does "
                f"not hold ({first}): it answers the calls the exercise names, "
                "for the GPUs its driver lists"
            ) from None

    answer.__name__ = call.__name__
    return answer
