"""The trusted side's handle on a learner's answers: a worker process behind a pipe.

`Learner` starts `gpulab.grading.checks.worker` in its own session and temporary
folder, loads the released setup cells and the learner's answer cells into
it, and calls the learner's functions with plain JSON arguments. Replies are
capped in size and time; a worker that overruns is killed with its whole
process group; a call's time limit counts the worker's own time, not the
machine's (`gpulab.grading.sandbox.jobtime`). Whatever goes wrong on the learner's side
becomes a `LearnerError` whose message says what, in the learner's terms.
"""

from __future__ import annotations

import builtins
import json
import math
import os
import selectors
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from gpulab.errors import GpulabError
from gpulab.grading.checks.cells import Cell
from gpulab.grading.checks.protocol import Failure
from gpulab.grading.sandbox import Sandboxed, kept_env, pid_one, spawn
from gpulab.grading.sandbox.jobtime import POLL_S, JobClock, Starved

__all__ = ["MAX_REPLY_BYTES", "Learner", "LearnerError", "read_reply", "released_cells"]

MAX_REPLY_BYTES = 2**20
# The names a worker may report in an error's "raised": the built-in exception classes.
_BUILTIN_EXCEPTIONS = frozenset(
    name
    for name, value in vars(builtins).items()
    if isinstance(value, type) and issubclass(value, BaseException)
)


class LearnerError(GpulabError):
    """The learner's code did not give an answer: why, in words the learner can use.

    `kind` sorts it for a grading run's summary, in the words of
    `gpulab.grading.checks.protocol`: "error" (the code raised or answered badly),
    "timeout", "crashed" (the process ended), "invalid" (the notebook's answer
    cells are not there to run) or "busy" (the machine kept it from the CPU: no
    verdict); a kernel's failures add their own.
    """

    def __init__(self, message: str, kind: Failure = "error", raised: Sequence[str] = ()) -> None:
        super().__init__(message)
        self.kind = kind
        self.raised = tuple(name for name in raised if name in _BUILTIN_EXCEPTIONS)

    def raised_as(self, exception: type[BaseException]) -> bool:
        """Whether the learner's code raised an instance of the built-in `exception`.

        Decided by the exception's type as the worker found it (the built-in
        classes in its MRO), so ``ZeroDivisionError(": ValueError")`` is no
        ValueError, whatever its message says.
        """
        return exception.__name__ in _BUILTIN_EXCEPTIONS and exception.__name__ in self.raised


