"""Shared fixtures: every test gets its own state folder, never the user's.

`SLOW` names the tests `make test-fast` leaves out (``-m "not slow and not gpu"``);
`ALONE`, those of them that need the machine to themselves: they install, drive a browser
or a terminal against a clock, or grade against time limits and CPU shares. Each is marked
as it is collected. `make test` runs them all: every other test first, on every core, then
the ``alone`` and ``gpu`` ones one at a time.

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

from gpulab import environment

ROOT = Path(__file__).resolve().parent.parent
TESTS = Path(__file__).resolve().parent
FIXTURES = TESTS / "fixtures"

SLOW = (
    "learner/",  # the wheel and sdist built and installed, make lab, Chromium
    "test_e2e_tmux.py",  # the installed command in tmux, a real JupyterLab
    "grading/test_cluster.py",  # Dask schedulers and workers, killed mid-run
    "grading/test_grade.py",  # classes graded for real, a hostile one among them
    "grading/test_grader_killed.py",
    "grading/test_run_attacks.py",  # attacks on a grading run as a whole
    "grading/test_sandbox_attacks.py",  # attacks on the sandbox, from inside it
    "grading/test_attacks_",  # the red team's corpora: intake, keyring, the job's view
    "grading/test_wrong_",  # the wrong answers' corpora, each graded in a sandbox
    "grading/test_solutions_run.py",  # every solution, run and checked
    "grading/test_jupyterlab_browser.py",  # JupyterLab in Chromium
    "book/test_book_browser.py",  # the book in Chromium
    "book/test_book_layout.py",
    "book/test_build.py::test_no_internal_link_is_broken",  # the whole book, built
    "book/test_exercise_pages.py",  # the exercise pages, rendered with nbconvert
    "book/test_pages.py",
)
"""Tests marked ``slow``, as paths under tests/: a folder (ending in ``/``), a file, or
one test (``file::name``)."""

ALONE = (
    "learner/",
    "test_e2e_tmux.py",
    "grading/test_cluster.py",
    "grading/test_grade.py",
    "grading/test_grader_killed.py",
    "grading/test_run_attacks.py",
    "grading/test_sandbox_attacks.py",
    "grading/test_attacks_",
    "grading/test_jupyterlab_browser.py",
    "book/test_book_browser.py",
    "book/test_book_layout.py",
)
"""The slow tests marked ``alone`` too, in `SLOW`'s notation. The rest of `SLOW` (the wrong
answers' corpora and the solutions, graded within generous limits, and the book built)
shares the machine well."""


def _listed(where: str, test: str, paths: tuple[str, ...]) -> bool:
    return any(where.startswith(path) or test == path for path in paths)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        where = item.path.relative_to(TESTS).as_posix()
        test = f"{where}::{item.name.split('[')[0]}"
        if _listed(where, test, SLOW):
            item.add_marker(pytest.mark.slow)
        if _listed(where, test, ALONE):
            item.add_marker(pytest.mark.alone)


USER_SETTINGS = (
    *(v.name for v in environment.ALL if v.set_by != "gpulab" and v is not environment.STATE_DIR),
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
    monkeypatch.setenv(environment.STATE_DIR.name, str(tmp_path_factory.mktemp("state")))
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
