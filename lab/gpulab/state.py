"""The learner's state folder: where it is, and what gpulab keeps in it.

``$GPULAB_STATE_DIR`` where it is set, else the platform's user state folder
(``~/.local/state/gpulab`` on Linux). In it:

- ``progress.json``: lessons visited, predictions, exercise results per workspace
  (`gpulab.course.progress`);
- ``app.json``: how the app was left, e.g. the map's width (`gpulab.tui.state`);
- ``workspace``: the workspace in use (`gpulab.course.workspace`);
- ``results/``: the measurements the learner saved (`gpulab.probes.saved`);
- ``jupyterlab/``: the JupyterLab servers gpulab started, one file each
  (`gpulab.grading.learn.jupyter`).

Nothing else writes there.
"""

from __future__ import annotations

from pathlib import Path

import platformdirs

from gpulab.environment import STATE_DIR

__all__ = ["state_dir"]


def state_dir() -> Path:
    """Where gpulab keeps the learner's state."""
    override = STATE_DIR.get()
    if override:
        return Path(override).expanduser()
    return Path(platformdirs.user_state_dir("gpulab", appauthor=False))
