"""Import boundaries: the course model is UI-free; the app starts without heavy imports."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

from helpers.tui import FIXTURE

HEAVY = ("cupy", "pynvml", "nbclient", "jupyter_client", "numpy", "jupyter")


def _run(code: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "GPULAB_COURSE_DIR": str(FIXTURE)}
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_course_never_imports_textual() -> None:
    result = _run("""
        import sys
        import gpulab.course
        from gpulab.course import load_course
        course = load_course()
        for entry in course.entries:
            try:
                course.lesson(entry.id)
            except gpulab.course.CourseError:
                pass
        assert "textual" not in sys.modules, "gpulab.course imported textual"
    """)
    assert result.returncode == 0, result.stderr


def test_app_imports_nothing_heavy_before_first_paint() -> None:
    result = _run(f"""
        import asyncio, sys
        from gpulab.tui import make_app
        heavy = {HEAVY!r}
        def loaded():
            return sorted(m for m in sys.modules if m.split(".")[0] in heavy)
        app = make_app()
        assert not loaded(), loaded()
        async def main():
            async with app.run_test(size=(100, 30)) as pilot:
                await pilot.pause()
                assert not loaded(), loaded()
                await pilot.press("enter")
                await pilot.pause()
                assert not loaded(), loaded()
        asyncio.run(main())
        print("ok")
    """)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().endswith("ok")


def test_the_map_paints_before_any_lesson_is_parsed() -> None:
    """The first frame of the course map needs the manifest only: no lesson parser (PyYAML,
    markdown-it, so no lesson parsed), no other screen, no probe, no figure and no plotting
    library."""
    result = _run("""
        import sys
        from textual.app import App
        from gpulab.tui import make_app

        display, seen = App._display, {}

        def first_paint(self, screen, renderable):
            display(self, screen, renderable)
            if renderable is not None and not seen and self._running:
                seen["modules"] = set(sys.modules)
                self.exit()

        App._display = first_paint
        app = make_app()
        app.run(headless=True, size=(100, 30))
        modules = seen["modules"]
        early = sorted(m for m in modules if m.split(".")[0] in ("yaml", "markdown_it",
                                                                  "plotext", "textual_plotext")
                       or m in ("gpulab.course.lesson", "gpulab.tui.screens.lesson",
                                "gpulab.tui.screens.exercise", "gpulab.tui.measure",
                                "gpulab.probes", "gpulab.figures",
                                "gpulab.tui.widgets.figure_view"))
        assert not early, early  # no lesson parsed: parsing one imports the parser
        print("ok")
    """)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().endswith("ok")
