"""Where the exercise's notebook is open in JupyterLab: the address, to copy or select."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Static

__all__ = ["JupyterPanel"]


class JupyterPanel(Static):
    """JupyterLab's address with its token, the ``ssh -L`` line, or why it did not start.

    The text is selectable with the mouse; the screen's copy key puts `url` on
    the clipboard.
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.url = ""
        self.display = False

    def show_starting(self, notebook: str) -> None:
        self.url = ""
        self.border_title = "JupyterLab"
        self.update(Text(f"Starting JupyterLab on {notebook}…", style="italic"))
        self.display = True

    def show_opened(self, url: str, ssh: str, lines: list[str]) -> None:
        """The address (with token), the ssh line, and what else JupyterLab's start said."""
        self.url = url
        self.border_title = "JupyterLab"
        text = Text()
        text.append(
            "open this address in your browser (y copies it, into tmux's paste buffer too; "
            "gpulab prints it on one line as it quits):\n",
            style="dim",
        )
        text.append(url, style="bold")
        if ssh:
            text.append("\nssh   ", style="dim")
            text.append(ssh)
            text.append(
                "\n      from another machine, run that there first, then open the "
                "address in its browser",
                style="dim",
            )
        others = [line for line in lines if url not in line and ssh not in line]
        if others:
            text.append("\n")
            for line in others:
                text.append(f"\n{line}", style="dim")
        self.update(text)
        self.display = True

    def show_failed(self, message: str) -> None:
        """JupyterLab did not start: the whole message, with the end of its log."""
        self.url = ""
        self.border_title = "JupyterLab did not start"
        self.update(Text(message, style="red"))
        self.display = True
