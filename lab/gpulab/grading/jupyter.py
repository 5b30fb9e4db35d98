"""Opening an exercise notebook in JupyterLab: a server of its own that outlives the caller.

`jupyter_lab_command` finds the ``jupyter`` of gpulab's own environment (beside
the running Python) before any other on PATH, and only where JupyterLab is
installed with it; `launch` starts the command in a session of its own, with
its output (the address and token JupyterLab prints) going to a log file.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from gpulab.multicast import NO_MULTICAST

__all__ = ["install_hint", "jupyter_lab_command", "launch"]


def jupyter_lab_command(notebook: Path) -> list[str] | None:
    """``jupyter lab <notebook>`` with the jupyter found, or None when JupyterLab is missing."""
    beside = str(Path(sys.executable).parent)
    for folder in (beside, None):
        jupyter = shutil.which("jupyter", path=folder)
        # `jupyter lab` runs `jupyter-lab`: without it, JupyterLab is not installed there
        if jupyter is not None and shutil.which("jupyter-lab", path=folder) is not None:
            return [jupyter, "lab", str(notebook)]
    return None


def install_hint() -> str:
    """The command that installs JupyterLab into gpulab's environment."""
    return f"{sys.executable} -m pip install jupyterlab"


def launch(command: list[str], cwd: Path, log: Path) -> subprocess.Popen[bytes]:
    """Start `command` detached (its own session, no terminal), its output appended to `log`.

    The caller keeps the returned process only to look at it: the server goes
    on after the caller exits.
    """
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("ab") as out:
        return subprocess.Popen(command, cwd=cwd, stdin=subprocess.DEVNULL, stdout=out,
                                stderr=subprocess.STDOUT, start_new_session=True,
                                env={**os.environ, **NO_MULTICAST})
