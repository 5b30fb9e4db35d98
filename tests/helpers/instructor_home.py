"""An instructor's home folder, built for real, with the course, its venv and its Python in it.

`make_home` builds ``<base>/alice`` as an instructor keeps it: a copy of this
checkout (``course/``: lab, lessons, exercises, solutions), a venv made there by
``python -m venv`` with gpulab installed editable from the copy, and a copy of
the Python it runs on, as pyenv keeps one (``.pyenv/versions/X``, found through
``LD_LIBRARY_PATH`` for its libpython). Files are hard links where they can be,
so it takes seconds. Beside them lie planted secrets, each named with `MARK`:
an ssh key, notes, files beside the venv and the Python, and last term's course
with its solutions. `Home.env` is the grader's environment there, with the home
folder itself on ``PYTHONPATH`` (the red team's rt3-03). test_attacks_view.py
grades a class from it.
"""

from __future__ import annotations

import dataclasses
import os
import platform
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path

import pytest

from helpers.adversarial_class import ROOT, SOLUTION

MARK = "gpulab-decoy"  # in the name of every planted file and folder


def home_base() -> Path:
    """A fresh folder where home folders go: under /home as root, else in this user's home."""
    if os.geteuid() == 0:
        Path("/home").mkdir(exist_ok=True)
        base = Path(tempfile.mkdtemp(prefix="gpulab-view-", dir="/home"))
    else:
        base = Path(tempfile.mkdtemp(prefix=".gpulab-view-", dir=Path.home()))
    base.chmod(0o755)
    return base


def _link_or_copy(source: str, target: str) -> None:
    try:
        os.link(source, target)
    except OSError:
        shutil.copy2(source, target)


def _copy_tree(source: Path, target: Path, *skip: str) -> None:
    shutil.copytree(
        source,
        target,
        symlinks=True,
        copy_function=_link_or_copy,
        ignore=shutil.ignore_patterns(*skip),
    )


def plant(path: Path, text: str = "SECRET", mode: int = 0o644) -> Path:
    """A file (and the folders above it) that holds `text` and `MARK`."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"{text} ({MARK})")
    path.chmod(mode)
    return path


def course_copy(folder: Path) -> list[Path]:
    """Another copy of the course, with its solutions and hidden checks (last term's)."""
    planted = [
        plant(folder / "solutions" / "memory-hierarchy" / "roofline.ipynb", SOLUTION.read_text()),
        plant(
            folder / "solutions" / "memory-hierarchy" / "test_roofline_hidden.py",
            "def test_hidden(): pass",
        ),
        plant(folder / "lessons" / "course.toml", "# last term"),
    ]
    for path in [folder, *folder.rglob("*")]:
        if path.is_dir():
            path.chmod(0o755)
    return planted


@dataclasses.dataclass
class Home:
    """An instructor's home folder with the course, its venv and its Python in it."""

    alice: Path
    checkout: Path
    python: Path  # the venv's interpreter
    prefix: Path  # the copied Python installation (pyenv-like)
    secrets: list[Path]  # planted: none may be visible to learner code
    env: dict[str, str]


def make_home(base: Path) -> Home:
    """``<base>/alice`` with the course, its venv, its Python and the planted secrets."""
    alice = base / "alice"
    alice.mkdir(mode=0o755)
    checkout = alice / "course"
    for part in ("lab", "lessons", "exercises", "solutions"):
        _copy_tree(ROOT / part, checkout / part, ".mypy_cache", ".ipynb_checkpoints")
    _link_or_copy(str(ROOT / "pyproject.toml"), str(checkout / "pyproject.toml"))
    # the Python, as pyenv keeps one: interpreter, standard library, shared libraries
    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    prefix = alice / ".pyenv" / "versions" / platform.python_version()
    (prefix / "bin").mkdir(parents=True)
    _link_or_copy(os.path.realpath(sys.executable), str(prefix / "bin" / version))
    (prefix / "bin" / "python3").symlink_to(version)
    stdlib = Path(os.path.dirname(os.__file__))
    _copy_tree(stdlib, prefix / "lib" / version, "site-packages", "dist-packages")
    for library in Path(sys.base_prefix, "lib").glob("libpython*.so*"):
        target = prefix / "lib" / library.name
        if library.is_symlink():
            target.symlink_to(os.readlink(library))
        else:
            _link_or_copy(str(library), str(target))
    env = {
        "PATH": f"{Path(shutil.which('bwrap') or '/usr/bin/bwrap').parent}:/usr/bin:/bin",
        "HOME": str(alice),
        "LANG": "C.UTF-8",
        "LD_LIBRARY_PATH": str(prefix / "lib"),  # the copy's libpython, not the original's
        "PYTHONPATH": str(alice),  # the whole home folder on Python's path (rt3-03)
        "GPULAB_STATE_DIR": str(alice / "state"),
    }
    venv = checkout / ".venv"
    subprocess.run(
        [str(prefix / "bin" / "python3"), "-m", "venv", "--without-pip", str(venv)],
        env=env,
        check=True,
        timeout=120,
    )
    site_packages = venv / "lib" / version / "site-packages"
    shutil.rmtree(site_packages)
    _copy_tree(Path(sysconfig.get_paths()["purelib"]), site_packages, "__editable__*")
    editable = [
        p for p in site_packages.glob("*.pth") if p.read_text().strip() == str(ROOT / "lab")
    ]
    if not editable:
        shutil.rmtree(base)
        pytest.skip("gpulab is not installed editable from this checkout")
    for pth in editable:  # gpulab installed editable from the copy (not through the link)
        pth.unlink()
        pth.write_text(str(checkout / "lab") + "\n")
    # what learner code must never see
    secrets = [
        plant(alice / ".ssh" / f"id_rsa-{MARK}", "-----BEGIN OPENSSH PRIVATE KEY-----", 0o600),
        plant(alice / f"grades-{MARK}.csv"),
        plant(checkout / f"notes-{MARK}.md"),  # beside the lessons and exercises
        plant(venv / f"beside-the-venv-{MARK}"),
        plant(venv / "bin" / f"beside-python-{MARK}"),
        plant(venv / "lib" / f"beside-site-packages-{MARK}"),
        plant(prefix / "lib" / f"beside-libpython-{MARK}.txt"),
        plant(prefix / "bin" / f"beside-the-interpreter-{MARK}"),
        checkout / "solutions" / "memory-hierarchy" / "test_roofline_hidden.py",
        *course_copy(alice / "teaching" / "2024" / MARK),
    ]
    plant(alice / "helpers.py", "VALUE = 42  # ")  # a module PYTHONPATH provides: shown
    return Home(alice, checkout, venv / "bin" / "python", prefix, secrets, env)
