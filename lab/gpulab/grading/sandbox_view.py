"""What a sandboxed job sees: a file system built from an allowlist, every writable part sized.

The sandbox starts from an empty root and shows, read-only, only what the job
needs: the system's programs and libraries (``/usr`` and its links), the few
files of ``/etc`` the dynamic loader and the exercises read, ``/sys``, the
Python that runs gpulab with its environment and gpulab's package, the
public course (lessons and released exercises), and, for a GPU job, the NVIDIA
device files. Nothing else of the machine exists there: no home, no ``/run``
(no socket files), no ``/srv``, ``/opt`` or ``/mnt`` beyond what Python needs,
no other copy of the course, no submissions, no gradebook. A folder that
holds something private (the course's solutions, the submissions, the
grading output) is never shown, even where Python's paths name it.

The writable parts are a size-capped tmpfs as ``/tmp`` (with the job's working
folder) and one as ``/dev/shm``; the root and ``/dev`` are made read-only.
"""

from __future__ import annotations

import os
import site
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

__all__ = ["SYSTEM", "View", "build_view"]

SYSTEM = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
"""The system's programs and libraries (links into /usr on a merged-/usr system)."""
ETC = (
    "/etc/ld.so.cache",
    "/etc/ld.so.conf",
    "/etc/ld.so.conf.d",
    "/etc/localtime",
    "/etc/os-release",
    "/etc/alternatives",
    "/etc/debian_version",
    "/etc/lsb-release",
)
"""The files of /etc the dynamic loader and the exercises read (the rest stays out)."""
SHM_BYTES = 16 * 2**20


@dataclass(frozen=True)
class View:
    """bubblewrap's arguments for the view, and the folders to stage for an unprivileged uid."""

    args: list[str]
    folders: list[str]  # shown read-only at their own paths (staged when the uid drops)


def build_view(
    *,
    scratch: str,
    scratch_bytes: int,
    show: Sequence[str],
    private: Sequence[str],
    gpu: bool,
    staged: bool,
) -> View:
    """The view for one job. With `staged`, each folder is bound from where the launcher
    staged it (`gpulab.grading.jail.staged`), since the job's own uid may not reach it."""
    from gpulab.grading.jail import staged as staged_path

    args: list[str] = []
    for path in SYSTEM:
        if os.path.islink(path):
            args += ["--symlink", os.readlink(path), path]
        elif os.path.isdir(path):
            args += ["--ro-bind", path, path]
    for path in ETC:
        if os.path.islink(path):
            args += ["--symlink", os.readlink(path), path]
        elif os.path.exists(path):
            args += ["--ro-bind", path, path]
    args += [
        "--ro-bind",
        "/sys",
        "/sys",
        "--proc",
        "/proc",
        "--dev",
        "/dev",
        "--size",
        str(SHM_BYTES),
        "--tmpfs",
        "/dev/shm",
    ]
    if gpu:
        for device in sorted(Path("/dev").glob("nvidia*")):
            if device.is_char_device():
                args += ["--dev-bind", str(device), str(device)]
        caps = Path("/dev/nvidia-caps")
        if caps.is_dir():
            args += ["--dev-bind", str(caps), str(caps)]
    # /tmp first: folders that lie in the machine's /tmp are bound into it afterwards
    args += ["--size", str(scratch_bytes), "--tmpfs", "/tmp", "--dir", scratch]
    folders = needed_folders(show, private)
    for number, folder in enumerate(folders):
        source = staged_path(number) if staged else folder
        args += ["--ro-bind", source, folder]
    args += ["--remount-ro", "/dev", "--remount-ro", "/"]
    return View(args, folders)


def needed_folders(show: Iterable[str], private: Sequence[str]) -> list[str]:
    """The folders outside the system's that the job needs: Python and its environment,
    gpulab's package, the libraries on LD_LIBRARY_PATH, and `show` (the public course).

    Only the outermost of nested folders is kept; a folder that is, holds or lies in
    a private one (solutions, submissions, the grading output) never is.
    """
    import gpulab

    wanted = [
        *show,
        sys.base_prefix,
        sys.prefix,
        sys.exec_prefix,
        str(Path(gpulab.__file__).resolve().parent.parent),
        *site.getsitepackages(),
        site.getusersitepackages(),
        *os.environ.get("PYTHONPATH", "").split(os.pathsep),
        *os.environ.get("LD_LIBRARY_PATH", "").split(os.pathsep),
    ]
    secret = [os.path.realpath(p) for p in private if p]
    found: list[str] = []
    for name in wanted:
        if not name or not os.path.isabs(name):
            continue
        path = os.path.realpath(name)
        if not os.path.isdir(path) or _under(path, SYSTEM) or path == "/":
            continue
        if any(_inside(path, s) or _inside(s, path) for s in secret):
            continue
        found.append(path)
    unique = sorted(set(found))
    return [p for p in unique if not any(p != q and _inside(p, q) for q in unique)]


def _inside(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip("/") + "/")


def _under(path: str, folders: Iterable[str]) -> bool:
    return any(_inside(path, os.path.realpath(f)) for f in folders if os.path.isdir(f))
