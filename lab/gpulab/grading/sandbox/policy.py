"""The sandbox's policy, as the grader hands it over, and the guards a machine offers.

A grading run describes the sandbox around learner code as a `Policy`; it
travels to the checks process as JSON in the environment variable
``GPULAB_SANDBOX`` (`ENV`; `from_env` reads it back), and
`gpulab.grading.sandbox.spawn` applies it. `Guards` are the guards
`gpulab.grading.sandbox.available` found on this machine; they describe, for
the gradebook and the feedback, those in force for a policy, and, in lines that
begin "no " (`unguaranteed`), what this machine cannot guarantee a job: a fair
CPU share, a memory limit, per-user counts of its own. Like the sandbox, this
module imports the standard library only.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, fields

from gpulab.environment import SANDBOX
from gpulab.grading.sandbox.jobtime import PATIENCE
from gpulab.grading.sandbox.seccomp import refused_calls

__all__ = ["ENV", "Guards", "MiB", "Policy", "from_env", "unguaranteed"]

ENV = SANDBOX.name
MiB = 2**20


@dataclass(frozen=True)
class Policy:
    """What a sandboxed job may use, and what it must not see."""

    cpu_s: int = 120  # CPU seconds (RLIMIT_CPU)
    memory_bytes: int = 2048 * MiB  # address space (CPU jobs) and cgroup memory
    processes: int = 64  # cgroup pids.max, or RLIMIT_NPROC when not root
    file_bytes: int = 64 * MiB  # largest file it may write (RLIMIT_FSIZE)
    open_files: int = 256
    scratch_bytes: int = 128 * MiB  # size of its tmpfs working folder and of /tmp
    show: tuple[str, ...] = ()  # course folders it may read (lessons, released exercises)
    private: tuple[str, ...] = ()  # what no folder it sees may hold (solutions, submissions,
    # the grading output)
    bubblewrap: bool = True  # False only with --unsafe on a machine without it
    cgroup: str = ""  # "v2:<folder>", "v1:<ctl>=<folder>,..." or ""
    gpu: bool = False  # give it the NVIDIA device files
    tag: str = ""  # the run's name, in every job's GPULAB_JOB variable

    # The sandbox imports the standard library only (a grader may run it as another user
    # with the system's Python, tests/grading/test_sandbox_attacks.py), so no msgspec here.
    def to_json(self) -> str:
        return json.dumps(asdict(self))

    @classmethod
    def from_json(cls, text: str) -> Policy:
        """The policy `to_json` wrote; ValueError naming a field of the wrong type."""
        data = json.loads(text)
        kinds = {f.name: f.type for f in fields(cls)}
        data = {key: value for key, value in data.items() if key in kinds}
        for key in ("show", "private"):
            data[key] = tuple(data.get(key, ()))
        for key, value in data.items():
            wanted = {"int": int, "bool": bool, "str": str}.get(str(kinds[key]))
            if wanted is not None and (type(value) is not wanted):
                raise ValueError(f"sandbox policy: {key} should be {kinds[key]}, not {value!r}")
        return cls(**data)


@dataclass(frozen=True)
class Guards:
    """The guards this machine offers, as found by `available`."""

    bubblewrap: str = ""  # the bwrap path where it works, else ""
    bubblewrap_problem: str = ""
    cgroup: str = ""  # as Policy.cgroup: where job cgroups may be made
    cgroup_problem: str = ""
    drops_uid: bool = False  # the grader is root: jobs run as a uid of their own
    seccomp: bool = False  # jobs get a keyring of their own and the seccomp filter
    cpu_cgroup: bool = False  # the cgroup home hands out the cpu controller: a weight per job
    autogroup: str = "not looked for"  # why the kernel's autogroup gives no share per job ("")
    waits: bool = False  # the kernel reports how long a process waited for a CPU

    def describe(self, policy: Policy) -> tuple[str, ...]:
        """The guards in force for `policy`, one line each, for the gradebook and feedback."""
        lines = []
        if policy.bubblewrap and self.bubblewrap:
            who = "a uid of the job's own, no groups" if self.drops_uid else "the grader's uid"
            lines.append(
                f"bubblewrap: {who}, no capabilities, no new privileges; a view of "
                "the machine by allowlist (system libraries, Python, gpulab, the "
                "public course; no course answers, submissions, gradebook, home or "
                f"sockets); a private tmpfs ({policy.scratch_bytes // MiB} MiB) as "
                "working folder and /tmp; own user, PID, IPC, UTS and network "
                "namespaces (no network)"
            )
        else:
            lines.append(
                "no file-system isolation (--unsafe): learner code sees this "
                "machine's files as the grader does"
            )
        if self.seccomp:
            refused = refused_calls(gpu=policy.gpu)
            lines.append(
                "seccomp: a session keyring of the job's own; refused (EPERM): "
                + ", ".join(refused)
                + f" ({sum(len(names) for names in refused.values())} system calls)"
            )
        limits = [
            f"CPU {policy.cpu_s} s",
            f"file size {policy.file_bytes // MiB} MiB",
            f"open files {policy.open_files}",
            "no core files",
        ]
        if not policy.gpu:
            limits.insert(1, f"address space {policy.memory_bytes // MiB} MiB")
        if policy.bubblewrap and self.bubblewrap:
            limits.append(f"processes {policy.processes} and pending signals (the job's own)")
        lines.append("rlimits: " + ", ".join(limits))
        if policy.cgroup:
            version = policy.cgroup.split(":", 1)[0]
            lines.append(
                f"cgroup {version}: at most {policy.processes} processes, "
                f"memory {policy.memory_bytes // MiB} MiB"
                + (", an equal CPU weight" if self.cpu_cgroup else "")
            )
        if not (policy.cgroup and self.cpu_cgroup) and not self.autogroup and self.seccomp:
            lines.append(
                "CPU: a scheduling group per job (the kernel's autogroup: a job is one "
                "session, setsid refused), so its processes share one job's share"
            )
        return (*lines, *self._not_guaranteed(policy), self._time())

    def _time(self) -> str:
        if not self.waits:
            return (
                "time limits: CPU time and the wall clock (this kernel does not say how long "
                "a process waited for a CPU)"
            )
        return (
            "time limits: the job's own time (its CPU time, and the wall time it did not "
            f"wait for a CPU); a job kept waiting {PATIENCE:g} times its limit is not graded "
            "(not-run), never timed out"
        )

    def _not_guaranteed(self, policy: Policy) -> list[str]:
        """What this machine cannot guarantee per job, each line beginning "no "."""
        isolated = policy.bubblewrap and self.bubblewrap
        out = []
        if not (policy.cgroup and self.cpu_cgroup) and (self.autogroup or not self.seccomp):
            why = self.autogroup or "no seccomp filter refuses setsid"
            out.append(
                f"no fair CPU share per job ({why}; no cpu cgroup): a job's processes "
                "compete with other jobs' one by one, and a job of many slows its neighbours"
            )
        if not policy.cgroup:
            if policy.gpu:
                held = "a GPU job has no address-space limit (CUDA reserves more than it uses)"
            else:
                held = (
                    f"each process at most {policy.memory_bytes // MiB} MiB of address space, "
                    f"at most {policy.processes} processes"
                    + ("; memfd and SysV shared memory refused" if self.seccomp else "")
                    + "; kernel memory (socket and pipe buffers) unbounded"
                )
            out.append(f"no memory limit per job (no cgroup): {held}")
        if isolated and not self.drops_uid:
            out.append(
                "no uid of the job's own (the grader is not root): the kernel's per-user "
                "counts without a limit of their own (epoll watches, pipe buffers) are "
                "shared with the grader, bounded by the job's processes and open files"
            )
        return out


def unguaranteed(line: str) -> bool:
    """Whether a line of `Guards.describe` says what this machine cannot guarantee."""
    return line.removeprefix("GPU jobs: ").startswith("no ")


def from_env() -> Policy | None:
    """The policy the grader put in the environment, or None (a learner's own check)."""
    text = os.environ.get(ENV)
    return Policy.from_json(text) if text else None
