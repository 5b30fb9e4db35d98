"""Shared fixtures: every test gets its own state folder, never the user's.

The autouse fixture gives each test a state folder of its own and takes away
what the user's shell may have set for gpulab (the workspace, the course, the
book's templates) or for tmux (a test run inside tmux must never reach the
user's tmux server). `home` gives a test a HOME of its own too: a test that
starts JupyterLab or gpulab in a terminal asks for it, so no user
configuration is read and nothing lands in the user's home.
"""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = Path(__file__).resolve().parent / "fixtures"

USER_SETTINGS = (
    "GPULAB_WORKSPACE",
    "GPULAB_COURSE_DIR",
    "GPULAB_BOOK_DIR",
    "GPULAB_CHECK_SEED",
    "TMUX",
    "TMUX_PANE",
)
"""What the user's shell may set that would reach into the user's own things."""

HOME_SETTINGS = (
    "XDG_CONFIG_HOME",
    "XDG_DATA_HOME",
    "XDG_STATE_HOME",
    "XDG_RUNTIME_DIR",
    "JUPYTER_CONFIG_DIR",
    "JUPYTER_DATA_DIR",
    "JUPYTER_RUNTIME_DIR",
    "JUPYTERLAB_SETTINGS_DIR",
    "JUPYTERLAB_WORKSPACES_DIR",
    "IPYTHONDIR",
)
"""Folders that would be found outside a private HOME."""


@pytest.fixture(autouse=True)
def _private_state(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GPULAB_STATE_DIR", str(tmp_path_factory.mktemp("state")))
    for name in USER_SETTINGS:  # the user's, never the tests'
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def home(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A HOME of the test's own (empty), with nothing pointing back into the user's."""
    folder = tmp_path_factory.mktemp("home")
    monkeypatch.setenv("HOME", str(folder))
    for name in HOME_SETTINGS:
        monkeypatch.delenv(name, raising=False)
    return folder


@pytest.fixture
def fixtures() -> Path:
    return FIXTURES
