"""A grading run's hold on its output folder, and the clearing of what dead runs left.

One run at a time writes into an output folder (``--out``): `claim` takes an
exclusive `flock` on ``OUT/.lock`` for the whole run and writes its pid there;
a second run into the same folder is refused at once, naming the holder. The
kernel drops the lock when the holder dies, however it dies, so a killed run
never blocks the next one; the lock file stays (removing it would let two runs
lock two different files).

Holding the lock, a run knows that every run its gradebook still calls
`running` is dead. What such a run may have left, the next run removes:

- its jobs' folders under ``OUT/.jobs`` (`JOBS`);
- its processes: checks processes and learner code that outlived it, found
  by the run's tag (learner processes carry ``GPULAB_JOB=<tag>``, checks
  processes the sandbox policy naming it).

The caller removes the rest: the dead run's cgroups (`gpulab.grading.sandbox`)
and the temporary folders of processes that are gone (`gpulab.grading.checks.runner`).
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import shutil
import signal
import time
from collections.abc import Iterator
from pathlib import Path

from gpulab.environment import JOB, SANDBOX
from gpulab.errors import GpulabError

__all__ = ["JOBS", "LOCK", "OutBusy", "claim", "end_processes", "remove_jobs"]

LOCK = ".lock"
JOBS = ".jobs"  # OUT/.jobs/<slug>/: a job's own copy of the notebook it grades


class OutBusy(GpulabError):
    """Another grading run holds the output folder."""


@contextlib.contextmanager
def claim(out: Path) -> Iterator[None]:
    """Hold `out` for one run: refused at once with `OutBusy` while another run holds it."""
    path = out / LOCK
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
    except OSError as exc:
        raise OutBusy(f"{path}: cannot open the run's lock file: {exc.strerror or exc}") from None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            if exc.errno not in (errno.EWOULDBLOCK, errno.EAGAIN):
                raise OutBusy(f"{path}: cannot lock it: {exc.strerror or exc}") from None
            holder = _holder(fd)
            raise OutBusy(
                f"{out}: another gpulab grade ({holder}) is grading into this "
                "folder; wait until it ends, or give another --out"
            ) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        yield
    finally:
        os.close(fd)  # and with it the lock


def _holder(fd: int) -> str:
    """'pid N' from a lock file, as its holder wrote it."""
    with contextlib.suppress(OSError, ValueError):
        pid = int(os.pread(fd, 32, 0).decode("ascii").strip())
        return f"pid {pid}"
    return "its pid not yet written"


def end_processes(tag: str) -> int:
    """SIGKILL every process of the run with tag `tag` (a dead one, or this one at its end)
    that this user can see, and wait, a few seconds at most, until they are gone; how many.

    A run's learner processes carry ``GPULAB_JOB=<tag>`` in their environment;
    its checks processes carry the sandbox policy (``GPULAB_SANDBOX``) that
    names the tag. Tags are random, so nothing else matches.
    """
    if not tag:
        return 0
    ended: set[int] = set()
    for _ in range(5):  # again, for what one of them started while we looked
        found = 0
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit() or int(entry.name) == os.getpid():
                continue
            try:
                environ = (entry / "environ").read_bytes()
            except OSError:
                continue
            if _tagged(environ, tag):
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(int(entry.name), signal.SIGKILL)
                    ended.add(int(entry.name))
                    found += 1
        if not found:
            break
    for _ in range(250):  # a killed process stays in /proc until it has exited
        if not any(_alive(pid) for pid in ended):
            break
        time.sleep(0.02)
    return len(ended)


def _alive(pid: int) -> bool:
    """Whether `pid` still runs (a zombie, waiting to be reaped, does not)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]
    except (OSError, IndexError):
        return False
    return state not in ("Z", "X")


def _tagged(environ: bytes, tag: str) -> bool:
    for item in environ.split(b"\0"):
        name, _, value = item.partition(b"=")
        if name == JOB.name.encode() and value == tag.encode():
            return True
        if name == SANDBOX.name.encode():
            with contextlib.suppress(ValueError):
                policy = json.loads(value)
                if isinstance(policy, dict) and policy.get("tag") == tag:
                    return True
    return False


def remove_jobs(out: Path) -> None:
    """Remove ``OUT/.jobs``: only while holding `out` (nothing else may be using it)."""
    shutil.rmtree(out / JOBS, ignore_errors=True)
