"""Helpers for the TUI tests (a module name no other test folder uses)."""

from __future__ import annotations

import asyncio
import io
from collections.abc import Callable
from pathlib import Path

from rich.console import Console
from textual.app import App
from textual.pilot import Pilot
from textual.screen import Screen

FIXTURE = Path(__file__).parent / "fixture_course"
NVML_REPLAY = Path(__file__).resolve().parents[1] / "fixtures" / "nvml" / "h200.json"
"""NVML's answers on gpulab's H200, recorded there, replayed where there is no GPU."""
SIZE = (100, 30)


async def wait_for(pilot: Pilot[None], predicate: Callable[[], object], timeout: float = 5.0
                   ) -> None:
    """Let the app run until `predicate()` is true; fail after `timeout` seconds."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not predicate():
        if loop.time() > deadline:
            raise AssertionError("condition not reached in time")
        await pilot.pause(0.02)


def plain(renderable: object, width: int = 120) -> str:
    """What a Rich renderable prints, as plain text."""
    console = Console(width=width, file=io.StringIO(), color_system=None)
    with console.capture() as capture:
        console.print(renderable)
    return capture.get()


async def on_screen(pilot: Pilot[None], app: App[object], kind: type[Screen[object]]) -> None:
    """Let the app run until a screen of `kind` is on top and mounted."""
    await wait_for(pilot, lambda: isinstance(app.screen, kind) and app.screen.is_mounted)
    await pilot.pause()
