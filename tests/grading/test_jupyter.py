"""Finding JupyterLab for an exercise notebook, and starting it detached."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from gpulab.grading.jupyter import install_hint, jupyter_lab_command, launch


def _program(folder: Path, name: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text("#!/bin/sh\nexit 0\n")
    path.chmod(0o755)
    return path


def test_the_jupyter_beside_python_comes_first(tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    venv, elsewhere = tmp_path / "venv" / "bin", tmp_path / "elsewhere"
    mine = _program(venv, "jupyter")
    _program(venv, "jupyter-lab")
    _program(elsewhere, "jupyter")
    _program(elsewhere, "jupyter-lab")
    monkeypatch.setattr(sys, "executable", str(venv / "python"))
    monkeypatch.setenv("PATH", str(elsewhere))
    notebook = tmp_path / "x.ipynb"
    assert jupyter_lab_command(notebook) == [str(mine), "lab", str(notebook)]


def test_path_is_used_and_jupyter_without_lab_does_not_count(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    venv, elsewhere = tmp_path / "venv" / "bin", tmp_path / "elsewhere"
    _program(venv, "jupyter")  # jupyter's core, but no JupyterLab beside it
    found = _program(elsewhere, "jupyter")
    _program(elsewhere, "jupyter-lab")
    monkeypatch.setattr(sys, "executable", str(venv / "python"))
    monkeypatch.setenv("PATH", str(elsewhere))
    assert jupyter_lab_command(tmp_path / "x.ipynb") == [str(found), "lab",
                                                          str(tmp_path / "x.ipynb")]
    monkeypatch.setenv("PATH", str(tmp_path / "nothing"))
    assert jupyter_lab_command(tmp_path / "x.ipynb") is None
    assert install_hint() == f"{venv / 'python'} -m pip install jupyterlab"


def test_launch_detaches_and_logs(tmp_path: Path) -> None:
    log = tmp_path / "state" / "jupyterlab.log"
    code = "import os; print('leader' if os.getsid(0) == os.getpid() else 'attached')"
    process = launch([sys.executable, "-c", code], tmp_path, log)
    assert process.wait(timeout=30) == 0
    assert log.read_text() == "leader\n"
    assert os.getsid(0) != process.pid
