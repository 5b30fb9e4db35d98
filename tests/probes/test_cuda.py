"""The CUDA properties probe: without CuPy here (the real path a learner without a GPU
meets: no NVIDIA driver at all), with the H200's recorded driver but no CuPy, and on the
GPU, field by field against the CUDA runtime itself."""

from __future__ import annotations

import importlib
import importlib.util
import json

import pytest

from gpulab.probes.cuda import open_device, properties
from gpulab.probes.model import ProbeResult
from gpulab.probes.nvml import Replay
from gpulab.probes.readiness import Driver, cupy_missing_text, driver
from gpulab.probes.registry import get_probe, run_probe
from helpers.probes import H200_NVML, cuda_device, no_driver_here

HAS_CUPY = importlib.util.find_spec("cupy") is not None
without_cupy = pytest.mark.skipif(
    HAS_CUPY, reason="CuPy is installed here; this checks the machine without it"
)


# ---- without CuPy ---------------------------------------------------------------------------


@without_cupy
def test_without_a_driver_the_reason_is_the_missing_driver_not_cupy() -> None:
    why = no_driver_here()
    result = properties()
    assert (result.status, result.message) == ("no_gpu", why)
    assert why.startswith("no NVIDIA GPU found: ")
    assert "CuPy" not in result.message and "cuda1" not in result.message
    assert result.readings == ()
    assert result.probe == "cuda_properties"


@without_cupy
def test_with_a_driver_but_no_cupy_it_says_which_cupy_to_install() -> None:
    found = open_device("x", "X", nvml_backend=Replay.load(H200_NVML))
    assert isinstance(found, ProbeResult)
    assert found.status == "unavailable"
    # the recorded driver supports CUDA 13.0: the cuda13 extra, and only it
    assert found.message == (
        "CuPy is not installed: pip install 'gpulab[cuda13]', the CuPy "
        "built for the CUDA 13.0 that the NVIDIA driver here supports"
    )
    assert "cuda12" not in found.message


@pytest.mark.parametrize(
    ("version", "advice"),
    [
        ("12.4", "pip install 'gpulab[cuda12]', the CuPy built for the CUDA 12.4"),
        ("14.1", "supports CUDA 14.1, which runs CUDA 13 programs too"),
        ("11.8", "update the NVIDIA driver (it supports only CUDA 11.8"),
        ("", "'gpulab[cuda12]' or 'gpulab[cuda13]', whichever matches"),
    ],
)
def test_cupy_advice_follows_the_drivers_cuda_version(version: str, advice: str) -> None:
    text = cupy_missing_text(Driver("ok", cuda_version=version))
    assert text.startswith("CuPy is not installed: ") and advice in text


def test_driver_reads_the_recorded_cuda_version() -> None:
    found = driver(Replay.load(H200_NVML))
    assert (found.status, found.cuda_version, found.gpus) == ("ok", "13.0", 1)


@without_cupy
def test_grading_gives_the_same_reason_for_skipping_gpu_checks() -> None:
    from gpulab.grading.checks.gpu import gpu_missing

    why = no_driver_here()
    assert gpu_missing() == f"needs an NVIDIA GPU ({why})"
    assert "CuPy" not in str(gpu_missing())


@without_cupy
def test_without_cupy_open_device_returns_a_result_not_an_exception() -> None:
    found = open_device("x", "X")
    assert isinstance(found, ProbeResult)
    assert found.status in ("no_gpu", "unavailable") and found.message


@without_cupy
def test_registry_runs_the_probe_without_cupy() -> None:
    info = get_probe("cuda_properties")
    assert info.function() is properties
    result = run_probe("cuda_properties")
    assert result.status in ("no_gpu", "unavailable")
    data = json.loads(json.dumps(result.to_dict()))
    assert ProbeResult.from_dict(data).to_dict() == data


def test_importing_the_probe_modules_does_not_import_cupy_or_numpy() -> None:
    import subprocess
    import sys

    code = (
        "import sys, gpulab.probes.cuda, gpulab.probes.micro, gpulab.probes.nvml, "
        "gpulab.probes.system, gpulab.probes.topology, gpulab.kernels.launch; "
        "print(sorted(m for m in ('cupy', 'numpy', 'pynvml') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


# ---- on the GPU -----------------------------------------------------------------------------


@pytest.mark.gpu
def test_properties_equal_what_the_cuda_runtime_reports() -> None:
    cupy = cuda_device()
    result = properties()
    assert result.status == "ok", result.message
    index = cupy.cuda.Device().id
    props = cupy.cuda.runtime.getDeviceProperties(index)
    compared = 0
    for reading in result.readings:
        if reading.key in props and reading.key not in (
            "name",
            "clockRate",
            "memoryClockRate",
            "maxGridSize",
            "maxThreadsDim",
        ):
            assert reading.value == props[reading.key], reading.key
            compared += 1
    assert compared >= 15
    name, capability = result.reading("name"), result.reading("computeCapability")
    assert name is not None and capability is not None
    assert name.value == props["name"].decode()
    assert capability.value == f"{props['major']}.{props['minor']}"
    warps = result.reading("maxWarpsPerMultiProcessor")
    assert warps is not None
    assert warps.value == props["maxThreadsPerMultiProcessor"] // props["warpSize"]
    grid = result.reading("maxGridSize")
    assert grid is not None
    assert grid.value == " × ".join(str(v) for v in props["maxGridSize"])
    assert result.device == props["name"].decode()


@pytest.mark.gpu
def test_clocks_are_read_and_say_how() -> None:
    cupy = cuda_device()
    result = properties()
    props = cupy.cuda.runtime.getDeviceProperties(cupy.cuda.Device().id)
    for key in ("clockRate", "memoryClockRate"):
        reading = result.reading(key)
        assert reading is not None
        assert reading.status == "ok", reading.detail
        assert reading.unit == "MHz"
        assert isinstance(reading.value, float)
        assert 100 < reading.value < 20_000
        assert "cudaDevAttr" in reading.detail or "NVML" in reading.detail
        if key in props and "cudaDeviceGetAttribute" in reading.detail:
            # a CUDA 12 build still has the field: the attribute must agree with it
            assert reading.value == props[key] / 1000


@pytest.mark.gpu
def test_properties_result_survives_json() -> None:
    cuda_device()
    result = properties()
    data = json.loads(json.dumps(result.to_dict()))
    assert ProbeResult.from_dict(data).to_dict() == data
