"""Learner code started in the sandbox: bubblewrap, rlimits, cgroups.

A learner checking their own notebook runs their own code as they are; a
grading run (`gpulab grade`) runs 30 strangers' code and must not trust it.
The grader describes the sandbox as a `Policy` (`gpulab.grading.sandbox.policy`)
and hands it to the checks process in the environment variable
``GPULAB_SANDBOX`` (JSON); every process that runs learner code -- the Python
worker (`gpulab.grading.checks.learner`) and the kernel worker (`gpulab.grading.checks.gpu`)
-- is started through `spawn`, which wraps it in:

- **no privilege, whoever grades**: the launcher (`gpulab.grading.sandbox.jail`)
  drops a root grader to a dedicated uid and gid of the job's own, with no
  supplementary groups; no-new-privileges; bubblewrap drops every capability
  and forbids new user namespaces, so nothing inside can mount, unmount,
  remount or trace its way out;
- **bubblewrap** (Debian ``bubblewrap``): a view of the machine built from an
  allowlist (`gpulab.grading.sandbox.view`): the system's libraries, Python and
  gpulab, the public course, the GPU's device files for a GPU job; no home,
  ``/run``, socket file, submissions, gradebook or other copy of the course; new
  user, PID, IPC, UTS and network namespaces (no network); every writable
  place a size-capped tmpfs. bubblewrap reads its options from a pipe, so the
  sandbox's PID 1 shows only the command (Python and gpulab's worker), and
  reports the worker's pid, so the checks inspect that process and no other;
- **a keyring of its own and a seccomp filter** (`gpulab.grading.sandbox.seccomp`):
  the job's first program joins a fresh session keyring, so it possesses none
  of the grader's, and installs a filter that refuses the keyring calls and
  the system calls learner code never needs (bpf, perf, io_uring, ptrace,
  mounts, namespaces, modules...), those that reach a per-user quota the job
  would share with an ordinary grader (inotify, fanotify, POSIX message
  queues), ``setsid`` (a job is one session: one scheduling group), and, for a
  CPU job, memory no address space counts (memfd, SysV shared memory);
  ``/proc/keys`` shows it nothing. A job run under ``--unsafe`` gets both too;
- **rlimits**: CPU seconds, address space (CPU jobs: CUDA reserves more
  address space than it uses), file size, open files, no core files, and
  the counts the kernel keeps per user, processes and pending signals: set
  inside the sandbox's own user namespace, where the kernel counts only the
  job's, so the limit is the job's alone;
- **cgroups** where the grader may make them (v2 with a delegated subtree, or
  v1 controllers it can write): a process-count and a memory limit per job
  and, where the cpu controller is offered, an equal CPU weight
  (`gpulab.grading.sandbox.cgroups`); without one, the kernel's autogroup scheduler
  gives each job (each session) one share of the CPU, where it is on;
- **time limits by the job's own time** (`gpulab.grading.sandbox.jobtime`, applied by
  the runner and the learner's handle, not here): CPU time, and wall time not
  spent waiting for a CPU, so a job the machine starves is not graded rather
  than timed out.

`spawn` returns the job's handle, a `Sandboxed` (`gpulab.grading.sandbox.job`,
with `kill_group` and `pid_one`), which ends the whole job when closed.

Which of these work on this machine, proven by a probe started through
`spawn`, and why a run without them is refused, is another module's job
(`gpulab.grading.sandbox.guards`: `available`, `refusal`). Bubblewrap is a
well-kept, widely used tool (Flatpak's sandbox); we only assemble its command line.
"""

from __future__ import annotations

import contextlib
import json
import os
import resource
import secrets
import selectors
import shutil
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import IO, Any

from gpulab.environment import COURSE_DIR, JOB
from gpulab.environment import SPAWNER as SPAWNER_VARIABLE
from gpulab.grading.sandbox.cgroups import empty_and_remove, make_job_cgroups
from gpulab.grading.sandbox.job import Sandboxed
from gpulab.grading.sandbox.policy import Policy, from_env
from gpulab.grading.sandbox.seccomp import entered, keys_hidden
from gpulab.grading.sandbox.seccomp import problem as seccomp_problem
from gpulab.grading.sandbox.view import build_view
from gpulab.multicast import NO_MULTICAST

__all__ = ["KEPT_ENV", "SPAWNER", "job_uid", "kept_env", "spawn"]

