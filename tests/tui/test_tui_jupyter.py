"""`o` on an exercise: JupyterLab on the workspace's notebook, its address on screen.

One test starts a real JupyterLab (the workspace's server, as `gpulab open` does) and
stops it before it ends; the others keep it from starting.
"""

from __future__ import annotations

import importlib.util
import sys
import webbrowser
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from gpulab.course.workspace import Workspace
from gpulab.grading.learn import jupyter
from gpulab.tui import GpulabApp
from gpulab.tui.screens import ExerciseScreen
from gpulab.tui.widgets import JupyterPanel
from helpers.tui import SIZE, on_screen, plain, screen_text, wait_for

START_TIME = jupyter.START_TIMEOUT + 30
"""Seconds JupyterLab may take to start here (a cold start on a busy machine is slow)."""


def panel(app: GpulabApp) -> JupyterPanel:
    return app.screen.query_one(JupyterPanel)


def shown(app: GpulabApp) -> str:
    return plain(panel(app).content, width=400)


@pytest.fixture
def no_browser(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """No web browser opens during the test; the addresses it was asked to open."""
    asked: list[str] = []

    def record(url: str, *args: Any, **kwargs: Any) -> bool:
        asked.append(url)
        return False

    monkeypatch.setattr(webbrowser, "open", record)
    monkeypatch.delenv("DISPLAY", raising=False)
    monkeypatch.delenv("WAYLAND_DISPLAY", raising=False)
    return asked


async def test_open_starts_jupyterlab_on_the_notebook(
    exercise_app: Callable[..., GpulabApp],
    workspace: Workspace,
    state_dir: Path,
    no_browser: list[str],
    home: Path,
) -> None:
    if importlib.util.find_spec("jupyterlab") is None:
        pytest.skip("JupyterLab is not installed here")
    app = exercise_app()
    try:
        async with app.run_test(size=SIZE) as pilot:
            app.navigator.open_exercise("squares")
            await on_screen(pilot, app, ExerciseScreen)
            await pilot.press("y")  # nothing to copy yet
            assert app.clipboard == ""
            await pilot.press("o")
            assert "Starting JupyterLab on squares.ipynb" in shown(app)
            await wait_for(
                pilot,
                lambda: panel(app).url != "" or "did not" in str(panel(app).border_title),
                START_TIME,
            )
            server = jupyter.running_server(workspace)
            assert server is not None, shown(app)
            url = panel(app).url
            assert url == server.url("basics/squares.ipynb")
            assert f"token={server.token}" in url
            assert url in shown(app) and server.ssh in shown(app)
            assert f"-L {server.port}:127.0.0.1:{server.port}" in shown(app)
            await pilot.press("y")
            assert app.clipboard == url
            assert "pid" in shown(app)  # the rest of what the start said, below
            panel(app).text_select_all()  # as a drag of the mouse over it would
            await pilot.pause()
            selected = app.screen.get_selected_text() or ""
            assert url in selected.replace("\n", "")
        assert app.farewell()[-1] == url  # printed as gpulab quits: the server runs on
    finally:
        stopped = jupyter.stop_server(workspace)
    assert stopped is not None and jupyter.running_server(workspace) is None
    assert app.farewell() == []  # stopped: nothing to say
    assert not list((state_dir / "jupyterlab").glob("*.json"))


async def test_open_without_jupyterlab_says_how_to_install_it(
    exercise_app: Callable[..., GpulabApp],
    monkeypatch: pytest.MonkeyPatch,
    state_dir: Path,
    no_browser: list[str],
) -> None:
    real = importlib.util.find_spec

    def find_spec(name: str, *args: Any, **kwargs: Any) -> Any:
        return None if name == "jupyterlab" else real(name, *args, **kwargs)

    monkeypatch.setattr(jupyter.importlib.util, "find_spec", find_spec)
    app = exercise_app()
    async with app.run_test(size=SIZE) as pilot:
        app.navigator.open_exercise("squares")
        await on_screen(pilot, app, ExerciseScreen)
        await pilot.press("o")
        await wait_for(pilot, lambda: "not installed" in shown(app), 30)
        assert f"{sys.executable} -m pip install jupyterlab" in shown(app)
        assert panel(app).border_title == "JupyterLab did not start"
        assert panel(app).url == ""
    assert not list((state_dir / "jupyterlab").glob("*.json"))  # nothing was started


async def test_a_server_that_dies_shows_the_end_of_its_log(
    exercise_app: Callable[..., GpulabApp], monkeypatch: pytest.MonkeyPatch
) -> None:
    log = (
        "JupyterLab stopped as it started; the end of its log (jupyterlab/x.log):\n"
        "    [E ServerApp] Running as root is not recommended\n"
        "    OSError: [Errno 98] Address already in use"
    )

    def open_notebook(workspace: Workspace, notebook: Path, **options: Any) -> Any:
        raise jupyter.JupyterError(log)

    monkeypatch.setattr(jupyter, "open_notebook", open_notebook)
    app = exercise_app()
    async with app.run_test(size=(100, 40)) as pilot:
        app.navigator.open_exercise("squares")
        await on_screen(pilot, app, ExerciseScreen)
        await pilot.press("o")
        await wait_for(pilot, lambda: "Address already in use" in shown(app), 30)
        assert shown(app).strip() == log
        assert "OSError: [Errno 98] Address already in use" in screen_text(app)


async def test_open_without_a_workspace_says_how_to_make_one(
    new_app: Callable[..., GpulabApp], monkeypatch: pytest.MonkeyPatch
) -> None:
    def open_notebook(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("nothing may start without a workspace")

    monkeypatch.setattr(jupyter, "open_notebook", open_notebook)
    app = new_app()
    assert app.workspace is None
    async with app.run_test(size=SIZE) as pilot:
        app.navigator.open_exercise("measure-cache")
        await on_screen(pilot, app, ExerciseScreen)
        await pilot.press("o")
        await pilot.pause()
        assert any("gpulab init" in str(n.message) for n in app._notifications)
        assert not panel(app).display
