"""The worker: runs a learner's cells in a process of its own and answers calls.

The trusted side (`gpulab.grading.checks.learner`) starts ``python -m
gpulab.grading.checks.worker FD``, sends one JSON request per line on stdin and reads
one JSON reply per line from file descriptor FD. The learner's prints go to
this process's stdout, which nobody parses. Requests:

    {"op": "load", "cells": [{"name": "setup 1", "source": "...", "released": true}, ...]}
        -> {"ok": true, "value": {"failed": [{"cell": ..., "type": ..., ...}, ...]}}
    {"op": "call", "name": "memory_limit", "args": [...], "kwargs": {...}}
    {"op": "call", ..., "nvml": "h200"}      # `import pynvml` answers from that recording,
    {"op": "call", ..., "nvml": "h200", "nvml_answers": [...]}   # ... with answers changed
    {"op": "machine", "name": "two-socket", "files": {...}, "links": {...}}
        -> {"ok": true, "value": "/tmp/.../machine-x1y2/"}: the recorded machine's tree,
           built in a folder of this worker's own (`gpulab.grading.checks.machines`)

Replies are ``{"ok": true, "value": ...}`` or ``{"ok": false, "error": {...}}``
with the exception's type, message, the learner's own traceback lines and
``raised``: the names of the built-in exception classes it is an instance of,
from its type's MRO, so the trusted side judges "raises ValueError" by type,
never by text. Only plain JSON crosses (no NaN or infinity): nothing is
pickled either way.

Cells marked ``released`` (the released exercise's setup cells) run as they
are; before the first other cell the worker closes gpulab to the learner's
code: its modules leave ``sys.modules`` and an import hook refuses ``gpulab``
and every submodule, so a probe or a parser of the course cannot stand in for
an answer. The worker's own work (building a machine, a recorded NVML) opens
it for a moment. This is a guard against a shortcut, not a wall: code in the
same process can still read gpulab's files, which is copying, and the checks
judge copied code like any other.
"""

from __future__ import annotations

import builtins
import contextlib
import importlib.abc
import json
import linecache
import os
import sys
import tempfile
import traceback
from collections.abc import Iterator, Sequence
from types import ModuleType
from typing import Any

from gpulab.environment import SPAWNER

__all__ = ["REFUSED", "main"]

_LEARNER_FILE = "<learner>"
REFUSED = (
    "gpulab's own code is not part of your answer: the exercise asks you to read the "
    "machine yourself"
)
# Every built-in exception class, taken before any learner code runs (which may rebind
# builtins): the closed list of names a reply's "raised" may hold.
_BUILTIN_EXCEPTIONS = [
    (value, name)
    for name, value in vars(builtins).items()
    if isinstance(value, type) and issubclass(value, BaseException)
]


class _Guard(importlib.abc.MetaPathFinder):
    """Refuses ``gpulab`` and its submodules to the learner's code once closed."""

    def __init__(self) -> None:
        self.closed = False
        self._hidden: dict[str, ModuleType] = {}

    def find_spec(
        self, fullname: str, path: Sequence[str] | None = None, target: ModuleType | None = None
    ) -> None:
        if self.closed and (fullname == "gpulab" or fullname.startswith("gpulab.")):
            raise ModuleNotFoundError(f"{REFUSED} (import {fullname} is refused)", name=fullname)
        return None

    def close(self) -> None:
        """From now on the learner's code cannot import gpulab, nor find it in sys.modules."""
        self.closed = True
        for name in [n for n in sys.modules if n == "gpulab" or n.startswith("gpulab.")]:
            self._hidden[name] = sys.modules.pop(name)

    @contextlib.contextmanager
    def opened(self) -> Iterator[None]:
        """gpulab importable for the worker's own work (no learner code runs meanwhile)."""
        if not self.closed:
            yield
            return
        self.closed = False
        sys.modules.update(self._hidden)
        try:
            yield
        finally:
            self.close()


