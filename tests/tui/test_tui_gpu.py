"""The GPU screen: a replayed H200 with live sparklines, and this machine without a GPU."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from textual.command import CommandPalette
from textual.pilot import Pilot
from textual.widgets import OptionList, Sparkline, Static

from gpulab.course import ProgressStore, load_course
from gpulab.probes import ProbeResult, nvml
from gpulab.probes.nvml import Replay
from gpulab.tui import GpulabApp, make_app
from gpulab.tui.screens import CourseMapScreen, GpuScreen, LessonScreen, gpu
from gpulab.tui.screens.gpu import SENSORS
from helpers.tui import FIXTURE, NVML_REPLAY, SIZE, on_screen, plain, wait_for


@pytest.fixture(autouse=True)
def fast_samples(monkeypatch: pytest.MonkeyPatch) -> None:
    """Sample every 20 ms instead of every second, so the tests see several samples."""
    monkeypatch.setattr(gpu, "SAMPLE_INTERVAL", 0.02)


def _app(store_path: Path, backend: Replay | None = None) -> GpulabApp:
    return make_app(
        course=load_course(FIXTURE), store=ProgressStore(store_path), nvml_backend=backend
    )


def _text(screen: GpuScreen, selector: str) -> str:
    return plain(screen.query_one(selector, Static).content)


async def _open_gpu(app: GpulabApp, pilot: Pilot[None]) -> GpuScreen:
    await pilot.press("g")
    await on_screen(pilot, app, GpuScreen)
    screen = app.screen
    assert isinstance(screen, GpuScreen)
    return screen


async def test_replayed_h200_inventory_and_live_sparklines(
    store_path: Path, h200_replay: Replay
) -> None:
    app = _app(store_path, h200_replay)
    async with app.run_test(size=SIZE) as pilot:
        screen = await _open_gpu(app, pilot)
        await wait_for(pilot, lambda: "NVIDIA H200" in _text(screen, "#gpu-inventory"))
        inventory = _text(screen, "#gpu-inventory")
        for shown in (
            "580.159.04",
            "13.0",
            "143771 MiB",
            "1980 MHz",
            "700 W",
            "Gen5 x16",
            "Default",
            "Enabled",
            "Disabled",
        ):
            assert shown in inventory, shown
        assert screen.query_one("#gpu-inventory").border_title == "NVIDIA H200"
        assert not screen.query_one("#gpu-missing").display
        assert not screen.query_one("#gpu-recorded").display

        await wait_for(pilot, lambda: all(len(screen.sensor(k).values) >= 3 for k, _ in SENSORS))
        # The sparklines hold only what the recorded H200 answered: a fresh replay,
        # asked more often than the recording has answers, gives every one of them.
        fresh = Replay.load(NVML_REPLAY)
        answered: dict[str, set[float]] = {k: set() for k, _ in SENSORS}
        for _ in range(50):
            result = nvml.sample(backend=fresh)
            for key in answered:
                reading = result.reading(key)
                assert reading is not None and isinstance(reading.value, int | float)
                answered[key].add(float(reading.value))
        for key, values in answered.items():
            line = screen.sensor(key).query_one(Sparkline)
            assert line.data is not None and len(line.data) >= 3
            assert set(line.data) <= values, key
        shown = plain(screen.sensor("power_draw").query_one(".sensor-value", Static).content)
        assert " W of 700 W" in shown
        assert any(f"{power:.4g} W of 700 W" in shown for power in answered["power_draw"])
        conditions = _text(screen, "#gpu-conditions")
        assert "P0" in conditions and "GPU idle" in conditions

        await pilot.press("escape")
        await on_screen(pilot, app, CourseMapScreen)
        # Leaving the screen stops the sampling thread and its worker.
        await wait_for(pilot, screen.sampler_done.is_set)
        await wait_for(
            pilot,
            lambda: not [w for w in app.workers if w.group == "gpu-sampler" and not w.is_finished],
        )
        taken = screen.samples
        await pilot.pause(0.1)
        assert screen.samples == taken


async def test_no_gpu_shows_why_and_the_recorded_h200(
    store_path: Path, no_gpu_here: str, recorded_h200: dict[str, ProbeResult]
) -> None:
    app = _app(store_path)  # the real NVML: this machine has no NVIDIA driver
    async with app.run_test(size=(120, 50)) as pilot:
        screen = await _open_gpu(app, pilot)
        await wait_for(pilot, lambda: screen.query_one("#gpu-missing").display)
        missing = _text(screen, "#gpu-missing")
        assert "No NVIDIA GPU found" in missing
        assert " ".join(no_gpu_here.split()) in " ".join(missing.split())
        inventory = recorded_h200["nvml_inventory"]
        assert inventory.recorded is not None
        label = inventory.recorded.label
        assert label.startswith("recorded on NVIDIA H200, ")
        panel = screen.query_one("#gpu-recorded", Static)
        assert panel.display and panel.border_title == label
        shown = " ".join(_text(screen, "#gpu-recorded").split())
        assert label in shown and "not this machine's" in shown
        for key in ("name", "driver_version", "memory_total_mib"):
            reading = inventory.reading(key)
            assert reading is not None and reading.shown in shown
        sample = recorded_h200["nvml_sample"].reading("clock_sm")
        assert sample is not None and sample.shown in shown
        # Recorded numbers never look live: no sparklines, no sampling.
        assert not screen.query_one("#gpu-live").display
        await wait_for(pilot, screen.sampler_done.is_set)
        assert all(not screen.sensor(key).values for key, _ in SENSORS)
        assert screen.samples == 0


async def test_no_gpu_and_no_recordings(
    store_path: Path, no_gpu_here: str, no_recordings: None
) -> None:
    app = _app(store_path)
    async with app.run_test(size=SIZE) as pilot:
        screen = await _open_gpu(app, pilot)
        await wait_for(pilot, lambda: screen.query_one("#gpu-recorded").display)
        assert "No NVIDIA GPU found" in _text(screen, "#gpu-missing")
        assert "No recorded readings in this copy" in _text(screen, "#gpu-recorded")


async def test_g_from_a_lesson_and_back(store_path: Path, h200_replay: Replay) -> None:
    app = _app(store_path, h200_replay)
    async with app.run_test(size=SIZE) as pilot:
        app.navigator.open_lesson("memory")
        await on_screen(pilot, app, LessonScreen)
        await pilot.press("g")
        await on_screen(pilot, app, GpuScreen)
        await pilot.press("g")  # g closes it again, like escape
        await on_screen(pilot, app, LessonScreen)
        assert isinstance(app.screen, LessonScreen) and app.screen.lesson_id == "memory"


async def _palette(app: GpulabApp, pilot: Pilot[None], query: str, expect: str) -> None:
    await pilot.press("ctrl+p")
    await on_screen(pilot, app, CommandPalette)
    await pilot.press(*query)

    def first() -> str:
        options = app.screen.query_one("CommandList", OptionList)
        return str(options.get_option_at_index(0).prompt) if options.option_count else ""

    await wait_for(pilot, lambda: first().startswith(expect))
    await pilot.press("enter")  # the first hit, highlighted ("down" would pass it by when
    # others follow, as figures whose titles name the GPU do)
    await wait_for(pilot, lambda: not isinstance(app.screen, CommandPalette))


async def test_palette_opens_the_gpu_screen_and_a_lesson_replaces_it(
    new_app: Callable[[], GpulabApp],
) -> None:
    app = new_app()
    async with app.run_test(size=SIZE) as pilot:
        await _palette(app, pilot, "GPU", "GPU")
        await on_screen(pilot, app, GpuScreen)
        await _palette(app, pilot, "lesson: memory", "Go to lesson: Memory hierarchy")
        await on_screen(pilot, app, LessonScreen)
        assert not any(isinstance(s, GpuScreen) for s in app.screen_stack)
        assert len(app.screen_stack) == 2


async def test_quitting_on_the_gpu_screen_stops_sampling(
    store_path: Path, h200_replay: Replay
) -> None:
    app = _app(store_path, h200_replay)
    async with app.run_test(size=SIZE) as pilot:
        screen = await _open_gpu(app, pilot)
        await wait_for(pilot, lambda: screen.samples >= 2)
    assert screen.sampler_done.wait(timeout=10), "the sampling thread outlived the app"


@pytest.mark.gpu
async def test_real_nvml_inventory_and_live_sparklines(store_path: Path) -> None:
    inventory = nvml.inventory()
    if inventory.status not in ("ok", "partial"):
        pytest.skip(f"no NVIDIA GPU here: {inventory.message}")
    name = inventory.reading("name")
    assert name is not None
    app = _app(store_path)
    async with app.run_test(size=SIZE) as pilot:
        screen = await _open_gpu(app, pilot)
        await wait_for(
            pilot, lambda: all(len(screen.sensor(k).values) >= 3 for k, _ in SENSORS), timeout=30
        )
        assert screen.query_one("#gpu-inventory").border_title == name.value
        assert not screen.query_one("#gpu-missing").display
        clocks = screen.sensor("clock_sm").values
        assert all(value > 0 for value in clocks)
        await pilot.press("escape")
        await on_screen(pilot, app, CourseMapScreen)
