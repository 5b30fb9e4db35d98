"""The seccomp filter and the fresh session keyring every sandboxed job starts with.

The kernel's keyrings belong to no namespace: a process that inherits a
session keyring possesses it, and every key in it, whatever uid or namespaces
it moves to. A grader started from a login shell (pam_keyinit: a console
login, ``su -``, ssh on RHEL-family systems) has one, so without this module
every job would read the instructor's keys, plant keys that outlive the run,
and pass data to a later learner's job through it (the red team's H2).

`entered` wraps a job's command in a short Python program (`_ENTER`) that is
the first thing to run inside the sandbox, in the process that becomes the job.
It

1. sets the limits the kernel counts per user (`PER_USER`: processes, pending
   signals) here, inside the sandbox's own user namespace, where it counts only
   this job's;
2. joins a fresh, empty, anonymous session keyring
   (``keyctl(KEYCTL_JOIN_SESSION_KEYRING, NULL)``), so the job possesses none
   of the grader's keyrings; it stops the job if that fails (on a kernel with
   keyrings: one without has none to share);
3. installs a seccomp filter (`program`) that refuses, with ``EPERM``, every
   system call in `REFUSED` (and, for a CPU job, `REFUSED_CPU`): the keyring
   calls (so no keyring at all can be reached, the grader's user keyrings
   included), and the calls learner code (Python, NumPy, CuPy, NVRTC, NVML)
   never makes, each a door into the kernel, to other processes, or to a count
   the kernel keeps per user or per session. Any other system call is allowed,
   and a call made through another architecture's convention (32-bit x86 or
   ARM, x32) kills the job;
4. execs the job's command.

Three principles decide what is refused beyond the doors:

- **every per-user kernel quota is the job's own, or refused.** The kernel
  counts some things per uid: a job of a root grader has a uid of its own, but
  an ordinary grader's jobs run as the grader's uid, so one job could take the
  quota of the grader and of every other job (the red team's H6: inotify).
  Processes and pending signals are limited per job (step 1: the kernel counts
  them per user namespace too); inotify, fanotify, POSIX message queues
  (``RLIMIT_MSGQUEUE``) and the keyrings' quotas have no limit a job's launcher
  can set, and are refused. What is left is bounded by the job's open files and
  processes (epoll watches, pipe buffers; `gpulab.grading.sandbox.policy` says so);
- **a job is one session**: bubblewrap gives it a session of its own, and
  ``setsid`` is refused. Where the kernel's autogroup scheduler is on, a
  session is one scheduling group with one fair share of the CPU, so a job
  that starts 60 processes still has one share, not 60 (the red team's H3);
- **memory a CPU job holds is in an address space or a capped tmpfs**: with no
  cgroup, the only memory limit is each process's address space
  (``RLIMIT_AS``), so the ways to hold memory outside any address space,
  ``memfd_create`` and SysV shared memory (``shmget``), are refused (the red
  team's H5: 3 GiB held in memfds). A GPU job has no address-space limit
  (CUDA reserves more than it uses) and the CUDA driver needs
  ``memfd_create``: it gets neither refusal.

Under bubblewrap the job's ``/proc/keys`` and ``/proc/key-users`` are empty
(`keys_hidden`): a job that runs as the grader's own uid (an ordinary user
grading) would otherwise see the names of the grader's keys there.

The filter is classic BPF, written here byte by byte (no libseccomp), for the
processors gpulab grades on: x86-64 and AArch64 (`ARCHES`). `problem` says why
there is no filter on any other. Like the sandbox, this module imports the
standard library only.
"""

from __future__ import annotations

import os
import platform
import struct
import sys
from dataclasses import dataclass

__all__ = [
    "ARCHES",
    "KEYS_VIEW",
    "PER_USER",
    "REFUSED",
    "REFUSED_CPU",
    "Arch",
    "arch",
    "entered",
    "keys_hidden",
    "problem",
    "program",
    "refused_calls",
]

