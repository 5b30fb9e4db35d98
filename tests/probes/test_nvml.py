"""The NVML probes: decoders, recorded H200 answers replayed, no GPU here, and the real GPU.

The recorded fixtures (tests/fixtures/nvml/) are NVML's answers written down
by `gpulab.probes.nvml`. The tests compare what the probes report with
the answers in the recording itself, so they hold for any recording of an
H200, hand-made or real.
"""

from __future__ import annotations

import copy
import csv
import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pynvml
import pytest

from gpulab.probes import ProbeResult, Reading, run_probe
from gpulab.probes.machine_record import main, record
from gpulab.probes.model import run_schema
from gpulab.probes.nvml import (
    COMPUTE_MODES,
    FORMAT,
    Handle,
    Replay,
    ReplayMismatch,
    compute_mode_name,
    cuda_version_text,
    decode_clock_event_reasons,
    from_plain,
    inventory,
    process_name,
    pstate_name,
    sample,
    to_plain,
)
from helpers.probes import entries, set_answer

NVML_FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "nvml"
H0 = {"__handle__": 0}


# ---- helpers ------------------------------------------------------------------------------


def load(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((NVML_FIXTURES / name).read_text(encoding="utf-8"))
    return data


def answer(data: dict[str, Any], call: str, args: list[Any] | None = None) -> Any:
    """The first recorded answer of a call; the test fails if it was an error."""
    found = entries(data, call, args)
    assert found, f"the recording has no {call}"
    assert "result" in found[0], f"{call} answered {found[0]['error']} in the recording"
    return found[0]["result"]


def with_answer(
    data: dict[str, Any], call: str, *, result: Any = None, error: int | None = None
) -> dict[str, Any]:
    """A copy of a recording in which every `call` answers `result` or raises `error`.

    A call the recording does not hold is left out, not added.
    """
    changed = copy.deepcopy(data)
    if entries(changed, call):
        set_answer(changed, call, result=result, error=error)
    return changed


def comparable(result: dict[str, Any]) -> dict[str, Any]:
    """A result's dict without what changes from run to run of the same answers."""
    return {k: v for k, v in result.items() if k not in ("started", "seconds")}


def reading_of(result: ProbeResult, key: str) -> Reading:
    found = result.reading(key)
    assert found is not None, f"{result.probe} has no reading {key}"
    return found


def recorded_result(data: dict[str, Any], probe: str) -> dict[str, Any]:
    return next(r for r in data["results"] if r["probe"] == probe)


def nvml_works() -> str:
    """ "" when NVML starts and lists a GPU here, else why not."""
    try:
        pynvml.nvmlInit()
    except pynvml.NVMLError as exc:
        return f"NVML does not start here: {exc}"
    try:
        return "" if pynvml.nvmlDeviceGetCount() else "NVML lists no GPU here"
    finally:
        pynvml.nvmlShutdown()


@pytest.fixture
def nvml_gpu() -> None:
    reason = nvml_works()
    if reason:
        pytest.skip(f"needs an NVIDIA GPU with a working driver: {reason}")


@pytest.fixture
def no_nvml() -> None:
    if not nvml_works():
        pytest.skip("this machine has a working NVIDIA driver; the no-GPU path needs one without")


@pytest.fixture(params=["h200.json"])
def gpu_recording(request: pytest.FixtureRequest) -> dict[str, Any]:
    return load(str(request.param))


# ---- pure decoders ------------------------------------------------------------------------


def test_clock_event_reasons_decode_bit_by_bit() -> None:
    assert decode_clock_event_reasons(0) == ()
    assert decode_clock_event_reasons(0x1) == ("GPU idle",)
    assert decode_clock_event_reasons(0x4 | 0x40) == ("SW power cap", "HW thermal slowdown")
    assert decode_clock_event_reasons(0x1FF) == (
        "GPU idle",
        "Applications clocks setting",
        "SW power cap",
        "HW slowdown",
        "Sync boost",
        "SW thermal slowdown",
        "HW thermal slowdown",
        "HW power brake slowdown",
        "Display clock setting",
    )
    assert decode_clock_event_reasons(0x8 | 0x80) == ("HW slowdown", "HW power brake slowdown")
    assert decode_clock_event_reasons(0x1 | 0x1000) == ("GPU idle", "unknown (0x1000)")


def test_clock_event_reasons_follow_pynvml_constants() -> None:
    assert decode_clock_event_reasons(pynvml.nvmlClocksEventReasonSwPowerCap) == ("SW power cap",)
    assert decode_clock_event_reasons(pynvml.nvmlClocksEventReasonSyncBoost) == ("Sync boost",)
    assert decode_clock_event_reasons(pynvml.nvmlClocksEventReasonSwThermalSlowdown) == (
        "SW thermal slowdown",
    )
    assert decode_clock_event_reasons(pynvml.nvmlClocksEventReasonDisplayClockSetting) == (
        "Display clock setting",
    )
    if hasattr(pynvml, "nvmlClocksThrottleReasonBoardLimit"):
        assert decode_clock_event_reasons(pynvml.nvmlClocksThrottleReasonBoardLimit) == (
            "Board limit",
        )


def test_compute_modes_use_nvidia_smi_spellings() -> None:
    assert compute_mode_name(pynvml.NVML_COMPUTEMODE_DEFAULT) == "Default"
    assert compute_mode_name(pynvml.NVML_COMPUTEMODE_EXCLUSIVE_PROCESS) == "Exclusive_Process"
    assert compute_mode_name(pynvml.NVML_COMPUTEMODE_PROHIBITED) == "Prohibited"
    assert compute_mode_name(pynvml.NVML_COMPUTEMODE_EXCLUSIVE_THREAD) == "Exclusive_Thread"
    assert compute_mode_name(7) == "unknown (7)"
    assert set(COMPUTE_MODES) == {0, 1, 2, 3}


def test_cuda_versions_read_as_people_write_them() -> None:
    assert cuda_version_text(13000) == "13.0"
    assert cuda_version_text(12020) == "12.2"
    assert cuda_version_text(12090) == "12.9"
    assert cuda_version_text(11080) == "11.8"
    assert cuda_version_text(10010) == "10.1"


def test_pstates() -> None:
    assert pstate_name(0) == "P0"
    assert pstate_name(12) == "P12"
    assert pstate_name(pynvml.NVML_PSTATE_UNKNOWN) == "unknown"


# ---- inventory from the recorded H200 -----------------------------------------------------


def test_inventory_replays_exactly_what_was_recorded(gpu_recording: dict[str, Any]) -> None:
    got = inventory(Replay(gpu_recording))
    assert comparable(got.to_dict()) == comparable(recorded_result(gpu_recording, "nvml_inventory"))


def test_inventory_reports_the_recorded_answers(gpu_recording: dict[str, Any]) -> None:
    data = gpu_recording
    got = inventory(Replay(data))
    value = {r.key: r.value for r in got.readings if r.status == "ok"}
    assert got.device == value["name"] == answer(data, "nvmlDeviceGetName", [H0])
    assert value["uuid"] == answer(data, "nvmlDeviceGetUUID", [H0])
    assert value["driver_version"] == answer(data, "nvmlSystemGetDriverVersion")
    assert value["nvml_version"] == answer(data, "nvmlSystemGetNVMLVersion")
    assert value["cuda_driver_version"] == cuda_version_text(
        answer(data, "nvmlSystemGetCudaDriverVersion")
    )
    assert value["gpu_count"] == answer(data, "nvmlDeviceGetCount")
    major, minor = answer(data, "nvmlDeviceGetCudaComputeCapability", [H0])
    assert value["compute_capability"] == f"{major}.{minor}"
    memory = answer(data, "nvmlDeviceGetMemoryInfo", [H0])
    assert value["memory_total"] == memory["total"]
    assert value["memory_total_mib"] == memory["total"] // 2**20
    bar1 = answer(data, "nvmlDeviceGetBAR1MemoryInfo", [H0])
    assert value["bar1_total_mib"] == bar1["bar1Total"] // 2**20
    assert value["pcie_gen_max"] == answer(data, "nvmlDeviceGetMaxPcieLinkGeneration", [H0])
    assert value["pcie_width_current"] == answer(data, "nvmlDeviceGetCurrPcieLinkWidth", [H0])
    assert value["compute_mode"] == compute_mode_name(
        answer(data, "nvmlDeviceGetComputeMode", [H0])
    )
    ecc_now, ecc_pending = answer(data, "nvmlDeviceGetEccMode", [H0])
    assert value["ecc_mode_current"] == ("Enabled" if ecc_now else "Disabled")
    assert value["ecc_mode_pending"] == ("Enabled" if ecc_pending else "Disabled")
    assert value["power_limit"] == answer(data, "nvmlDeviceGetEnforcedPowerLimit", [H0]) / 1000
    low, high = answer(data, "nvmlDeviceGetPowerManagementLimitConstraints", [H0])
    assert (value["power_limit_min"], value["power_limit_max"]) == (low / 1000, high / 1000)
    assert value["clocks_max_sm"] == answer(
        data, "nvmlDeviceGetMaxClockInfo", [H0, pynvml.NVML_CLOCK_SM]
    )
    rows = answer(data, "nvmlDeviceGetRemappedRows", [H0])
    assert value["remapped_rows_uncorrectable"] == rows[1]
    assert value["remapped_rows_pending"] is bool(rows[2])
    assert value["ecc_volatile_uncorrected"] == answer(
        data,
        "nvmlDeviceGetTotalEccErrors",
        [H0, pynvml.NVML_MEMORY_ERROR_TYPE_UNCORRECTED, pynvml.NVML_VOLATILE_ECC],
    )


def test_inventory_says_what_the_h200_does_not_support(gpu_recording: dict[str, Any]) -> None:
    got = inventory(Replay(gpu_recording))
    for key in (
        "fan_speed",
        "numa_node",
        "nvlink_links_active",
        "retired_pages_single_bit",
        "retired_pages_double_bit",
        "retired_pages_pending",
    ):
        reading = got.reading(key)
        assert reading is not None, key
        assert reading.status == "not_supported", key
        assert reading.value is None
        assert "not supported" in reading.detail
    # one reading for NVLink, not one per link
    assert not [r for r in got.readings if r.key.startswith("nvlink_link_")]
    assert got.status == "partial"
    assert "not supported" in got.message


def test_every_not_supported_answer_becomes_a_not_supported_reading(
    gpu_recording: dict[str, Any],
) -> None:
    got = inventory(Replay(gpu_recording))
    unsupported = {
        e["call"]
        for e in gpu_recording["calls"]
        if e.get("error", {}).get("value") == pynvml.NVML_ERROR_NOT_SUPPORTED
    }
    for reading in got.readings:
        if reading.status != "ok":
            assert reading.status == "not_supported", reading
            assert any(call in reading.detail for call in unsupported), reading


def test_results_match_the_schema(gpu_recording: dict[str, Any]) -> None:
    jsonschema = pytest.importorskip("jsonschema", reason="jsonschema is not installed")
    schema = run_schema()
    replay = Replay(gpu_recording)
    results = [
        inventory(replay).to_dict(),
        sample(replay).to_dict(),
        inventory(Replay(load("no-library.json"))).to_dict(),
    ]
    jsonschema.validate({"gpulab": "test", "schema": 1, "results": results}, schema)
    for result in results:
        assert ProbeResult.from_dict(json.loads(json.dumps(result))).to_dict() == result


def test_several_gpus_give_a_table(gpu_recording: dict[str, Any]) -> None:
    data = copy.deepcopy(gpu_recording)
    second = []
    for entry in data["calls"]:
        if H0 in entry["args"]:
            twin = copy.deepcopy(entry)
            twin["args"] = [{"__handle__": 1} if a == H0 else a for a in twin["args"]]
            if twin["call"] == "nvmlDeviceGetUUID":
                twin["result"] = "GPU-00000000-0000-0000-0000-000000000001"
            second.append(twin)
    data["calls"] += second
    data["calls"].append(
        {"call": "nvmlDeviceGetHandleByIndex", "args": [1], "result": {"__handle__": 1}}
    )
    data = with_answer(data, "nvmlDeviceGetCount", result=2)
    got = inventory(Replay(data))
    assert reading_of(got, "gpu_count").value == 2
    assert reading_of(got, "uuid").value == answer(data, "nvmlDeviceGetUUID", [H0])
    (table,) = got.tables
    assert table.columns[:3] == ("index", "name", "UUID")
    assert [row[0] for row in table.rows] == [0, 1]
    assert table.rows[1][2] == "GPU-00000000-0000-0000-0000-000000000001"
    assert table.rows[0][1] == table.rows[1][1] == answer(data, "nvmlDeviceGetName", [H0])
    assert got.message.startswith("2 GPUs")


def test_an_nvml_failure_other_than_not_supported_is_an_error_reading(
    gpu_recording: dict[str, Any],
) -> None:
    data = with_answer(
        gpu_recording, "nvmlDeviceGetEnforcedPowerLimit", error=pynvml.NVML_ERROR_NO_PERMISSION
    )
    got = inventory(Replay(data))
    reading = got.reading("power_limit")
    assert reading is not None and reading.status == "error" and reading.value is None
    assert "nvmlDeviceGetEnforcedPowerLimit" in reading.detail
    assert "Insufficient Permissions" in reading.detail
    assert got.status == "partial"
    assert "1 reading failed" in got.message


# ---- sample from the recorded H200 --------------------------------------------------------


def test_sample_replays_exactly_what_was_recorded(gpu_recording: dict[str, Any]) -> None:
    replay = Replay(gpu_recording)
    inventory(replay)  # the recorder ran inventory() first
    got = sample(replay)
    assert comparable(got.to_dict()) == comparable(recorded_result(gpu_recording, "nvml_sample"))


def test_sample_reports_the_recorded_answers(gpu_recording: dict[str, Any]) -> None:
    data = gpu_recording
    got = sample(Replay(data))
    value = {r.key: r.value for r in got.readings if r.status == "ok"}
    assert value["clock_sm"] == answer(data, "nvmlDeviceGetClockInfo", [H0, pynvml.NVML_CLOCK_SM])
    assert value["clock_mem"] == answer(data, "nvmlDeviceGetClockInfo", [H0, pynvml.NVML_CLOCK_MEM])
    assert value["pstate"] == pstate_name(answer(data, "nvmlDeviceGetPerformanceState", [H0]))
    assert value["power_draw"] == answer(data, "nvmlDeviceGetPowerUsage", [H0]) / 1000
    utilization = answer(data, "nvmlDeviceGetUtilizationRates", [H0])
    assert (value["utilization_gpu"], value["utilization_memory"]) == (
        utilization["gpu"],
        utilization["memory"],
    )
    memory = next(
        e["result"]
        for args in ([H0, pynvml.nvmlMemory_v2], [H0])
        for e in entries(data, "nvmlDeviceGetMemoryInfo", args)
        if "result" in e
    )
    assert value["memory_used_mib"] == memory["used"] // 2**20
    assert value["memory_free"] == memory["free"]
    mask = next(
        e["result"]
        for e in data["calls"]
        if e["call"]
        in ("nvmlDeviceGetCurrentClocksEventReasons", "nvmlDeviceGetCurrentClocksThrottleReasons")
        and "result" in e
    )
    assert value["clock_event_reasons_mask"] == mask
    assert value["clock_event_reasons"] == (", ".join(decode_clock_event_reasons(mask)) or "none")
    assert value["compute_processes"] == len(
        answer(data, "nvmlDeviceGetComputeRunningProcesses", [H0])
    )
    for key in ("temperature", "temperature_slowdown", "clock_graphics"):
        assert isinstance(value[key], int) and value[key] > 0
    assert got.device == answer(data, "nvmlDeviceGetName", [H0])


def test_sample_lists_processes_by_pid_name_and_memory(gpu_recording: dict[str, Any]) -> None:
    procs = [
        {
            "__struct__": "nvmlFriendlyObject",
            "pid": 4242,
            "usedGpuMemory": 512 * 2**20,
            "gpuInstanceId": 0xFFFFFFFF,
            "computeInstanceId": 0xFFFFFFFF,
        },
        {
            "__struct__": "nvmlFriendlyObject",
            "pid": 4343,
            "usedGpuMemory": None,
            "gpuInstanceId": 0xFFFFFFFF,
            "computeInstanceId": 0xFFFFFFFF,
        },
    ]
    data = with_answer(gpu_recording, "nvmlDeviceGetComputeRunningProcesses", result=procs)
    data["calls"] += [
        {"call": "process_name", "args": [4242], "result": "python3"},
        {"call": "process_name", "args": [4343], "result": None},
    ]
    got = sample(Replay(data))
    assert reading_of(got, "compute_processes").value == 2
    (table,) = got.tables
    assert table.columns == ("pid", "name", "GPU memory")
    assert table.units == ("", "", "MiB")
    assert table.rows == ((4242, "python3", 512), (4343, None, None))


def test_process_names_come_from_proc() -> None:
    assert process_name(os.getpid()) == Path("/proc/self/comm").read_text().strip()
    assert process_name(0) is None  # there is no /proc/0


def test_an_older_temperature_call_is_used_when_the_newer_is_missing(
    gpu_recording: dict[str, Any],
) -> None:
    data = with_answer(
        gpu_recording, "nvmlDeviceGetTemperatureV", error=pynvml.NVML_ERROR_FUNCTION_NOT_FOUND
    )
    data = with_answer(data, "nvmlDeviceGetTemperature", result=41)
    if not entries(data, "nvmlDeviceGetTemperature"):
        data["calls"].append(
            {
                "call": "nvmlDeviceGetTemperature",
                "args": [H0, pynvml.NVML_TEMPERATURE_GPU],
                "result": 41,
            }
        )
    assert reading_of(sample(Replay(data)), "temperature").value == 41
    data["missing"] = ["nvmlDeviceGetTemperatureV"]  # an nvidia-ml-py without it
    assert reading_of(sample(Replay(data)), "temperature").value == 41


def test_sample_of_a_gpu_that_is_not_there(gpu_recording: dict[str, Any]) -> None:
    got = sample(Replay(gpu_recording), index=3)
    assert got.status == "error"
    assert "there is no GPU 3" in got.message


# ---- no GPU -------------------------------------------------------------------------------


@pytest.mark.parametrize("probe", [inventory, sample])
def test_no_library_is_one_no_gpu_result(probe: Any) -> None:
    got = probe(Replay(load("no-library.json")))
    assert got.status == "no_gpu"
    assert got.message.startswith("no NVIDIA GPU found: ")
    assert "libnvidia-ml" in got.message
    assert got.readings == () and got.tables == ()


@pytest.mark.parametrize("probe", [inventory, sample])
def test_a_driver_without_gpus_is_one_no_gpu_result(probe: Any) -> None:
    data = load("no-devices.json")
    got = probe(Replay(data))
    assert got.status == "no_gpu"
    assert got.message.startswith("no NVIDIA GPU found: ")
    assert "lists no GPUs" in got.message
    assert answer(data, "nvmlSystemGetDriverVersion") in got.message
    assert got.readings == ()


def test_no_driver_here_through_the_real_pynvml(no_nvml: None) -> None:
    for got in (inventory(), sample(), run_probe("nvml_inventory"), run_probe("nvml_sample")):
        assert got.status == "no_gpu", got.message
        assert got.message.startswith("no NVIDIA GPU found: ")
        assert got.readings == ()


# ---- the recorder and the replay ----------------------------------------------------------


def test_replay_raises_real_pynvml_errors() -> None:
    replay = Replay(load("h200.json"))
    with pytest.raises(pynvml.NVMLError_NotSupported):
        replay.nvmlDeviceGetFanSpeed(Handle(0))
    with pytest.raises(pynvml.NVMLError_LibraryNotFound):
        Replay(load("no-library.json")).nvmlInit()


def test_replay_names_a_call_it_does_not_hold() -> None:
    replay = Replay(load("h200.json"))
    with pytest.raises(ReplayMismatch, match=r"nvmlDeviceGetFanSpeed\(<handle 7>\)"):
        replay.nvmlDeviceGetFanSpeed(Handle(7))
    with pytest.raises(ReplayMismatch, match="nvmlDeviceGetBoardId"):
        replay.nvmlDeviceGetBoardId(Handle(0))
    with pytest.raises(ReplayMismatch, match="not an NVML recording"):
        Replay({"format": "something else", "calls": []})


def test_replay_gives_structs_as_attributes_and_answers_in_order() -> None:
    data = load("h200.json")
    replay = Replay(data)
    memory = replay.nvmlDeviceGetMemoryInfo(Handle(0))
    assert memory.total == answer(data, "nvmlDeviceGetMemoryInfo", [H0])["total"]
    key = [H0, pynvml.NVML_CLOCK_SM]
    recorded = [e["result"] for e in entries(data, "nvmlDeviceGetClockInfo", key)]
    served = [
        replay.nvmlDeviceGetClockInfo(Handle(0), pynvml.NVML_CLOCK_SM)
        for _ in range(len(recorded) + 2)
    ]
    assert served == recorded + [recorded[-1]] * 2
    assert replay.recorded.machine == data["machine"]
    assert replay.recorded.date == data["date"]


def test_ctypes_answers_become_plain_json() -> None:
    memory = pynvml.c_nvmlMemory_t(total=80 * 2**30, free=2**30, used=79 * 2**30)
    pci = pynvml.nvmlPciInfo_t()
    pci.busId = b"00000000:00:06.0"
    pci.pciDeviceId = 0x233510DE
    handle = pynvml.c_nvmlDevice_t(pynvml.struct_c_nvmlDevice_t())
    same = pynvml.c_nvmlDevice_t(handle.contents)
    proc = pynvml.nvmlFriendlyObject({"pid": 7, "usedGpuMemory": None})
    handles: dict[int, int] = {}
    plain = to_plain([memory, pci, handle, same, proc, b"NVIDIA H200", (9, 0)], handles)
    assert json.loads(json.dumps(plain)) == plain
    assert plain[0] == {
        "__struct__": "c_nvmlMemory_t",
        "total": 80 * 2**30,
        "free": 2**30,
        "used": 79 * 2**30,
    }
    assert plain[1]["busId"] == "00000000:00:06.0"
    assert plain[1]["pciDeviceId"] == 0x233510DE
    assert plain[2] == plain[3] == {"__handle__": 0}
    assert plain[4] == {"__struct__": "nvmlFriendlyObject", "pid": 7, "usedGpuMemory": None}
    assert plain[5:] == ["NVIDIA H200", [9, 0]]
    back = from_plain(plain)
    assert back[0].total == 80 * 2**30 and back[1].busId == "00000000:00:06.0"
    assert back[2] == Handle(0) and back[4].pid == 7


def test_the_recorder_round_trips_on_this_machine(tmp_path: Path) -> None:
    out = tmp_path / "here.json"
    assert main([str(out), "--seconds", "0.01"]) == 0
    data = json.loads(out.read_text(encoding="utf-8"))
    assert data["format"] == FORMAT
    assert data["calls"] and all("call" in e and "args" in e for e in data["calls"])
    replay = Replay.load(out)
    for probe, got in (("nvml_inventory", inventory(replay)), ("nvml_sample", sample(replay))):
        assert comparable(got.to_dict()) == comparable(recorded_result(data, probe))


def test_the_fixtures_are_recordings() -> None:
    for path in sorted(NVML_FIXTURES.glob("*.json")):
        data = json.loads(path.read_text(encoding="utf-8"))
        assert data["format"] == FORMAT, path
        assert {"recorded_by", "machine", "date", "calls", "results"} <= data.keys(), path
        assert [r["probe"] for r in data["results"]] == ["nvml_inventory", "nvml_sample"]


# ---- on a real GPU ------------------------------------------------------------------------

SMI_FIELDS = (
    "name",
    "driver_version",
    "memory.total",
    "clocks.max.sm",
    "pcie.link.gen.max",
    "pcie.link.width.max",
    "power.limit",
    "compute_mode",
    "ecc.mode.current",
    "mig.mode.current",
)


@pytest.fixture
def nvidia_smi(nvml_gpu: None) -> Iterator[dict[str, str]]:
    smi = shutil.which("nvidia-smi")
    if smi is None:
        pytest.skip("nvidia-smi is not on PATH")
    out = subprocess.run(
        [smi, f"--query-gpu={','.join(SMI_FIELDS)}", "--format=csv,noheader,nounits", "--id=0"],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    ).stdout
    row = next(csv.reader(out.splitlines(), skipinitialspace=True))
    yield dict(zip(SMI_FIELDS, (cell.strip() for cell in row), strict=True))


@pytest.mark.gpu
def test_inventory_agrees_with_nvidia_smi(nvidia_smi: dict[str, str]) -> None:
    got = inventory()
    assert got.status in ("ok", "partial"), got.message
    expect: dict[str, tuple[str, Any]] = {
        "name": ("name", str),
        "driver_version": ("driver_version", str),
        "memory.total": ("memory_total_mib", int),
        "clocks.max.sm": ("clocks_max_sm", int),
        "pcie.link.gen.max": ("pcie_gen_max", int),
        "pcie.link.width.max": ("pcie_width_max", int),
        "power.limit": ("power_limit", float),
        "compute_mode": ("compute_mode", str),
        "ecc.mode.current": ("ecc_mode_current", str),
        "mig.mode.current": ("mig_mode_current", str),
    }
    for field, (key, kind) in expect.items():
        smi, reading = nvidia_smi[field], got.reading(key)
        assert reading is not None, key
        if smi.startswith("[") or smi == "N/A":  # [N/A], [Not Supported]
            assert reading.status != "ok", (field, smi, reading)
        elif kind is float:
            assert reading.value == pytest.approx(float(smi), abs=0.01), field
        else:
            assert reading.value == kind(smi), (field, smi, reading)


@pytest.mark.gpu
def test_sample_reads_the_live_gpu(nvml_gpu: None) -> None:
    got = sample()
    assert got.status in ("ok", "partial"), got.message
    for key in (
        "utilization_gpu",
        "clock_sm",
        "clock_mem",
        "pstate",
        "power_draw",
        "temperature",
        "memory_used",
        "memory_free",
        "clock_event_reasons_mask",
        "compute_processes",
    ):
        reading = got.reading(key)
        assert reading is not None and reading.status == "ok", (key, reading)
    top = reading_of(inventory(), "clocks_max_sm")
    assert top.status == "ok"
    assert 0 < int(reading_of(got, "clock_sm").value or 0) <= int(top.value or 0)
    assert str(reading_of(got, "pstate").value).startswith("P")


@pytest.mark.gpu
def test_the_recorder_round_trips_on_the_gpu(nvml_gpu: None) -> None:
    data = json.loads(json.dumps(record(0.2)))
    assert data["machine"] not in ("", "no NVIDIA GPU")
    assert data["telemetry"]["samples"] >= 1
    replay = Replay(data)
    for probe, got in (("nvml_inventory", inventory(replay)), ("nvml_sample", sample(replay))):
        assert got.status in ("ok", "partial")
        assert comparable(got.to_dict()) == comparable(recorded_result(data, probe))
