"""A card for one claim: what it states, the expected value, and its source."""

from __future__ import annotations

from rich.console import RenderableType
from rich.style import Style
from rich.table import Table
from rich.text import Text
from textual.widgets import Static

from gpulab.course import Claim
from gpulab.tui.text import CLAIM_BADGE

__all__ = ["ClaimCard"]

NO_PROBE = "no probe yet — measurement comes with the probes issue"


class ClaimCard(Static):
    """The claim's statement, expected value, device, source and probe.

    There is no measured value yet: the probes do not exist, and a card never
    shows a number that was not measured.
    """

    def __init__(self, claim: Claim, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.claim = claim
        self.border_title = f"{CLAIM_BADGE} claim {claim.id}"

    def render(self) -> RenderableType:
        claim = self.claim
        grid = Table.grid(padding=(0, 1), expand=True)
        grid.add_column(style="dim", no_wrap=True)
        grid.add_column(ratio=1)
        grid.add_row(Text("states"), Text(claim.statement, style="bold"))
        expected = Text(claim.expected, style="bold green")
        if claim.tolerance:
            expected.append(f"  (agrees within ±{claim.tolerance * 100:g} %)", style="dim")
        grid.add_row(Text("expected"), expected)
        grid.add_row(Text("device"), Text(claim.device))
        if claim.convention:
            grid.add_row(Text("counts"), Text(claim.convention, style="italic"))
        grid.add_row(Text("source"),
                     Text(claim.source, style=Style(underline=True, link=claim.source)))
        grid.add_row(Text("probe"), Text(claim.probe, style="bold"))
        grid.add_row(Text("measured"), Text(NO_PROBE, style="dim italic"))
        return grid
