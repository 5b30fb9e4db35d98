"""`m` on a claim: predict, measure with the claim's probe, see the verdict, keep the guess.

The host claim runs the real `system` probe; the H200 claim runs the real NVML
inventory, either on this machine (no GPU: the card says so) or against the
replayed H200. The CUDA claims (a copy of the fixture course with two more)
run the real CUDA probe: on this machine without a driver, or with the
replayed H200's driver and no CuPy. Where a claim cannot be measured here,
the prediction is of the reading recorded on gpulab's H200, and the card
compares them, labelled as a recording.
"""

from __future__ import annotations

import datetime as dt
import importlib.util
import json
import shutil
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from textual.pilot import Pilot
from textual.widgets import Input, Static

from gpulab.course import Course, ProgressStore, load_course
from gpulab.course.progress import Prediction
from gpulab.probes import ProbeResult, run_probe
from gpulab.probes.nvml import FORMAT, Replay
from gpulab.tui import GpulabApp, make_app
from gpulab.tui.measure import ClaimBoard, ClaimState, distance_text, outcome_of
from gpulab.tui.screens import GpuScreen, LessonScreen, PredictionScreen
from gpulab.tui.screens.prediction import parse_prediction
from gpulab.tui.widgets import ClaimCard
from gpulab.tui.widgets.claim_card import NOT_MEASURED
from helpers.tui import FIXTURE, SIZE, on_screen, plain, wait_for

HOST = "writing-kernels/where-it-runs/the-host-launches-the-kernels"
H200 = "writing-kernels/where-it-runs/an-h200-holds-141-gb-of-hbm3e"
SMS = "writing-kernels/where-it-runs/an-h200-sxm-has-132-sms"
L2 = "writing-kernels/where-it-runs/an-h100-has-a-50-mb-l2-cache"
SIZE_TALL = (120, 45)
HAS_CUPY = importlib.util.find_spec("cupy") is not None
without_cupy = pytest.mark.skipif(
    HAS_CUPY, reason="CuPy is installed here; this checks the machine without it"
)

CUDA_CLAIMS = """
[h200_sms]
statement = "An H200 SXM has 132 SMs"
value = 132
unit = "SMs"
device = "H200 SXM"
source = "https://www.nvidia.com/en-us/data-center/h200/"
probe = "cuda_properties"
reading = "multiProcessorCount"
tolerance = 0.0

[h100_l2_cache]
statement = "An H100 has a 50 MB L2 cache"
value = 50
unit = "MB"
device = "H100 SXM5 / PCIe"
source = "https://developer.nvidia.com/blog/nvidia-hopper-architecture-in-depth/"
probe = "cuda_properties"
reading = "l2CacheSize"
tolerance = 0.0
convention = "MB = 2^20 bytes, as CUDA's l2CacheSize reports it"
"""


def _app(store_path: Path, backend: Replay | None = None, course: Path = FIXTURE) -> GpulabApp:
    return make_app(
        course=load_course(course), store=ProgressStore(store_path), nvml_backend=backend
    )


@pytest.fixture
def cuda_course(tmp_path: Path) -> Path:
    """The fixture course with two claims that the CUDA properties probe measures."""
    lessons = tmp_path / "course"
    shutil.copytree(FIXTURE, lessons)
    with (lessons / "claims" / "course.toml").open("a", encoding="utf-8") as claims:
        claims.write(CUDA_CLAIMS)
    notes = lessons / "kernels.md"
    anchor = "- An H200 holds 141 GB of HBM3e <!-- claim: h200_memory -->\n"
    text = notes.read_text(encoding="utf-8")
    assert anchor in text
    notes.write_text(
        text.replace(
            anchor,
            anchor
            + (
                "- An H200 SXM has 132 SMs <!-- claim: h200_sms -->\n"
                "- An H100 has a 50 MB L2 cache <!-- claim: h100_l2_cache -->\n"
            ),
        ),
        encoding="utf-8",
    )
    return lessons


def _question(app: GpulabApp) -> str:
    return " ".join(plain(app.screen.query_one("#prediction-question", Static).content).split())


async def _asked(app: GpulabApp, pilot: Pilot[None]) -> str:
    """Open the prediction dialog with m; once it knows whether the probe runs here, its
    question."""
    await pilot.press("m")
    await on_screen(pilot, app, PredictionScreen)
    screen = app.screen
    assert isinstance(screen, PredictionScreen)
    await wait_for(pilot, lambda: screen.here is not None, timeout=30)
    await pilot.pause()
    return _question(app)


