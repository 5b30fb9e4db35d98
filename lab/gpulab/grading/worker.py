"""The worker: runs a learner's cells in a process of its own and answers calls.

The trusted side (`gpulab.grading.learner`) starts ``python -m
gpulab.grading.worker FD``, sends one JSON request per line on stdin and reads
one JSON reply per line from file descriptor FD. The learner's prints go to
this process's stdout, which nobody parses. Requests:

    {"op": "load", "cells": [{"name": "setup 1", "source": "..."}, ...]}
        -> {"ok": true, "value": {"failed": [{"cell": ..., "type": ..., ...}, ...]}}
    {"op": "call", "name": "memory_limit", "args": [...], "kwargs": {...}}

Replies are ``{"ok": true, "value": ...}`` or ``{"ok": false, "error": {...}}``
with the exception's type, message and the learner's own traceback lines.
Only plain JSON crosses: nothing is pickled either way.
"""

from __future__ import annotations

import json
import linecache
import os
import sys
import traceback
from typing import Any

__all__ = ["main"]

_LEARNER_FILE = "<learner>"


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    out = os.fdopen(int(args[0]), "w", encoding="utf-8", buffering=1)
    namespace: dict[str, Any] = {"__name__": "__learner__"}
    for line in sys.stdin:
        try:
            request = json.loads(line)
            reply = _handle(request, namespace)
        except BaseException as exc:  # the worker must answer, whatever the code did
            reply = {"ok": False, "error": _error(exc)}
        try:
            text = json.dumps(reply, allow_nan=False)
        except (TypeError, ValueError) as exc:
            text = json.dumps({"ok": False, "error": {
                "type": "NotPlainData", "message": f"the result is not plain JSON data: {exc}",
                "traceback": []}})
        out.write(text + "\n")
        out.flush()
    return 0


def _handle(request: dict[str, Any], namespace: dict[str, Any]) -> dict[str, Any]:
    if request.get("op") == "load":
        # Each cell on its own, as a notebook runs them: a cell that fails (a SyntaxError,
        # an exception, sys.exit) is reported and the next cells still run, so the parts
        # that do work still earn their points.
        failed = []
        for cell in request["cells"]:
            filename = f"{_LEARNER_FILE}:{cell['name']}"
            # registered so that a traceback can show the learner's line of code
            linecache.cache[filename] = (len(cell["source"]), None,
                                         cell["source"].splitlines(True), filename)
            try:
                exec(compile(cell["source"], filename, "exec"), namespace)
            except BaseException as exc:  # whatever the cell did, the others still run
                failed.append({"cell": cell["name"], **_error(exc)})
        return {"ok": True, "value": {"failed": failed}}
    if request.get("op") == "call":
        name = request["name"]
        function = namespace.get(name)
        if not callable(function):
            return {"ok": False, "error": {
                "type": "NameError", "traceback": [],
                "message": f"no function named {name!r}: did the answer cell define it, "
                           "with that exact name?"}}
        value = function(*request.get("args", []), **request.get("kwargs", {}))
        return {"ok": True, "value": value}
    return {"ok": False, "error": {"type": "ProtocolError", "traceback": [],
                                   "message": f"unknown request {request.get('op')!r}"}}


def _error(exc: BaseException) -> dict[str, Any]:
    """The exception as the learner should see it: only frames of the learner's cells."""
    frames = [frame for frame in traceback.extract_tb(exc.__traceback__)
              if frame.filename.startswith(_LEARNER_FILE)]
    lines = [f"{frame.filename.removeprefix(_LEARNER_FILE + ':')}, line {frame.lineno}: "
             f"{(frame.line or '').strip()}" for frame in frames]
    if isinstance(exc, SyntaxError) and exc.filename and exc.filename.startswith(_LEARNER_FILE):
        lines.append(f"{exc.filename.removeprefix(_LEARNER_FILE + ':')}, line {exc.lineno}: "
                     f"{(exc.text or '').strip()}")
    message = str(exc) if not isinstance(exc, SystemExit) else \
        f"the code called sys.exit({exc.code!r}); an answer must return, not exit"
    return {"type": type(exc).__name__, "message": message, "traceback": lines[-6:]}


if __name__ == "__main__":
    sys.exit(main())