KEPT_ENV = (
    "PATH",
    "PYTHONPATH",
    "HOME",
    "LANG",
    "LC_ALL",
    "CUDA_VISIBLE_DEVICES",
    "CUDA_PATH",
    "CUDA_HOME",
    "CUPY_CACHE_DIR",
    "LD_LIBRARY_PATH",
    "VIRTUAL_ENV",
    COURSE_DIR.name,
)
"""The only variables of the grader's environment a process that runs learner code (the
learner's worker, the kernel worker) is given; everything else, secrets included, stays."""


def kept_env() -> dict[str, str]:
    """The grader's environment, cut down to `KEPT_ENV`."""
    return {key: value for key, value in os.environ.items() if key in KEPT_ENV}


SPAWNER = SPAWNER_VARIABLE.name  # outside bubblewrap: the pid a learner worker ends with
SCRATCH = "/tmp/work"  # the job's working folder inside the sandbox
JOB_UIDS = (0x5A000000, 2**20)
"""The uids a root grader runs jobs as: a block of 2**20 from this first one, used by nothing
else (far above any account's and any container range's usual place); one, at random, per job."""


ISOLATION = (
    "--die-with-parent",
    "--new-session",
    "--as-pid-1",
    "--unshare-user",
    "--unshare-pid",
    "--unshare-ipc",
    "--unshare-uts",
    "--unshare-net",
    "--hostname",
    "gpulab-sandbox",
    "--disable-userns",
    "--cap-drop",
    "ALL",
)
"""bubblewrap's namespaces and privileges, the same for every job. The job's command is PID 1
of its PID namespace (no reaper of bubblewrap's beside it to trace or signal); when it ends,
the kernel ends everything it started."""


def job_uid() -> int | None:
    """The uid a new job runs as: one of its own when the grader is root, else None (the
    grader's, which an ordinary user cannot leave)."""
    if os.geteuid() != 0:
        return None
    first, count = JOB_UIDS
    return first + secrets.randbelow(count)


def spawn(
    argv: Sequence[str],
    *,
    env: dict[str, str],
    cwd: str,
    pass_fds: Sequence[int] = (),
    stdin: int | IO[Any] | None = subprocess.PIPE,
    stdout: int | IO[Any] | None = subprocess.DEVNULL,
    stderr: int | IO[Any] | None = subprocess.DEVNULL,
    gpu: bool = False,
    policy: Policy | None = None,
) -> Sandboxed:
    """Start `argv` in its own session -- sandboxed if a policy is in force, else as is.

    Either way its environment keeps NVLink multicast off (`gpulab.multicast`).
    """
    policy = policy if policy is not None else from_env()
    env = {key: value for key, value in env.items() if key != SPAWNER}
    env = {**env, **NO_MULTICAST}
    if policy is None:
        process = subprocess.Popen(
            list(argv),
            stdin=stdin,
            stdout=stdout,
            stderr=stderr,
            pass_fds=tuple(pass_fds),
            cwd=cwd,
            env={**env, SPAWNER: str(os.getpid())},
            start_new_session=True,
        )
        return Sandboxed(process, [], process.pid)
    gpu = gpu or policy.gpu
    if policy.tag:
        env = {**env, JOB.name: policy.tag}
    spec: dict[str, Any] = {"rlimits": _rlimits(policy, gpu=gpu), "uid": None}
    if not policy.bubblewrap:  # --unsafe: limits and cgroups, no isolation
        made = make_job_cgroups(policy.cgroup, policy.processes, policy.memory_bytes)
        spec["cgroups"] = [str(c) for c in made]
        process = _launch(
            spec,
            list(argv) if seccomp_problem() else entered(list(argv), gpu=gpu),
            {**env, SPAWNER: str(os.getpid())},
            cwd,
            stdin,
            stdout,
            stderr,
            pass_fds,
        )  # the launcher execs the command
        return Sandboxed(process, made, process.pid)
    bwrap = shutil.which("bwrap")
    if not bwrap:
        raise OSError("the grading policy asks for bubblewrap, which is not installed")
    uid = job_uid()
    view = build_view(
        scratch=SCRATCH,
        scratch_bytes=policy.scratch_bytes,
        show=policy.show,
        private=policy.private,
        gpu=gpu,
        staged=uid is not None,
    )
    env = {**env, "HOME": SCRATCH, "TMPDIR": "/tmp", "CUPY_CACHE_DIR": f"{SCRATCH}/.cupy"}
    # The per-user limits are set inside, in the sandbox's own user namespace, where the kernel
    # counts only this job's processes and signals; then a keyring of its own and the filter.
    inner = entered(list(argv), limits=per_user_limits(policy), gpu=gpu)
    info_read, info_write = os.pipe()
    args_read, args_write = os.pipe()
    arguments = [
        *ISOLATION,
        *view.args,
        *keys_hidden(),
        "--chdir",
        SCRATCH,
        "--setenv",
        "HOME",
        SCRATCH,
        "--setenv",
        "TMPDIR",
        "/tmp",
        "--setenv",
        "CUPY_CACHE_DIR",
        f"{SCRATCH}/.cupy",
        "--info-fd",
        str(info_write),
    ]
    cgroups: list[Path] = []
    try:
        _write_all(args_write, b"\0".join(os.fsencode(a) for a in arguments) + b"\0")
        os.close(args_write)
        args_write = -1
        cgroups = make_job_cgroups(policy.cgroup, policy.processes, policy.memory_bytes)
        spec.update(
            cgroups=[str(c) for c in cgroups],
            uid=uid,
            stage=[[folder, n] for n, folder in enumerate(view.folders)],
        )
        process = _launch(
            spec,
            [bwrap, "--args", str(args_read), "--", *inner],
            env,
            cwd,
            stdin,
            stdout,
            stderr,
            (*pass_fds, args_read, info_write),
        )
    except BaseException:
        empty_and_remove(cgroups)
        os.close(info_read)
        raise
    finally:
        for fd in (args_read, info_write, args_write):
            if fd >= 0:
                os.close(fd)
    job = Sandboxed(process, cgroups, None, uid)
    try:
        job.worker = _child_pid(info_read, process)
    finally:
        os.close(info_read)
    return job


