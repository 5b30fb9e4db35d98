"""The learner's chair: gpulab built, installed into a fresh environment, and run as its user.

Helpers for the tests under tests/learner. The wheel and sdist are built from
this tree with hatchling, as `pip install` would; environments get gpulab's
runtime dependencies only, as pip resolves them for a learner (`make lab`'s
own environment, pinned by constraints.txt, has a test of its own). Commands
run with a clean environment: a home of their own, no GPULAB_* variables, and
as root or as an ordinary user (``nobody``, through setpriv, when the tests
run as root).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[2]
NOBODY = 65534
NETWORK = (
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
    "REQUESTS_CA_BUNDLE",
    "PIP_CERT",
    "PIP_FIND_LINKS",
    "PIP_INDEX_URL",
    "PIP_EXTRA_INDEX_URL",
    "UV_INDEX_URL",
    "UV_DEFAULT_INDEX",
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "NO_PROXY",
    "http_proxy",
    "https_proxy",
    "no_proxy",
)
"""The machine's network settings, which an installer run in a clean environment still needs."""


def network_env() -> dict[str, str]:
    return {name: os.environ[name] for name in NETWORK if name in os.environ}


TEST_ONLY = (
    "playwright",
    "hypothesis",
    "mypy",
    "ruff",
    "pytest-asyncio",
    "hatchling",
    "jsonschema-specifications-test",
    "pytest-textual-snapshot",
)
"""Distributions of the test extra that a learner's environment must not have (pytest,
which runs the checks, is a runtime dependency)."""


def shared_folder(prefix: str) -> Path:
    """A new folder that every user may enter (pytest's own are the test user's alone)."""
    folder = Path(tempfile.mkdtemp(prefix=prefix))
    folder.chmod(0o755)
    return folder


def build(out: Path) -> tuple[Path, Path]:
    """The wheel and the sdist of this tree, built with hatchling into `out`."""
    done = subprocess.run(
        [sys.executable, "-m", "hatchling", "build", "-d", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    (wheel,) = out.glob("gpulab-*.whl")
    (sdist,) = out.glob("gpulab-*.tar.gz")
    return wheel, sdist


def base_python() -> str:
    """The Python new environments are made with: this one's, or the system's when this
    one lies where other users cannot reach it (a pyenv under /root, say)."""
    ours = Path(sys.executable).resolve()
    if open_to_all(ours):
        return str(ours)
    system = Path("/usr/bin/python3")
    done = subprocess.run(
        [str(system), "-c", "import sys, venv, ensurepip; sys.exit(sys.version_info < (3, 11))"],
        capture_output=True,
    )
    return str(system) if system.exists() and done.returncode == 0 else str(ours)


def open_to_all(path: Path) -> bool:
    """Whether every user may reach and run `path` (each folder above it is o+x)."""
    path = path.resolve()
    return all(folder.stat().st_mode & 0o001 for folder in path.parents) and bool(
        path.stat().st_mode & 0o001
    )


def fresh_venv(folder: Path, *install: str) -> Path:
    """A new virtual environment with `install` and its dependencies, as `pip install`
    resolves them for anyone (not pinned by constraints.txt); its bin folder."""
    subprocess.run([base_python(), "-m", "venv", str(folder)], check=True, timeout=300)
    bin_dir = folder / "bin"
    done = subprocess.run(
        [
            str(bin_dir / "python"),
            "-m",
            "pip",
            "install",
            "-q",
            "--disable-pip-version-check",
            *install,
        ],
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return bin_dir


def distributions(bin_dir: Path) -> set[str]:
    """The distributions installed in an environment, by normalised name."""
    done = subprocess.run(
        [
            str(bin_dir / "python"),
            "-m",
            "pip",
            "list",
            "--format=json",
            "--disable-pip-version-check",
        ],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    return {item["name"].lower().replace("_", "-") for item in json.loads(done.stdout)}


@dataclass(frozen=True)
class Learner:
    """Someone who installed gpulab: where its commands are, their home, who they are."""

    bin_dir: Path
    home: Path
    uid: int | None = None  # None: the user the tests run as

    @property
    def name(self) -> str:
        return "nobody" if self.uid == NOBODY else "the test user"

    def env(self, **extra: str) -> dict[str, str]:
        env = {
            "HOME": str(self.home),
            "PATH": f"{self.bin_dir}:/usr/bin:/bin",
            "LANG": "C.UTF-8",
            "TERM": "dumb",
            "COLUMNS": "160",
        }
        env.update(extra)
        return env

    def run(
        self,
        *args: str,
        cwd: Path | None = None,
        timeout: float = 300,
        command: str = "gpulab",
        **extra: str,
    ) -> subprocess.CompletedProcess[str]:
        """Run one of the environment's commands as the learner."""
        argv = [str(self.bin_dir / command), *args]
        if self.uid is not None:  # env runs as the user already: it finds gpulab as they would
            argv = [
                "setpriv",
                f"--reuid={self.uid}",
                f"--regid={self.uid}",
                "--clear-groups",
                "--",
                "/usr/bin/env",
                *argv,
            ]
        return subprocess.run(
            argv,
            cwd=cwd or self.home,
            env=self.env(**extra),
            capture_output=True,
            text=True,
            timeout=timeout,
        )

    def own(self, path: Path) -> None:
        """Give `path` (and what is under it) to the learner."""
        if self.uid is None:
            return
        for item in [path, *path.rglob("*")]:
            os.chown(item, self.uid, self.uid)


def make_home(base: Path, uid: int | None) -> Path:
    home = base / ("home-nobody" if uid == NOBODY else "home")
    home.mkdir()
    if uid is not None:
        os.chown(home, uid, uid)
    return home


def solve(workspace_notebook: Path, exercise: str, lesson: str) -> None:
    """Write the reference solution's answers into the learner's notebook, cell by cell,
    as a learner would type them (the rest of the notebook stays the learner's)."""
    solution = nbformat.read(ROOT / "solutions" / lesson / f"{exercise}.ipynb", as_version=4)
    answers = {
        cell.metadata["gpulab"]["part"]: cell.source
        for cell in solution.cells
        if cell.metadata.get("gpulab", {}).get("role") == "answer"
    }
    mine = nbformat.read(workspace_notebook, as_version=4)
    filled = 0
    for cell in mine.cells:
        part = cell.metadata.get("gpulab", {}).get("part")
        if cell.metadata.get("gpulab", {}).get("role") == "answer" and part in answers:
            cell.source = "\n".join(
                line
                for line in answers[part].splitlines()
                if "### BEGIN SOLUTION" not in line and "### END SOLUTION" not in line
            )
            filled += 1
    assert filled == len(answers), f"{workspace_notebook} lacks some answer cells"
    nbformat.write(mine, workspace_notebook)


def wheel_names(wheel: Path) -> list[str]:
    with zipfile.ZipFile(wheel) as archive:
        return archive.namelist()


def tree_digest(folder: Path) -> dict[str, bytes]:
    """Every file under `folder` with its bytes (to show that nothing changed)."""
    return {
        str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()
    }


def which(name: str) -> str | None:
    beside = Path(sys.executable).parent / name
    return str(beside) if beside.exists() else shutil.which(name)