class Learner:
    """The learner's functions, run in a worker process; use as a context manager."""

    def __init__(self, cells: Sequence[Cell], *, timeout: float = 30.0) -> None:
        self.cells = list(cells)
        self.timeout = timeout
        self._process: subprocess.Popen[bytes] | None = None
        self._job: Sandboxed | None = None
        self._reader: int | None = None
        self._buffer = b""
        self._folder: tempfile.TemporaryDirectory[str] | None = None
        self._loaded: LearnerError | None = None
        self._failed_cells: list[dict[str, Any]] = []  # cells that raised while loading

    def __enter__(self) -> Learner:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def pid(self) -> int | None:
        """The worker's process id once it runs (a check may inspect the process).

        In a grading run's sandbox this is the worker itself, not the bubblewrap
        process around it: /proc/<pid> shows the learner's namespaces, cgroup and
        CPU affinity, and /proc/<pid>/root the file system the learner sees.
        """
        self._start()
        if self._job is None or self._process is None:
            return None
        return self._job.worker  # as the sandbox reported it: never found by a name

    @property
    def pid_one(self) -> int | None:
        """The process that is PID 1 for the worker, by this process's numbering."""
        pid = self.pid
        if pid is None or self._job is None or not self._job.wrapped:
            return 1 if pid is not None else None
        return pid_one(pid)

    def call(self, name: str, *args: Any, **kwargs: Any) -> Any:
        """Call the learner's function `name`; its result as plain data."""
        self._start()
        if self._loaded is not None:
            raise self._loaded
        reply = self._ask(
            {"op": "call", "name": name, "args": list(args), "kwargs": kwargs}, f"calling {name}()"
        )
        return reply

    def call_with_nvml(
        self,
        recording: str,
        name: str,
        *args: Any,
        nvml_answers: Sequence[dict[str, Any]] = (),
        **kwargs: Any,
    ) -> Any:
        """Call the learner's function `name` while ``pynvml`` answers from the recorded
        NVML session `recording` (`gpulab.grading.checks.machines.nvml_names`), changed by
        `nvml_answers` (`gpulab.grading.checks.machines.changed`: a hidden check's fresh values)."""
        self._start()
        if self._loaded is not None:
            raise self._loaded
        return self._ask(
            {
                "op": "call",
                "name": name,
                "args": list(args),
                "kwargs": kwargs,
                "nvml": recording,
                "nvml_answers": list(nvml_answers),
            },
            f"calling {name}() on a recorded NVML session",
        )

    def machine(
        self,
        name: str,
        *,
        files: dict[str, str | None] | None = None,
        links: dict[str, str | None] | None = None,
    ) -> str:
        """Build the recorded machine `name` in the worker; the root folder, as the worker
        names it, to hand to the learner's functions. `files` and `links` change it first
        (`gpulab.grading.checks.machines.materialize`)."""
        self._start()
        if self._loaded is not None:
            raise self._loaded
        root = self._ask(
            {"op": "machine", "name": name, "files": files or {}, "links": links or {}},
            f"building the recorded machine {name!r}",
        )
        if not isinstance(root, str):
            raise LearnerError(
                f"while building the recorded machine {name!r}, the worker "
                "answered with something that is not a folder"
            )
        return root

    def close(self) -> None:
        """Stop the worker and everything it started."""
        if self._job is not None:
            self._job.close()  # the worker's process group and job cgroup
            self._job = None
        self._process = None
        if self._reader is not None:
            os.close(self._reader)
            self._reader = None
        if self._folder is not None:
            self._folder.cleanup()
            self._folder = None

    # -- the worker ----------------------------------------------------------------
    def _start(self) -> None:
        if self._process is not None or self._loaded is not None:
            return  # running, or its cells failed to load: do not run them again
        self._folder = tempfile.TemporaryDirectory(prefix=f"gpulab-learner-{os.getpid()}-")
        reader, writer = os.pipe()
        env = kept_env()
        env["PYTHONDONTWRITEBYTECODE"] = "1"
        try:
            self._job = spawn(
                [sys.executable, "-m", "gpulab.grading.checks.worker", str(writer)],
                pass_fds=(writer,),
                cwd=self._folder.name,
                env=env,
            )
        finally:
            os.close(writer)
        self._process = self._job.process
        self._reader = reader
        try:
            # Setup cells come from the released exercise (`released_cells`); the worker
            # closes gpulab to the code that follows them.
            loaded = self._ask(
                {
                    "op": "load",
                    "cells": [
                        {
                            "name": c.name,
                            "source": c.source,
                            "released": c.name.startswith("setup "),
                        }
                        for c in self.cells
                    ],
                },
                "running your cells",
            )
        except LearnerError as exc:
            self._loaded = exc
            return
        failed = loaded.get("failed") if isinstance(loaded, dict) else None
        self._failed_cells = [f for f in failed or [] if isinstance(f, dict)]

    def _ask(self, request: dict[str, Any], doing: str) -> Any:
        process = self._process
        assert process is not None and process.stdin is not None and self._reader is not None
        try:
            process.stdin.write(json.dumps(request).encode() + b"\n")
            process.stdin.flush()
        except BrokenPipeError:
            raise self._died(doing) from None
        line = self._read_line(doing)
        try:
            reply = json.loads(line, parse_constant=_not_finite, parse_float=_finite)
        except _NotFinite as exc:
            raise LearnerError(
                f"while {doing}, the answer holds {exc}, which is not a number "
                "a check can compare: return a finite number, or None where "
                "there is no value"
            ) from None
        except ValueError:
            raise LearnerError(
                f"while {doing}, the worker sent something that is not an "
                "answer (did your code write to its file descriptors?)"
            ) from None
        if not isinstance(reply, dict) or not isinstance(reply.get("ok"), bool):
            raise LearnerError(f"while {doing}, the worker sent a malformed answer")
        if reply["ok"]:
            return reply.get("value")
        error = reply.get("error") or {}
        if error.get("type") == "NameError" and self._failed_cells:
            first = self._failed_cells[0]  # why the function is not there
            raise LearnerError(
                f"while {doing}: it is not defined, because your cell "
                f"'{first.get('cell')}' did not run: " + _said(first)
            )
        raised = error.get("raised")
        raise LearnerError(
            f"while {doing}: " + _said(error),
            raised=[name for name in raised if isinstance(name, str)]
            if isinstance(raised, list)
            else (),
        )

    def _read_line(self, doing: str) -> bytes:
        assert self._reader is not None and self._process is not None
        try:
            line, self._buffer = read_reply(
                self._reader, self._buffer, self.timeout, job=self._process.pid
            )
        except TimeoutError:
            self.close()
            raise LearnerError(
                f"while {doing}, your code ran longer than "
                f"{self.timeout:g} s and was stopped: is there an "
                "endless loop, or a wait for input?",
                "timeout",
            ) from None
        except Starved as exc:
            self.close()
            raise LearnerError(
                f"while {doing}, the grading machine was too busy to run your code: {exc}. "
                "This is no verdict on it: the next grading run tries again",
                "busy",
            ) from None
        except EOFError:
            raise self._died(doing) from None
        except OverflowError:
            self.close()
            raise LearnerError(
                f"while {doing}, the result was larger than "
                f"{MAX_REPLY_BYTES // 2**20} MiB: return a summary, "
                "not the data itself"
            ) from None
        return line

    def _died(self, doing: str) -> LearnerError:
        process = self._process
        code = process.wait(timeout=5) if process is not None else None
        self.close()
        how = (
            f"exit status {code}"
            if code is not None and code >= 0
            else f"signal {signal.Signals(-code).name}"
            if code is not None
            else "unknown"
        )
        return LearnerError(
            f"while {doing}, the worker process ended ({how}): your code "
            "ended the process (os._exit, a crash, or the memory limit)",
            "crashed",
        )


