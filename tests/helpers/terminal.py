"""A real terminal for end-to-end tests: tmux runs a command, the test types and reads.

Part of the tests' helpers (`tests/helpers`, imported as `helpers.terminal`).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
import uuid

import pytest

needs_tmux = pytest.mark.skipif(
    shutil.which("tmux") is None, reason="tmux is not installed (.ci/run installs it)"
)


class Terminal:
    """A detached tmux session of a given size running one command."""

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
        socket_env = {k: v for k, v in (env or os.environ).items() if k != "TMUX"}
        subprocess.run(
            [
                "tmux",
                "new-session",
                "-d",
                "-s",
                self.name,
                "-x",
                str(width),
                "-y",
                str(height),
                command,
            ],
            check=True,
            env=socket_env,
            cwd=cwd,
        )

    def screen(self) -> str:
        done = subprocess.run(
            ["tmux", "capture-pane", "-p", "-t", self.name], capture_output=True, text=True
        )
        return done.stdout

    def keys(self, *keys: str) -> None:
        subprocess.run(["tmux", "send-keys", "-t", self.name, *keys], check=True)

    def wait_for(self, text: str, timeout: float = 30) -> str:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            screen = self.screen()
            if text in screen:
                return screen
            time.sleep(0.2)
        raise AssertionError(f"{text!r} did not appear; the screen shows:\n{self.screen()}")

    def alive(self) -> bool:
        done = subprocess.run(["tmux", "has-session", "-t", self.name], capture_output=True)
        return done.returncode == 0

    def close(self) -> None:
        subprocess.run(["tmux", "kill-session", "-t", self.name], capture_output=True)
