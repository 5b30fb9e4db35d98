"""The gpulab modules a command runs code of, in its own process: a flow, counted.

The code review traced flows by hand (a learner's check, a probe run) and
counted the modules each crosses. This counts them by running the command:

    python bench/flows.py check roofline
    python bench/flows.py probe run hbm_bandwidth

runs ``gpulab ARGS...`` in this process under a profiler (`sys.setprofile`,
and `threading.setprofile` for the threads it starts) and prints, in the
order they were first entered, every gpulab module whose functions ran,
then their count. Code that runs while a module is imported (module bodies,
and what they call) is left out: a flow is what the command does, not what
importing it costs. Processes the command starts (a check's pytest and its
learner worker) are not followed; the output says how many were started.
The command's own output goes to stderr, so stdout is the list alone.
"""

from __future__ import annotations

import contextlib
import subprocess
import sys
import threading
from types import FrameType
from typing import Any

PACKAGE = "gpulab"


def _at_import(frame: FrameType | None, base: FrameType) -> bool:
    """Whether a module body is being run between `frame` and `base`: an import."""
    while frame is not None and frame is not base:
        if frame.f_code.co_name == "<module>":
            return True
        frame = frame.f_back
    return False


def trace(args: list[str]) -> tuple[list[str], int, int]:
    """Run ``gpulab ARGS``; the gpulab modules entered, processes started, exit status."""
    from gpulab.cli import main

    base = sys._getframe()
    entered: list[str] = []
    seen: set[str] = set()
    started = 0

    def profile(frame: FrameType, event: str, arg: Any) -> None:
        if event != "call":
            return
        module = frame.f_globals.get("__name__", "")
        if module in seen or not (module == PACKAGE or module.startswith(PACKAGE + ".")):
            return
        if frame.f_code.co_name == "<module>" or _at_import(frame.f_back, base):
            return
        seen.add(module)
        entered.append(module)

    real_popen_init = subprocess.Popen.__init__

    def counted_init(self: subprocess.Popen[Any], *a: Any, **k: Any) -> None:
        nonlocal started
        started += 1
        real_popen_init(self, *a, **k)

    subprocess.Popen.__init__ = counted_init  # type: ignore[method-assign]
    threading.setprofile(profile)
    sys.setprofile(profile)
    try:
        with contextlib.redirect_stdout(sys.stderr):
            try:
                status = int(main(args) or 0)
            except SystemExit as exit_:
                status = exit_.code if isinstance(exit_.code, int) else 1
    finally:
        sys.setprofile(None)
        threading.setprofile(None)  # type: ignore[arg-type]
        subprocess.Popen.__init__ = real_popen_init  # type: ignore[method-assign]
    return entered, started, status


def main() -> int:
    args = sys.argv[1:]
    if not args:
        print(__doc__.strip().splitlines()[0], file=sys.stderr)
        print("usage: python bench/flows.py GPULAB-ARGS...", file=sys.stderr)
        return 2
    entered, started, status = trace(args)
    for module in entered:
        print(module)
    print(
        f"gpulab {' '.join(args)}: {len(entered)} modules in this process, "
        f"{started} processes started, exit status {status}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
