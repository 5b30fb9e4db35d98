"""Where this process's cgroup files are: the mounted hierarchies, and its cgroup in each.

`_hierarchies` lists the mounted cgroup hierarchies (v1 or v2) from
/proc/self/mountinfo, else from the layout of /sys/fs/cgroup; `_place` finds,
for one controller, the folder of this process's cgroup (named in
/proc/self/cgroup) and the top of its hierarchy, between which `_cgroup`
looks for the tightest limit. Files are read under the probe's root
(`_files`).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from gpulab.probes.system._files import Files, why

__all__: list[str] = []


@dataclass(frozen=True)
class _Hierarchy:
    """One mounted cgroup hierarchy: v1 (one or more controllers) or v2 (unified)."""

    version: int
    controllers: frozenset[str]  # v1: from the mount options; v2: cgroup.controllers
    mounted_root: str  # the cgroup path seen at the mount point, usually "/"
    mount: Path  # where it is mounted, under the probe's root


def _hierarchies(files: Files) -> tuple[list[_Hierarchy], str]:
    """Mounted cgroup hierarchies from /proc/self/mountinfo, else from /sys/fs/cgroup's layout."""
    found: list[_Hierarchy] = []
    try:
        lines = files.read("/proc/self/mountinfo").splitlines()
        source = "/proc/self/mountinfo"
    except OSError as exc:
        lines, source = [], f"the layout of /sys/fs/cgroup (/proc/self/mountinfo is {why(exc)})"
        top = files.path("/sys/fs/cgroup")
        if (top / "cgroup.controllers").exists():
            lines = ["0 0 0:0 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw"]
        elif top.is_dir():
            lines = [
                f"0 0 0:0 / /sys/fs/cgroup/{d.name} rw - "
                + (
                    "cgroup2 cgroup2 rw"
                    if (d / "cgroup.controllers").exists()
                    else f"cgroup cgroup rw,{d.name}"
                )
                for d in sorted(top.iterdir())
                if d.is_dir() and not d.is_symlink()
            ]
    for line in lines:
        fields = line.split()
        if "-" not in fields or len(fields) < 5:
            continue
        rest = fields[fields.index("-") + 1 :]
        if len(rest) < 3 or rest[0] not in ("cgroup", "cgroup2"):
            continue
        mount = files.path(re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), fields[4]))
        if rest[0] == "cgroup2":
            try:
                controllers = frozenset(files.read(mount / "cgroup.controllers").split())
            except OSError:
                controllers = frozenset()
            found.append(_Hierarchy(2, controllers, fields[3], mount))
        else:
            found.append(_Hierarchy(1, frozenset(rest[2].split(",")), fields[3], mount))
    # Bind mounts elsewhere come after the usual places under /sys/fs/cgroup.
    usual = files.path("/sys/fs/cgroup")
    found.sort(key=lambda h: h.mount != usual and h.mount.parent != usual)
    return found, source


@dataclass(frozen=True)
class _Place:
    """Where one controller's files for this process are: its cgroup and the hierarchy's top."""

    version: int
    leaf: Path
    top: Path

    def upwards(self) -> Iterator[Path]:
        """This cgroup, then each parent up to the top of the hierarchy."""
        folder = self.leaf
        while True:
            yield folder
            if folder == self.top or self.top not in folder.parents:
                return
            folder = folder.parent


def _place(
    hierarchies: list[_Hierarchy], entries: list[tuple[int, tuple[str, ...], str]], controller: str
) -> _Place | str:
    """The folder of this process's cgroup for a controller, or why there is none."""
    hierarchy = next(
        (h for h in hierarchies if h.version == 1 and controller in h.controllers), None
    ) or next((h for h in hierarchies if h.version == 2 and controller in h.controllers), None)
    if hierarchy is None:
        return f"no cgroup hierarchy has the {controller} controller"
    if hierarchy.version == 1:
        path = next((p for _, names, p in entries if controller in names), None)
    else:
        path = next((p for number, names, p in entries if number == 0 and not names), None)
    if path is None:
        return f"/proc/self/cgroup has no line for the {controller} controller"
    root = hierarchy.mounted_root.rstrip("/")
    if root and (path == root or path.startswith(root + "/")):
        path = path[len(root) :]
    leaf = hierarchy.mount / path.lstrip("/")
    # Inside a cgroup namespace the path can name a folder this mount does not show;
    # the mount's top is then this process's own cgroup.
    return _Place(hierarchy.version, leaf if leaf.is_dir() else hierarchy.mount, hierarchy.mount)
