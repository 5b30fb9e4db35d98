"""Visible checks for the env-report exercise.

Each check calls one of your functions in the worker process. `os_name` is
given recorded machines' files (a root folder the worker builds) and
`gpu_report` runs while `pynvml` answers from recorded NVML sessions; the
answers expected on each were taken when it was recorded
(`gpulab.grading.checks.machines`). The kernel and the Python are this process's
own, so those two checks compare with what the checker runs on.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from gpulab.grading.checks.learner import LearnerError
from gpulab.grading.checks.machines import load_machine, nvml_expected, nvml_recording

MACHINES = ("firecracker-vm", "h200-vm", "two-socket", "docker-container", "k8s-hostpid")
RECORDINGS = ("h200", "two-h100", "no-library")

UBUNTU = '''PRETTY_NAME="Ubuntu 24.04.2 LTS"
NAME="Ubuntu"
VERSION_ID="24.04"
VERSION="24.04.2 LTS (Noble Numbat)"
VERSION_CODENAME=noble
ID=ubuntu
ID_LIKE=debian
'''

HINTS = {
    "driver_version": "nvmlSystemGetDriverVersion() gives it as a string",
    "cuda_version": "turn the integer into 'major.minor': 13000 is '13.0', 12040 '12.4'",
    "gpus": "one name per GPU, every GPU, in index order",
}


def nvml_source(recording: str) -> str:
    """What a recorded NVML session is, in words, for messages."""
    data = nvml_recording(recording)
    if not any(c.get("call") == "nvmlInit" and "error" not in c for c in data["calls"]):
        return f"the recorded session {recording!r}, where nvmlInit() fails (no driver)"
    return f"the recorded session {recording!r} ({data.get('machine', '')})"


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


# ---- part 2: os_name, on recorded machines -------------------------------------------------

@pytest.mark.points(1)
def test_os_name(learner):
    """os_name(root) is PRETTY_NAME from the os-release file of each recorded machine"""
    for name in MACHINES:
        machine = load_machine(name)
        want = machine.want("env-report")["os_name"]
        got = learner.call("os_name", learner.machine(name))
        assert got == want, (
            f"os_name(root) returned {got!r} on a recorded machine ({machine.about}), but "
            f"PRETTY_NAME in its os-release file is {want!r}: take PRETTY_NAME (NAME is "
            "shorter), from the file under root, Path(root, 'etc/os-release'), not from this "
            "machine's /etc/os-release")


# ---- parts 3-4: kernel_release, python_version (this process's own) ----------------------

@pytest.mark.points(1)
def test_kernel_release(learner):
    """kernel_release is the running kernel's release (uname -r)"""
    want = Path("/proc/sys/kernel/osrelease").read_text().strip()
    got = learner.call("kernel_release")
    assert got == want, (
        f"kernel_release() returned {got!r}, but the running kernel is {want!r} "
        "(the release field of the kernel's uname, what uname -r prints)")


@pytest.mark.points(1)
def test_python_version(learner):
    """python_version is the running interpreter's major.minor.micro"""
    # The worker is started as `sys.executable -m gpulab.grading.checks.worker`, the very
    # interpreter running this check, so the checker's own version is the truth.
    want = "{}.{}.{}".format(*sys.version_info[:3])
    got = learner.call("python_version")
    assert got == want, (
        f"python_version() returned {got!r}, but the Python running your code is {want!r}: "
        "report the interpreter that runs, not one named in a file or on the PATH")


# ---- part 5: gpu_report, on recorded NVML sessions ---------------------------------------

def judge_report(got: object, want: dict, source: str) -> str | None:
    """Why `got` is not the report `want` of the NVML session `source`; None when it is."""
    if not isinstance(got, dict) or set(got) != set(want):
        return (f"gpu_report() returned {got!r} with {source}: return a dict with exactly "
                f"the keys {sorted(want)!r}")
    if got == dict.fromkeys(want) and want["driver_version"] is not None:
        return (f"gpu_report() returned None for every field with {source}, where NVML starts "
                f"and lists {len(want['gpus'])} GPU(s): ask NVML, do not assume there is none")
    if want["driver_version"] is None:
        if got != want:
            return (f"gpu_report() returned {got!r} with {source}: a machine without a GPU "
                    "is a valid answer, so catch pynvml.NVMLError around nvmlInit() and "
                    "return None for every field")
        return None
    for key, hint in HINTS.items():
        if got[key] != want[key]:
            return (f"with {source}, your {key} is {got[key]!r}, but NVML answers "
                    f"{want[key]!r}: {hint}")
    return None


@pytest.mark.points(3)
def test_gpu_report(learner):
    """gpu_report gives NVML's driver, CUDA version and GPU names, or None without NVML"""
    problems = []
    for recording in RECORDINGS:
        source = nvml_source(recording)
        try:
            got = learner.call_with_nvml(recording, "gpu_report")
        except LearnerError as exc:
            if exc.raised_as(NotImplementedError):
                raise
            said = str(exc)
            if "NotRecorded" in said:
                hint = ("the recordings answer the calls the notebook names: nvmlInit, "
                        "nvmlSystemGetDriverVersion, nvmlSystemGetCudaDriverVersion, "
                        "nvmlDeviceGetCount, nvmlDeviceGetHandleByIndex, nvmlDeviceGetName "
                        "and nvmlShutdown")
            elif "NVMLError" in said:
                hint = ("where NVML cannot start, catch pynvml.NVMLError around nvmlInit() and "
                        "return None for every field: a machine without a GPU is a valid answer")
            else:
                hint = ""
            problems.append(f"with {source}: {exc}" + (f"\n{hint}" if hint else ""))
            continue
        why = judge_report(got, nvml_expected(recording), source)
        if why:
            problems.append(why)
    assert not problems, "\n".join(problems)
