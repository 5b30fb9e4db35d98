"""Debian's Chromium for the browser tests, driven by Playwright (which never downloads one).

Shared by the JupyterLab and book tests: where it lives, the flags it needs
here, why a test is skipped, and a headless browser with a fresh profile.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from playwright.sync_api import Browser

CHROMIUM = Path("/usr/bin/chromium")
# The flags this machine's Chromium needs: no sandbox as root, and nothing that
# reaches for the network (a closed network refuses it, slowly).
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def _skip_reason() -> str | None:
    if not CHROMIUM.is_file():
        return f"{CHROMIUM} is missing: install Debian's chromium (.ci/run does)"
    if importlib.util.find_spec("playwright") is None:
        return "playwright is not installed: `make test` installs it with the dev extra"
    return None


SKIP_REASON = _skip_reason()
needs_chromium = pytest.mark.skipif(SKIP_REASON is not None, reason=SKIP_REASON or "")


@contextmanager
def chromium() -> Iterator[Browser]:
    """Debian's Chromium, headless, with a fresh profile (Playwright makes one per launch)."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            yield browser
        finally:
            browser.close()
