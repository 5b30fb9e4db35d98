"""What a sandboxed job sees: a file system built from an allowlist, every writable part sized.

The sandbox starts from an empty root and shows, read-only and each at its own
path, exactly what the job needs:

- the system's programs and libraries (`SYSTEM`: ``/usr/bin``, ``/usr/sbin``,
  ``/usr/lib*``, ``/usr/libexec``, ``/usr/share/zoneinfo`` and the links or
  folders ``/bin``, ``/sbin``, ``/lib*``), never the rest of ``/usr``
  (``/usr/local``, ``/usr/src``, ``/usr/share``: where copies of a course live);
- the few files of ``/etc`` the dynamic loader and the exercises read, and ``/sys``;
- Python: its interpreter and every link on the way to it, its standard
  library, the shared libraries of its prefix (``<prefix>/lib/*.so*``), the
  environment's ``pyvenv.cfg`` and site-packages folders;
- of every other folder on Python's path (``PYTHONPATH``, those the ``.pth``
  files of site-packages name, gpulab's own in a checkout) only what Python
  imports from it: packages (folders with ``__init__.py``), modules and
  package metadata; of every ``LD_LIBRARY_PATH`` folder only its shared
  libraries, and likewise of the folders the dynamic loader searches
  (``/etc/ld.so.conf``: a driver's ``libcuda`` under ``/usr/local/nvidia``);
- the public course (the policy's ``show``: lessons, released exercises);
- for a GPU job, the NVIDIA device files and the CUDA toolkit's folder.

A folder is shown whole only where it holds nothing but what is named above;
nothing that is, holds or lies in a private folder (the course's solutions,
the submissions, the grading output) is shown. bubblewrap makes the folders on
the way to each shown path, empty but for that path (a course in
``/home/alice/course`` gives a ``/home`` that holds ``alice`` alone):
`gpulab.grading.sandbox.proof` lists them from inside and refuses a view that
shows more than `View.places`.

The writable parts are a size-capped tmpfs as ``/tmp`` (with the job's working
folder) and one as ``/dev/shm``; the root and ``/dev`` are made read-only.
"""

from __future__ import annotations

import glob
import importlib.machinery
import os
import site
import sys
import sysconfig
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

__all__ = ["MOUNTS", "SYSTEM", "View", "build_view", "needed_folders", "shown_paths"]

SYSTEM = (
    "/usr/bin",
    "/usr/sbin",
    "/usr/lib",
    "/usr/lib32",
    "/usr/lib64",
    "/usr/libx32",
    "/usr/libexec",
    "/usr/share/zoneinfo",
    "/bin",
    "/sbin",
    "/lib",
    "/lib32",
    "/lib64",
    "/libx32",
)
"""The system's programs and libraries (the top-level ones are links into /usr on a merged-/usr
system); /usr/local, /usr/src, /usr/include and the rest of /usr/share stay out."""
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
MOUNTS = ("/sys", "/proc", "/dev", "/dev/shm", "/tmp")
"""Mounted whole: /sys read-only, a fresh /proc and /dev, and two size-capped tmpfs."""
SHM_BYTES = 16 * 2**20
CUDA_VARIABLES = ("CUDA_HOME", "CUDA_PATH")
CUDA_DEFAULT = "/usr/local/cuda"


@dataclass(frozen=True)
class View:
    """bubblewrap's arguments for the view, the folders to stage for an unprivileged uid, and
    every path the view puts in the sandbox."""

    args: list[str]
    folders: list[str]  # the host folders binds come from (staged when the uid drops)
    places: list[str]  # every path bound, linked or mounted (the proof lists what lies above)


@dataclass(frozen=True)
class _Shown:
    """The view beyond the system's and /etc: paths bound at their own (real) path, links."""

    binds: list[str]
    links: dict[str, str]  # where a link is made: its target, as the machine's link says


