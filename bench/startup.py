"""Time to first paint of `gpulab` against a minimal Textual app, in one run.

Each sample is a fresh Python process that builds the app and runs it
headless; the time runs from just before the process is started until the
app first hands a full frame to its display, so interpreter start-up and
imports count (gpulab must not import CuPy, NVML or Jupyter before first
paint), and work an app does after that first frame does not. The baseline
is a minimal app of the same kind: Header, a Tree of 50 nodes, a Markdown
pane and a Footer. Samples alternate between the two; the last line printed
is the ratio of the medians.

    python bench/startup.py [--runs N]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SIZE = (100, 30)

CHILD = r"""
import sys
import time

from textual.app import App

_display = App._display


def first_paint(self, screen, renderable):
    # App._display is where every frame goes; the first non-empty one outside
    # a batch update is the first paint. Report when it happened, then quit.
    _display(self, screen, renderable)
    if renderable is not None and not self._batch_count and self._running:
        if not getattr(self, "_bench_painted", False):
            self._bench_painted = True
            print(f"painted {time.time()!r}", flush=True)
            self.exit()


App._display = first_paint

mode = sys.argv[1]
if mode == "gpulab":
    from gpulab.tui import make_app
    app = make_app()
else:
    from textual.app import App, ComposeResult
    from textual.containers import Horizontal
    from textual.widgets import Footer, Header, Markdown, Tree

    class Minimal(App[None]):
        BINDINGS = [("q", "quit", "Quit")]

        def compose(self) -> ComposeResult:
            yield Header()
            with Horizontal():
                tree: Tree[None] = Tree("Lesson")  # 5 sections x 9 items: 50 nodes
                for section in range(5):
                    branch = tree.root.add(f"Section {section}", expand=True)
                    for item in range(9):
                        branch.add_leaf(f"Item {section}.{item}")
                tree.root.expand()
                yield tree
                yield Markdown("# Notes\n\nSome *notes* with `code`.\n\n```py\nx = 1\n```\n")
            yield Footer()

    app = Minimal()

app.run(headless=True, size=(int(sys.argv[2]), int(sys.argv[3])))
"""


def sample(mode: str, env: dict[str, str]) -> float:
    """Seconds from starting a process with the app to its first painted frame."""
    start = time.time()
    done = subprocess.run(
        [sys.executable, "-c", CHILD, mode, *map(str, SIZE)],
        env=env,
        check=True,
        capture_output=True,
        text=True,
        timeout=120,
    )
    painted = [line for line in done.stdout.splitlines() if line.startswith("painted ")]
    if not painted:
        raise SystemExit(f"{mode}: the app exited without painting\n{done.stderr}")
    return float(painted[-1].split()[1]) - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=9, help="samples of each app (at least 5)")
    args = parser.parse_args()
    runs = max(args.runs, 5)
    with tempfile.TemporaryDirectory() as state:
        env = {**os.environ, "GPULAB_STATE_DIR": state}
        env.pop("TEXTUAL", None)
        lab = Path(__file__).resolve().parent.parent / "lab"
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(lab), env.get("PYTHONPATH")]))
        for mode in ("minimal", "gpulab"):  # warm the OS file cache and bytecode
            sample(mode, env)
        times: dict[str, list[float]] = {"minimal": [], "gpulab": []}
        for _ in range(runs):
            for mode in times:
                times[mode].append(sample(mode, env))
    for mode, values in times.items():
        ms = ", ".join(f"{v * 1000:.0f}" for v in values)
        print(f"{mode:8} median {statistics.median(values) * 1000:6.0f} ms   ({ms})")
    ratio = statistics.median(times["gpulab"]) / statistics.median(times["minimal"])
    print(f"startup ratio gpulab / minimal Textual app: {ratio:.3f}")


if __name__ == "__main__":
    main()