def _launch(
    spec: dict[str, Any],
    command: list[str],
    env: dict[str, str],
    cwd: str,
    stdin: int | IO[Any] | None,
    stdout: int | IO[Any] | None,
    stderr: int | IO[Any] | None,
    pass_fds: Sequence[int],
) -> subprocess.Popen[bytes]:
    """Start `command` through the launcher (`gpulab.grading.sandbox.jail`), in a session of its
    own."""
    spec = {**spec, "parent": os.getpid()}  # the launcher dies with this process
    launcher = [
        sys.executable,
        "-m",
        "gpulab.grading.sandbox.jail",
        json.dumps(spec),
        "--",
        *command,
    ]
    return subprocess.Popen(
        launcher,
        stdin=stdin,
        stdout=stdout,
        stderr=stderr,
        pass_fds=tuple(pass_fds),
        cwd=cwd,
        env=env,
        start_new_session=True,
    )


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _child_pid(reader: int, process: subprocess.Popen[bytes], timeout: float = 60.0) -> int | None:
    """The sandboxed command's pid, from bubblewrap's --info-fd; None if it never said."""
    buffer = b""
    deadline = time.monotonic() + timeout
    with selectors.DefaultSelector() as selector:
        selector.register(reader, selectors.EVENT_READ)
        while time.monotonic() < deadline:
            if not selector.select(0.2):
                if process.poll() is not None:
                    return None
                continue
            chunk = os.read(reader, 4096)
            if not chunk:
                break
            buffer += chunk
            with contextlib.suppress(ValueError):
                pid = json.loads(buffer).get("child-pid")
                return int(pid) if isinstance(pid, int) else None
    with contextlib.suppress(ValueError, AttributeError):
        pid = json.loads(buffer).get("child-pid")
        return int(pid) if isinstance(pid, int) else None
    return None


PENDING_SIGNALS = 256
"""A job's queued signals (RLIMIT_SIGPENDING): the kernel counts them per user, the job's own
inside its user namespace; a job needs a few, and may not take the grader's thousands."""


def per_user_limits(policy: Policy) -> dict[int, int]:
    """The limits of the counts the kernel keeps per user (`seccomp.PER_USER`), as set
    inside a job's user namespace."""
    return {
        resource.RLIMIT_NPROC: policy.processes,
        resource.RLIMIT_SIGPENDING: PENDING_SIGNALS,
    }


def _rlimits(policy: Policy, *, gpu: bool) -> list[tuple[int, int]]:
    limits = [
        (resource.RLIMIT_CPU, policy.cpu_s),
        (resource.RLIMIT_FSIZE, policy.file_bytes),
        (resource.RLIMIT_NOFILE, policy.open_files),
        (resource.RLIMIT_CORE, 0),
    ]
    if not gpu:
        limits.append((resource.RLIMIT_AS, policy.memory_bytes))
    return limits
