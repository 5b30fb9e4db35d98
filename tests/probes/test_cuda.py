"""The CUDA properties probe: without CuPy here (the real path a learner without the cuda
extra meets), and on the GPU, field by field against the CUDA runtime itself."""

from __future__ import annotations

import importlib
import importlib.util
import json

import pytest
from probe_helpers import cuda_device

from gpulab.probes.cuda import CUPY_MISSING, open_device, properties
from gpulab.probes.model import ProbeResult
from gpulab.probes.registry import get_probe, run_probe

HAS_CUPY = importlib.util.find_spec("cupy") is not None


# ---- without CuPy ---------------------------------------------------------------------------


@pytest.mark.skipif(HAS_CUPY, reason="CuPy is installed here; this checks the machine without it")
def test_without_cupy_properties_is_unavailable_and_says_how_to_fix_it() -> None:
    result = properties()
    assert result.status == "unavailable"
    assert result.message == CUPY_MISSING
    assert "cuda12 or cuda13 extra" in result.message
    assert result.readings == ()
    assert result.probe == "cuda_properties"


@pytest.mark.skipif(HAS_CUPY, reason="CuPy is installed here; this checks the machine without it")
def test_without_cupy_open_device_returns_a_result_not_an_exception() -> None:
    found = open_device("x", "X")
    assert isinstance(found, ProbeResult)
    assert (found.status, found.message) == ("unavailable", CUPY_MISSING)


@pytest.mark.skipif(HAS_CUPY, reason="CuPy is installed here; this checks the machine without it")
def test_registry_runs_the_probe_without_cupy() -> None:
    info = get_probe("cuda_properties")
    assert info.function() is properties
    result = run_probe("cuda_properties")
    assert result.status == "unavailable"
    data = json.loads(json.dumps(result.to_dict()))
    assert ProbeResult.from_dict(data).to_dict() == data


def test_importing_the_probe_modules_does_not_import_cupy_or_numpy() -> None:
    import subprocess
    import sys

    code = ("import sys, gpulab.probes.cuda, gpulab.probes.micro_bandwidth, "
            "gpulab.probes.micro_compute, gpulab.probes.micro_latency, gpulab.kernels.launch; "
            "print(sorted(m for m in ('cupy', 'numpy', 'pynvml') if m in sys.modules))")
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
        if reading.key in props and reading.key not in ("name", "clockRate", "memoryClockRate",
                                                        "maxGridSize", "maxThreadsDim"):
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
