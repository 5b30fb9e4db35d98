"""The launcher between the grader and bubblewrap: limits, cgroups and a dedicated uid.

`gpulab.grading.sandbox.spawn` starts ``python -m gpulab.grading.sandbox.jail SPEC --
BWRAP ...``: a fresh, single-threaded process (the grader runs threads, and
work between fork and exec in a threaded process is unsafe) that

1. joins the job's cgroups and sets its rlimits;
2. where the grader is root, makes the folders the sandbox will show
   reachable by an unprivileged user without opening anything else: in a
   mount namespace of its own (private, so the host sees none of it) it puts a
   small tmpfs over ``/dev/shm`` and bind-mounts each such folder there
   (``/dev/shm/gpulab-view/<n>``), so that bubblewrap, running as the job's
   user, can bind them into the sandbox even when they lie under a folder
   only root may enter (a Python under ``/root``, say);
3. drops every privilege: no supplementary groups, the job's own uid and gid
   (a dedicated one per job, used by nothing else on the machine), and
   no-new-privileges, so nothing in the sandbox can regain any;
4. arranges to be killed when the process that started it ends (its parent
   death signal, set after the uid change, which would clear it), and ends at
   once if that process already has: a grader killed while a job starts leaves
   no bubblewrap behind;
5. execs bubblewrap.

SPEC is JSON: ``{"cgroups": [...], "rlimits": [[resource, value], ...],
"uid": N or null, "stage": [[source, n], ...], "parent": PID}``. A problem is printed as one
line on stderr and the launcher exits with status 125 before bubblewrap runs.
"""

from __future__ import annotations

import ctypes
import json
import os
import resource
import signal
import sys
from pathlib import Path
from typing import Any

__all__ = ["STAGE", "die_with", "main", "staged"]

STAGE = "/dev/shm/gpulab-view"
"""Where, in the launcher's own mount namespace, the folders to show are staged."""

_CLONE_NEWNS = 0x00020000
_MS_NOSUID, _MS_NODEV, _MS_BIND, _MS_REC, _MS_PRIVATE = 2, 4, 4096, 16384, 1 << 18
_PR_SET_NO_NEW_PRIVS = 38
_PR_SET_PDEATHSIG = 1
FAILED = 125


def staged(number: int) -> str:
    """Where the `number`-th staged folder appears."""
    return f"{STAGE}/{number}"


def main(argv: list[str]) -> int:
    """Set the job up as SPEC says, then exec the command after ``--``."""
    try:
        spec = json.loads(argv[0])
        command = argv[argv.index("--") + 1 :]
        _setup(spec)
    except (OSError, ValueError, IndexError, KeyError, TypeError) as exc:
        print(f"gpulab jail: {exc}", file=sys.stderr, flush=True)
        return FAILED
    try:
        os.execv(command[0], command)
    except OSError as exc:
        print(f"gpulab jail: cannot run {command[0]}: {exc.strerror}", file=sys.stderr)
        return FAILED


def _setup(spec: dict[str, Any]) -> None:
    for folder in spec.get("cgroups", []):
        Path(folder, "cgroup.procs").write_text(str(os.getpid()))
    for which, value in spec.get("rlimits", []):
        resource.setrlimit(int(which), (int(value), int(value)))
    uid = spec.get("uid")
    if uid is not None:
        _stage([(str(source), int(n)) for source, n in spec.get("stage", [])])
        os.setgroups([])
        os.setresgid(int(uid), int(uid), int(uid))
        os.setresuid(int(uid), int(uid), int(uid))
        if os.getuid() == 0 or os.geteuid() == 0 or os.getgroups():
            raise OSError("the job's privileges could not be dropped")
    _libc_call("prctl", _PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)
    parent = spec.get("parent")
    if parent is not None and not die_with(int(parent)):
        raise OSError(f"the process that started this job ({parent}) has ended")


def die_with(parent: int) -> bool:
    """Be killed (SIGKILL) when the process that started this one ends, and say whether it
    still lives: False means it ended before that took hold, and the caller must end too.

    The one place gpulab asks for a parent-death signal: this launcher, the checks
    process (`gpulab.grading.checks.pytest_plugin`) and the learner's worker outside bubblewrap.
    Set it after any change of uid, which clears it."""
    _libc_call("prctl", _PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
    return os.getppid() == parent


def _stage(folders: list[tuple[str, int]]) -> None:
    """Bind each folder at `staged(n)`, in a private mount namespace of this process."""
    _libc_call("unshare", _CLONE_NEWNS)
    _mount(None, "/", None, _MS_REC | _MS_PRIVATE)
    _mount("gpulab-view", "/dev/shm", "tmpfs", _MS_NOSUID | _MS_NODEV, b"size=64k,mode=0755")
    os.mkdir(STAGE, 0o755)
    for source, number in folders:
        target = staged(number)
        os.mkdir(target, 0o755)
        _mount(source, target, None, _MS_BIND | _MS_REC)


_LIBC: Any = None


def _libc() -> Any:
    global _LIBC
    if _LIBC is None:
        # the process's own symbols, libc's among them: find_library would run
        # `ldconfig -p` in a child process, in every job's checks and worker
        _LIBC = ctypes.CDLL(None, use_errno=True)
    return _LIBC


def _libc_call(name: str, *args: Any) -> None:
    if getattr(_libc(), name)(*args) != 0:
        errno = ctypes.get_errno()
        raise OSError(errno, f"{name}: {os.strerror(errno)}")


def _mount(
    source: str | None, target: str, kind: str | None, flags: int, data: bytes | None = None
) -> None:
    def raw(text: str | None) -> bytes | None:
        return os.fsencode(text) if text is not None else None

    if _libc().mount(raw(source), raw(target), raw(kind), ctypes.c_ulong(flags), data) != 0:
        errno = ctypes.get_errno()
        raise OSError(errno, f"mount {source or ''} on {target}: {os.strerror(errno)}")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
