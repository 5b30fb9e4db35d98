"""The telemetry sampler: on recorded H200 answers, without NVML here, and on the real GPU."""

from __future__ import annotations

import copy
import json
import threading
import time
from pathlib import Path
from typing import Any

import pynvml
import pytest

from gpulab.probes.model import Telemetry
from gpulab.probes.nvml import (
    Replay,
    ReplayMismatch,
    Sampler,
    decode_clock_event_reasons,
    inventory,
    sample,
)

NVML_FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "nvml"
H0 = {"__handle__": 0}
REASON_CALLS = (
    "nvmlDeviceGetCurrentClocksEventReasons",
    "nvmlDeviceGetCurrentClocksThrottleReasons",
)
TEMPERATURE_CALLS = ("nvmlDeviceGetTemperatureV", "nvmlDeviceGetTemperature")


def load(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((NVML_FIXTURES / name).read_text(encoding="utf-8"))
    return data


def answers(data: dict[str, Any], calls: tuple[str, ...], args: list[Any]) -> list[Any]:
    return [
        e["result"]
        for e in data["calls"]
        if e["call"] in calls and e["args"] == args and "result" in e
    ]


def not_supported(data: dict[str, Any], *calls: str) -> dict[str, Any]:
    """A copy of a recording in which these calls answer NotSupported."""
    changed = copy.deepcopy(data)
    for entry in changed["calls"]:
        if entry["call"] in calls:
            entry.pop("result", None)
            entry["error"] = {
                "class": "NVMLError_NotSupported",
                "value": pynvml.NVML_ERROR_NOT_SUPPORTED,
                "text": "Not Supported",
            }
    return changed


def sampler_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "gpulab-telemetry"]


def wait_for(sampler: Sampler, samples: int) -> None:
    """Let the sampler poll at least `samples` times (bounded, so a bug cannot hang)."""
    for _ in range(20_000):
        if sampler.telemetry.samples >= samples or sampler.error is not None:
            return
        time.sleep(0.001)


@pytest.fixture
def h200() -> dict[str, Any]:
    return load("h200.json")


def test_replayed_h200_telemetry_is_what_was_recorded(h200: dict[str, Any]) -> None:
    clocks = answers(h200, ("nvmlDeviceGetClockInfo",), [H0, pynvml.NVML_CLOCK_SM])
    power = answers(h200, ("nvmlDeviceGetPowerUsage",), [H0])
    temperatures = answers(h200, TEMPERATURE_CALLS, [H0, pynvml.NVML_TEMPERATURE_GPU])
    masks = answers(h200, REASON_CALLS, [H0])
    union = 0
    for mask in masks:
        union |= mask
    with Sampler(backend=Replay(h200), interval_s=0.001) as sampler:
        wait_for(sampler, len(clocks) + 1)  # by then every recorded answer was served
    assert sampler.error is None
    got = sampler.telemetry
    assert got.samples >= len(clocks) + 1
    assert got.sm_clock_mhz == (float(min(clocks)), float(max(clocks)))
    assert got.power_w == max(power) / 1000
    assert got.temperature_c == float(max(temperatures))
    assert got.clock_event_reasons == decode_clock_event_reasons(union)
    assert not sampler_threads()


def test_a_keeping_sampler_traces_every_answered_poll_in_order(h200: dict[str, Any]) -> None:
    clocks = answers(h200, ("nvmlDeviceGetClockInfo",), [H0, pynvml.NVML_CLOCK_SM])
    power = answers(h200, ("nvmlDeviceGetPowerUsage",), [H0])
    with Sampler(backend=Replay(h200), interval_s=0.001, keep=True) as sampler:
        wait_for(sampler, len(clocks) + 1)
    trace, got = sampler.trace, sampler.telemetry
    assert len(trace) == got.samples >= len(clocks) + 1
    assert [s.t_s for s in trace] == sorted(s.t_s for s in trace) and trace[0].t_s >= 0
    seen = [s.sm_clock_mhz for s in trace if s.sm_clock_mhz is not None]
    assert (min(seen), max(seen)) == got.sm_clock_mhz
    assert [s.sm_clock_mhz for s in trace[: len(clocks)]] == [float(c) for c in clocks]
    assert [s.power_w for s in trace[: len(power)]] == [p / 1000 for p in power]
    with Sampler(backend=Replay(h200), interval_s=0.001) as plain:
        wait_for(plain, 3)
    assert plain.trace == () and plain.telemetry.samples >= 3


def test_the_recorded_telemetry_has_the_same_extremes(h200: dict[str, Any]) -> None:
    replay = Replay(h200)
    inventory(replay)  # as the recorder did: then the sampler gets the answers
    sample(replay)  # the recorded sampler got
    with Sampler(backend=replay, interval_s=0.001) as sampler:
        wait_for(sampler, len(answers(h200, ("nvmlDeviceGetPowerUsage",), [H0])) + 1)
    recorded = Telemetry.from_dict(h200["telemetry"])
    got = sampler.telemetry
    assert (got.sm_clock_mhz, got.power_w, got.temperature_c, got.clock_event_reasons) == (
        recorded.sm_clock_mhz,
        recorded.power_w,
        recorded.temperature_c,
        recorded.clock_event_reasons,
    )


