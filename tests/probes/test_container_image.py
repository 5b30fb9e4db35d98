"""The container image check (`gpulab image check`, probe container_image).

No container engine runs on the machines CI uses (a docker client without its
daemon at most), so the run inside an image is tested in two halves: the
script that runs in the image, run here by a real POSIX shell on this
machine; and the judgement of what such a script prints, on outputs written
as NVIDIA's images print them (each case says what it stands for). The paths
that stop before an image runs are tested for real.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from gpulab.probes.container_image import INSIDE, find_runtime, image_check, judge, parse


def _values(found: dict[str, str]) -> dict[str, object]:
    return {r.key: r.value for r in judge(found)}


def test_the_script_runs_in_a_plain_posix_shell_and_reports_what_is_here() -> None:
    """What it prints on this machine, where the answers are known: no GPU, this Python."""
    shell = shutil.which("dash") or shutil.which("sh")
    assert shell is not None
    done = subprocess.run(
        [shell, "-c", INSIDE],
        capture_output=True,
        text=True,
        timeout=60,
        env={"PATH": os.environ["PATH"], "CUDA_VERSION": "12.8.1"},
    )
    assert done.returncode == 0, done.stderr
    found = parse(done.stdout)
    assert found["cuda_version"] == "12.8.1"
    has_smi = shutil.which("nvidia-smi") is not None
    assert (found["smi_gpus"] == "none") == (not has_smi)
    python = subprocess.run(
        ["python3", "-c", "import platform; print(platform.python_version())"],
        capture_output=True,
        text=True,
    ).stdout.strip()
    assert found["python"] == python
    try:
        import torch  # noqa: F401
    except ImportError:
        assert found.get("torch") == ""
    readings = {r.key: r for r in judge(found)}
    if not has_smi:
        assert readings["gpu_visible"].value is False
        assert readings["driver_runs_image_cuda"].status == "unknown"


# What `INSIDE` prints in NVIDIA's images on a machine with a driver whose nvidia-smi says
# "CUDA Version: 13.0" (driver 580): written from the images' documented contents.
DEVEL_13 = {
    "cuda_version": "13.0.1",
    "smi_gpus": "1",
    "driver": "580.159.04",
    "driver_cuda": "13.0",
    "nvcc": "13.0",
    "python": "3.12.3",
    "torch": "2.9.0+cu130",
    "torch_cuda": "13.0",
    "torch_gpus": "1",
}


def test_an_image_that_fits() -> None:
    assert _values(DEVEL_13) == {
        "image_cuda": "13.0.1",
        "driver_version": "580.159.04",
        "toolkit": "13.0",
        "framework": "2.9.0+cu130",
        "gpu_visible": True,
        "driver_runs_image_cuda": True,
        "toolkit_is_image_cuda": True,
        "driver_runs_framework_cuda": True,
    }


def test_an_image_newer_than_the_driver() -> None:
    found = {**DEVEL_13, "driver_cuda": "12.4", "driver": "550.54.15"}
    readings = {r.key: r for r in judge(found)}
    assert readings["driver_runs_image_cuda"].value is False
    assert "runs CUDA up to 12.4; the image is 13.0" in readings["driver_runs_image_cuda"].detail
    assert readings["driver_runs_framework_cuda"].value is False


def test_minor_version_compatibility_lets_a_newer_minor_run() -> None:
    found = {
        **DEVEL_13,
        "cuda_version": "12.4.1",
        "nvcc": "12.4",
        "driver_cuda": "12.4",
        "torch": "2.7.0+cu128",
        "torch_cuda": "12.8",
    }
    readings = {r.key: r for r in judge(found)}
    assert readings["driver_runs_framework_cuda"].value is True
    assert (
        "minor version compatibility within CUDA 12"
        in readings["driver_runs_framework_cuda"].detail
    )


def test_a_toolkit_that_is_not_the_images_cuda() -> None:
    assert _values({**DEVEL_13, "nvcc": "12.6"})["toolkit_is_image_cuda"] is False


def test_a_runtime_image_without_nvcc_or_python_is_no_fault() -> None:
    found = {
        "cuda_version": "13.0.1",
        "smi_gpus": "1",
        "driver": "580.159.04",
        "driver_cuda": "13.0",
    }
    readings = {r.key: r for r in judge(found)}
    assert readings["toolkit"].status == "not_supported"
    assert readings["toolkit_is_image_cuda"].status == "not_supported"
    assert readings["driver_runs_framework_cuda"].status == "not_supported"
    assert readings["driver_runs_image_cuda"].value is True
    assert not any(r.value is False for r in readings.values())


def test_gpus_not_passed_in() -> None:
    """`docker run` without --gpus: the image's nvidia-smi is absent, PyTorch sees none."""
    found = {
        "cuda_version": "13.0.1",
        "smi_gpus": "none",
        "torch": "2.9.0+cu130",
        "torch_cuda": "13.0",
        "torch_gpus": "0",
    }
    readings = {r.key: r for r in judge(found)}
    assert readings["gpu_visible"].value is False
    assert (
        readings["driver_version"].detail
        == "no nvidia-smi inside: the runtime did not pass the driver in"
    )


def test_no_runtime_here_says_which_and_why(tmp_path: Path) -> None:
    empty = tmp_path / "bin"
    empty.mkdir()
    old = os.environ["PATH"]
    os.environ["PATH"] = str(empty)
    try:
        runtime, why = find_runtime()
        result = image_check("myimage")
    finally:
        os.environ["PATH"] = old
    assert runtime is None and why == "docker is not installed; podman is not installed"
    assert result.status == "unavailable"
    assert result.message == (
        "no container runtime answers here: docker is not installed; podman is not installed"
    )


@pytest.mark.skipif(shutil.which("docker") is None, reason="no docker client here")
def test_a_docker_client_without_its_engine_says_so() -> None:
    runtime, why = find_runtime(("docker",))
    if runtime is not None:
        pytest.skip("a Docker engine answers here; this checks a machine without one")
    assert why.startswith("docker is installed but its engine does not answer (")


def test_the_cli_exits_1_and_names_the_reason() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "gpulab", "image", "check", "my/image:1", "--json"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    result = json.loads(done.stdout)
    assert result["probe"] == "container_image"
    if result["status"] != "ok":
        assert done.returncode == 1 and result["message"]
    done = subprocess.run(
        [sys.executable, "-m", "gpulab", "image", "check", "--", "-x"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 1 and "not an image name: '-x'" in done.stdout
