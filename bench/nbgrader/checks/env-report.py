"""nbgrader's test cells for the env-report exercise.

Ported from exercises/landscape/test_env_report.py (visible) and
solutions/landscape/test_env_report_hidden.py (hidden), one test cell per
check, worth the same points; they call the learner's functions directly.
"""
# ruff: noqa: F821, RUF100  (the notebook's answer cells define the learner's functions)

# %% checker
# ruff: noqa: F811  (in the notebook: the checker imports what it uses, whatever came before)
import os
import platform
from pathlib import Path

from gpulab.probes.system_parse import parse_os_release as check_parse_os_release

CHECK_UBUNTU = '''PRETTY_NAME="Ubuntu 24.04.2 LTS"
NAME="Ubuntu"
VERSION_ID="24.04"
VERSION="24.04.2 LTS (Noble Numbat)"
VERSION_CODENAME=noble
ID=ubuntu
ID_LIKE=debian
'''


def check_os_name():
    """PRETTY_NAME as the checker reads it."""
    for path in (Path("/etc/os-release"), Path("/usr/lib/os-release")):
        try:
            fields = check_parse_os_release(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            continue
        return fields.get("PRETTY_NAME", "Linux")
    return None


def check_nvml():
    """The checker's own NVML reading: all None where NVML cannot start."""
    import pynvml

    try:
        pynvml.nvmlInit()
    except pynvml.NVMLError:
        return {"driver_version": None, "cuda_version": None, "gpus": None}
    try:
        driver = pynvml.nvmlSystemGetDriverVersion()
        cuda = pynvml.nvmlSystemGetCudaDriverVersion()
        names = [pynvml.nvmlDeviceGetName(pynvml.nvmlDeviceGetHandleByIndex(i))
                 for i in range(pynvml.nvmlDeviceGetCount())]
    finally:
        pynvml.nvmlShutdown()
    return {"driver_version": driver, "cuda_version": f"{cuda // 1000}.{cuda % 1000 // 10}",
            "gpus": names}


# %% test test_parse_os_release points=2 needs=parse_os_release
want = {"PRETTY_NAME": "Ubuntu 24.04.2 LTS", "NAME": "Ubuntu", "VERSION_ID": "24.04",
        "VERSION": "24.04.2 LTS (Noble Numbat)", "VERSION_CODENAME": "noble",
        "ID": "ubuntu", "ID_LIKE": "debian"}
got = parse_os_release(CHECK_UBUNTU)
assert isinstance(got, dict), f"parse_os_release returned {got!r}: return a dict"
for key, value in want.items():
    assert got.get(key) == value, f"{key}: you give {got.get(key)!r}, want {value!r}"
extra = sorted(set(got) - set(want))
assert not extra, f"parse_os_release found keys that are not in the file: {extra!r}"

# %% test test_os_name points=1 needs=os_name,parse_os_release
want = check_os_name()
got = os_name()
assert got == want, f"os_name() returned {got!r}, want {want!r}"

# %% test test_kernel_release points=1 needs=kernel_release
want = os.uname().release
got = kernel_release()
assert got == want, f"kernel_release() returned {got!r}, want {want!r}"

# %% test test_python_version points=1 needs=python_version
want = platform.python_version()
got = python_version()
assert got == want, f"python_version() returned {got!r}, want {want!r}"

# %% test test_gpu_report points=3 needs=gpu_report
want = check_nvml()
got = gpu_report()
assert isinstance(got, dict) and set(got) == set(want), (
    f"gpu_report() returned {got!r}: return a dict with exactly the keys {sorted(want)!r}")
for key in want:
    assert got[key] == want[key], f"your {key} is {got[key]!r}, want {want[key]!r}"

# %% hidden test_parse_os_release_quoting points=2 needs=parse_os_release
text = ("NAME='Fedora Linux'\n"
        "VARIANT=\n"
        'VARIANT_ID=""\n'
        'HOME_URL="https://example.org/?a=b&c=d"\n'
        "ID=fedora")
want = {"NAME": "Fedora Linux", "VARIANT": "", "VARIANT_ID": "",
        "HOME_URL": "https://example.org/?a=b&c=d", "ID": "fedora"}
got = parse_os_release(text)
assert got == want, f"parse_os_release returned {got!r}, want {want!r}"

# %% hidden test_parse_os_release_skips_non_assignments points=1 needs=parse_os_release
text = ("# written by the image builder\n"
        "\n"
        'PRETTY_NAME="Alpine Linux v3.21"\n'
        "   \n"
        "not an assignment\n"
        "ID=alpine\n")
want = {"PRETTY_NAME": "Alpine Linux v3.21", "ID": "alpine"}
got = parse_os_release(text)
assert got == want, f"parse_os_release returned {got!r}, want {want!r}"
