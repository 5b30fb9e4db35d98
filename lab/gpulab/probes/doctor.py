"""`gpulab doctor`: the environment check of days 1 and 2, as a checklist.

Each check says what it found and, when something is wrong, how to fix it.
A machine without an NVIDIA GPU is a fine machine for the Linux lessons: the
GPU checks then say so plainly instead of failing with a traceback.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from gpulab.probes.model import ProbeResult, Reading, Table
from gpulab.probes.readiness import Driver, install_advice
from gpulab.probes.registry import run_probe

__all__ = ["Check", "checks_from", "cuda_runtime", "doctor", "parse_cpus"]

Status = Literal["pass", "warn", "fail", "skip"]


@dataclass(frozen=True)
class Check:
    """One item of the checklist."""

    name: str
    status: Status
    found: str
    fix: str = ""

    def to_dict(self) -> dict[str, str]:
        return {"name": self.name, "status": self.status, "found": self.found, "fix": self.fix}


@dataclass(frozen=True)
class CudaRuntime:
    """What CuPy says about the CUDA runtime: versions, device count, a test kernel."""

    status: Literal["ok", "missing", "error"]
    detail: str
    runtime_version: int = 0  # e.g. 13020 for CUDA 13.2
    cupy_version: str = ""
    devices: int = 0


def doctor() -> list[Check]:
    """Run the probes the checklist needs on this machine and judge them."""
    return checks_from(run_probe("system"), run_probe("nvml_inventory"), cuda_runtime())


def cuda_runtime(importer: Callable[[str], Any] = importlib.import_module) -> CudaRuntime:
    """Import CuPy, count devices and run one tiny kernel; never raises."""
    try:
        cupy = importer("cupy")
    except ImportError as exc:
        return CudaRuntime("missing", f"CuPy is not installed ({exc})")
    try:
        version = int(cupy.cuda.runtime.runtimeGetVersion())
        devices = int(cupy.cuda.runtime.getDeviceCount())
        total = int(cupy.arange(1000, dtype=cupy.int64).sum())
    except Exception as exc:  # CUDA errors come in many classes; all mean "not usable"
        return CudaRuntime(
            "error",
            f"{type(exc).__name__}: {exc}",
            cupy_version=str(getattr(cupy, "__version__", "")),
        )
    if total != 499500:
        return CudaRuntime(
            "error",
            f"a test kernel summed 0..999 to {total}, not 499500",
            version,
            str(cupy.__version__),
            devices,
        )
    return CudaRuntime(
        "ok",
        f"CuPy {cupy.__version__}, CUDA runtime {_cuda(version)}, "
        f"{devices} device(s), a test kernel ran",
        version,
        str(cupy.__version__),
        devices,
    )


def checks_from(system: ProbeResult, inventory: ProbeResult, cuda: CudaRuntime) -> list[Check]:
    """The checklist, from the results of the system and NVML probes and the CUDA test."""
    return [
        _linux(system),
        _driver(system, inventory),
        _nvml(inventory, skip=_no_gpu_here(system)),
        _cuda_check(cuda, inventory),
        _cupy_matches(cuda, inventory),
        _cgroups(system),
        _numa(system),
        _mig(inventory),
    ]


def _value(result: ProbeResult, key: str) -> Any:
    reading = result.reading(key)
    return reading.value if reading is not None and reading.status == "ok" else None


def _reading(result: ProbeResult, key: str) -> Reading | None:
    return result.reading(key)


def _linux(system: ProbeResult) -> Check:
    if system.status == "error":
        return Check("Linux", "warn", system.message, "report this: the system probe failed")
    release, os_name = _value(system, "kernel_release"), _value(system, "os")
    found = f"{os_name or 'unknown OS'}, kernel {release or 'unknown'}"
    container = _reading(system, "in_container")
    if container is not None and container.status == "ok" and container.value:
        found += " (inside a container)"
    return Check("Linux", "pass", found)


def _no_gpu_here(system: ProbeResult) -> bool:
    """True when sysfs shows no NVIDIA GPU at all (a CPU-only machine, not a broken one)."""
    return bool(_value(system, "gpus_in_sysfs") == 0)


def _driver(system: ProbeResult, inventory: ProbeResult) -> Check:
    version = _value(inventory, "driver_version") or _value(system, "nvidia_driver")
    if version:
        return Check("NVIDIA driver", "pass", f"driver {version}")
    if _no_gpu_here(system):
        return Check(
            "NVIDIA driver",
            "skip",
            "no NVIDIA GPU on this machine: the GPU checks are skipped; the Linux "
            "lessons and CPU exercises work, and the app shows readings recorded on "
            "our H200 instead",
        )
    return Check(
        "NVIDIA driver",
        "fail",
        "no NVIDIA driver found on this machine",
        "on a machine with an NVIDIA GPU, install the driver (the landscape lesson's "
        "environment check); without a GPU, the Linux lessons and CPU exercises "
        "still work",
    )


def _nvml(inventory: ProbeResult, *, skip: bool = False) -> Check:
    if inventory.status in ("ok", "partial"):
        name = _value(inventory, "name") or "a GPU"
        count = _value(inventory, "gpu_count")
        cuda = _value(inventory, "cuda_driver_version")
        many = f" ({count} GPUs)" if isinstance(count, int) and count > 1 else ""
        supports = f", driver supports CUDA {cuda}" if cuda else ""
        return Check("NVML readable", "pass", f"{name}{many}{supports}")
    if inventory.status == "unavailable":
        return Check(
            "NVML readable",
            "fail",
            inventory.message,
            "install nvidia-ml-py (gpulab depends on it: make lab installs it)",
        )
    if inventory.status == "no_gpu":
        if skip:
            return Check("NVML readable", "skip", inventory.message)
        return Check(
            "NVML readable",
            "fail",
            inventory.message,
            "NVML comes with the driver: install the driver, or use a machine "
            "with an NVIDIA GPU for the GPU parts",
        )
    return Check("NVML readable", "fail", inventory.message, "report this: the probe failed")


def _cuda_check(cuda: CudaRuntime, inventory: ProbeResult) -> Check:
    """CuPy is judged only where there is a driver: without one, CuPy is not the problem."""
    if cuda.status == "ok":
        return Check("CUDA runtime usable", "pass", cuda.detail)
    if inventory.status in ("no_gpu", "unavailable"):
        # No driver (or NVML cannot say): the NVML check above says what to do, if anything.
        found = (
            "CuPy is not installed"
            if cuda.status == "missing"
            else f"CuPy is installed but cannot run ({cuda.detail})"
        )
        why = (
            "there is none here"
            if inventory.status == "no_gpu"
            else "NVML cannot tell whether there is one here (see NVML readable)"
        )
        return Check(
            "CUDA runtime usable", "skip", f"{found}; it needs an NVIDIA GPU and driver, and {why}"
        )
    driver = Driver("ok", cuda_version=str(_value(inventory, "cuda_driver_version") or ""))
    if cuda.status == "missing":
        return Check("CUDA runtime usable", "fail", cuda.detail, install_advice(driver))
    return Check(
        "CUDA runtime usable",
        "fail",
        cuda.detail,
        "check that the driver works (nvidia-smi) and that CuPy's CUDA major "
        f"version is not newer than the driver's; to reinstall: "
        f"{install_advice(driver)}",
    )


def _cupy_matches(cuda: CudaRuntime, inventory: ProbeResult) -> Check:
    driver_cuda = _value(inventory, "cuda_driver_version")
    if not cuda.runtime_version or not driver_cuda:
        return Check("CuPy matches the driver", "skip", "needs both CuPy and a driver to compare")
    runtime_major = cuda.runtime_version // 1000
    driver_major = int(str(driver_cuda).split(".")[0])
    found = (
        f"CuPy {cuda.cupy_version} uses CUDA {_cuda(cuda.runtime_version)}; "
        f"the driver supports CUDA {driver_cuda}"
    )
    if runtime_major > driver_major:
        return Check(
            "CuPy matches the driver",
            "fail",
            found,
            f"install the CuPy build for CUDA {driver_major} "
            f"(pip install 'gpulab[cuda{driver_major}]'), or update the driver",
        )
    if runtime_major < driver_major:
        return Check(
            "CuPy matches the driver",
            "pass",
            found + " (an older CUDA major runs on a newer driver)",
        )
    return Check("CuPy matches the driver", "pass", found)


def _cgroups(system: ProbeResult) -> Check:
    version = _value(system, "cgroup_version")
    parts = []
    for key, what in (
        ("cgroup_memory_limit", "memory"),
        ("cgroup_cpu_limit", "CPU quota"),
        ("cgroup_pids_limit", "tasks"),
    ):
        reading = _reading(system, key)
        if reading is None or reading.status != "ok":
            continue
        parts.append(f"{what} {reading.shown if reading.value is not None else 'no limit'}")
    found = f"cgroup {version or '?'}: " + (", ".join(parts) or "no limits read")
    quota, allowed = _value(system, "cgroup_cpu_limit"), _value(system, "cpu_affinity_count")
    if isinstance(quota, int | float) and isinstance(allowed, int) and quota < allowed:
        return Check(
            "cgroup limits",
            "warn",
            found,
            f"the CPU quota ({quota:g} CPUs) is below the {allowed} CPUs this process "
            "may run on: size worker pools to the quota, or they will be throttled",
        )
    return Check("cgroup limits", "pass", found)


def _numa(system: ProbeResult) -> Check:
    gpus = next((t for t in system.tables if t.title == "NVIDIA GPUs on the PCI bus"), None)
    if gpus is None or not gpus.rows:
        return Check("GPU NUMA placement", "skip", "no NVIDIA GPU on the PCI bus")
    node, local = (
        _column(gpus, gpus.rows[0], "NUMA node"),
        _column(gpus, gpus.rows[0], "local CPUs"),
    )
    affinity = _value(system, "cpu_affinity")
    if node in (None, -1, "-1"):
        return Check(
            "GPU NUMA placement",
            "pass",
            "the GPU reports no NUMA node (one node, or a VM that hides it)",
        )
    if not isinstance(local, str) or not isinstance(affinity, str):
        return Check("GPU NUMA placement", "skip", f"GPU on NUMA node {node}; CPU lists unread")
    if parse_cpus(affinity) <= parse_cpus(local):
        return Check(
            "GPU NUMA placement",
            "pass",
            f"GPU on NUMA node {node}; this process runs on its local CPUs ({local})",
        )
    return Check(
        "GPU NUMA placement",
        "warn",
        f"GPU on NUMA node {node} (local CPUs {local}); this process may run on {affinity}",
        f"run GPU jobs near the GPU: numactl --cpunodebind={node} --membind={node} <command>",
    )


def _mig(inventory: ProbeResult) -> Check:
    current, pending = _value(inventory, "mig_mode_current"), _value(inventory, "mig_mode_pending")
    if current is None:
        reading = _reading(inventory, "mig_mode_current")
        if reading is not None and reading.status == "not_supported":
            return Check("MIG", "pass", "this GPU does not support MIG")
        return Check("MIG", "skip", "no GPU to ask")
    if pending is not None and pending != current:
        return Check(
            "MIG",
            "warn",
            f"MIG is {current}, {pending} after the next GPU reset",
            "an administrator changed the MIG mode: it takes effect after a reset",
        )
    if current == "Enabled":
        return Check(
            "MIG",
            "pass",
            "MIG is on: CUDA sees MIG instances, not the whole GPU",
            "list them with nvidia-smi -L; pick one with CUDA_VISIBLE_DEVICES=MIG-…",
        )
    return Check("MIG", "pass", "MIG is off: programs see the whole GPU")


def _column(table: Table, row: tuple[Any, ...], name: str) -> Any:
    try:
        return row[table.columns.index(name)]
    except (ValueError, IndexError):
        return None


def parse_cpus(text: str) -> set[int]:
    """CPU numbers from a Linux CPU list such as "0-3,8,10-11"."""
    cpus: set[int] = set()
    for part in text.replace(" ", "").split(","):
        if not part:
            continue
        low, _, high = part.partition("-")
        cpus.update(range(int(low), int(high or low) + 1))
    return cpus


def _cuda(version: int) -> str:
    return f"{version // 1000}.{version % 1000 // 10}"
