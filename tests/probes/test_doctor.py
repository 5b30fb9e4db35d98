"""gpulab doctor: the checklist on this machine, and its judgement of recorded GPU readings."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

from gpulab.probes import nvml
from gpulab.probes.doctor import Check, CudaRuntime, checks_from, cuda_runtime, doctor, parse_cpus
from gpulab.probes.model import ProbeResult, Reading, Table
from gpulab.probes.nvml import Replay
from gpulab.probes.registry import run_probe
from helpers.probes import no_driver_here

H200 = Path(__file__).resolve().parents[1] / "fixtures" / "nvml" / "h200.json"


def by_name(checks: list[Check]) -> dict[str, Check]:
    return {c.name: c for c in checks}


def test_every_check_runs_on_this_machine() -> None:
    checks = by_name(doctor())
    assert list(checks) == [
        "Linux",
        "NVIDIA driver",
        "NVML readable",
        "CUDA runtime usable",
        "CuPy matches the driver",
        "cgroup limits",
        "GPU NUMA placement",
        "MIG",
    ]
    assert checks["Linux"].status == "pass"
    assert "kernel" in checks["Linux"].found
    for check in checks.values():
        assert check.status in ("pass", "warn", "fail", "skip")
        if check.status in ("warn", "fail"):
            assert check.fix, check


def test_a_machine_without_a_gpu_skips_the_gpu_checks() -> None:
    system = run_probe("system")
    if system.reading("gpus_in_sysfs") is None or system.reading("gpus_in_sysfs").value != 0:
        pytest.skip("this machine has an NVIDIA GPU on its PCI bus")
    checks = by_name(doctor())
    assert checks["NVIDIA driver"].status == "skip"
    assert "no NVIDIA GPU on this machine" in checks["NVIDIA driver"].found
    assert checks["NVML readable"].status == "skip"
    assert not [c for c in checks.values() if c.status == "fail"]


def test_without_a_driver_no_fix_advises_installing_cupy() -> None:
    why = no_driver_here()
    checks = by_name(doctor())
    for check in checks.values():
        assert "CuPy" not in check.fix and "gpulab[cuda" not in check.fix, check
    cuda = checks["CUDA runtime usable"]
    assert cuda.status == "skip" and not cuda.fix
    if importlib.util.find_spec("cupy") is None:
        assert cuda.found == (
            "CuPy is not installed; it needs an NVIDIA GPU and driver, and there is none here"
        )
    assert checks["NVML readable"].found == why


def test_with_a_driver_but_no_cupy_the_fix_matches_the_driver() -> None:
    def no_cupy(name: str) -> object:
        raise ImportError(f"No module named {name!r}")

    inventory = nvml.inventory(backend=Replay.load(H200))
    check = by_name(checks_from(run_probe("system"), inventory, cuda_runtime(no_cupy)))[
        "CUDA runtime usable"
    ]
    assert check.status == "fail"
    assert "pip install 'gpulab[cuda13]'" in check.fix and "CUDA 13.0" in check.fix
    assert "cuda12" not in check.fix


def test_recorded_h200_passes_the_gpu_checks() -> None:
    inventory = nvml.inventory(backend=Replay.load(H200))
    runtime = CudaRuntime(
        "ok", "CuPy 14.2.0, CUDA runtime 13.2, 1 device(s), a test kernel ran", 13020, "14.2.0", 1
    )
    checks = by_name(checks_from(run_probe("system"), inventory, runtime))
    name = inventory.reading("name")
    assert name is not None and name.value
    assert checks["NVIDIA driver"].status == "pass"
    assert checks["NVML readable"].status == "pass"
    assert str(name.value) in checks["NVML readable"].found
    assert checks["CUDA runtime usable"].status == "pass"
    assert checks["CuPy matches the driver"].status == "pass"
    assert checks["MIG"].status == "pass" and "off" in checks["MIG"].found


def test_cupy_newer_than_the_driver_fails_with_the_right_fix() -> None:
    inventory = nvml.inventory(backend=Replay.load(H200))
    driver = inventory.reading("cuda_driver_version")
    assert driver is not None and isinstance(driver.value, str)
    major = int(driver.value.split(".")[0])
    newer = CudaRuntime("ok", "", (major + 1) * 1000, "99.0", 1)
    check = by_name(checks_from(run_probe("system"), inventory, newer))["CuPy matches the driver"]
    assert check.status == "fail"
    assert f"gpulab[cuda{major}]" in check.fix


def system_with_gpu(node: object, local: str, affinity: str) -> ProbeResult:
    table = Table(
        "NVIDIA GPUs on the PCI bus",
        ("address", "NUMA node", "local CPUs"),
        (("0000:3b:00.0", node, local),),
    )
    return ProbeResult(
        "system",
        "System",
        "ok",
        "",
        (
            Reading("gpus_in_sysfs", "GPUs", 1),
            Reading("cpu_affinity", "affinity", affinity),
            Reading("cpu_affinity_count", "count", len(parse_cpus(affinity))),
            Reading("cgroup_version", "cgroup version", "v2"),
            Reading("cgroup_cpu_limit", "quota", 4.0, "CPUs"),
        ),
        (table,),
    )


@pytest.mark.parametrize(
    ("node", "local", "affinity", "status"),
    [(1, "16-31", "16-23", "pass"), (1, "16-31", "0-31", "warn"), (-1, "0-15", "0-15", "pass")],
)
def test_numa_placement(node: object, local: str, affinity: str, status: str) -> None:
    checks = by_name(
        checks_from(
            system_with_gpu(node, local, affinity),
            ProbeResult("nvml_inventory", "", "no_gpu", "none"),
            CudaRuntime("missing", "no CuPy"),
        )
    )
    assert checks["GPU NUMA placement"].status == status
    if status == "warn":
        assert "numactl --cpunodebind=1 --membind=1" in checks["GPU NUMA placement"].fix


def test_a_cpu_quota_below_the_allowed_cpus_warns() -> None:
    checks = by_name(
        checks_from(
            system_with_gpu(0, "0-15", "0-15"),
            ProbeResult("nvml_inventory", "", "no_gpu", "none"),
            CudaRuntime("missing", "no CuPy"),
        )
    )
    assert checks["cgroup limits"].status == "warn"
    assert "4 CPUs" in checks["cgroup limits"].fix


def test_cuda_runtime_without_cupy_says_so() -> None:
    def no_cupy(name: str) -> object:
        raise ImportError(f"No module named {name!r}")

    runtime = cuda_runtime(no_cupy)
    assert runtime.status == "missing" and "CuPy is not installed" in runtime.detail


@pytest.mark.parametrize(
    ("text", "cpus"),
    [("0-3,8", {0, 1, 2, 3, 8}), ("", set()), ("5", {5}), ("0-1, 4-5", {0, 1, 4, 5})],
)
def test_parse_cpus(text: str, cpus: set[int]) -> None:
    assert parse_cpus(text) == cpus


def test_doctor_command_prints_the_checklist_and_json() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "gpulab", "doctor"], capture_output=True, text=True, timeout=120
    )
    assert "Traceback" not in done.stderr
    assert "Linux" in done.stdout and "cgroup limits" in done.stdout
    as_json = subprocess.run(
        [sys.executable, "-m", "gpulab", "doctor", "--json"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    checks = json.loads(as_json.stdout)
    assert checks[0]["name"] == "Linux"
    assert as_json.returncode == (1 if any(c["status"] == "fail" for c in checks) else 0)
    assert done.returncode == as_json.returncode


@pytest.mark.gpu
def test_doctor_passes_on_a_working_gpu_machine() -> None:
    pytest.importorskip("cupy", reason="CuPy is needed for the CUDA checks")
    checks = by_name(doctor())
    for name in (
        "NVIDIA driver",
        "NVML readable",
        "CUDA runtime usable",
        "CuPy matches the driver",
    ):
        assert checks[name].status == "pass", checks[name]