def test_fields_the_gpu_does_not_support_are_left_out(h200: dict[str, Any]) -> None:
    data = not_supported(h200, "nvmlDeviceGetPowerUsage", *TEMPERATURE_CALLS)
    with Sampler(backend=Replay(data), interval_s=0.001) as sampler:
        wait_for(sampler, 2)
    got = sampler.telemetry
    assert sampler.error is None
    assert got.samples >= 2
    assert got.power_w is None and got.temperature_c is None
    assert got.sm_clock_mhz is not None
    assert got.clock_event_reasons


def test_nothing_supported_means_no_samples(h200: dict[str, Any]) -> None:
    data = not_supported(
        h200, "nvmlDeviceGetPowerUsage", "nvmlDeviceGetClockInfo", *TEMPERATURE_CALLS, *REASON_CALLS
    )
    with Sampler(backend=Replay(data), interval_s=0.001) as sampler:
        for _ in range(20_000):  # until it has asked NVML twice (bounded)
            if sampler.polls >= 2 or sampler.error is not None:
                break
            time.sleep(0.001)
    assert sampler.polls >= 2
    assert sampler.telemetry == Telemetry(samples=0)
    assert sampler.error is None


def test_a_failing_poll_ends_the_thread_not_the_block(h200: dict[str, Any]) -> None:
    data = copy.deepcopy(h200)
    data["calls"] = [e for e in data["calls"] if e["call"] != "nvmlDeviceGetPowerUsage"]
    with Sampler(backend=Replay(data), interval_s=0.001) as sampler:
        wait_for(sampler, 1)
    assert isinstance(sampler.error, ReplayMismatch)
    assert "nvmlDeviceGetPowerUsage" in str(sampler.error)
    assert not sampler_threads()


def test_an_exception_in_the_block_stops_the_thread(h200: dict[str, Any]) -> None:
    with pytest.raises(KeyError), Sampler(backend=Replay(h200), interval_s=0.001):
        raise KeyError("the benchmark failed")
    assert not sampler_threads()


def test_a_sampler_runs_again_but_not_twice_at_once(h200: dict[str, Any]) -> None:
    sampler = Sampler(backend=Replay(h200), interval_s=0.001)
    with sampler:
        with pytest.raises(RuntimeError, match="already running"):
            sampler.__enter__()
        wait_for(sampler, 1)
    first = sampler.telemetry
    with sampler:
        wait_for(sampler, 1)
    assert first.samples >= 1 and sampler.telemetry.samples >= 1
    assert not sampler_threads()


def test_the_interval_must_be_positive() -> None:
    with pytest.raises(ValueError, match="interval_s"):
        Sampler(interval_s=0)


@pytest.mark.parametrize(
    "name, reason", [("no-library.json", "libnvidia-ml"), ("no-devices.json", "lists no GPUs")]
)
def test_without_a_gpu_there_are_no_samples(name: str, reason: str) -> None:
    with Sampler(backend=Replay(load(name))) as sampler:
        pass
    assert sampler.telemetry == Telemetry(samples=0)
    assert reason in sampler.unavailable
    assert not sampler_threads()


def test_without_nvml_here_through_the_real_pynvml() -> None:
    try:
        pynvml.nvmlInit()
    except pynvml.NVMLError:
        pass
    else:
        pynvml.nvmlShutdown()
        pytest.skip("this machine has a working NVIDIA driver; the no-GPU path needs one without")
    before = threading.active_count()
    with Sampler() as sampler:
        pass
    assert sampler.telemetry == Telemetry(samples=0)
    assert sampler.unavailable
    assert threading.active_count() == before


@pytest.mark.gpu
def test_the_live_gpu_is_sampled() -> None:
    try:
        pynvml.nvmlInit()
        count = pynvml.nvmlDeviceGetCount()
        pynvml.nvmlShutdown()
    except pynvml.NVMLError as exc:
        pytest.skip(f"needs an NVIDIA GPU with a working driver: {exc}")
    if not count:
        pytest.skip("needs an NVIDIA GPU: NVML lists none")
    with Sampler(interval_s=0.01) as sampler:
        wait_for(sampler, 3)
    got = sampler.telemetry
    assert sampler.error is None
    assert got.samples >= 3
    assert got.sm_clock_mhz is not None and 0 < got.sm_clock_mhz[0] <= got.sm_clock_mhz[1]
    assert got.power_w is not None and got.power_w > 0
    assert got.temperature_c is not None and got.temperature_c > 0
    assert not sampler_threads()
