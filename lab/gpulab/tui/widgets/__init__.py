"""The app's own widgets, one per module, each imported on first use.

The course map, the first screen, needs only two of them; the rest (the
lesson's Markdown pane, claim cards, the exercise's panels) load when a screen
that shows them is opened, so they cost nothing before first paint.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from gpulab.tui.widgets.check_report import CheckReportPanel
    from gpulab.tui.widgets.claim_card import ClaimCard
    from gpulab.tui.widgets.course_tree import CourseTree
    from gpulab.tui.widgets.diagram_view import DiagramView
    from gpulab.tui.widgets.error_panel import ErrorPanel
    from gpulab.tui.widgets.figure_view import FigureView
    from gpulab.tui.widgets.hint_list import HintList
    from gpulab.tui.widgets.item_summary import ItemSummary
    from gpulab.tui.widgets.jupyter_panel import JupyterPanel
    from gpulab.tui.widgets.mindmap import MindmapTree
    from gpulab.tui.widgets.node_pane import NodePane
    from gpulab.tui.widgets.sensor_panel import SensorPanel
    from gpulab.tui.widgets.task_panel import TaskPanel

__all__ = [
    "CheckReportPanel",
    "ClaimCard",
    "CourseTree",
    "DiagramView",
    "ErrorPanel",
    "FigureView",
    "HintList",
    "ItemSummary",
    "JupyterPanel",
    "MindmapTree",
    "NodePane",
    "SensorPanel",
    "TaskPanel",
]

_MODULES = {
    "CheckReportPanel": "check_report",
    "ClaimCard": "claim_card",
    "CourseTree": "course_tree",
    "DiagramView": "diagram_view",
    "ErrorPanel": "error_panel",
    "FigureView": "figure_view",
    "HintList": "hint_list",
    "ItemSummary": "item_summary",
    "JupyterPanel": "jupyter_panel",
    "MindmapTree": "mindmap",
    "NodePane": "node_pane",
    "SensorPanel": "sensor_panel",
    "TaskPanel": "task_panel",
}


def __getattr__(name: str) -> Any:
    module = _MODULES.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value
