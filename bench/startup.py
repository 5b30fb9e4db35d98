"""Time to first paint of `gpulab` against a minimal Textual app, in one run.

Each sample is a fresh Python process that builds the app, runs it headless
until its first screen has been painted, and exits; the time is the process's
whole wall time, so imports count (gpulab must not import CuPy, NVML or Jupyter
before first paint). The baseline is a minimal app of the same kind: Header,
a Tree of 50 nodes, a Markdown pane and a Footer. Samples alternate between the
two; the last line printed is the ratio of the medians.

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
from textual.pilot import Pilot

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


async def first_paint(pilot: Pilot[object]) -> None:
    await pilot.pause()
    pilot.app.exit()


app.run(headless=True, size=(int(sys.argv[2]), int(sys.argv[3])), auto_pilot=first_paint)
"""


def sample(mode: str, env: dict[str, str]) -> float:
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", CHILD, mode, *map(str, SIZE)], env=env, check=True,
                   stdout=subprocess.DEVNULL, timeout=120)
    return time.perf_counter() - start


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
