"""A real terminal for end-to-end tests: tmux runs a command, the test types and reads.

Part of the tests' helpers (`tests/helpers`, imported as `helpers.terminal`).

Each `Terminal` starts a tmux server of its own (``tmux -L gpulab-test-<id>``,
no configuration file) and ends it on `close`. A session on the user's own
server would run its command with that server's environment, whatever the
test passes to the client: the user's HOME and state folder, the user's
progress. A private server is started by the test's client, so the command
gets the environment the test gives it, and nothing else.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
import uuid
from pathlib import Path
from types import TracebackType

import pytest

__all__ = ["Terminal", "needs_tmux"]

needs_tmux = pytest.mark.skipif(
    shutil.which("tmux") is None, reason="tmux is not installed (.ci/run installs it)"
)


class Terminal:
    """A detached tmux session of a given size running one command, on a tmux server of its
    own that runs with `env` (default: this process's environment, less TMUX)."""

    def __init__(
        self,
        command: str,
        *,
        width: int = 100,
        height: int = 50,
        cwd: str | None = None,
        env: dict[str, str] | None = None,
    ) -> None:
        self.name = f"gpulab-test-{uuid.uuid4().hex[:8]}"
        self.socket = self.name
        """The tmux server's socket name (``tmux -L``): this terminal's alone."""
        server_env = {k: v for k, v in (env or os.environ).items() if k != "TMUX"}
        self.tmux(
            "new-session",
            "-d",
            "-s",
            self.name,
            "-x",
            str(width),
            "-y",
            str(height),
            command,
            check=True,
            env=server_env,
            cwd=cwd,
        )
        shown = self.tmux("display-message", "-p", "#{socket_path}").stdout.strip()
        self._socket_path = Path(shown)
        """Where the server's socket is (``$TMUX_TMPDIR/tmux-<uid>/<socket>``)."""

    def tmux(
        self,
        *args: str,
        check: bool = False,
        env: dict[str, str] | None = None,
        cwd: str | None = None,
    ) -> subprocess.CompletedProcess[str]:
        """Run a tmux command against this terminal's own server."""
        return subprocess.run(
            ["tmux", "-L", self.socket, "-f", "/dev/null", *args],
            capture_output=True,
            text=True,
            check=check,
            env=env,
            cwd=cwd,
        )

    def screen(self) -> str:
        return self.tmux("capture-pane", "-p", "-t", self.name).stdout

    def keys(self, *keys: str) -> None:
        self.tmux("send-keys", "-t", self.name, *keys, check=True)

    def wait_for(self, text: str, timeout: float = 30) -> str:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            screen = self.screen()
            if text in screen:
                return screen
            time.sleep(0.2)
        raise AssertionError(f"{text!r} did not appear; the screen shows:\n{self.screen()}")

    def alive(self) -> bool:
        return self.tmux("has-session", "-t", self.name).returncode == 0

    def wait_gone(self, timeout: float = 15) -> bool:
        """Whether the command ends (and its session with it) within `timeout` seconds."""
        deadline = time.monotonic() + timeout
        while self.alive() and time.monotonic() < deadline:
            time.sleep(0.2)
        return not self.alive()

    def close(self) -> None:
        """End the session and this terminal's tmux server, and remove its socket (tmux
        leaves it behind)."""
        self.tmux("kill-server")
        if self._socket_path.name == self.socket:
            self._socket_path.unlink(missing_ok=True)

    def __enter__(self) -> Terminal:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()