REFUSED: dict[str, tuple[str, ...]] = {
    "the kernel's keyrings": ("add_key", "request_key", "keyctl"),
    "kernel interfaces learner code never needs": (
        "bpf",
        "perf_event_open",
        "userfaultfd",
        "io_uring_setup",
        "io_uring_enter",
        "io_uring_register",
        "open_by_handle_at",
        "name_to_handle_at",
    ),
    "per-user quotas a job would share with the grader": (
        "inotify_init",
        "inotify_init1",
        "fanotify_init",
        "fanotify_mark",
        "mq_open",
    ),
    "a session of its own (the scheduler's group)": ("setsid",),
    "other processes' memory and files": (
        "ptrace",
        "process_vm_readv",
        "process_vm_writev",
        "process_madvise",
        "pidfd_getfd",
        "kcmp",
    ),
    "mounts and namespaces": (
        "mount",
        "umount2",
        "pivot_root",
        "chroot",
        "open_tree",
        "open_tree_attr",
        "move_mount",
        "fsopen",
        "fsconfig",
        "fsmount",
        "fspick",
        "mount_setattr",
        "unshare",
        "setns",
    ),
    "the machine's administration": (
        "kexec_load",
        "kexec_file_load",
        "init_module",
        "finit_module",
        "delete_module",
        "reboot",
        "swapon",
        "swapoff",
        "acct",
        "quotactl",
        "quotactl_fd",
        "syslog",
        "settimeofday",
        "clock_settime",
        "sethostname",
        "setdomainname",
        "vhangup",
    ),
    "x86 port and descriptor-table access": ("iopl", "ioperm", "modify_ldt", "uselib"),
}
"""The system calls a job may not make, by what they reach. The mount calls and ``unshare``
need privileges the job has not got anyway; they are refused all the same."""

REFUSED_CPU: dict[str, tuple[str, ...]] = {
    "memory outside any address space": ("memfd_create", "shmget"),
}
"""Refused to CPU jobs only: with ``RLIMIT_AS`` the limit of a process's memory, memory held in
a memfd or a SysV segment that no process maps counts against nothing. A GPU job keeps them
(the CUDA driver makes a memfd as it starts)."""

PER_USER = {"processes": "RLIMIT_NPROC", "pending signals": "RLIMIT_SIGPENDING"}
"""The limits of counts the kernel keeps per user, set inside the job's user namespace, where
the count is the job's alone (`entered`)."""

# System call numbers. x86-64: the kernel's arch/x86/entry/syscalls/syscall_64.tbl (as
# <asm/unistd_64.h>); AArch64: include/uapi/asm-generic/unistd.h, which arm64 uses. Numbers
# from 424 up are the same on every architecture. open_tree_attr (467) is Linux 6.15's.
# AArch64 has no inotify_init (only inotify_init1) and no x86 port calls.
_X86_64 = {
    "add_key": 248, "request_key": 249, "keyctl": 250, "bpf": 321, "perf_event_open": 298,
    "userfaultfd": 323, "io_uring_setup": 425, "io_uring_enter": 426, "io_uring_register": 427,
    "fanotify_init": 300, "fanotify_mark": 301, "open_by_handle_at": 304,
    "name_to_handle_at": 303, "ptrace": 101, "process_vm_readv": 310, "process_vm_writev": 311,
    "process_madvise": 440, "pidfd_getfd": 438, "kcmp": 312, "mount": 165, "umount2": 166,
    "pivot_root": 155, "chroot": 161, "open_tree": 428, "open_tree_attr": 467,
    "move_mount": 429, "fsopen": 430, "fsconfig": 431, "fsmount": 432, "fspick": 433,
    "mount_setattr": 442, "unshare": 272, "setns": 308, "kexec_load": 246,
    "kexec_file_load": 320, "init_module": 175, "finit_module": 313, "delete_module": 176,
    "reboot": 169, "swapon": 167, "swapoff": 168, "acct": 163, "quotactl": 179,
    "quotactl_fd": 443, "syslog": 103, "settimeofday": 164, "clock_settime": 227,
    "sethostname": 170, "setdomainname": 171, "vhangup": 153, "iopl": 172, "ioperm": 173,
    "modify_ldt": 154, "uselib": 134, "inotify_init": 253, "inotify_init1": 294,
    "mq_open": 240, "setsid": 112, "memfd_create": 319, "shmget": 29,
}  # fmt: skip
_AARCH64 = {
    "add_key": 217, "request_key": 218, "keyctl": 219, "bpf": 280, "perf_event_open": 241,
    "userfaultfd": 282, "io_uring_setup": 425, "io_uring_enter": 426, "io_uring_register": 427,
    "fanotify_init": 262, "fanotify_mark": 263, "open_by_handle_at": 265,
    "name_to_handle_at": 264, "ptrace": 117, "process_vm_readv": 270, "process_vm_writev": 271,
    "process_madvise": 440, "pidfd_getfd": 438, "kcmp": 272, "mount": 40, "umount2": 39,
    "pivot_root": 41, "chroot": 51, "open_tree": 428, "open_tree_attr": 467,
    "move_mount": 429, "fsopen": 430, "fsconfig": 431, "fsmount": 432, "fspick": 433,
    "mount_setattr": 442, "unshare": 97, "setns": 268, "kexec_load": 104,
    "kexec_file_load": 294, "init_module": 105, "finit_module": 273, "delete_module": 106,
    "reboot": 142, "swapon": 224, "swapoff": 225, "acct": 89, "quotactl": 60,
    "quotactl_fd": 443, "syslog": 116, "settimeofday": 170, "clock_settime": 112,
    "sethostname": 161, "setdomainname": 162, "vhangup": 58, "inotify_init1": 26,
    "mq_open": 180, "setsid": 157, "memfd_create": 279, "shmget": 194,
}  # fmt: skip