def main(argv: list[str] | None = None) -> int:
    _die_with_spawner()
    args = sys.argv[1:] if argv is None else argv
    out = os.fdopen(int(args[0]), "w", encoding="utf-8", buffering=1)
    namespace: dict[str, Any] = {"__name__": "__learner__"}
    scratch = os.getcwd()  # where machines are built, whatever the learner's chdir
    guard = _Guard()
    sys.meta_path.insert(0, guard)
    for line in sys.stdin:
        try:
            request = json.loads(line)
            reply = _handle(request, namespace, guard, scratch)
        except BaseException as exc:  # the worker must answer, whatever the code did
            reply = {"ok": False, "error": _error(exc)}
        out.write(_dumped(reply) + "\n")
        out.flush()
    return 0


def _die_with_spawner() -> None:
    """Outside bubblewrap (whose --die-with-parent does it there), end with the process
    that spawned this worker (`gpulab.grading.sandbox.SPAWNER`): a checks process killed
    for running past its time limit must not leave the learner's endless loop running."""
    parent = os.environ.pop(SPAWNER.name, "")
    if not parent.isdigit() or not sys.platform.startswith("linux"):
        return
    from gpulab.grading.sandbox.jail import die_with

    if not die_with(int(parent)):  # it ended before that took hold
        os._exit(1)


def _dumped(reply: dict[str, Any]) -> str:
    """The reply as one line of plain JSON, or an error saying why the value is not."""
    try:
        return json.dumps(reply, allow_nan=False)
    except ValueError:
        why = (
            "it holds NaN or an infinity, which no check can compare: return a finite "
            "number, or None where there is no value"
        )
    except TypeError as exc:
        why = f"{exc} (return numbers, strings, lists, dicts, True/False or None)"
    return json.dumps(
        {
            "ok": False,
            "error": {
                "type": "NotPlainData",
                "message": f"the result is not plain JSON data: {why}",
                "traceback": [],
                "raised": [],
            },
        }
    )


def _handle(
    request: dict[str, Any], namespace: dict[str, Any], guard: _Guard, scratch: str
) -> dict[str, Any]:
    op = request.get("op")
    if op == "load":
        return {"ok": True, "value": {"failed": _load(request["cells"], namespace, guard)}}
    if op == "call":
        name = request["name"]
        function = namespace.get(name)
        if not callable(function):
            return {
                "ok": False,
                "error": {
                    "type": "NameError",
                    "traceback": [],
                    "raised": ["NameError"],
                    "message": f"no function named {name!r}: did the answer cell define it, "
                    "with that exact name?",
                },
            }
        with _recorded_nvml(
            request.get("nvml"), request.get("nvml_answers") or [], namespace, guard
        ):
            value = function(*request.get("args", []), **request.get("kwargs", {}))
        return {"ok": True, "value": value}
    if op == "machine":
        return {"ok": True, "value": _machine(request, guard, scratch) + "/"}
    return {
        "ok": False,
        "error": {
            "type": "ProtocolError",
            "traceback": [],
            "raised": [],
            "message": f"unknown request {op!r}",
        },
    }


_BUILT: dict[str, tuple[str, list[tuple[Any, ...]]]] = {}
"""The recorded machines built so far, by request: the folder, and what it held then."""


def _machine(request: dict[str, Any], guard: _Guard, scratch: str) -> str:
    """A folder holding the recorded machine the request asks for (with its changes).

    Built once per request and handed out again while it holds exactly what it held when
    built (the learner's code may write into it; then the next request gets a fresh one):
    copying a machine's tree for every call was most of a check's time.
    """
    key = json.dumps([request.get("name"), request.get("files"), request.get("links")])
    built = _BUILT.get(key)
    if built is not None and _contents(built[0]) == built[1]:
        return built[0]
    with guard.opened():
        from pathlib import Path

        from gpulab.grading.checks.machines import materialize

        folder = Path(tempfile.mkdtemp(prefix="machine-", dir=scratch))
        root = str(
            materialize(
                str(request["name"]), folder, files=request.get("files"), links=request.get("links")
            )
        )
    _BUILT[key] = (root, _contents(root))
    return root