async def _open_at(app: GpulabApp, pilot: Pilot[None], key: str) -> ClaimCard:
    app.navigator.open_lesson("kernels", key)
    await on_screen(pilot, app, LessonScreen)
    await wait_for(pilot, lambda: app.screen.query(ClaimCard))
    await pilot.pause()
    return app.screen.query_one(ClaimCard)


def _card_text(app: GpulabApp) -> str:
    return plain(app.screen.query_one(ClaimCard).render())


def _row(text: str, label: str) -> str:
    """One labelled row of a card, with its wrapped continuation lines."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(label))
    row = [lines[start]]
    for line in lines[start + 1 :]:
        if line[:1].strip():
            break
        row.append(line.strip())
    return " ".join(" ".join(row).split())


async def _measured(app: GpulabApp, pilot: Pilot[None], claim: str) -> None:
    """Wait until the claim's probe has finished and its card shows it."""
    await wait_for(
        pilot,
        lambda: (
            not app.claims.board.is_measuring(claim)
            and app.screen.query_one(ClaimCard).state.outcome is not None
        ),
        timeout=30,
    )
    await pilot.pause()


def _predictions(store_path: Path) -> list[dict[str, Any]]:
    if not store_path.exists():
        return []
    predictions: list[dict[str, Any]] = json.loads(store_path.read_text())["predictions"]
    return predictions


def _cpus_online() -> float:
    reading = run_probe("system").reading("cpus_online")
    assert reading is not None and isinstance(reading.value, int)
    return float(reading.value)


async def test_predict_measure_and_save(store_path: Path) -> None:
    app = _app(store_path)
    async with app.run_test(size=SIZE_TALL) as pilot:
        card = await _open_at(app, pilot, HOST)
        assert NOT_MEASURED in _card_text(app)
        before = card.size.height
        question = await _asked(app, pilot)
        assert "What will the system probe measure on this machine, in CPUs?" in question
        await pilot.press("4", "enter")
        await on_screen(pilot, app, LessonScreen)
        await _measured(app, pilot, "host_cpus")
        text = _card_text(app)
        assert card.size.height >= before + 2  # the card grew to show verdict and prediction
    cpus = _cpus_online()
    assert f"{cpus:g} CPUs on this machine, just now" in _row(text, "measured")
    assert "agrees with 1–4096 CPUs" in _row(text, "verdict")
    assert distance_text(4.0, cpus, "CPUs") in _row(text, "predicted")
    saved = _predictions(store_path)
    assert len(saved) == 1
    entry = saved[0]
    assert entry["claim"] == "host_cpus" and entry["predicted"] == 4.0
    assert entry["unit"] == "CPUs" and entry["measured"] == cpus
    assert entry["verdict"] == "agrees" and entry["device"] == ""
    assert dt.datetime.fromisoformat(entry["at"]).tzinfo is not None

    again = _app(store_path)  # the next session shows the last measurement, dated
    async with again.run_test(size=SIZE_TALL) as pilot:
        await _open_at(again, pilot, HOST)
        await wait_for(pilot, lambda: again.screen.query_one(ClaimCard).state.last is not None)
        text = _card_text(again)
        assert "your last measurement" in _row(text, "measured")
        assert entry["at"][:10] in _row(text, "measured")
        assert "agrees" in _row(text, "verdict")


async def test_escape_skips_predicting_but_measures(store_path: Path) -> None:
    app = _app(store_path)
    async with app.run_test(size=SIZE_TALL) as pilot:
        await _open_at(app, pilot, HOST)
        await pilot.press("m")
        await on_screen(pilot, app, PredictionScreen)
        await pilot.press("escape")
        await on_screen(pilot, app, LessonScreen)
        await _measured(app, pilot, "host_cpus")
        text = _card_text(app)
        assert "agrees" in _row(text, "verdict")
        assert "predicted" not in text
    assert _predictions(store_path) == []


