"""Which of the sandbox's guards work on this machine, and why a run without them is refused.

`available()` says which guards work here (its `Guards`, which also say what
this machine cannot guarantee: a fair CPU share, a memory limit, per-user
counts of the job's own), and proves the sandbox holds by trying, from inside
it, to unmount, remount, read outside the view and keep a privilege
(`gpulab.grading.sandbox.proof`, its probe started through
`gpulab.grading.sandbox.spawn` exactly as a job is): where any works it refuses
to grade. The grader records the guards in the gradebook and the feedback, and
refuses to grade without bubblewrap unless told ``--unsafe``; `refusal` says
why, and what to do about it.
"""

from __future__ import annotations

import functools
import os
import shutil

from gpulab.grading.sandbox.bubblewrap import spawn
from gpulab.grading.sandbox.cgroups import autogroup_problem, cgroup_home, cpu_weighted
from gpulab.grading.sandbox.jobtime import waits_known
from gpulab.grading.sandbox.policy import Guards, Policy
from gpulab.grading.sandbox.proof import prove
from gpulab.grading.sandbox.seccomp import problem as seccomp_problem

__all__ = ["available", "refusal"]

INSTALL = "Debian, Ubuntu: apt install bubblewrap; Fedora, RHEL: dnf install bubblewrap"


@functools.lru_cache(maxsize=1)
def available() -> Guards:
    """Which guards work on this machine (tried for real, once per process)."""
    bwrap = shutil.which("bwrap") or ""
    problem = ""
    if not bwrap:
        problem = f"bubblewrap is not installed ({INSTALL})"
    else:
        problem = seccomp_problem() or prove(Policy(), spawn)  # the probe starts through `spawn`
        if problem:
            bwrap = ""
    cgroup, cgroup_problem = cgroup_home()
    return Guards(
        bubblewrap=bwrap,
        bubblewrap_problem=problem,
        cgroup=cgroup,
        cgroup_problem=cgroup_problem,
        drops_uid=os.geteuid() == 0,
        seccomp=not seccomp_problem(),
        cpu_cgroup=cpu_weighted(cgroup),
        autogroup=autogroup_problem(),
        waits=waits_known(),
    )


def refusal(guards: Guards, doing: str = "grade") -> str:
    """Why a run that would `doing` (grade, serve) without a sandbox is refused, and what to do
    about it: where bubblewrap is installed, what it could not do here and how to fix that
    (never --unsafe); where it is not, install it, or --unsafe."""
    why = (
        f"refusing to {doing}: no guard can hide the course and the other learners' files "
        "from learner code"
    )
    if shutil.which("bwrap") is None:
        return (
            f"{why}: bubblewrap is not installed. Install it ({INSTALL}), or pass --unsafe "
            f"to {doing} without it."
        )
    return f"{why}: {guards.bubblewrap_problem or 'bubblewrap was not used'}"
