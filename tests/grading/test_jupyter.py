"""JupyterLab for a workspace, called in-process as the app calls it: started, reused, stopped.

The server must never be a child of the caller (the app runs for hours: a child
that dies would stay a zombie until it quits), must answer before
`open_notebook` returns, and must be gone after `stop_server`. The same
module from the wheel, as root and as another user, is tested in
tests/learner/test_learner_jupyterlab.py.
"""

from __future__ import annotations

import os
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from gpulab.course import Course, load_course
from gpulab.course.workspace import Workspace, init_workspace
from gpulab.grading.learn.jupyter import JupyterError, Server, open_notebook, stop_server
from helpers.tui import build_exercise_course


@pytest.fixture
def course(tmp_path: Path) -> Course:
    """The fixture course with the small "squares" exercise."""
    return load_course(build_exercise_course(tmp_path / "course"))


@pytest.fixture
def workspace(course: Course, tmp_path: Path, home: Path) -> Iterator[Workspace]:
    """The workspace of the fixture course; its JupyterLab runs with a HOME of its own."""
    made, _ = init_workspace(course, tmp_path / "ws")
    try:
        yield made
    finally:
        stop_server(made)


def _children(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[-1].split()[1]) == pid:
                found.append(int(entry.name))
    return found


def _answers(url: str) -> int:
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    with opener.open(url, timeout=30) as reply:
        return int(reply.status)


def test_started_reused_and_stopped_never_a_child_of_the_caller(
    course: Course, workspace: Workspace
) -> None:
    entry = next(e for e in course.exercises() if e.name == "squares")
    opened = open_notebook(workspace, workspace.notebook(entry), browser=False)
    assert not opened.reused and opened.browser is None
    assert opened.url.startswith(
        f"http://127.0.0.1:{opened.server.port}/lab/tree/basics/squares.ipynb?token="
    )
    assert _answers(opened.url) == 200
    assert opened.server.pid not in _children(os.getpid())  # nothing of ours to reap
    assert Path(f"/proc/{opened.server.pid}").exists()

    again = open_notebook(workspace, workspace.root, browser=False)
    assert again.reused and again.server == opened.server
    assert again.url == opened.server.url()  # the workspace's folder
    stopped = stop_server(workspace)
    assert stopped == opened.server
    stat = Path(f"/proc/{opened.server.pid}/stat")
    assert not stat.exists() or stat.read_text().rsplit(")", 1)[-1].split()[0] in "ZX"
    assert stop_server(workspace) is None


def test_a_notebook_outside_the_workspace_is_refused(workspace: Workspace, tmp_path: Path) -> None:
    with pytest.raises(JupyterError, match="is not in the workspace"):
        open_notebook(workspace, tmp_path / "elsewhere.ipynb", browser=False)


def test_addresses_and_the_ssh_line() -> None:
    server = Server(pid=1, port=8123, token="abc", root="/w", log="/l")
    assert server.url("a b/c.ipynb") == "http://127.0.0.1:8123/lab/tree/a%20b/c.ipynb?token=abc"
    assert server.url() == "http://127.0.0.1:8123/lab?token=abc"
    assert server.ssh.startswith("ssh -N -L 8123:127.0.0.1:8123 ")