async def test_invalid_prediction_keeps_the_input(store_path: Path) -> None:
    app = _app(store_path)
    async with app.run_test(size=SIZE_TALL) as pilot:
        await _open_at(app, pilot, HOST)
        await pilot.press("m")
        await on_screen(pilot, app, PredictionScreen)
        await pilot.press("a", "b", "c", "enter")
        screen = app.screen
        assert isinstance(screen, PredictionScreen)  # still asking
        error = plain(screen.query_one("#prediction-error", Static).content)
        assert "'abc' is not a number" in error and "CPUs" in error
        field = screen.query_one(Input)
        assert field.value == "abc" and field.has_class("-invalid")
        await pilot.press("enter")  # still wrong: still asking, still typed
        assert isinstance(app.screen, PredictionScreen) and field.value == "abc"
        await pilot.press("backspace", "backspace", "backspace")
        assert not plain(screen.query_one("#prediction-error", Static).content).strip()
        await pilot.press("2", ".", "5", "enter")
        await on_screen(pilot, app, LessonScreen)
        await _measured(app, pilot, "host_cpus")
    assert [p["predicted"] for p in _predictions(store_path)] == [2.5]


def test_parse_prediction() -> None:
    assert parse_prediction(" 650 ", "cycles") == 650.0
    assert parse_prediction("650 cycles", "cycles") == 650.0
    assert parse_prediction("4.8", "TB/s") == 4.8
    assert parse_prediction("1e3", "MHz") == 1000.0
    for wrong, message in (
        ("", "Type a number first"),
        ("abc", "not a number"),
        ("nan", "finite"),
        ("4,8", "not a number"),
    ):
        try:
            parse_prediction(wrong, "GB")
        except ValueError as exc:
            assert message in str(exc)
        else:
            raise AssertionError(f"{wrong!r} was accepted")


async def test_m_only_on_a_claim(store_path: Path) -> None:
    app = _app(store_path)
    async with app.run_test(size=SIZE) as pilot:
        app.navigator.open_lesson("kernels")
        await on_screen(pilot, app, LessonScreen)

        def footer() -> set[str]:
            return {
                b.binding.description for b in app.screen.active_bindings.values() if b.binding.show
            }

        assert "Measure" not in footer()
        await pilot.press("m")  # the root has no claim: nothing to predict
        assert isinstance(app.screen, LessonScreen)
        app.screen.reveal(HOST)
        await pilot.pause()
        assert "Measure" in footer() and len(footer()) <= 6


async def test_measuring_state_on_the_card(store_path: Path) -> None:
    app = _app(store_path)
    async with app.run_test(size=SIZE_TALL) as pilot:
        card = await _open_at(app, pilot, HOST)
        card.state = ClaimState(measuring=True)
        await pilot.pause()
        assert "measuring… (system is running)" in _row(_card_text(app), "measured")


async def test_no_gpu_here_says_so(
    store_path: Path, no_gpu_here: str, recorded_h200: dict[str, ProbeResult]
) -> None:
    app = _app(store_path)  # the real NVML: no NVIDIA driver on this machine
    inventory = recorded_h200["nvml_inventory"]
    assert inventory.recorded is not None
    async with app.run_test(size=SIZE_TALL) as pilot:
        await _open_at(app, pilot, H200)
        question = await _asked(app, pilot)
        await pilot.press("1", "4", "1", "enter")
        await on_screen(pilot, app, LessonScreen)
        await _measured(app, pilot, "h200_memory")
        text = _card_text(app)
    # the dialog asked about the recording, not about this machine
    assert " ".join(f"cannot run the nvml_inventory probe: {no_gpu_here}".split()) in question
    assert "What do you predict it measured on gpulab's NVIDIA H200, in GB?" in question
    assert "on this machine" not in question
    measured = _row(text, "measured")
    assert measured.startswith("measured cannot be measured here: ")
    assert " ".join(no_gpu_here.split()) in measured
    assert "MiB" not in measured  # the recorded value is never shown as measured
    recorded_row = _row(text, "recorded")
    assert f"{inventory.recorded.label}, not this machine: " in recorded_row
    memory = inventory.reading("memory_total_mib")
    assert memory is not None
    assert f"140.4 GB ({memory.shown}) — agrees with 141 GB" in recorded_row
    # the prediction beside the recording, how far off, labelled, no verdict of its own
    assert _row(text, "predicted") == (
        "predicted 141 GB within 0.5 % of the recorded 140.4 GB on NVIDIA H200 · not graded"
    )
    assert "verdict" not in text
    saved = _predictions(store_path)
    assert len(saved) == 1 and saved[0]["measured"] is None
    assert saved[0]["verdict"] == "not_measured" and saved[0]["predicted"] == 141.0
    assert saved[0]["device"] == "NVIDIA H200"  # a prediction of the recording