def build_view(
    *,
    scratch: str,
    scratch_bytes: int,
    show: Sequence[str],
    private: Sequence[str],
    gpu: bool,
    staged: bool,
) -> View:
    """The view for one job. With `staged`, each bind comes from where the launcher staged its
    folder (`gpulab.grading.sandbox.jail.staged`), since the job's own uid may not reach it."""
    from gpulab.grading.sandbox.jail import staged as staged_path

    args: list[str] = []
    places: list[str] = []
    for path in (*SYSTEM, *ETC):
        if os.path.islink(path):
            args += ["--symlink", os.readlink(path), path]
        elif os.path.exists(path):
            args += ["--ro-bind", path, path]
        else:
            continue
        places.append(path)
    args += ["--ro-bind", "/sys", "/sys", "--proc", "/proc", "--dev", "/dev"]
    args += ["--size", str(SHM_BYTES), "--tmpfs", "/dev/shm"]
    if gpu:
        for device in _devices():
            args += ["--dev-bind", device, device]
            places.append(device)
    # /tmp first: what lies in the machine's /tmp is bound into it afterwards
    args += ["--size", str(scratch_bytes), "--tmpfs", "/tmp", "--dir", scratch]
    places += [*MOUNTS, scratch]
    shown = _shown(show, private, gpu)
    folders: list[str] = []
    for dest in sorted({*shown.binds, *shown.links}):
        if dest in shown.links:
            args += ["--symlink", shown.links[dest], dest]
        else:
            folder, entry = (dest, "") if os.path.isdir(dest) else os.path.split(dest)
            if folder not in folders:
                folders.append(folder)
            source = staged_path(folders.index(folder)) if staged else folder
            args += ["--ro-bind", os.path.join(source, entry) if entry else source, dest]
        places.append(dest)
    args += ["--remount-ro", "/dev", "--remount-ro", "/"]
    return View(args, folders, places)


def shown_paths(show: Sequence[str], private: Sequence[str], gpu: bool) -> list[str]:
    """Every path `build_view` puts in a sandbox but the job's working folder."""
    view = build_view(
        scratch="/tmp", scratch_bytes=1, show=show, private=private, gpu=gpu, staged=False
    )
    return sorted(set(view.places))


def needed_folders(show: Iterable[str], private: Sequence[str]) -> list[str]:
    """The paths outside the system's and /etc that a CPU job's view shows (bound or linked)."""
    shown = _shown(list(show), private, gpu=False)
    return sorted({*shown.binds, *shown.links})


def _devices() -> list[str]:
    found = [str(d) for d in sorted(Path("/dev").glob("nvidia*")) if d.is_char_device()]
    return found + (["/dev/nvidia-caps"] if os.path.isdir("/dev/nvidia-caps") else [])


class _Collect:
    """Gathers what a view shows, keeping out whatever is, holds or lies in a private path."""

    def __init__(self, private: Sequence[str]) -> None:
        self.secret = [os.path.realpath(p) for p in private if p]
        self.system = [os.path.realpath(p) for p in SYSTEM if os.path.isdir(p)]
        self.fixed = [*SYSTEM, *ETC, *self.system, *(os.path.realpath(p) for p in ETC)]
        self.binds: set[str] = set()
        self.links: dict[str, str] = {}

    def private(self, path: str) -> bool:
        return any(_inside(path, s) or _inside(s, path) for s in self.secret)

    def add(self, path: str) -> None:
        """Show `path` (a file, or a folder whole) at its real path, with every link met on
        the way to it from `path` as written; nothing where one of them is private."""
        if not path or not os.path.isabs(path):
            return
        try:
            links, real = _resolve(path)
        except OSError:
            return
        if real == "/" or not os.path.exists(real):
            return
        if self.private(real) or any(self.private(at) for at in links):
            return
        self.links.update(links)
        self.binds.add(real)

    def importable(self, folder: str) -> None:
        """Show what Python imports from `folder`, a folder on its path: packages (folders
        with __init__.py), modules and extension modules, and package metadata."""
        suffixes = tuple(importlib.machinery.all_suffixes())
        for entry in _entries(folder, self):
            name = entry.name
            stem = name.split(".", 1)[0]
            try:
                if entry.is_dir():
                    package = name.isidentifier() and os.path.isfile(
                        os.path.join(entry.path, "__init__.py")
                    )
                    if package or (stem and name.endswith((".dist-info", ".egg-info"))):
                        self.add(entry.path)
                elif entry.is_file() and stem.isidentifier() and name.endswith(suffixes):
                    self.add(entry.path)
            except OSError:
                continue

    def libraries(self, folder: str) -> None:
        """Show the shared libraries (``*.so``, ``*.so.N``) that lie in `folder`."""
        for entry in _entries(folder, self):
            if entry.name.endswith(".so") or ".so." in entry.name:
                try:
                    if entry.is_file():
                        self.add(entry.path)
                except OSError:
                    continue

    def done(self) -> _Shown:
        """What to bind (the outermost only, none already in the system's) and link."""
        binds = sorted(p for p in self.binds if not any(_inside(p, s) for s in self.system))
        binds = [p for p in binds if not any(p != q and _inside(p, q) for q in binds)]
        holders = [*self.fixed, *binds]  # a link in one of these is there already
        links = {
            at: target
            for at, target in self.links.items()
            if not any(_inside(at, h) for h in holders)
        }
        return _Shown(binds, links)


