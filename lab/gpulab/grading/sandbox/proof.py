"""The proof that the sandbox holds on this machine: a probe inside one tries each way out.

`gpulab.grading.sandbox.available` calls `prove` once per process, before it
offers bubblewrap as a guard. The probe is a small Python program started
through `spawn` exactly as a job is, under the policy `prove` is given (the
default `Policy`) with a folder of the probe's own shown and one kept private.
From inside, it tries to unmount ``/tmp``, remount ``/`` and write under
``/usr``, and reports its uid, its effective capabilities, and what it sees:

- the view is proven by its content, not by which paths exist: every folder
  bubblewrap had to make on the way to a shown path (``/``, ``/usr``, and
  ``/home`` and ``/home/alice`` for a course in ``/home/alice/course``) must
  hold nothing but the way on to what the view shows (`View.places`), so an
  empty ``/home`` that leads to the venv is right, and a file beside the venv
  is not;
- a file planted in the private folder, and one planted beside the shown
  folder, must not be there; the file in the shown folder must be.

Should any of this fail, or the sandbox not start, `prove` says in words what
bubblewrap could not do here and how to fix it: bubblewrap is then not offered
(`Guards.bubblewrap_problem` holds the words) and the grader refuses to grade.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path

from gpulab.grading.sandbox.job import Sandboxed
from gpulab.grading.sandbox.policy import Policy
from gpulab.grading.sandbox.view import MOUNTS, shown_paths

__all__ = ["expected_listings", "prove"]

# Run inside a sandbox: each way out and what it gave; what it sees of the paths it is given.
_PROBE = r"""
import ctypes, json, os, sys
spec = json.loads(sys.argv[1])
libc = ctypes.CDLL(None, use_errno=True)
def tried(call):
    try:
        return "worked" if call() == 0 else os.strerror(ctypes.get_errno())
    except OSError as exc:
        return exc.strerror or str(exc)
def listing(folder):
    try:
        return sorted(os.listdir(folder))
    except OSError as exc:
        return "cannot list: " + (exc.strerror or str(exc))
def read(path):
    try:
        with open(path) as handle:
            return handle.read()
    except OSError as exc:
        return "cannot read: " + (exc.strerror or str(exc))
caps = [l.split()[1] for l in open("/proc/self/status") if l.startswith("CapEff")][0]
found = {"uid": os.getuid(), "groups": os.getgroups(), "caps": caps,
         "umount": tried(lambda: libc.umount2(b"/tmp", 2)),
         "remount": tried(lambda: libc.mount(None, b"/", None, 32 | 4096, None)),
         "write": tried(lambda: os.close(os.open("/usr/.gpulab-probe",
                                                 os.O_CREAT | os.O_WRONLY)) or 0),
         "seen": [p for p in spec["absent"] if os.path.lexists(p)],
         "read": {p: read(p) for p in spec["present"]},
         "listed": {f: listing(f) for f in spec["list"]}}