@without_cupy
async def test_a_cuda_claim_without_a_driver_says_so_before_and_after_m(
    store_path: Path, cuda_course: Path, no_gpu_here: str, recorded_h200: dict[str, ProbeResult]
) -> None:
    app = _app(store_path, course=cuda_course)
    reason = " ".join(no_gpu_here.split())
    async with app.run_test(size=SIZE_TALL) as pilot:
        await _open_at(app, pilot, SMS)
        await pilot.press("g")  # the GPU screen finds no GPU: the app knows before m
        await on_screen(pilot, app, GpuScreen)
        gpu = app.screen
        assert isinstance(gpu, GpuScreen)
        await wait_for(pilot, gpu.sampler_done.is_set)
        await pilot.press("escape")
        await on_screen(pilot, app, LessonScreen)
        app.screen.reveal(HOST)
        await pilot.pause()
        app.screen.reveal(SMS)
        await wait_for(pilot, lambda: app.screen.query_one(ClaimCard).state.missing != "")
        before = _card_text(app)
        question = await _asked(app, pilot)
        await pilot.press("1", "2", "8", "enter")
        await on_screen(pilot, app, LessonScreen)
        await _measured(app, pilot, "h200_sms")
        after = _card_text(app)
    for text in (before, after):
        assert _row(text, "measured") == f"measured cannot be measured here: {reason}"
        assert "CuPy" not in text
        recorded = _row(text, "recorded")
        assert recorded.startswith("recorded recorded on NVIDIA H200, ")
        assert recorded.endswith(", not this machine: 132 SMs — agrees with 132 SMs")
        assert recorded.count("132 SMs") == 2  # the reading once, the spec once
    assert "What do you predict it measured on gpulab's NVIDIA H200, in SMs?" in question
    assert "CuPy" not in question
    assert _row(after, "predicted") == (
        "predicted 128 SMs 3 % below the recorded 132 SMs on NVIDIA H200 · not graded"
    )


async def test_a_fresh_card_says_why_it_cannot_be_measured_before_m(
    store_path: Path, cuda_course: Path, no_gpu_here: str, recorded_h200: dict[str, ProbeResult]
) -> None:
    """The first card of a CUDA claim in a session asks the machine itself (in a thread):
    no "press m" for a probe that cannot run, and the H200's reading shown at once."""
    app = _app(store_path, course=cuda_course)
    async with app.run_test(size=SIZE_TALL) as pilot:
        await _open_at(app, pilot, SMS)
        await wait_for(
            pilot, lambda: app.screen.query_one(ClaimCard).state.missing != "", timeout=30
        )
        await pilot.pause()
        text = _card_text(app)
    reason = " ".join(no_gpu_here.split())
    assert _row(text, "measured") == f"measured cannot be measured here: {reason}"
    assert "press m" not in _row(text, "measured")
    assert _row(text, "recorded").endswith(", not this machine: 132 SMs — agrees with 132 SMs")


@without_cupy
async def test_a_cuda_claim_with_a_driver_but_no_cupy_says_how_to_install_it(
    store_path: Path, cuda_course: Path, h200_replay: Replay, recorded_h200: dict[str, ProbeResult]
) -> None:
    app = _app(store_path, h200_replay, course=cuda_course)  # the H200's driver, replayed
    async with app.run_test(size=SIZE_TALL) as pilot:
        await _open_at(app, pilot, SMS)
        question = await _asked(app, pilot)
        await pilot.press("escape")
        await on_screen(pilot, app, LessonScreen)
        await _measured(app, pilot, "h200_sms")
        text = _card_text(app)
    install = (
        "CuPy is not installed: pip install 'gpulab[cuda13]', the CuPy built for the "
        "CUDA 13.0 that the NVIDIA driver here supports"
    )
    assert install in question and "gpulab's NVIDIA H200" in question
    assert _row(text, "measured") == f"measured cannot be measured here: {install}"
    assert "cuda12" not in text and "no NVIDIA GPU found" not in text
    assert "not this machine: 132 SMs — agrees with 132 SMs" in _row(text, "recorded")
    assert "predicted" not in text


async def test_a_recording_in_another_unit_is_shown_in_the_claims(
    store_path: Path, cuda_course: Path, recorded_h200: dict[str, ProbeResult]
) -> None:
    app = _app(store_path, course=cuda_course)
    async with app.run_test(size=SIZE_TALL) as pilot:
        card = await _open_at(app, pilot, L2)
        claim = card.claim
        card.state = ClaimState(
            missing="no NVIDIA GPU found: (for this test)",
            recorded=outcome_of(claim, recorded_h200["cuda_properties"]),
        )
        await pilot.pause()
        text = _card_text(app)
    l2 = recorded_h200["cuda_properties"].reading("l2CacheSize")
    assert l2 is not None and l2.shown == "62914560 bytes"
    # 60 MiB: in the claim's MB of 2^20 bytes, 60, with the raw reading beside it
    assert (
        "not this machine: 60 MB (62914560 bytes) — measured on NVIDIA H200; the claim is "
        "about H100 SXM5 / PCIe"
    ) in _row(text, "recorded")


