"""The exit statuses of every `gpulab` command, in one place.

The command line (`gpulab.cli` and its `cli_*` modules) returns one of these
from each subcommand; nothing below it exits the process. argparse's own usage
errors exit with 2 as well, so `BAD_INPUT` means the same whoever says it.
"""

from __future__ import annotations

from enum import IntEnum

__all__ = ["ExitCode"]


class ExitCode(IntEnum):
    """What a `gpulab` command's exit status says."""

    OK = 0
    """It did what was asked (a check passed or was skipped, a probe ran, a class was graded)."""
    FAILED = 1
    """It ran, and what it judged failed: a check, a probe that could not run here, a doctor
    item, a lesson's claims measured against this machine."""
    BAD_INPUT = 2
    """What it was given is wrong: an unknown name, broken course content, a bad option
    (with the problem as file:line where there is a file)."""
    INTERRUPTED = 130
    """The user pressed ctrl-c (128 + SIGINT, as a shell reports it)."""
