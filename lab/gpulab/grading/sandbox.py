"""The sandbox a grading run puts around learner code: bubblewrap, rlimits, cgroups.

A learner checking their own notebook runs their own code as they are; a
grading run (`gpulab grade`) runs 30 strangers' code and must not trust it.
The grader describes the sandbox as a `Policy` and hands it to the checks
process in the environment variable ``GPULAB_SANDBOX`` (JSON); every process
that runs learner code -- the Python worker (`gpulab.grading.learner`) and the
kernel worker (`gpulab.grading.gpu`) -- is started through `spawn`, which
wraps it in:

- **bubblewrap** (Debian ``bubblewrap``): a read-only view of the machine with
  the course (solutions, hidden checks), the submissions, the gradebook, the
  grader's temporary files and home folders hidden under empty tmpfs; new user,
  PID, IPC, UTS and network namespaces (no network); a small private tmpfs as
  its working folder and /tmp, so a full disk is the sandbox's, not ours;
  /dev holds only the basic devices, plus the NVIDIA ones for a GPU job.
- **rlimits**: CPU seconds, address space (CPU jobs: CUDA reserves more
  address space than it uses), file size, open files, no core files; process
  count where the grader is not root (root is exempt from RLIMIT_NPROC).
- **cgroups** where the grader may make them (v2 with a delegated subtree, or
  v1 controllers it can write): a process-count and a memory limit per job.

`available()` says which of these work on this machine; the grader records
the list in the gradebook and the feedback, and refuses to grade without a
filesystem guard unless told ``--unsafe``. Bubblewrap is a well-kept, widely
used tool (Flatpak's sandbox); we only assemble its command line.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import resource
import shutil
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import IO, Any

from gpulab.multicast import NO_MULTICAST

__all__ = ["ENV", "Guards", "Policy", "Sandboxed", "available", "from_env", "kill_group",
           "pid_one", "remove_cgroups", "run_cgroups", "spawn", "worker_pid"]

ENV = "GPULAB_SANDBOX"
SCRATCH = "/tmp/work"          # the job's working folder inside the sandbox
MiB = 2**20


@dataclass(frozen=True)
class Policy:
    """What a sandboxed job may use, and what it must not see."""

    cpu_s: int = 120                  # CPU seconds (RLIMIT_CPU)
    memory_bytes: int = 2048 * MiB    # address space (CPU jobs) and cgroup memory
    processes: int = 64               # cgroup pids.max, or RLIMIT_NPROC when not root
    file_bytes: int = 64 * MiB        # largest file it may write (RLIMIT_FSIZE)
    open_files: int = 256
    scratch_bytes: int = 128 * MiB    # size of its tmpfs working folder and of /tmp
    hide: tuple[str, ...] = ()        # folders it must not see (course, submissions, output)
    show: tuple[str, ...] = ()        # folders inside those that it may read (lessons, exercises)
    bubblewrap: bool = True           # False only with --unsafe on a machine without it
    cgroup: str = ""                  # "v2:<folder>", "v1:<ctl>=<folder>,..." or ""
    gpu: bool = False                 # give it the NVIDIA device files
    tag: str = ""                     # the run's name, in every job's GPULAB_JOB variable

    def to_json(self) -> str:
        return json.dumps(asdict(self))

    @classmethod
    def from_json(cls, text: str) -> Policy:
        data = json.loads(text)
        data["hide"] = tuple(data.get("hide", ()))
        data["show"] = tuple(data.get("show", ()))
        return cls(**data)


@dataclass(frozen=True)
class Guards:
    """The guards this machine offers, as found by `available`."""

    bubblewrap: str = ""        # the bwrap path where it works, else ""
    bubblewrap_problem: str = ""
    cgroup: str = ""            # as Policy.cgroup: where job cgroups may be made
    cgroup_problem: str = ""
    nproc_rlimit: bool = False  # RLIMIT_NPROC binds (the grader is not root)

    def describe(self, policy: Policy) -> tuple[str, ...]:
        """The guards in force for `policy`, one line each, for the gradebook and feedback."""
        lines = []
        if policy.bubblewrap and self.bubblewrap:
            lines.append("bubblewrap: read-only file system with the course, solutions, "
                         "submissions and gradebook hidden; private tmpfs "
                         f"({policy.scratch_bytes // MiB} MiB) as working folder and /tmp; "
                         "own user, PID, IPC, UTS and network namespaces (no network)")
        else:
            lines.append("no file-system isolation (--unsafe): learner code sees this "
                         "machine's files as the grader does")
        limits = [f"CPU {policy.cpu_s} s", f"file size {policy.file_bytes // MiB} MiB",
                  f"open files {policy.open_files}", "no core files"]
        if not policy.gpu:
            limits.insert(1, f"address space {policy.memory_bytes // MiB} MiB")
        if self.nproc_rlimit and not policy.cgroup:
            limits.append(f"processes {policy.processes}")
        lines.append("rlimits: " + ", ".join(limits))
        if policy.cgroup:
            version = policy.cgroup.split(":", 1)[0]
            lines.append(f"cgroup {version}: at most {policy.processes} processes, "
                         f"memory {policy.memory_bytes // MiB} MiB")
        return tuple(lines)


def _bwrap_base(policy: Policy, scratch: str, *, gpu: bool) -> list[str]:
    """bubblewrap's arguments up to (not including) the command."""
    args = ["--die-with-parent", "--unshare-user", "--unshare-pid", "--unshare-ipc",
            "--unshare-uts", "--unshare-net", "--hostname", "gpulab-sandbox",
            "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]
    if gpu:
        for device in sorted(Path("/dev").glob("nvidia*")):
            if device.is_char_device():
                args += ["--dev-bind", str(device), str(device)]
        caps = Path("/dev/nvidia-caps")
        if caps.is_dir():
            args += ["--dev-bind", str(caps), str(caps)]
    # /tmp first: a fresh, size-capped tmpfs that holds the working folder too
    args += ["--size", str(policy.scratch_bytes), "--tmpfs", "/tmp", "--dir", scratch]
    hidden = _hidden_folders(policy)
    for folder in hidden:
        args += ["--tmpfs", folder]
    for folder in _needed_folders([*hidden, "/tmp"], policy.show):   # /tmp is a new tmpfs
        args += ["--ro-bind", folder, folder]
    args += ["--chdir", scratch, "--setenv", "HOME", scratch, "--setenv", "TMPDIR", "/tmp",
             "--setenv", "CUPY_CACHE_DIR", f"{scratch}/.cupy"]
    return args


def _hidden_folders(policy: Policy) -> list[str]:
    """What the sandbox shows as empty: the policy's folders, temporary folders, homes."""
    import tempfile

    candidates = [*policy.hide, tempfile.gettempdir(), "/var/tmp", "/root",
                  "/home", "/run/user", os.path.expanduser("~")]
    found = []
    for name in candidates:
        path = os.path.realpath(name)
        if path not in ("/", "/tmp") and os.path.isdir(path) and path not in found:
            found.append(path)
    # a folder inside another hidden one is hidden already (and could not be mounted on)
    return sorted(p for p in found if not any(p != q and p.startswith(q + "/") for q in found))


def _needed_folders(hidden: Sequence[str], shown: Sequence[str] = ()) -> list[str]:
    """Folders the worker needs (Python, gpulab, the public course) that lie in hidden ones.

    Only Python's own folders, its site-packages, PYTHONPATH and gpulab's
    package folder -- not sys.path, which in a checks process holds the folders
    of the check files, hidden checks included. A folder that would show a
    hidden one again (the course root on PYTHONPATH, say) is left out.
    """
    import site

    import gpulab

    wanted = {*shown, sys.prefix, sys.base_prefix, sys.exec_prefix,
              str(Path(gpulab.__file__).resolve().parent.parent),
              *site.getsitepackages(), site.getusersitepackages(),
              *os.environ.get("PYTHONPATH", "").split(os.pathsep)}
    needed = []
    for name in wanted:
        if not name:
            continue
        path = os.path.realpath(name)
        inside = any(path == h or path.startswith(h + "/") for h in hidden)
        reveals = any(h == path or h.startswith(path + "/") for h in hidden)
        if os.path.isdir(path) and inside and not reveals:
            needed.append(path)
    # the outermost of nested ones is enough
    return sorted(p for p in set(needed)
                  if not any(p != q and p.startswith(q + "/") for q in needed))


@functools.lru_cache(maxsize=1)
def available() -> Guards:
    """Which guards work on this machine (tried for real, once per process)."""
    bwrap = shutil.which("bwrap") or ""
    problem = ""
    if not bwrap:
        problem = "bubblewrap is not installed (Debian: apt install bubblewrap)"
    else:
        try:
            done = subprocess.run(
                [bwrap, *_bwrap_base(Policy(), SCRATCH, gpu=False), "--",
                 sys.executable, "-c", "import gpulab"],
                capture_output=True, text=True, timeout=60)
            if done.returncode != 0:
                problem = ("bubblewrap cannot make a sandbox here: "
                           + (done.stderr.strip().splitlines() or ["(no message)"])[-1])
                bwrap = ""
        except (OSError, subprocess.TimeoutExpired) as exc:
            problem, bwrap = f"bubblewrap did not run: {exc}", ""
    cgroup, cgroup_problem = _cgroup_home()
    return Guards(bubblewrap=bwrap, bubblewrap_problem=problem, cgroup=cgroup,
                  cgroup_problem=cgroup_problem, nproc_rlimit=os.geteuid() != 0)


def _own_cgroup_lines() -> list[tuple[str, str]]:
    """(controllers, path) from /proc/self/cgroup."""
    out = []
    with contextlib.suppress(OSError):
        for line in Path("/proc/self/cgroup").read_text().splitlines():
            parts = line.split(":", 2)
            if len(parts) == 3:
                out.append((parts[1], parts[2]))
    return out


def _cgroup_home() -> tuple[str, str]:
    """Where this process may make job cgroups, as Policy.cgroup, and why not where it may not."""
    root = Path("/sys/fs/cgroup")
    lines = _own_cgroup_lines()
    if (root / "cgroup.controllers").is_file():            # unified hierarchy only
        path = next((p for c, p in lines if c == ""), None)
        if path is None:
            return "", "this process's cgroup is unknown"
        own = root / path.lstrip("/")
        # a v2 cgroup holding processes cannot give controllers to children: make job
        # cgroups beside ours, under our parent, when the parent offers the controllers
        parent = own.parent if own != root else own
        offered = _read(parent / "cgroup.subtree_control").split()
        if not {"pids", "memory"} <= set(offered):
            return "", f"{parent} does not hand pids and memory to its children"
        if _can_make(parent):
            return f"v2:{parent}", ""
        return "", f"{parent} is not writable by this user"
    found = []
    for controller in ("pids", "memory"):
        path = next((p for c, p in lines if controller in c.split(",")), None)
        home = root / controller / (path or "/").lstrip("/")
        if path is None or not home.is_dir():
            return "", f"the {controller} controller is not mounted"
        if not _can_make(home):
            return "", f"{home} is not writable by this user"
        found.append(f"{controller}={home}")
    return "v1:" + ",".join(found), ""


def _read(path: Path) -> str:
    try:
        return path.read_text()
    except OSError:
        return ""


def _can_make(folder: Path) -> bool:
    probe = folder / f"gpulab-probe-{uuid.uuid4().hex[:8]}"
    try:
        probe.mkdir()
    except OSError:
        return False
    with contextlib.suppress(OSError):
        probe.rmdir()
    return True


def from_env() -> Policy | None:
    """The policy the grader put in the environment, or None (a learner's own check)."""
    text = os.environ.get(ENV)
    return Policy.from_json(text) if text else None


class Sandboxed:
    """A process started by `spawn`, with its job cgroup; `close` ends and removes both."""

    def __init__(self, process: subprocess.Popen[bytes], cgroups: list[Path],
                 wrapped: bool = False) -> None:
        self.process = process
        self.cgroups = cgroups
        self.wrapped = wrapped      # started inside bubblewrap: the command is a grandchild

    @property
    def pid(self) -> int:
        return self.process.pid

    def close(self) -> None:
        """Kill the whole job: its process group, then anything left in its cgroups."""
        kill_group(self.process)
        _empty_and_remove(self.cgroups)
        self.cgroups = []


def kill_group(process: subprocess.Popen[bytes]) -> None:
    """End a process's whole process group (the learner's children too); close its stdin."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)
    with contextlib.suppress(subprocess.TimeoutExpired):
        process.wait(timeout=5)
    if process.stdin is not None:
        with contextlib.suppress(OSError):
            process.stdin.close()


def _empty_and_remove(folders: Sequence[Path]) -> None:
    """SIGKILL every process in each cgroup folder (a fork bomb's too), then remove it."""
    for folder in folders:
        for _ in range(100):
            pids = _read(folder / "cgroup.procs").split()
            if not pids:
                break
            for pid in pids:
                with contextlib.suppress(ProcessLookupError, PermissionError, ValueError):
                    os.kill(int(pid), signal.SIGKILL)
            time.sleep(0.02)
        with contextlib.suppress(OSError):
            folder.rmdir()


def spawn(argv: Sequence[str], *, env: dict[str, str], cwd: str,
          pass_fds: Sequence[int] = (), stdin: int | IO[Any] | None = subprocess.PIPE,
          stdout: int | IO[Any] | None = subprocess.DEVNULL,
          stderr: int | IO[Any] | None = subprocess.DEVNULL,
          gpu: bool = False, policy: Policy | None = None) -> Sandboxed:
    """Start `argv` in its own session -- sandboxed if a policy is in force, else as is.

    Either way its environment keeps NVLink multicast off (`gpulab.multicast`).
    """
    policy = policy if policy is not None else from_env()
    env = {**env, **NO_MULTICAST}
    if policy is None:
        process = subprocess.Popen(list(argv), stdin=stdin, stdout=stdout, stderr=stderr,
                                   pass_fds=tuple(pass_fds), cwd=cwd, env=env,
                                   start_new_session=True)
        return Sandboxed(process, [])
    cgroups = _make_cgroups(policy)
    command = list(argv)
    if policy.tag:
        env = {**env, "GPULAB_JOB": policy.tag}
    if policy.bubblewrap:
        bwrap = shutil.which("bwrap")
        if not bwrap:
            raise OSError("the grading policy asks for bubblewrap, which is not installed")
        scratch = SCRATCH
        env = {**env, "HOME": scratch, "TMPDIR": "/tmp", "CUPY_CACHE_DIR": f"{scratch}/.cupy"}
        command = [bwrap, *_bwrap_base(policy, scratch, gpu=gpu or policy.gpu), "--", *argv]
    limits = _rlimits(policy, gpu=gpu or policy.gpu)

    def prepare() -> None:           # in the child, before exec: join the cgroups, set limits
        for folder in cgroups:
            (folder / "cgroup.procs").write_text(str(os.getpid()))
        for which, value in limits:
            resource.setrlimit(which, (value, value))

    process = subprocess.Popen(command, stdin=stdin, stdout=stdout, stderr=stderr,
                               pass_fds=tuple(pass_fds), cwd=cwd, env=env,
                               start_new_session=True, preexec_fn=prepare)
    return Sandboxed(process, cgroups, wrapped=policy.bubblewrap)


def _rlimits(policy: Policy, *, gpu: bool) -> list[tuple[int, int]]:
    limits = [(resource.RLIMIT_CPU, policy.cpu_s), (resource.RLIMIT_FSIZE, policy.file_bytes),
              (resource.RLIMIT_NOFILE, policy.open_files), (resource.RLIMIT_CORE, 0)]
    if not gpu:
        limits.append((resource.RLIMIT_AS, policy.memory_bytes))
    if os.geteuid() != 0 and not policy.cgroup:
        # counts every process of this user: leave room for the ones already running
        running = sum(1 for p in Path("/proc").iterdir() if p.name.isdigit())
        limits.append((resource.RLIMIT_NPROC, running + policy.processes))
    return limits


def _make_cgroups(policy: Policy) -> list[Path]:
    if not policy.cgroup:
        return []
    version, _, where = policy.cgroup.partition(":")
    name = f"gpulab-job-{uuid.uuid4().hex[:12]}"
    made: list[Path] = []
    try:
        if version == "v2":
            folder = Path(where) / name
            folder.mkdir()
            made.append(folder)
            (folder / "pids.max").write_text(str(policy.processes))
            (folder / "memory.max").write_text(str(policy.memory_bytes))
            with contextlib.suppress(OSError):
                (folder / "memory.swap.max").write_text("0")
        else:
            for item in where.split(","):
                controller, _, home = item.partition("=")
                folder = Path(home) / name
                folder.mkdir()
                made.append(folder)
                if controller == "pids":
                    (folder / "pids.max").write_text(str(policy.processes))
                else:
                    (folder / "memory.limit_in_bytes").write_text(str(policy.memory_bytes))
    except OSError as exc:
        for folder in made:
            with contextlib.suppress(OSError):
                folder.rmdir()
        raise OSError(f"cannot make the job's cgroup: {exc}") from None
    return made


def run_cgroups(home: str, tag: str) -> str:
    """A cgroup for a whole run under `home` (as Policy.cgroup); jobs' cgroups go inside it.

    When a checks process is killed before it could remove its job's cgroup, the
    run's `remove_cgroups` still finds and removes it.
    """
    if not home:
        return ""
    version, _, where = home.partition(":")
    name = f"gpulab-run-{tag}"
    if version == "v2":
        folder = Path(where) / name
        folder.mkdir(exist_ok=True)
        (folder / "cgroup.subtree_control").write_text("+pids +memory")
        return f"v2:{folder}"
    parts = []
    for item in where.split(","):
        controller, _, parent = item.partition("=")
        folder = Path(parent) / name
        folder.mkdir(exist_ok=True)
        parts.append(f"{controller}={folder}")
    return "v1:" + ",".join(parts)


def remove_cgroups(spec: str) -> None:
    """Kill whatever is left in a run's cgroups, and remove them with their jobs' cgroups."""
    if not spec:
        return
    version, _, where = spec.partition(":")
    tops = [Path(where)] if version == "v2" else \
        [Path(item.partition("=")[2]) for item in where.split(",")]
    for top in tops:
        jobs = sorted((p for p in top.glob("gpulab-job-*") if p.is_dir()), key=str)
        _empty_and_remove([*jobs, top])


def worker_pid(outer: int, marker: str) -> int | None:
    """The pid, as this process sees it, of the descendant of `outer` running `marker`.

    Inside bubblewrap the worker is a grandchild of the process `spawn` started;
    a check that inspects the learner's process (its namespaces, cgroup, CPU
    affinity) needs the worker itself.
    """
    seen = [outer]
    found: int | None = None
    for _ in range(2000):
        if not seen:
            break
        pid = seen.pop(0)
        with contextlib.suppress(OSError):
            if marker.encode() in Path(f"/proc/{pid}/cmdline").read_bytes():
                found = pid          # the deepest one wins: bwrap's own command line names it too
            for task in Path(f"/proc/{pid}/task").iterdir():
                with contextlib.suppress(OSError):
                    seen.extend(int(c) for c in (task / "children").read_text().split())
    return found


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
        fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
        if fields.get("NSpid", "").split()[-1:] == ["1"]:
            return current
        current = int(fields.get("PPid", "0").strip() or 0)
    return None
