"""The sandbox a grading run puts around learner code: bubblewrap, rlimits, cgroups.

`spawn` starts a command in it and returns the job's `Sandboxed` handle;
`available` says which guards this machine offers (`Guards`) and proves that the
sandbox holds; `Policy` is what a job may use, handed to the checks process in
the environment (`ENV`, `from_env`). The modules:

- `bubblewrap`: `spawn`, the environment a job keeps (`kept_env`), the command
  line bubblewrap is given, the rlimits;
- `guards`: `available`, which guards this machine offers (the sandbox proven to
  hold), and `refusal`, why a run without them is refused;
- `policy`: `Policy` and `Guards`;
- `view`: what a job sees, a file system built from an allowlist;
- `proof`: the probe that tries each way out of a sandbox before it is trusted;
- `seccomp`: the job's own session keyring and its system-call filter;
- `jobtime`: a job's time as its limits count it, its own (CPU time, and wall time
  not spent waiting for a CPU), not the machine's: applied by the checks' runner and
  the learner's handle, and read by the guards (`waits_known`);
- `jail`: the launcher between the grader and bubblewrap (``python -m
  gpulab.grading.sandbox.jail``): cgroups, rlimits, a dedicated uid;
- `job`: the handle of a started job (`Sandboxed`, `kill_group`, `pid_one`);
- `cgroups`: one cgroup per run and one per job, removed when done.

The rule of this package: it imports the standard library only, and of gpulab
nothing but `gpulab.multicast`, `gpulab.environment` (the names of its variables)
and the package's own location (the view shows it to the job); ``pyproject.toml``'s
import contracts hold it to that. So the launcher and a learner's worker, which
import `jail`, and a grader run under the system's Python as an unprivileged user,
load nothing else.

The names below are resolved on first use, not when the package is imported:
the launcher (started for every job) and the learner's worker import `jail`
alone, and load no other module of the sandbox.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from gpulab.grading.sandbox.bubblewrap import KEPT_ENV, SPAWNER, job_uid, kept_env, spawn
    from gpulab.grading.sandbox.cgroups import remove_cgroups, remove_stale_cgroups, run_cgroups
    from gpulab.grading.sandbox.guards import available, refusal
    from gpulab.grading.sandbox.job import Sandboxed, kill_group, pid_one
    from gpulab.grading.sandbox.policy import ENV, Guards, Policy, from_env

__all__ = [
    "ENV",
    "KEPT_ENV",
    "SPAWNER",
    "Guards",
    "Policy",
    "Sandboxed",
    "available",
    "from_env",
    "job_uid",
    "kept_env",
    "kill_group",
    "pid_one",
    "refusal",
    "remove_cgroups",
    "remove_stale_cgroups",
    "run_cgroups",
    "spawn",
]

_HOMES = {
    "KEPT_ENV": "bubblewrap",
    "SPAWNER": "bubblewrap",
    "job_uid": "bubblewrap",
    "kept_env": "bubblewrap",
    "spawn": "bubblewrap",
    "remove_cgroups": "cgroups",
    "remove_stale_cgroups": "cgroups",
    "run_cgroups": "cgroups",
    "available": "guards",
    "refusal": "guards",
    "Sandboxed": "job",
    "kill_group": "job",
    "pid_one": "job",
    "ENV": "policy",
    "Guards": "policy",
    "Policy": "policy",
    "from_env": "policy",
}


def __getattr__(name: str) -> object:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{home}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