async def test_a_last_prediction_of_the_recording_is_shown_beside_it(
    store_path: Path, no_gpu_here: str, recorded_h200: dict[str, ProbeResult]
) -> None:
    store = ProgressStore(store_path)
    progress = store.load()
    progress.predictions.append(
        Prediction(
            claim="h200_memory",
            predicted=120.0,
            unit="GB",
            at="2026-12-04T10:00:00+00:00",
            measured=None,
            verdict="not_measured",
            device="NVIDIA H200",
        )
    )
    store.save(progress)
    app = _app(store_path)
    async with app.run_test(size=SIZE_TALL) as pilot:
        await _open_at(app, pilot, H200)
        await pilot.press("g")
        await on_screen(pilot, app, GpuScreen)
        gpu = app.screen
        assert isinstance(gpu, GpuScreen)
        await wait_for(pilot, gpu.sampler_done.is_set)
        await pilot.press("escape")
        await on_screen(pilot, app, LessonScreen)
        app.screen.reveal(HOST)
        await pilot.pause()
        app.screen.reveal(H200)
        await wait_for(pilot, lambda: app.screen.query_one(ClaimCard).state.missing != "")
        text = _card_text(app)
    assert _row(text, "predicted") == (
        "predicted 120 GB 15 % below the recorded 140.4 GB on NVIDIA H200 · not graded "
        "(your last prediction, 2026-12-04)"
    )


@without_cupy
def test_prediction_of_the_recording_snapshot(
    snap_compare: Callable[..., bool],
    store_path: Path,
    cuda_course: Path,
    h200_replay: Replay,
    recorded_h200: dict[str, ProbeResult],
) -> None:
    """The card after predicting a claim this machine cannot measure (the replayed H200's
    driver, no CuPy: the same words on every machine without CuPy). Update with
    ``pytest tests/tui/test_tui_measure.py --snapshot-update`` and look at the SVG."""

    async def run_before(pilot: Pilot[None]) -> None:
        app = pilot.app
        assert isinstance(app, GpulabApp)
        await _open_at(app, pilot, SMS)
        await _asked(app, pilot)
        await pilot.press("1", "2", "8", "enter")
        await on_screen(pilot, app, LessonScreen)
        await _measured(app, pilot, "h200_sms")
        await pilot.app.workers.wait_for_complete()
        app.clear_notifications()  # the toast goes after 5 s: not part of the picture
        await pilot.pause()

    app = _app(store_path, h200_replay, course=cuda_course)
    assert snap_compare(app, terminal_size=SIZE_TALL, run_before=run_before)


def test_a_prediction_without_a_gpu_is_kept_with_the_recordings_device(
    course: Course, no_gpu_here: str, recorded_h200: dict[str, ProbeResult], h200_replay: Replay
) -> None:
    claim = course.claims["h200_memory"]
    board = ClaimBoard()
    board.finish(claim, run_probe("nvml_inventory"), 120.0)
    kept = board.prediction(claim, 120.0, "2026-12-04T10:00:00+00:00")
    assert kept == Prediction(
        claim="h200_memory",
        predicted=120.0,
        unit="GB",
        at="2026-12-04T10:00:00+00:00",
        measured=None,
        verdict="not_measured",
        device="NVIDIA H200",
    )
    from gpulab.probes import nvml

    board.finish(claim, nvml.inventory(h200_replay), 120.0)  # measured (a replayed H200)
    measured = board.prediction(claim, 120.0, "2026-12-04T10:00:00+00:00")
    assert measured.device == "NVIDIA H200" and measured.verdict == "agrees"
    assert measured.measured is not None and abs(measured.measured - 143771 / 1024) < 1e-9