def _contents(root: str) -> list[tuple[Any, ...]]:
    """Every entry under `root`: its path, type and permissions, size, time of last change
    and (for a link) target; [] once `root` is gone."""
    seen: list[tuple[Any, ...]] = []
    for folder, dirs, files in os.walk(root):
        for name in sorted(dirs + files):
            path = os.path.join(folder, name)
            try:
                info = os.lstat(path)
                target = os.readlink(path) if os.path.islink(path) else ""
            except OSError:
                return []
            seen.append((path, info.st_mode, info.st_size, info.st_mtime_ns, target))
    return seen


def _load(
    cells: list[dict[str, Any]], namespace: dict[str, Any], guard: _Guard
) -> list[dict[str, Any]]:
    # Each cell on its own, as a notebook runs them: a cell that fails (a SyntaxError,
    # an exception, sys.exit) is reported and the next cells still run, so the parts
    # that do work still earn their points.
    failed = []
    for cell in cells:
        if not cell.get("released") and not guard.closed:
            guard.close()  # the learner's first cell: gpulab is not theirs to use
        filename = f"{_LEARNER_FILE}:{cell['name']}"
        # registered so that a traceback can show the learner's line of code
        linecache.cache[filename] = (
            len(cell["source"]),
            None,
            cell["source"].splitlines(True),
            filename,
        )
        try:
            exec(compile(cell["source"], filename, "exec"), namespace)
        except BaseException as exc:  # whatever the cell did, the others still run
            failed.append({"cell": cell["name"], **_error(exc)})
    if not guard.closed:
        guard.close()  # calls run learner code too
    return failed


@contextlib.contextmanager
def _recorded_nvml(
    recording: object, answers: list[Any], namespace: dict[str, Any], guard: _Guard
) -> Iterator[None]:
    """For one call, ``pynvml`` (imported, or bound in the learner's namespace) answers
    from the recorded NVML session `recording`, changed by `answers`; None leaves the
    real one."""
    if recording is None:
        yield
        return
    with guard.opened():
        from gpulab.grading.checks.machines import pynvml_from
        from gpulab.probes.nvml import pynvml_module

        real = pynvml_module()
        fake = pynvml_from(str(recording), answers)
    # the real module and its nvml* functions, however the learner's cells bound them
    names = {
        id(value): key
        for key, value in vars(real).items()
        if key.startswith("nvml") and callable(value)
    }
    saved = {
        key: value
        for key, value in namespace.items()
        if value is real
        or (
            callable(value)
            and id(value) in names
            and getattr(real, names[id(value)], None) is value
        )
    }
    swapped = {
        key: fake if value is real else getattr(fake, names[id(value)], value)
        for key, value in saved.items()
    }
    sys.modules["pynvml"] = fake
    namespace.update(swapped)
    try:
        yield
    finally:
        sys.modules["pynvml"] = real
        for key, value in saved.items():
            if namespace.get(key) is swapped[key]:
                namespace[key] = value


def _error(exc: BaseException) -> dict[str, Any]:
    """The exception as the learner should see it: only frames of the learner's cells."""
    frames = [
        frame
        for frame in traceback.extract_tb(exc.__traceback__)
        if frame.filename.startswith(_LEARNER_FILE)
    ]
    lines = [
        f"{frame.filename.removeprefix(_LEARNER_FILE + ':')}, line {frame.lineno}: "
        f"{(frame.line or '').strip()}"
        for frame in frames
    ]
    if isinstance(exc, SyntaxError) and exc.filename and exc.filename.startswith(_LEARNER_FILE):
        lines.append(
            f"{exc.filename.removeprefix(_LEARNER_FILE + ':')}, line {exc.lineno}: "
            f"{(exc.text or '').strip()}"
        )
    try:
        message = (
            str(exc)
            if not isinstance(exc, SystemExit)
            else f"the code called sys.exit({exc.code!r}); an answer must return, not exit"
        )
    except Exception:  # a learner's __str__ that fails: the type still says what happened
        message = "(the exception's message could not be shown)"
    # by identity: a learner's class cannot pass for a built-in one by its name or __eq__
    raised = [
        name for cls in type(exc).__mro__ for known, name in _BUILTIN_EXCEPTIONS if cls is known
    ]
    return {
        "type": type(exc).__name__,
        "message": message,
        "traceback": lines[-6:],
        "raised": raised,
    }


if __name__ == "__main__":
    sys.exit(main())
