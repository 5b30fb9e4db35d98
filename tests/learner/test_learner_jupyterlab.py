"""`gpulab open` from the wheel, as people reach GPU machines: as root, over SSH, no browser.

The real JupyterLab of the wheel's environment is started by `gpulab open`, which
must return at once and print an address that answers; headless Chromium then
shows the workspace's notebook there. The server is reused, stopped by
`gpulab open --stop`, and leaves no process behind; one that dies as it starts
is reported with the end of its log.
"""

from __future__ import annotations

import json
import os
import re
import time
import urllib.request
from pathlib import Path

import pytest

from helpers.chromium import chromium, needs_chromium
from helpers.learner_env import Learner

TIMEOUT = 180


def _address(output: str) -> str:
    found = re.search(r"^open: (http://127\.0\.0\.1:\d+/\S+)$", output, flags=re.M)
    assert found, f"no address in:\n{output}"
    return found.group(1)


def _pid(output: str) -> int:
    found = re.search(r"\(pid (\d+)\)", output)
    assert found, output
    return int(found.group(1))


def _running(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[-1].split()[0] not in ("Z", "X")


def _processes_of(marker: str) -> list[int]:
    """Processes (zombies too) whose command line holds `marker`."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if marker.encode() in (entry / "cmdline").read_bytes():
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


def _gone(pid: int, timeout: float = 20) -> bool:
    """Whether `pid` ends within `timeout` (a zombie has ended: reaping it is init's job, the
    server being no child of gpulab's)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not _running(pid):
            return True
        time.sleep(0.1)
    return False


def _status(url: str) -> int:
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    with opener.open(url, timeout=30) as reply:
        return int(reply.status)


NEWS = "Would you like to get notified about official Jupyter news?"
ANNOUNCEMENTS = "@jupyterlab/apputils-extension:announcements"


def _page_config(url: str) -> dict[str, object]:
    """The page config JupyterLab gives its page (the JSON in #jupyter-config-data)."""
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    with opener.open(url, timeout=30) as reply:
        page = reply.read().decode()
    found = re.search(
        r'<script id="jupyter-config-data" type="application/json">(.*?)</script>', page, re.S
    )
    assert found, page[:2000]
    config: dict[str, object] = json.loads(found.group(1))
    return config


def test_open_as_this_user_without_a_browser_then_reuse_and_stop(learner: Learner) -> None:
    assert learner.run("init").returncode == 0
    workspace = learner.home / "gpulab-exercises"
    started = time.monotonic()
    opened = learner.run("open", "roofline", "--no-browser", timeout=TIMEOUT)
    assert opened.returncode == 0, opened.stdout + opened.stderr
    assert time.monotonic() - started < TIMEOUT
    url, pid = _address(opened.stdout), _pid(opened.stdout)
    try:
        assert "/lab/tree/memory-hierarchy/roofline.ipynb?token=" in url
        assert f"JupyterLab started (pid {pid}) for {workspace}" in opened.stdout
        assert re.search(
            r"^from another machine, first run there: ssh -N -L (\d+):127\.0\.0\.1:"
            r"\1 \S+@\S+$",
            opened.stdout,
            flags=re.M,
        )
        assert "no web browser here" not in opened.stdout  # none was asked for
        assert _status(url) == 200
        disabled = _page_config(url).get("disabledExtensions")
        assert isinstance(disabled, list) and ANNOUNCEMENTS in disabled  # no news toast
        port = re.search(r":(\d+)/", url).group(1)  # type: ignore[union-attr]
        assert _status(f"http://127.0.0.1:{port}/api/status?token={url.rsplit('=', 1)[1]}") == 200
        # the command returned and left the server as no child of anyone's but init's
        assert _running(pid)
        state = next((learner.home / ".local" / "state" / "gpulab" / "jupyterlab").glob("*.json"))
        assert state.stat().st_mode & 0o077 == 0  # the token is the user's alone

        again = learner.run("open", "namespaces", "--no-browser", timeout=TIMEOUT)
        assert again.returncode == 0, again.stderr
        assert f"JupyterLab is running (pid {pid})" in again.stdout
        assert "/lab/tree/containers/namespaces.ipynb?token=" in _address(again.stdout)
    finally:
        stopped = learner.run("open", "--stop", timeout=TIMEOUT)
    assert stopped.returncode == 0 and f"stopped JupyterLab (pid {pid})" in stopped.stdout
    assert _gone(pid)
    assert _processes_of(str(workspace)) == []  # no kernel, no zombie left
    assert "no JupyterLab was running" in learner.run("open", "--stop").stdout


@needs_chromium
@pytest.mark.skipif(os.geteuid() != 0, reason="the root case needs root (CI runs as root)")
def test_open_as_root_shows_the_workspace_notebook_in_chromium(
    wheel_env: Path, tmp_path: Path
) -> None:
    """JupyterLab refuses root unless told: `gpulab open` as root must still work."""
    learner = Learner(wheel_env, tmp_path)
    assert learner.run("init").returncode == 0
    notebook = tmp_path / "gpulab-exercises" / "memory-hierarchy" / "roofline.ipynb"
    title = json.loads(notebook.read_text())["cells"][0]["source"][0].lstrip("# ").strip()
    opened = learner.run("open", "roofline", "--no-browser", timeout=TIMEOUT)
    assert opened.returncode == 0, opened.stdout + opened.stderr
    pid = _pid(opened.stdout)
    try:
        with chromium() as browser:
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            page.set_default_timeout(TIMEOUT * 1000)
            page.goto(_address(opened.stdout))
            page.locator(".jp-NotebookPanel .jp-Notebook").wait_for()
            tab = page.locator(
                "#jp-main-dock-panel .lm-TabBar-tab.lm-mod-current .lm-TabBar-tabLabel"
            )
            assert tab.inner_text() == "roofline.ipynb"
            heading = page.locator(".jp-NotebookPanel .jp-MarkdownOutput h1").first
            heading.wait_for()
            assert title in heading.inner_text()
            # the announcements plugin asks about Jupyter's news as the notebook shows
            # (without gpulab's page config, at once here): it must not ask
            page.wait_for_timeout(3000)
            assert page.get_by_text(NEWS).count() == 0
    finally:
        learner.run("open", "--stop", timeout=TIMEOUT)
    assert _gone(pid)


def test_a_server_that_dies_is_reported_with_the_end_of_its_log(learner: Learner) -> None:
    assert learner.run("init").returncode == 0
    config = learner.home / "jupyter-config"
    config.mkdir()
    (config / "jupyter_server_config.py").write_text('c.ServerApp.max_body_size = "lots"\n')
    learner.own(config)
    failed = learner.run(
        "open", "roofline", "--no-browser", timeout=TIMEOUT, JUPYTER_CONFIG_DIR=str(config)
    )
    assert failed.returncode == 2, failed.stdout + failed.stderr
    assert "gpulab: JupyterLab stopped as it started; the end of its log" in failed.stderr
    assert "Bad config encountered" in failed.stderr and "max_body_size" in failed.stderr
    assert "Traceback (most recent call last)" not in failed.stderr.split("the end of its log")[0]
    assert _processes_of(str(learner.home / "gpulab-exercises")) == []
    # the next open, with a good configuration, starts afresh
    opened = learner.run("open", "--no-browser", timeout=TIMEOUT)
    try:
        assert opened.returncode == 0, opened.stderr
        assert _status(_address(opened.stdout)) == 200
    finally:
        learner.run("open", "--stop", timeout=TIMEOUT)


def test_a_server_killed_behind_gpulabs_back_is_said_and_replaced(learner: Learner) -> None:
    assert learner.run("init").returncode == 0
    first = learner.run("open", "--no-browser", timeout=TIMEOUT)
    assert first.returncode == 0, first.stderr
    old = _pid(first.stdout)
    os.kill(old, 9)
    assert _gone(old)
    second = learner.run("open", "--no-browser", timeout=TIMEOUT)
    try:
        assert second.returncode == 0, second.stderr
        assert f"the earlier server (pid {old}) had stopped" in second.stdout
        assert _pid(second.stdout.split("\n", 1)[0]) != old
        assert _status(_address(second.stdout)) == 200
    finally:
        learner.run("open", "--stop", timeout=TIMEOUT)
