"""The proof that the sandbox holds on this machine: a probe inside one tries each way out.

`gpulab.grading.sandbox.available` calls `prove` once per process, before it
offers bubblewrap as a guard. The probe is a small Python program started
through `spawn` exactly as a job is, under the policy `prove` is given (the
default `Policy`) with one more private folder, which holds a file of the
probe's own. From inside, it tries to unmount ``/tmp``, remount ``/`` and
write under ``/usr``, and reports its uid, its effective capabilities and
which of that file and of `OUT_OF_VIEW` it can see. Should any of these work,
or the sandbox not start, `prove` says so in words: bubblewrap is then not
offered (`Guards.bubblewrap_problem` holds the words) and the grader refuses
to grade without ``--unsafe``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path

from gpulab.grading.sandbox_job import Sandboxed
from gpulab.grading.sandbox_policy import Policy

__all__ = ["OUT_OF_VIEW", "prove"]

# Run inside a sandbox: each way out, and what it gave.
_PROBE = r"""
import ctypes, json, os, sys
libc = ctypes.CDLL(None, use_errno=True)
def tried(name, call):
    try:
        return "worked" if call() == 0 else os.strerror(ctypes.get_errno())
    except OSError as exc:
        return exc.strerror or str(exc)
caps = [l.split()[1] for l in open("/proc/self/status") if l.startswith("CapEff")][0]
found = {"uid": os.getuid(), "groups": os.getgroups(), "caps": caps,
         "umount": tried("umount", lambda: libc.umount2(b"/tmp", 2)),
         "remount": tried("remount", lambda: libc.mount(None, b"/", None, 32 | 4096, None)),
         "write": tried("write", lambda: os.close(os.open("/usr/.gpulab-probe",
                                                          os.O_CREAT | os.O_WRONLY)) or 0),
         "seen": [p for p in sys.argv[1:] if os.path.lexists(p)]}
print(json.dumps(found))
"""
OUT_OF_VIEW = ("/etc/shadow", "/etc/passwd", "/run", "/var", "/srv", "/mnt", "/home")
"""Paths a sandbox must not show, whatever the machine (besides a private file of the probe's)."""


def prove(policy: Policy, spawn: Callable[..., Sandboxed]) -> str:
    """ "" when a sandbox holds here; else why not (it could not start, or let a probe out).

    `spawn` is `gpulab.grading.sandbox.spawn`, given by the caller: the sandbox module calls
    this one, so this one does not import it back."""
    with tempfile.TemporaryDirectory(prefix="gpulab-probe-") as private:
        secret = Path(private, "secret")
        secret.write_text("the sandbox must not show this")
        policy = Policy(**{**asdict(policy), "private": (*policy.private, private)})
        try:
            job = spawn(
                [sys.executable, "-I", "-c", _PROBE, str(secret), *OUT_OF_VIEW],
                env=dict(os.environ),
                cwd="/",
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                policy=policy,
            )
        except OSError as exc:
            return f"bubblewrap cannot make a sandbox here: {exc}"
        try:
            out, err = job.process.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            return "bubblewrap did not start a sandbox within 60 s"
        finally:
            job.close()
    try:
        seen = json.loads(out.decode().strip().splitlines()[-1])
    except (ValueError, IndexError):
        last = (err.decode(errors="replace").strip().splitlines() or ["(no message)"])[-1]
        return f"bubblewrap cannot make a sandbox here: {last}"
    escapes = [name for name in ("umount", "remount", "write") if seen.get(name) == "worked"]
    if seen.get("uid") == 0:
        escapes.append("it ran as root")
    if seen.get("caps", "0").strip("0"):
        escapes.append(f"it kept capabilities {seen.get('caps')}")
    if seen.get("seen"):
        escapes.append(f"it saw {', '.join(map(str, seen['seen']))}")
    if escapes:
        return "the sandbox does not hold here: from inside it, " + ", ".join(escapes)
    return ""