async def test_no_gpu_known_from_the_gpu_screen(
    store_path: Path, no_gpu_here: str, recorded_h200: dict[str, ProbeResult]
) -> None:
    app = _app(store_path)
    async with app.run_test(size=SIZE_TALL) as pilot:
        await _open_at(app, pilot, H200)
        await pilot.press("g")
        await on_screen(pilot, app, GpuScreen)
        gpu = app.screen
        assert isinstance(gpu, GpuScreen)
        await wait_for(pilot, gpu.sampler_done.is_set)
        await pilot.pause()
        await pilot.press("escape")
        await on_screen(pilot, app, LessonScreen)
        app.screen.reveal(HOST)
        await pilot.pause()
        app.screen.reveal(H200)  # the card is made afresh: the app now knows
        await wait_for(pilot, lambda: app.screen.query_one(ClaimCard).state.missing != "")
        text = _card_text(app)
        assert "cannot be measured here" in _row(text, "measured")
        assert "recorded on NVIDIA H200" in _row(text, "recorded")


async def test_no_gpu_and_no_recordings(
    store_path: Path, no_gpu_here: str, no_recordings: None
) -> None:
    app = _app(store_path)
    async with app.run_test(size=SIZE_TALL) as pilot:
        await _open_at(app, pilot, H200)
        await pilot.press("m", "escape")
        await _measured(app, pilot, "h200_memory")
        text = _card_text(app)
        assert "no NVIDIA GPU found" in _row(text, "measured")
        assert "no recorded reading for this probe in this copy" in _row(text, "recorded")


async def test_replayed_h200_measures_the_claim(store_path: Path, h200_replay: Replay) -> None:
    app = _app(store_path, h200_replay)
    async with app.run_test(size=SIZE_TALL) as pilot:
        await _open_at(app, pilot, H200)
        await pilot.press("m")
        await on_screen(pilot, app, PredictionScreen)
        await pilot.press("1", "2", "0", "enter")
        await on_screen(pilot, app, LessonScreen)
        await _measured(app, pilot, "h200_memory")
        text = _card_text(app)
    assert "143771 MiB on NVIDIA H200, just now" in _row(text, "measured")
    assert "140.4 GB: agrees with 141 GB" in _row(text, "verdict")
    assert "15 % below the measured 140.4 GB" in _row(text, "predicted")
    assert "recorded" not in text
    (entry,) = _predictions(store_path)
    assert entry["device"] == "NVIDIA H200" and entry["verdict"] == "agrees"
    assert abs(entry["measured"] - 143771 / 1024) < 1e-9


async def test_probe_error_shows_its_message(store_path: Path) -> None:
    empty = Replay({"format": FORMAT, "calls": []}, "an empty recording")
    app = _app(store_path, empty)
    async with app.run_test(size=SIZE_TALL) as pilot:
        await _open_at(app, pilot, H200)
        await pilot.press("m", "escape")
        await _measured(app, pilot, "h200_memory")
        text = _card_text(app)
    measured = _row(text, "measured")
    assert "the probe failed: ReplayMismatch" in measured and "nvmlInit" in measured
    assert "Traceback" not in text


def test_a_claim_without_a_reading_key(course: Course) -> None:
    claim = replace(course.claims["host_cpus"], reading="")
    outcome = outcome_of(claim, run_probe("system"))
    assert outcome.verdict is None
    assert outcome.problem == "the system probe's result has no reading for this claim yet"
    missing = outcome_of(replace(claim, reading="no_such_key"), run_probe("system"))
    assert missing.problem == "the system probe returned no reading 'no_such_key'"


def test_distance_text() -> None:
    assert distance_text(4, 2, "CPUs") == "100 % above the measured 2 CPUs"
    assert distance_text(120, 140.4, "GB") == "15 % below the measured 140.4 GB"
    assert distance_text(141, 140.4, "GB") == "within 0.5 % of the measured 140.4 GB"
    assert distance_text(2, 2, "CPUs") == "exactly the measured value"
    assert distance_text(3, 0, "W") == "3 W above the measured 0 W"


@pytest.mark.gpu
async def test_real_nvml_measures_the_claim(store_path: Path) -> None:
    from gpulab.probes import nvml

    inventory = nvml.inventory()
    if inventory.status not in ("ok", "partial"):
        pytest.skip(f"no NVIDIA GPU here: {inventory.message}")
    name = inventory.reading("name")
    assert name is not None
    app = _app(store_path)
    async with app.run_test(size=SIZE_TALL) as pilot:
        await _open_at(app, pilot, H200)
        await pilot.press("m", "escape")
        await _measured(app, pilot, "h200_memory")
        text = _card_text(app)
    assert f"on {name.value}, just now" in _row(text, "measured")
    expected = "agrees" if "H200" in str(name.value) else "the claim is about"
    assert expected in _row(text, "verdict")
    assert "recorded" not in text
