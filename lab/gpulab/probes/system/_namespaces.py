"""The system probe's container section: this process's namespaces against PID 1's,
and the signs that it runs in a container (initial namespace inodes, the files
container runtimes leave, `container=` in the environment, runtime names in
the cgroup path).
"""

from __future__ import annotations

import os
import re

from gpulab.probes.model import Reading, Table
from gpulab.probes.system._files import Collector, Files, why
from gpulab.probes.system._parse import (
    parse_cgroup_file,
    parse_ns_link,
)

__all__: list[str] = []

# Inode numbers the kernel gives its initial namespaces (uapi linux/nsfs.h). net
# and mnt got fixed numbers only in Linux 6.18; before, theirs were allocated
# like any other, so a different number there proves nothing.
_INITIAL_NS_INODES = {
    "ipc": 0xEFFFFFFF,
    "uts": 0xEFFFFFFE,
    "user": 0xEFFFFFFD,
    "pid": 0xEFFFFFFC,
    "cgroup": 0xEFFFFFFB,
    "time": 0xEFFFFFFA,
    "net": 0xEFFFFFF9,
    "mnt": 0xEFFFFFF8,
}
# Fixed since each namespace type appeared (3.8; cgroup 4.6, time 5.6).
_ALWAYS_FIXED = {"ipc", "uts", "user", "pid", "cgroup", "time"}
# Cgroup path segments that container runtimes create (docker-<id>.scope,
# kubepods.slice, libpod-<id>, cri-containerd-<id>, crio-<id>, lxc.payload.<name>).
_RUNTIME_SEGMENT = re.compile(r"^(docker|kubepods|libpod|cri-containerd|crio|containerd|lxc)\b")


# ---- containers and namespaces --------------------------------------------------------------


def _ns_inodes(files: Files, pid: str) -> tuple[dict[str, int], str]:
    """Namespace inodes of a process by type, and why some could not be read ("" if none)."""
    folder = files.path(f"/proc/{pid}/ns")
    try:
        names = sorted(os.listdir(folder))
    except OSError as exc:
        return {}, f"cannot read {files.show(folder)}: {why(exc)}"
    inodes: dict[str, int] = {}
    problem = ""
    for name in names:
        try:
            inodes[name] = parse_ns_link(os.readlink(folder / name))
        except (OSError, ValueError) as exc:
            problem = problem or f"cannot read {files.show(folder / name)}: {why(exc)}"
    return inodes, problem


def _initial(name: str, inode: int | None) -> bool | None:
    """Whether an inode is the kernel's initial namespace of that type; None if unknowable."""
    kind = name.removesuffix("_for_children")
    fixed = _INITIAL_NS_INODES.get(kind)
    if inode is None or fixed is None:
        return None
    if inode == fixed:
        return True
    return False if kind in _ALWAYS_FIXED else None


def read_containers(files: Files, out: Collector) -> None:
    mine, my_problem = _ns_inodes(files, "self")
    pid1, pid1_problem = _ns_inodes(files, "1")
    if pid1_problem and "permission denied" in pid1_problem:
        pid1_problem += " (another process's namespaces need ptrace access to it)"
    rows = tuple(
        (
            name,
            mine.get(name),
            pid1.get(name),
            (mine[name] == pid1[name]) if name in mine and name in pid1 else None,
            _initial(name, mine.get(name)),
        )
        for name in sorted(set(mine) | set(pid1))
    )
    out.tables.append(
        Table(
            "Namespaces",
            ("namespace", "this process", "PID 1", "same", "initial"),
            rows,
            ("", "inode", "inode", "", ""),
        )
    )
    if my_problem:
        out.problems.append(my_problem)
    label = "Namespaces that differ from PID 1's"
    if pid1_problem or not pid1:
        out.add(
            Reading.unknown(
                "namespaces_differ_from_pid1",
                label,
                pid1_problem or "no namespaces listed for PID 1",
            )
        )
    else:
        differ = [name for name, _, _, same, _ in rows if same is False]
        out.add(
            Reading(
                "namespaces_differ_from_pid1",
                label,
                ", ".join(differ) or "none",
                detail="link targets of /proc/self/ns/* against /proc/1/ns/*",
            )
        )

    strong: list[str] = []
    weak: list[str] = []
    for kind in ("pid", "user"):
        if _initial(kind, mine.get(kind)) is False:
            strong.append(f"the {kind} namespace is not the initial one (inode {mine[kind]})")
    for name, evidence in (("/run/.containerenv", strong), ("/.dockerenv", weak)):
        if files.path(name).exists():
            evidence.append(f"{name} exists")
    for pid in ("1", "self"):
        try:
            environ = files.read(f"/proc/{pid}/environ").split("\0")
        except OSError:
            continue
        runtime = next((v[10:] for v in environ if v.startswith("container=")), None)
        if runtime is not None:
            strong.append(f"/proc/{pid}/environ has container={runtime}")
            break
    for pid in ("self", "1"):
        try:
            entries = parse_cgroup_file(files.read(f"/proc/{pid}/cgroup"))
        except OSError:
            continue
        paths = [
            path
            for _, _, path in entries
            if any(
                _RUNTIME_SEGMENT.match(part) and not part.endswith(".service")
                for part in path.split("/")
            )
        ]
        if paths:
            strong.append(f"/proc/{pid}/cgroup path {paths[0]} names a container runtime")
            break
    pid_initial = _initial("pid", mine.get("pid"))
    inside = bool(strong) or (bool(weak) and pid_initial is not True)
    evidence = strong + weak
    if not inside:
        evidence = [
            "this process is in the kernel's initial pid namespace"
            if pid_initial
            else "no sign found"
        ]
        if weak:
            evidence.append(
                f"{' and '.join(weak)}, but only as a file, which stays in a root "
                "filesystem exported from a container (a container sharing the "
                "host's pid namespace would look the same)"
            )
    out.add(
        Reading(
            "in_container",
            "Running in a container",
            inside,
            detail=("yes: " if inside else "no: ") + "; ".join(evidence),
        )
    )