@dataclass(frozen=True)
class Arch:
    """A processor's system call convention, as a seccomp filter sees it."""

    name: str
    audit: int  # AUDIT_ARCH_* (include/uapi/linux/audit.h): seccomp_data.arch
    numbers: dict[str, int]  # the system call numbers of this convention
    foreign_bit: int = 0  # numbers with this bit set belong to another ABI (x32)


ARCHES = {
    "x86_64": Arch("x86_64", 0xC000003E, _X86_64, foreign_bit=0x40000000),
    "aarch64": Arch("aarch64", 0xC00000B7, _AARCH64),
}
"""The processors with a filter, by `platform.machine()`'s name."""
_ALIASES = {"amd64": "x86_64", "arm64": "aarch64"}

# Classic BPF (include/uapi/linux/filter.h, bpf_common.h) and seccomp's return values
# (include/uapi/linux/seccomp.h). seccomp_data: int nr at 0, u32 arch at 4.
LD_ABS_W, JEQ_K, JGE_K, RET_K = 0x20, 0x15, 0x35, 0x06
NR_AT, ARCH_AT = 0, 4
RET_KILL_PROCESS, RET_ERRNO, RET_ALLOW = 0x80000000, 0x00050000, 0x7FFF0000
EPERM = 1
INSTRUCTION = struct.Struct("=HBBI")  # struct sock_filter: code, jt, jf, k


def arch(machine: str = "") -> Arch | None:
    """The convention of `machine` (default: this one), or None where gpulab has no filter."""
    name = (machine or platform.machine()).lower()
    return ARCHES.get(_ALIASES.get(name, name))


def problem(machine: str = "") -> str:
    """Why jobs on `machine` (default: this one) get no filter; "" where they get one."""
    if arch(machine) is not None:
        return ""
    name = machine or platform.machine() or "unknown"
    return (
        f"gpulab has no seccomp filter for this processor ({name}), only for "
        f"{' and '.join(ARCHES)}: its jobs could reach the kernel's keyrings"
    )


def refused_calls(*, gpu: bool = False) -> dict[str, tuple[str, ...]]:
    """The refused calls, by what they reach, of a CPU job or (`gpu`) a GPU job."""
    return {**REFUSED, **({} if gpu else REFUSED_CPU)}


