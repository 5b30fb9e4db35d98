"""The app's screens, one per module, each imported on first use (see `gpulab.tui.widgets`)."""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from gpulab.tui.screens.course_map import CourseMapScreen
    from gpulab.tui.screens.exercise import ExerciseScreen
    from gpulab.tui.screens.fatal import FatalScreen
    from gpulab.tui.screens.figures import FiguresScreen
    from gpulab.tui.screens.gpu import GpuScreen
    from gpulab.tui.screens.help import HelpScreen
    from gpulab.tui.screens.lesson import LessonScreen
    from gpulab.tui.screens.prediction import PredictionScreen
    from gpulab.tui.screens.search import SearchScreen

__all__ = [
    "CourseMapScreen",
    "ExerciseScreen",
    "FatalScreen",
    "FiguresScreen",
    "GpuScreen",
    "HelpScreen",
    "LessonScreen",
    "PredictionScreen",
    "SearchScreen",
]

_MODULES = {
    "CourseMapScreen": "course_map",
    "ExerciseScreen": "exercise",
    "FatalScreen": "fatal",
    "FiguresScreen": "figures",
    "GpuScreen": "gpu",
    "HelpScreen": "help",
    "LessonScreen": "lesson",
    "PredictionScreen": "prediction",
    "SearchScreen": "search",
}


def __getattr__(name: str) -> Any:
    module = _MODULES.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value