print(json.dumps(found))
"""
SHOWN_TEXT = "the sandbox shows this"

USERNS_FIX = (
    "allow unprivileged user namespaces (Debian: sysctl -w kernel.unprivileged_userns_clone=1; "
    "Ubuntu 24.04 and later: an AppArmor profile that lets /usr/bin/bwrap use them, or "
    "sysctl -w kernel.apparmor_restrict_unprivileged_userns=0; elsewhere: "
    "sysctl -w user.max_user_namespaces=15000), or grade as root"
)
REACH_FIX = (
    "the job's uid must be able to read what the view shows: make that folder (and each one "
    "above it) readable by all users (chmod o+rx), or keep the course, its venv and Python "
    "somewhere that is"
)
JAIL_FIX = (
    "a root grader's launcher needs CAP_SYS_ADMIN to prepare each job (in a container: "
    "--cap-add SYS_ADMIN), or grade as an ordinary user"
)
VERSION_FIX = (
    "gpulab needs bubblewrap 0.4 or newer, installed as a plain program (not setuid root: "
    "chmod u-s $(command -v bwrap)); update it from your distribution"
)


def prove(policy: Policy, spawn: Callable[..., Sandboxed]) -> str:
    """ "" when a sandbox holds here; else what bubblewrap could not do, and how to fix it.

    `spawn` is `gpulab.grading.sandbox.spawn`, given by the caller
    (`gpulab.grading.sandbox.guards.available`): the probe starts exactly as a job does."""
    with tempfile.TemporaryDirectory(prefix="gpulab-probe-") as base:
        private, shown = Path(base, "private"), Path(base, "shown")
        private.mkdir()
        shown.mkdir(mode=0o755)
        shown.chmod(0o755)  # the job's own uid reads it (the folder above is the grader's)
        (private / "secret").write_text("the sandbox must not show this")
        Path(base, "beside").write_text("the sandbox must not show this either")
        Path(shown, "public").write_text(SHOWN_TEXT)
        Path(shown, "public").chmod(0o644)
        policy = replace(
            policy, show=(*policy.show, str(shown)), private=(*policy.private, str(private))
        )
        places = shown_paths(policy.show, policy.private, policy.gpu)
        wanted = expected_listings(places)
        spec = {
            "absent": [str(private / "secret"), str(private), str(Path(base, "beside"))],
            "present": [str(shown / "public")],
            "list": sorted(wanted),
        }
        try:
            job = spawn(
                [sys.executable, "-I", "-c", _PROBE, json.dumps(spec)],
                env=dict(os.environ),
                cwd="/",
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                policy=policy,
            )
        except OSError as exc:
            return _could_not_start(str(exc))
        try:
            out, err = job.process.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            return (
                "bubblewrap did not start a sandbox within 60 s (a machine this busy cannot "
                "grade: try again when it is not)"
            )
        finally:
            job.close()
    try:
        seen = json.loads(out.decode().strip().splitlines()[-1])
    except (ValueError, IndexError):
        return _could_not_start(err.decode(errors="replace"))
    return _judge(seen, spec, wanted)


def expected_listings(places: Sequence[str]) -> dict[str, list[str]]:
    """For each folder bubblewrap makes on the way to `places` (one that no place holds), the
    names it may hold: the next step towards each place under it, and nothing else."""
    holders = [*places, *MOUNTS]
    wanted: dict[str, set[str]] = {}
    for place in places:
        step, folder = os.path.basename(place), os.path.dirname(place)
        while step:
            if not any(_inside(folder, h) for h in holders):
                wanted.setdefault(folder, set()).add(step)
            if folder == "/":
                break
            step, folder = os.path.basename(folder), os.path.dirname(folder)
    return {folder: sorted(names) for folder, names in wanted.items()}


def _judge(
    seen: dict[str, object], spec: dict[str, list[str]], wanted: dict[str, list[str]]
) -> str:
    """The probe's report against what the view should be: "" when it holds."""
    escapes = [name for name in ("umount", "remount", "write") if seen.get(name) == "worked"]
    if seen.get("uid") == 0:
        escapes.append("it ran as root")
    if str(seen.get("caps", "0")).strip("0"):
        escapes.append(f"it kept capabilities {seen.get('caps')}")
    if escapes:
        return (
            "the sandbox does not hold here: from inside it, "
            + ", ".join(escapes)
            + f". To fix it: {VERSION_FIX}"
        )
    more = []
    visible = seen.get("seen")
    if isinstance(visible, list) and visible:
        more.append(f"it saw {', '.join(map(str, visible))}")
    listed = seen.get("listed")
    listed = listed if isinstance(listed, dict) else {}
    for folder, names in sorted(wanted.items()):
        got = listed.get(folder)
        extra = sorted(set(got) - set(names)) if isinstance(got, list) else []
        if extra:
            more.append(f"in {folder} it saw {_few(extra)}, which the view does not show")
    if more:
        return (
            "bubblewrap could not build the view gpulab asked for: from inside it, "
            + "; ".join(more[:3])
            + (f" (and {len(more) - 3} more folders)" if len(more) > 3 else "")
            + f". To fix it: {VERSION_FIX} (with one that is, this is gpulab's fault: report it)"
        )
    read = seen.get("read")
    read = read if isinstance(read, dict) else {}
    for path in spec["present"]:
        if read.get(path) != SHOWN_TEXT:
            return (
                f"bubblewrap could not show the sandbox a file it was given ({path}: "
                f"{read.get(path)}). To fix it: {REACH_FIX}"
            )
    return ""


def _could_not_start(said: str) -> str:
    """What bubblewrap (or gpulab's launcher) said when no sandbox started, and the fix."""
    lines = [line.strip() for line in said.strip().splitlines() if line.strip()]
    last = lines[-1] if lines else "(no message)"
    lowered = said.lower()
    if "gpulab jail" in lowered:
        fix = JAIL_FIX
    elif "namespace" in lowered or "uid map" in lowered or "operation not permitted" in lowered:
        fix = USERNS_FIX
    elif "can't find source path" in lowered or "permission denied" in lowered:
        fix = REACH_FIX
    else:
        fix = VERSION_FIX
    return f"bubblewrap could not start a sandbox here ({last}). To fix it: {fix}"


def _few(names: Sequence[str], most: int = 6) -> str:
    rest = len(names) - most
    return ", ".join(names[:most]) + (f" and {rest} more" if rest > 0 else "")


def _inside(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip("/") + "/")