def program(convention: Arch, *, gpu: bool = False) -> bytes:
    """The filter for `convention`, as the kernel takes it: ``struct sock_filter[]``; a CPU
    job's, or (`gpu`) a GPU job's.

    Load the architecture; kill on any other. Load the call's number; kill on a foreign ABI's
    bit (x32). Compare it with each refused call's number: ``EPERM`` on a match. Else allow."""
    names = {name for group in refused_calls(gpu=gpu).values() for name in group}
    refused = sorted(convention.numbers[name] for name in names if name in convention.numbers)
    head: list[tuple[int, str, str, int]] = [  # (code, jump if true, jump if false, k)
        (LD_ABS_W, "", "", ARCH_AT),
        (JEQ_K, "", "kill", convention.audit),
        (LD_ABS_W, "", "", NR_AT),
    ]
    if convention.foreign_bit:
        head.append((JGE_K, "kill", "", convention.foreign_bit))
    body = [(JEQ_K, "errno", "", number) for number in refused]
    tail = [(RET_K, "", "", RET_ALLOW), (RET_K, "", "", RET_ERRNO | EPERM)]
    tail.append((RET_K, "", "", RET_KILL_PROCESS))
    steps = head + body + tail
    where = {"errno": len(steps) - 2, "kill": len(steps) - 1}
    out = bytearray()
    for at, (code, true, false, k) in enumerate(steps):
        jumps = [where[label] - at - 1 if label else 0 for label in (true, false)]
        if not all(0 <= jump <= 255 for jump in jumps):
            raise ValueError("seccomp filter: a jump is out of classic BPF's reach")
        out += INSTRUCTION.pack(code, jumps[0], jumps[1], k)
    return bytes(out)


# The job's first program, run inside the sandbox with the grader's Python (-I -S: nothing of
# the environment's is imported). argv: the limits to set ("resource=value,...", or "-"),
# keyctl's number, the filter in hex, the job's command. A failure is one line on stderr and
# exit status 125, before the job runs.
_ENTER = r"""
import ctypes, errno, os, resource, sys
limits, keyctl, code, command = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4:]
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
def stop(what, number=None):
    number = ctypes.get_errno() if number is None else number
    sys.stderr.write("gpulab sandbox: " + what + ": " + os.strerror(number) + "\n")
    sys.stderr.flush()
    os._exit(125)
for item in limits.split(",") if limits != "-" else ():
    which, value = (int(part) for part in item.split("="))
    resource.setrlimit(which, (value, value))
JOIN_SESSION_KEYRING = 1  # keyctl's operation; a NULL name: a new, anonymous keyring
joined = libc.syscall(ctypes.c_long(keyctl), ctypes.c_long(JOIN_SESSION_KEYRING), None)
if joined < 0 and ctypes.get_errno() != errno.ENOSYS:  # ENOSYS: a kernel without keyrings
    stop("the job could not join a session keyring of its own")
class Program(ctypes.Structure):  # struct sock_fprog
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]
data = bytes.fromhex(code)
raw = ctypes.create_string_buffer(data, len(data))
PR_SET_SECCOMP, SECCOMP_MODE_FILTER = 22, 2
prog = Program(len(data) // 8, ctypes.addressof(raw))
if libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.byref(prog), 0, 0) != 0:
    stop("the job's seccomp filter could not be installed")
try:
    os.execv(command[0], command)
except OSError as exc:
    stop("cannot run " + command[0], exc.errno)
"""


KEYS_VIEW = ("/proc/keys", "/proc/key-users")
"""The kernel's lists of keys and of their owners, which bubblewrap's /proc shows: each job sees
them empty, so the names of the grader's keys are not on view (as in Docker's default)."""


def keys_hidden() -> list[str]:
    """bubblewrap's arguments that show each of `KEYS_VIEW` empty (those this kernel has)."""
    hidden = [path for path in KEYS_VIEW if os.path.exists(path)]
    return [arg for path in hidden for arg in ("--dev-bind", "/dev/null", path)]


def entered(
    command: list[str], *, limits: dict[int, int] | None = None, gpu: bool = False
) -> list[str]:
    """`command`, started through `_ENTER`: with `limits` (``resource.RLIMIT_*``: value) set
    inside, a session keyring of its own and a CPU job's seccomp filter, or a GPU job's
    (`gpu`). OSError on a processor without one."""
    convention = arch()
    if convention is None:
        raise OSError(problem())
    filter_hex = program(convention, gpu=gpu).hex()
    keyctl = str(convention.numbers["keyctl"])
    said = ",".join(f"{which}={value}" for which, value in (limits or {}).items()) or "-"
    return [sys.executable, "-I", "-S", "-c", _ENTER, said, keyctl, filter_hex, *command]