def _shown(show: Sequence[str], private: Sequence[str], gpu: bool) -> _Shown:
    """What a job's view shows of Python, gpulab, the libraries it loads and the course."""
    import gpulab

    collect = _Collect(private)
    collect.add(sys.executable)  # the interpreter, through the venv's links to it
    for prefix in {sys.prefix, sys.exec_prefix}:
        collect.add(os.path.join(prefix, "pyvenv.cfg"))
    paths = sysconfig.get_paths()
    site_folders = {paths[k] for k in ("purelib", "platlib")} | set(site.getsitepackages())
    standard = {os.path.dirname(os.__file__), *(p for p in sys.path if p.endswith("lib-dynload"))}
    for folder in sorted({*standard, *site_folders}):
        collect.add(folder)  # the standard library and site-packages: nothing else in them
    libdir = sysconfig.get_config_var("LIBDIR")
    for prefix in sorted({sys.base_prefix, sys.base_exec_prefix}):
        for folder in (os.path.join(prefix, "lib"), os.path.join(prefix, "lib64"), libdir):
            if isinstance(folder, str):
                collect.libraries(folder)
    for folder in sorted(site_folders):
        for named in _pth_folders(folder):
            collect.importable(named)
    collect.add(os.path.dirname(os.path.abspath(gpulab.__file__)))  # gpulab's own package
    for entry in os.environ.get("PYTHONPATH", "").split(os.pathsep):
        if os.path.isdir(entry):
            collect.importable(entry)
        elif entry.endswith((".zip", ".egg", ".whl")):
            collect.add(entry)  # an archive Python imports from
    for entry in [*os.environ.get("LD_LIBRARY_PATH", "").split(os.pathsep), *_loader_folders()]:
        collect.libraries(entry)  # where the dynamic loader looks (a driver's libcuda, say)
    for folder in show:
        collect.add(folder)
    if gpu:
        for toolkit in [*(os.environ.get(v, "") for v in CUDA_VARIABLES), CUDA_DEFAULT]:
            marks = (os.path.join(toolkit, "version.json"), os.path.join(toolkit, "bin", "nvcc"))
            if os.path.isabs(toolkit) and any(os.path.isfile(m) for m in marks):
                collect.add(toolkit)  # a CUDA toolkit (CuPy's NVRTC, compute-sanitizer)
    return collect.done()


def _loader_folders(conf: str = "/etc/ld.so.conf", depth: int = 0) -> list[str]:
    """The folders the dynamic loader searches by its configuration (ld.so.conf and the files
    it includes), whose libraries ld.so.cache names."""
    try:
        lines = Path(conf).read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return []
    found: list[str] = []
    for line in lines:
        line = line.split("#", 1)[0].strip()
        if line.startswith("include") and depth < 4:
            pattern = line.removeprefix("include").strip()
            pattern = os.path.join(os.path.dirname(conf), pattern)
            for included in sorted(glob.glob(pattern)):
                found += _loader_folders(included, depth + 1)
        elif line.startswith("/"):
            found.append(line)
    return found


def _pth_folders(site_folder: str) -> list[str]:
    """The folders the ``.pth`` files of a site-packages folder put on Python's path."""
    found = []
    for entry in _entries(site_folder, None):
        if not entry.name.endswith(".pth"):
            continue
        try:
            lines = Path(entry.path).read_text(encoding="utf-8", errors="replace").splitlines()
        except OSError:
            continue
        for line in lines:
            line = line.strip()
            if line and not line.startswith(("#", "import ", "import\t")):
                folder = os.path.join(site_folder, line)
                if os.path.isdir(folder):
                    found.append(folder)
    return found


def _entries(folder: str, collect: _Collect | None) -> list[os.DirEntry[str]]:
    """The entries of an absolute folder, by name; none where it is or lies in a private
    folder or the system's, or cannot be read. (Each entry is judged again when added.)"""
    if not folder or not os.path.isabs(folder):
        return []
    real = os.path.realpath(folder)
    if collect is not None and any(_inside(real, s) for s in (*collect.secret, *collect.system)):
        return []
    try:
        with os.scandir(folder) as entries:
            return sorted(entries, key=lambda e: e.name)
    except OSError:
        return []


def _resolve(path: str) -> tuple[dict[str, str], str]:
    """The links met on the way to `path` (where each lies: its target) and its real path."""
    links: dict[str, str] = {}
    pending = [part for part in path.split("/") if part]
    current, followed = "/", 0
    while pending:
        part = pending.pop(0)
        if part == ".":
            continue
        if part == "..":
            current = os.path.dirname(current)
            continue
        candidate = os.path.join(current, part)
        if os.path.islink(candidate):
            followed += 1
            if followed > 40:
                raise OSError(f"too many links on the way to {path}")
            target = os.readlink(candidate)
            links[candidate] = target
            current = "/" if target.startswith("/") else current
            pending[:0] = [p for p in target.split("/") if p]
        else:
            current = candidate
    return links, current


def _inside(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip("/") + "/")
