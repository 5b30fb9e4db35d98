"""The learner's saved probe results in the app: an app started with a result saved on this
machine draws its figure from it ("your GPU"); one saved on another machine, or a file that
cannot be read, is not used, and the learner is told which file; a result measured in the
app is saved for the next session. Real files in the test's state folder, real NVML answers
(the recorded H200's, or this machine's own)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from msgspec.structs import replace
from textual.pilot import Pilot

from gpulab.course import ProgressStore, load_course
from gpulab.probes import ProbeResult
from gpulab.probes.model import Gpu, Machine
from gpulab.probes.nvml import Replay
from gpulab.probes.saved import ResultStore, this_machine
from gpulab.tui import GpulabApp, make_app
from gpulab.tui.results import NOTES_TITLE
from gpulab.tui.screens import LessonScreen
from gpulab.tui.widgets import FigureView, NodePane
from helpers.tui import FOOTPRINT, build_figure_course, on_screen, wait_for

SIZE = (120, 40)
CHASE = "pointer_chase_latency"
YOURS = "your GPU (NVIDIA Test GPU), measured 2026-12-24"
RECORDED = "NVIDIA H200, gpulab's recording of "
ELSEWHERE = Machine("elsewhere", (Gpu("NVIDIA A100-SXM4-80GB", "GPU-00000000-aaaa-bbbb"),))


@pytest.fixture
def saved_app(
    tmp_path: Path, store_path: Path, monkeypatch: pytest.MonkeyPatch, h200_replay: Replay
) -> Callable[..., GpulabApp]:
    """Apps over the fixture course with figures, on the recorded H200 (its NVML answers)."""
    lessons = build_figure_course(tmp_path / "course")
    monkeypatch.setenv("GPULAB_COURSE_DIR", str(lessons))

    def build(**options: object) -> GpulabApp:
        options.setdefault("nvml_backend", h200_replay)
        options.setdefault("has_gpu", True)
        return make_app(course=load_course(lessons), store=ProgressStore(store_path), **options)  # type: ignore[arg-type]

    return build


@pytest.fixture
def store(state_dir: Path) -> ResultStore:
    """The store the app reads: the results folder in the test's state folder."""
    return ResultStore.under(state_dir)


def _own(recorded: ProbeResult) -> ProbeResult:
    """The recorded result as if the learner's GPU had measured it."""
    return replace(
        recorded, recorded=None, device="NVIDIA Test GPU", started="2026-12-24T10:00:00+00:00"
    )


async def _figure(app: GpulabApp, pilot: Pilot[None]) -> FigureView:
    app.navigator.open_lesson("memory", FOOTPRINT)
    await on_screen(pilot, app, LessonScreen)
    pane = app.screen.query_one(NodePane)
    await wait_for(pilot, lambda: pane.node is not None and pane.node.key == FOOTPRINT)
    return pane.query_one(FigureView)


def _notes(app: GpulabApp) -> list[str]:
    return [str(n.message) for n in app._notifications if n.title == NOTES_TITLE]


async def test_a_result_saved_on_this_machine_draws_the_figure(
    saved_app: Callable[..., GpulabApp],
    store: ResultStore,
    h200_replay: Replay,
    recorded_h200: dict[str, ProbeResult],
) -> None:
    store.save(_own(recorded_h200[CHASE]), this_machine(h200_replay))
    app = saved_app()
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: CHASE in app.measured)
        view = await _figure(app, pilot)
        await wait_for(pilot, lambda: view.data is not None and view.data.source == YOURS)
        assert app.measured[CHASE] == _own(recorded_h200[CHASE])
        assert _notes(app) == []


async def test_a_result_saved_on_another_machine_is_not_used(
    saved_app: Callable[..., GpulabApp], store: ResultStore, recorded_h200: dict[str, ProbeResult]
) -> None:
    path = store.save(_own(recorded_h200[CHASE]), ELSEWHERE)
    assert path is not None
    app = saved_app()
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: _notes(app))
        (note,) = _notes(app)
        assert note.startswith(
            f"Saved results of {CHASE} were measured on another machine "
            "(NVIDIA A100-SXM4-80GB on elsewhere), not this one (NVIDIA "
            "H200 on "
        )
        assert app.measured == {}
        view = await _figure(app, pilot)
        assert view.data is not None and view.data.source.startswith(RECORDED)
    assert path.is_file()  # never removed


async def test_a_file_that_cannot_be_read_is_named_and_left(
    saved_app: Callable[..., GpulabApp],
    store: ResultStore,
    h200_replay: Replay,
    recorded_h200: dict[str, ProbeResult],
) -> None:
    store.save(_own(recorded_h200[CHASE]), this_machine(h200_replay))
    broken = store.folder / "stride_sweep.json"
    broken.write_text("{cut off")
    app = saved_app()
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: _notes(app))
        (note,) = _notes(app)
        assert note.startswith(f"{broken} was skipped and left as it is: it is not JSON")
        assert set(app.measured) == {CHASE}  # the good one is used all the same
    assert broken.read_text() == "{cut off"


async def test_a_result_measured_in_the_app_is_there_after_a_restart(
    saved_app: Callable[..., GpulabApp],
    store: ResultStore,
    h200_replay: Replay,
    recorded_h200: dict[str, ProbeResult],
) -> None:
    app = saved_app()
    async with app.run_test(size=SIZE) as pilot:
        app.results.keep(recorded_h200[CHASE])  # a recording: never saved
        app.results.keep(_own(recorded_h200[CHASE]))
        await wait_for(pilot, lambda: store.files())
    (saved,), skipped = store.read()
    assert skipped == [] and saved.result == _own(recorded_h200[CHASE])
    assert saved.machine == this_machine(h200_replay)
    again = saved_app()
    async with again.run_test(size=SIZE) as pilot:
        view = await _figure(again, pilot)
        await wait_for(pilot, lambda: view.data is not None and view.data.source == YOURS)


async def test_on_a_machine_as_it_is_a_host_probe_saved_by_the_cli_is_used(
    saved_app: Callable[..., GpulabApp], state_dir: Path
) -> None:
    """This machine's own NVML (none on a machine without a GPU): `gpulab probe run system`
    saves for it, and an app on it takes the result in."""
    done = subprocess.run(
        [sys.executable, "-m", "gpulab", "probe", "run", "system"],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "GPULAB_STATE_DIR": str(state_dir)},
    )
    assert done.returncode == 0, done.stderr
    app = saved_app(nvml_backend=None, has_gpu=None)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: "system" in app.measured, timeout=15)
        assert app.measured["system"].status in ("ok", "partial")
        assert _notes(app) == []
