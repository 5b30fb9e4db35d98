"""A sandboxed job once started: its handle, and how to end it or find its PID 1.

`gpulab.grading.sandbox.spawn` returns a `Sandboxed`: the process it started,
the job's cgroups, and the pid of the command inside bubblewrap. `kill_group`
ends a process's whole process group; `pid_one` finds the process that is PID 1
of a pid's namespace. Like the sandbox, this module imports the standard library
only (and `gpulab.grading.sandbox.cgroups`, which does too).
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
from pathlib import Path

from gpulab.grading.sandbox.cgroups import empty_and_remove

__all__ = ["Sandboxed", "kill_group", "pid_one"]


class Sandboxed:
    """A process started by `spawn`, with its job cgroup; `close` ends and removes both."""

    def __init__(
        self,
        process: subprocess.Popen[bytes],
        cgroups: list[Path],
        worker: int | None = None,
        uid: int | None = None,
    ) -> None:
        self.process = process
        self.cgroups = cgroups
        self.worker = worker  # the command's pid as this process numbers it
        self.uid = uid  # the job's own uid, where the grader is root

    @property
    def pid(self) -> int:
        return self.process.pid

    @property
    def wrapped(self) -> bool:
        """Started inside bubblewrap (the command is not the process `spawn` started)."""
        return self.worker is not None and self.worker != self.process.pid

    def close(self) -> None:
        """Kill the whole job: its process group, then anything left in its cgroups."""
        kill_group(self.process)
        empty_and_remove(self.cgroups)
        self.cgroups = []


def kill_group(process: subprocess.Popen[bytes]) -> None:
    """End a process's whole process group (the learner's children too); close its pipes."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)
    with contextlib.suppress(subprocess.TimeoutExpired):
        process.wait(timeout=5)
    for stream in (process.stdin, process.stdout, process.stderr):
        if stream is not None:
            with contextlib.suppress(OSError):
                stream.close()


def pid_one(pid: int) -> int | None:
    """The pid, as this process sees it, of the process that is PID 1 in `pid`'s namespace."""
    current: int | None = pid
    for _ in range(64):
        if current is None or current <= 1:
            return current
        try:
            status = Path(f"/proc/{current}/status").read_text()
        except OSError:
            return None
        fields_ = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
        if fields_.get("NSpid", "").split()[-1:] == ["1"]:
            return current
        current = int(fields_.get("PPid", "0").strip() or 0)
    return None
