"""The app's screens, one per module."""

from __future__ import annotations

from gpulab.tui.screens.course_map import CourseMapScreen
from gpulab.tui.screens.exercise import ExerciseScreen
from gpulab.tui.screens.fatal import FatalScreen
from gpulab.tui.screens.gpu import GpuScreen
from gpulab.tui.screens.help import HelpScreen
from gpulab.tui.screens.lesson import LessonScreen
from gpulab.tui.screens.prediction import PredictionScreen
from gpulab.tui.screens.search import SearchScreen

__all__ = [
    "CourseMapScreen",
    "ExerciseScreen",
    "FatalScreen",
    "GpuScreen",
    "HelpScreen",
    "LessonScreen",
    "PredictionScreen",
    "SearchScreen",
]
