"""The GPU pool's recovery rules, on any machine: NVML answers from the recorded H200.

The pool asks NVML through the probes' door to the GPUs (`gpulab.probes.device`),
so a `Replay` of the H200 recording stands in for the driver. Each call of a
recording is answered in the order recorded (the last answer repeats), so a
test writes what the GPU shows at the baseline and at each poll after a job.
"""

from __future__ import annotations

import ast
import json
from pathlib import Path
from typing import Any

import pytest

import gpulab
from gpulab.grading.checks.machines import changed, nvml_recording
from gpulab.grading.classrun.gpupool import GpuPool, GpuPoolError, visible_gpus
from gpulab.probes import device
from gpulab.probes.nvml import Replay
from gpulab.probes.system import system

HANDLE = {"__handle__": 0}
BASE_USED = 644_939_776  # the H200 recording's memory in use (v1 MemoryInfo)
MiB = 2**20


def _processes(*pids: int) -> dict[str, Any]:
    return {
        "call": "nvmlDeviceGetComputeRunningProcesses",
        "args": [HANDLE],
        "result": [
            {"__struct__": "c_nvmlProcessInfo_t", "pid": pid, "usedGpuMemory": 512 * MiB}
            for pid in pids
        ],
    }


def _used(extra: int) -> dict[str, Any]:
    total = 150_754_820_096
    used = BASE_USED + extra
    return {
        "call": "nvmlDeviceGetMemoryInfo",
        "args": [HANDLE],
        "result": {
            "__struct__": "c_nvmlMemory_t",
            "total": total,
            "free": total - used,
            "used": used,
        },
    }


def _h200(processes: list[tuple[int, ...]], used: list[int] | None = None) -> Replay:
    """The recorded H200, showing `processes[i]` and `used[i]` extra bytes at read i
    (read 0 is the baseline, then one per poll)."""
    answers = [_processes(*pids) for pids in processes]
    answers += [_used(extra) for extra in (used or [0])]
    return Replay(changed("h200", answers), "the recorded H200")


def test_the_recorded_h200_is_what_the_pool_reads() -> None:
    """The recording holds the calls the pool makes, with the memory these tests start
    from: a change in either shows here first."""
    recording = nvml_recording("h200")
    calls = {entry["call"] for entry in recording["calls"]}
    assert {
        "nvmlDeviceGetHandleByIndex",
        "nvmlDeviceGetComputeRunningProcesses",
        "nvmlDeviceGetMemoryInfo",
    } <= calls
    with device.open_gpus(Replay(recording)) as gpus:
        assert gpus.indices() == ["0"]
        assert gpus.state("0") == device.GpuState(frozenset(), BASE_USED)


def test_a_gpu_that_is_as_before_is_fit_at_once() -> None:
    with GpuPool(["0"], 5.0, backend=_h200([(), ()]), poll_s=0.01) as pool:
        assert pool.baseline["0"] == device.GpuState(frozenset(), BASE_USED)
        assert pool.after_job("0") == ""


def test_a_gpu_that_recovers_within_the_time_is_kept() -> None:
    """The job's process lingers for two polls and its memory for three, then both go."""
    backend = _h200([(), (4242,), (4242,), ()], [0, 900 * MiB, 900 * MiB, 900 * MiB, 0])
    with GpuPool(["0"], 5.0, backend=backend, poll_s=0.01) as pool:
        assert pool.after_job("0") == ""


def test_a_process_left_on_the_gpu_takes_it_out_of_rotation() -> None:
    with GpuPool(["0"], 0.2, backend=_h200([(), (4242, 77)]), poll_s=0.02) as pool:
        why = pool.after_job("0")
    assert why == (
        "did not recover within 0.2 s after a job (processes [77, 4242], "
        "0 MiB more in use): taken out of rotation"
    )


def test_memory_left_in_use_takes_it_out_of_rotation_beyond_the_slack() -> None:
    """The driver's bookkeeping may move a little (64 MiB); a job's buffers may not stay."""
    with GpuPool(["0"], 0.1, backend=_h200([()], [0, 40 * MiB]), poll_s=0.02) as pool:
        assert pool.after_job("0") == ""
    with GpuPool(["0"], 0.1, backend=_h200([()], [0, 2048 * MiB]), poll_s=0.02) as pool:
        why = pool.after_job("0")
    assert why == (
        "did not recover within 0.1 s after a job (processes none new, "
        "2048 MiB more in use): taken out of rotation"
    )


