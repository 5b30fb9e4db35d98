"""gpulab's terminal app: course map, lessons as mindmaps, exercises, figures, search, help.

`make_app()` builds the app (tests reuse it); `run_app()` runs it for ``gpulab``.
Nothing heavy (CuPy, NVML, Jupyter) is imported here or before first paint, nor is
plotext, which draws the figures, before a figure is shown.
"""

from __future__ import annotations

from gpulab.tui.app import GpulabApp, make_app, run_app

__all__ = ["GpulabApp", "make_app", "run_app"]
