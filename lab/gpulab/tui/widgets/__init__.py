"""The app's own widgets, one per module."""

from __future__ import annotations

from gpulab.tui.widgets.claim_card import ClaimCard
from gpulab.tui.widgets.course_tree import CourseTree
from gpulab.tui.widgets.error_panel import ErrorPanel
from gpulab.tui.widgets.hint_list import HintList
from gpulab.tui.widgets.item_summary import ItemSummary
from gpulab.tui.widgets.mindmap import MindmapTree
from gpulab.tui.widgets.node_pane import NodePane
from gpulab.tui.widgets.sensor_panel import SensorPanel

__all__ = [
    "ClaimCard",
    "CourseTree",
    "ErrorPanel",
    "HintList",
    "ItemSummary",
    "MindmapTree",
    "NodePane",
    "SensorPanel",
]
