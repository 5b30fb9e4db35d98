"""An exercise notebook in real JupyterLab, in headless Chromium: run it, see the result panel.

`check(name)` at the end of an exercise notebook returns a result whose HTML
(`_repr_html_`) JupyterLab renders as the panel, and only a browser shows what
JupyterLab made of it (its HTML sanitizer, its theme's colours). So this test
starts the JupyterLab of gpulab's environment on a folder of its own, opens the
roofline notebook in Debian's Chromium driven by Playwright, runs it from the
menu or the keyboard, and reads the panel as the learner sees it: the solution
passes every check, the exercise as released fails.

Each notebook sits in a folder of its own under the name of its exercise, so
`check("roofline")`, run by a kernel whose working folder is the notebook's,
judges the very file that is open (see `gpulab.grading.learn.panel.check`).

Chromium is Debian's (`.ci/run` installs it); Playwright never downloads a
browser of its own. Without either the tests skip and say why.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from helpers.chromium import chromium, needs_chromium

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Locator, Page

ROOT = Path(__file__).resolve().parents[2]
EXERCISE = "roofline"
NOTEBOOKS = {  # folder in the server's root: the notebook copied there as roofline.ipynb
    "solution": ROOT / "solutions" / "memory-hierarchy" / f"{EXERCISE}.ipynb",
    "exercise": ROOT / "exercises" / "memory-hierarchy" / f"{EXERCISE}.ipynb",
}
TIMEOUT_MS = 90_000  # generous: CI machines have two cores, and the checks run a pytest


pytestmark = needs_chromium


@dataclass(frozen=True)
class LabServer:
    """A running JupyterLab: where it listens, its token, and the log to show on failure."""

    url: str
    token: str
    log: Path

    def notebook_url(self, path: str, workspace: str) -> str:
        """The notebook at `path` in a workspace of its own, so no other test's tabs come back."""
        return f"{self.url}/lab/workspaces/{workspace}/tree/{path}?reset&token={self.token}"

    def log_tail(self, lines: int = 30) -> str:
        text = self.log.read_text(encoding="utf-8", errors="replace")
        return "\n".join(text.splitlines()[-lines:])


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def _quiet_settings(settings: Path) -> None:
    """JupyterLab settings that keep the news prompt from covering the notebook."""
    folder = settings / "@jupyterlab" / "apputils-extension"
    folder.mkdir(parents=True)
    (folder / "notification.jupyterlab-settings").write_text(
        json.dumps({"fetchNews": "false"}), encoding="utf-8"
    )


