"""Visible checks for the env-report exercise.

Each check calls one of your functions in the worker process and compares
the result with a reading this file takes itself: /etc/os-release, the
kernel, the interpreter, and NVML started afresh.
"""

from __future__ import annotations

import os
import platform
from pathlib import Path

import pytest

from gpulab.grading.learner import LearnerError
from gpulab.probes.system_parse import parse_os_release

OS_RELEASE_FILES = (Path("/etc/os-release"), Path("/usr/lib/os-release"))

UBUNTU = '''PRETTY_NAME="Ubuntu 24.04.2 LTS"
NAME="Ubuntu"
VERSION_ID="24.04"
VERSION="24.04.2 LTS (Noble Numbat)"
VERSION_CODENAME=noble
ID=ubuntu
ID_LIKE=debian
'''


def read_os_name() -> tuple[str | None, str]:
    """PRETTY_NAME as the checker reads it, and where it came from."""
    for path in OS_RELEASE_FILES:
        try:
            fields = parse_os_release(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            continue
        if "PRETTY_NAME" in fields:
            return fields["PRETTY_NAME"], f"PRETTY_NAME in {path}"
        return "Linux", f"{path}, which has no PRETTY_NAME (the standard default is 'Linux')"
    return None, "neither /etc/os-release nor /usr/lib/os-release (so None)"


def read_nvml() -> tuple[dict, str]:
    """The checker's own NVML reading, and why it looks as it does."""
    import pynvml

    try:
        pynvml.nvmlInit()
    except pynvml.NVMLError as exc:
        return ({"driver_version": None, "cuda_version": None, "gpus": None},
                f"NVML cannot start here ({exc}), so there is no driver to report")
    try:
        driver = pynvml.nvmlSystemGetDriverVersion()
        cuda = pynvml.nvmlSystemGetCudaDriverVersion()
        names = [pynvml.nvmlDeviceGetName(pynvml.nvmlDeviceGetHandleByIndex(i))
                 for i in range(pynvml.nvmlDeviceGetCount())]
    finally:
        pynvml.nvmlShutdown()
    return ({"driver_version": driver, "cuda_version": f"{cuda // 1000}.{cuda % 1000 // 10}",
             "gpus": names},
            f"NVML says driver {driver}, CUDA {cuda} (an integer: major*1000 + minor*10), "
            f"{len(names)} GPU(s)")


# ---- part 1: parse_os_release ------------------------------------------------------------

@pytest.mark.points(2)
def test_parse_os_release(learner):
    """parse_os_release reads KEY=value lines and strips the quotes"""
    want = {"PRETTY_NAME": "Ubuntu 24.04.2 LTS", "NAME": "Ubuntu", "VERSION_ID": "24.04",
            "VERSION": "24.04.2 LTS (Noble Numbat)", "VERSION_CODENAME": "noble",
            "ID": "ubuntu", "ID_LIKE": "debian"}
    got = learner.call("parse_os_release", UBUNTU)
    assert isinstance(got, dict), f"parse_os_release returned {got!r}: return a dict"
    for key, value in want.items():
        assert got.get(key) == value, (
            f"for the line {key}=... of an Ubuntu os-release file you give {got.get(key)!r}, "
            f"but the value is {value!r}: split at the first '=' and remove the surrounding "
            "quotes (unquoted values stay as they are)")
    extra = sorted(set(got) - set(want))
    assert not extra, f"parse_os_release found keys that are not in the file: {extra!r}"


# ---- parts 2-4: os_name, kernel_release, python_version -----------------------------------

@pytest.mark.points(1)
def test_os_name(learner):
    """os_name is PRETTY_NAME from this machine's os-release file"""
    want, source = read_os_name()
    got = learner.call("os_name")
    assert got == want, f"os_name() returned {got!r}, but {source} says {want!r}"


@pytest.mark.points(1)
def test_kernel_release(learner):
    """kernel_release is the running kernel's release (uname -r)"""
    want = os.uname().release
    got = learner.call("kernel_release")
    assert got == want, (
        f"kernel_release() returned {got!r}, but the running kernel is {want!r} "
        "(os.uname().release, what uname -r prints)")


@pytest.mark.points(1)
def test_python_version(learner):
    """python_version is the running interpreter's major.minor.micro"""
    # The worker is started as `sys.executable -m gpulab.grading.worker`, the very
    # interpreter running this check, so the checker's own version is the truth.
    want = platform.python_version()
    got = learner.call("python_version")
    assert got == want, (
        f"python_version() returned {got!r}, but the Python running your code is {want!r}: "
        "report the interpreter that runs, not one named in a file or on the PATH")


# ---- part 5: gpu_report ------------------------------------------------------------------

@pytest.mark.points(3)
def test_gpu_report(learner):
    """gpu_report gives NVML's driver, CUDA version and GPU names, or None without NVML"""
    want, source = read_nvml()
    try:
        got = learner.call("gpu_report")
    except LearnerError as exc:
        if want["driver_version"] is not None or "NotImplementedError" in str(exc):
            raise
        raise LearnerError(f"{exc}\n{source}: a machine without a GPU is a valid answer, "
                           "so catch pynvml.NVMLError around nvmlInit() and return None "
                           "for every field") from None
    assert isinstance(got, dict) and set(got) == set(want), (
        f"gpu_report() returned {got!r}: return a dict with exactly the keys "
        f"{sorted(want)!r}")
    if want["driver_version"] is None:
        assert got == want, (
            f"gpu_report() returned {got!r}, but {source}. A machine without a GPU is a "
            "valid answer: catch pynvml.NVMLError around nvmlInit() and return None for "
            "every field")
        return
    for key, hint in [
        ("driver_version", "nvmlSystemGetDriverVersion() gives it as a string"),
        ("cuda_version", "turn the integer into 'major.minor': 13000 is '13.0', 12040 '12.4'"),
        ("gpus", "one name per GPU, every GPU, in index order"),
    ]:
        assert got[key] == want[key], (
            f"your {key} is {got[key]!r}, but {source}; expected {want[key]!r}: {hint}")