class _NotFinite(ValueError):
    """A reply's NaN or infinity (JSON has neither; Python's json reads both)."""


def _not_finite(token: str) -> Any:
    raise _NotFinite(token)


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):  # "1e999" reads as an infinity
        raise _NotFinite(f"{text} (an infinity)")
    return value


def _said(error: dict[str, Any]) -> str:
    """A worker's error as text: type, message, and the learner's lines of code."""
    where = "\n".join(f"    {line}" for line in error.get("traceback", []) if isinstance(line, str))
    return f"{error.get('type', 'Error')}: {error.get('message', '')}" + (
        f"\n{where}" if where else ""
    )


def read_reply(
    reader: int, buffer: bytes, timeout: float, cap: int = MAX_REPLY_BYTES, *, job: int = 0
) -> tuple[bytes, bytes]:
    """One newline-ended line from the pipe `reader`: (line, what was read past it).

    Raises TimeoutError when no whole line came within `timeout` seconds,
    EOFError when the writer closed the pipe first, OverflowError past `cap` bytes.
    With `job` (the pid of the process that runs the code, and its children), the
    seconds are the job's own (`gpulab.grading.sandbox.jobtime`): TimeoutError when it used
    them, `Starved` when the machine kept it from the CPU for too long.
    """
    clock = JobClock(job, timeout) if job else None
    deadline = time.monotonic() + timeout
    look = time.monotonic() + POLL_S  # the clock's next look, data or none (a trickle)
    with selectors.DefaultSelector() as selector:
        selector.register(reader, selectors.EVENT_READ)
        while b"\n" not in buffer:
            left = deadline - time.monotonic()
            if clock is not None:
                ready = selector.select(max(look - time.monotonic(), 0.0))
                if time.monotonic() >= look:
                    clock.check()
                    look = time.monotonic() + POLL_S
                if not ready:
                    continue
            elif left <= 0 or not selector.select(left):
                raise TimeoutError
            chunk = os.read(reader, 65536)
            if not chunk:
                raise EOFError
            buffer += chunk
            if len(buffer) > cap:
                raise OverflowError
    line, _, rest = buffer.partition(b"\n")
    return line, rest


def released_cells(exercise: Path, learner: Path) -> list[Cell]:
    """Setup cells from the released exercise, then the learner's answer cells."""
    from gpulab.grading.checks.cells import answer_cells, setup_cells
    from gpulab.grading.checks.notebook import read_cells

    released = read_cells(exercise)  # both validated by the runner already
    mine = read_cells(learner)
    expected = answer_cells(released, exercise)
    answers = answer_cells(mine, learner)
    missing = [part for part in expected if part not in answers]
    if missing:
        raise LearnerError(
            f"{learner}: the answer cell for {', '.join(missing)} is missing "
            "(deleted, or its metadata changed): copy it back from a fresh "
            "copy of the exercise",
            "invalid",
        )
    return [*setup_cells(released), *(answers[part] for part in expected)]