def _wait_until_serving(server: subprocess.Popen[bytes], lab: LabServer) -> None:
    deadline = time.monotonic() + TIMEOUT_MS / 1000
    status = f"{lab.url}/api/status?token={lab.token}"
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise AssertionError(f"JupyterLab exited with {server.returncode}:\n{lab.log_tail()}")
        try:
            with urllib.request.urlopen(status, timeout=5) as reply:
                if reply.status == 200:
                    return
        except (urllib.error.URLError, ConnectionError):
            pass
        time.sleep(0.25)
    raise AssertionError(f"JupyterLab did not answer at {lab.url}:\n{lab.log_tail()}")


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LabServer]:
    """JupyterLab of this venv serving a folder with the solution and the exercise.

    HOME and every Jupyter and gpulab folder point into the test's own folder: no
    user configuration, kernel or progress is read or written.
    """
    base = tmp_path_factory.mktemp("jupyterlab")
    served = base / "served"
    for folder, notebook in NOTEBOOKS.items():
        (served / folder).mkdir(parents=True)
        shutil.copy(notebook, served / folder / f"{EXERCISE}.ipynb")
    _quiet_settings(base / "settings")
    (base / "home").mkdir()
    env = dict(
        os.environ,
        HOME=str(base / "home"),
        GPULAB_STATE_DIR=str(base / "state"),
        IPYTHONDIR=str(base / "ipython"),
        JUPYTER_CONFIG_DIR=str(base / "config"),
        JUPYTER_DATA_DIR=str(base / "data"),
        JUPYTER_RUNTIME_DIR=str(base / "runtime"),
        JUPYTERLAB_SETTINGS_DIR=str(base / "settings"),
        JUPYTERLAB_WORKSPACES_DIR=str(base / "workspaces"),
    )
    port, token = _free_port(), secrets.token_hex(16)
    command = [
        sys.executable,
        "-m",
        "jupyterlab",
        "--no-browser",
        "--allow-root",
        "--ServerApp.ip=127.0.0.1",
        f"--ServerApp.port={port}",
        "--ServerApp.port_retries=0",
        f"--IdentityProvider.token={token}",
        f"--ServerApp.root_dir={served}",
        "--LabApp.expose_app_in_browser=True",  # window.jupyterapp: see _wait_idle
        "--LabApp.extension_manager=readonly",
        "--LabApp.news_url=None",
        "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
    ]
    server = LabServer(f"http://127.0.0.1:{port}", token, base / "jupyterlab.log")
    with server.log.open("wb") as log:
        process = subprocess.Popen(
            command,
            cwd=served,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        _wait_until_serving(process, server)
        yield server
    finally:
        process.terminate()  # JupyterLab shuts its kernels down on SIGTERM
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with chromium() as launched:
        yield launched


@pytest.fixture
def page(browser: Browser) -> Iterator[Page]:
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    context.set_default_timeout(TIMEOUT_MS)
    try:
        yield context.new_page()
    finally:
        context.close()


def _open_notebook(page: Page, lab: LabServer, folder: str) -> None:
    """Open the notebook in `folder` and wait until its kernel has started and is idle."""
    page.goto(lab.notebook_url(f"{folder}/{EXERCISE}.ipynb", workspace=folder))
    page.locator(".jp-NotebookPanel .jp-Notebook").wait_for()
    _wait_idle(page)


def _wait_idle(page: Page) -> None:
    """Wait until the open notebook's kernel is connected and idle.

    The toolbar's indicator reads "idle" before any kernel exists, and a cell run
    that early asks which kernel to start; the session itself tells the truth.
    """
    page.wait_for_function(_KERNEL_IDLE)


_KERNEL_IDLE = """() => {
    const kernel = window.jupyterapp?.shell.currentWidget?.sessionContext?.session?.kernel;
    return kernel?.connectionStatus === "connected" && kernel.status === "idle";
}"""


def _result_panel(page: Page, lab: LabServer, screenshot: Path) -> Locator:
    """The check cell's panel, rendered as HTML (not the text fallback).

    The page is saved to `screenshot` either way: the panel, or what came instead.
    """
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    panel = page.locator(".jp-OutputArea-output .gpulab-result-panel")
    try:
        panel.wait_for()
    except PlaywrightTimeout as exc:
        page.screenshot(path=screenshot)
        raise AssertionError(
            f"no result panel appeared (see {screenshot}); JupyterLab's log:\n{lab.log_tail()}"
        ) from exc
    _wait_idle(page)
    panel.scroll_into_view_if_needed()
    page.screenshot(path=screenshot)
    return panel


def _rows(panel: Locator) -> list[list[str]]:
    """The panel's table: mark, check title, points, message, one list per check."""
    cells: list[list[str]] = panel.locator("table.gpulab-checks tr").evaluate_all(
        "rows => rows.map(row => Array.from(row.cells, cell => cell.textContent.trim()))"
    )
    return cells


def test_solution_runs_all_cells_and_the_panel_shows_every_check_passed(
    page: Page, lab: LabServer, tmp_path: Path
) -> None:
    _open_notebook(page, lab, "solution")
    page.get_by_role("menuitem", name="Run", exact=True).click()
    page.locator("li.lm-Menu-item[data-command='runmenu:run-all']").click()
    panel = _result_panel(page, lab, tmp_path / f"{EXERCISE}-solution.png")

    head = panel.locator(".gpulab-result").inner_text()
    found = re.search(rf"{EXERCISE}: passed — (\d+) of (\d+) points", head)
    assert found is not None, f"the panel says: {head!r}"
    assert found[1] == found[2] != "0"
    rows = _rows(panel)
    assert rows, "the panel lists no checks"
    for mark, title, points, message in rows:
        earned, possible = points.split("/")
        assert (mark, earned, message) == ("✓", possible, ""), f"{title}: {mark} {points}"
    # Every code cell ran, in order, and none wrote an error or a warning.
    prompts = page.locator(".jp-CodeCell .jp-InputPrompt").evaluate_all(
        "prompts => prompts.map(p => p.textContent.trim())"
    )
    assert prompts == [f"[{n}]:" for n in range(1, len(prompts) + 1)]
    assert page.locator("[data-mime-type='application/vnd.jupyter.stderr']").count() == 0


def test_exercise_as_released_shows_failed_checks_in_the_panel(
    page: Page, lab: LabServer, tmp_path: Path
) -> None:
    # Only the check cell: run all would stop at the first stub's NotImplementedError.
    _open_notebook(page, lab, "exercise")
    check_cell = page.locator(".jp-CodeCell", has_text=f'check("{EXERCISE}")')
    check_cell.locator(".jp-InputArea-editor").click()
    page.keyboard.press("Shift+Enter")
    panel = _result_panel(page, lab, tmp_path / f"{EXERCISE}-exercise.png")

    head = panel.locator(".gpulab-result").inner_text()
    assert re.search(rf"{EXERCISE}: failed — \d+ of \d+ points", head), head
    failed = [row for row in _rows(panel) if row[0] == "✗"]
    assert failed, "the panel shows no failed check"
    for _mark, title, points, message in failed:
        assert points.startswith("0/"), f"{title}: {points}"
        assert message, f"{title} failed without saying why"