def test_processes_that_were_there_before_the_run_are_not_the_jobs() -> None:
    """A process on the GPU before the run (another user's, a monitoring agent) stays."""
    with GpuPool(["0"], 0.1, backend=_h200([(99,), (99,)]), poll_s=0.02) as pool:
        assert pool.after_job("0") == ""


def test_a_gpu_nvml_can_no_longer_read_is_taken_out() -> None:
    answers = [
        _processes(),
        {"call": "nvmlDeviceGetComputeRunningProcesses", "args": [HANDLE], "error": {"value": 15}},
    ]  # GPU is lost
    with GpuPool(["0"], 5.0, backend=Replay(changed("h200", answers)), poll_s=0.01) as pool:
        assert pool.after_job("0") == "NVML cannot read this GPU any more: taken out of rotation"


def test_a_gpu_the_machine_lacks_is_refused_with_the_ones_it_has() -> None:
    with pytest.raises(GpuPoolError) as caught:
        GpuPool(["0", "3"], 1.0, backend=Replay(nvml_recording("h200")))
    assert str(caught.value) == "--gpus 0,3: NVML cannot read GPU 3; this machine's GPUs are 0"


@pytest.mark.parametrize("session", ["no-devices", "no-library"])
def test_no_gpu_nvml_can_read(session: str) -> None:
    backend = Replay(nvml_recording(session))
    assert visible_gpus(backend) == []
    assert device.present(backend) is False
    with pytest.raises(
        GpuPoolError,
        match=r"^--gpus 0: NVML cannot read GPU 0; this machine "
        r"has no NVIDIA GPU NVML can read \(.+\)$",
    ):
        GpuPool(["0"], 1.0, backend=backend)


def test_every_recorded_gpu_is_listed() -> None:
    assert visible_gpus(Replay(nvml_recording("hgx-8"))) == [str(i) for i in range(8)]
    assert device.present(Replay(nvml_recording("h200"))) is True


def test_the_pci_bus_tells_whether_a_gpu_is_here(tmp_path: Path) -> None:
    """Without a backend the app's question is answered from sysfs, no driver needed."""
    bus = tmp_path / "sys/bus/pci/devices"
    for address, vendor, pci_class in [
        ("0000:00:01.0", "0x8086", "0x060000"),
        ("0000:17:00.0", "0x10de", "0x068000"),
    ]:  # a bridge
        (bus / address).mkdir(parents=True)
        (bus / address / "vendor").write_text(vendor + "\n")
        (bus / address / "class").write_text(pci_class + "\n")
    assert device.present(root=tmp_path) is False
    (bus / "0000:18:00.0").mkdir()
    (bus / "0000:18:00.0" / "vendor").write_text("0x10de\n")
    (bus / "0000:18:00.0" / "class").write_text("0x030200\n")  # a 3D controller
    assert device.present(root=tmp_path) is True
    assert device.present(root=tmp_path / "nowhere") is None
    # the system probe counts GPUs on the bus by the same rule: the 3D controller alone
    counted = system(root=tmp_path).reading("gpus_in_sysfs")
    assert counted is not None and counted.value == 1


def _imports_pynvml(path: Path) -> bool:
    """`import pynvml`, `from pynvml import ...` or `import_module("pynvml")` in `path`."""
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import) and any(
            a.name.split(".")[0] == "pynvml" for a in node.names
        ):
            return True
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "pynvml":
            return True
        if (
            isinstance(node, ast.Call)
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and node.args[0].value == "pynvml"
            and ast.unparse(node.func).split(".")[-1] in ("import_module", "__import__")
        ):
            return True
    return False


def test_one_module_of_gpulab_imports_pynvml() -> None:
    """The door to NVML is `gpulab.probes.nvml.pynvml_module` (the recorder, which
    wraps the real library, aside); every other module goes through it."""
    package = Path(gpulab.__file__).parent
    importers = sorted(
        str(p.relative_to(package)) for p in package.rglob("*.py") if _imports_pynvml(p)
    )
    assert importers == ["probes/nvml/_record.py", "probes/nvml/_session.py"]


def test_the_h200_recording_of_the_tests_is_the_machines_one() -> None:
    """The pool is tested on the same recording the probes' tests replay."""
    fixture = Path(__file__).parents[1] / "fixtures/nvml/h200.json"
    assert json.loads(fixture.read_text()) == nvml_recording("h200")
