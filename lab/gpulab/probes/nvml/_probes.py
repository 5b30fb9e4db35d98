"""The NVML inventory, and what both NVML probes share.

`inventory()` reads what changes rarely (name, UUID, driver and CUDA versions,
memory, BAR1, PCIe link, modes, ECC and remapped rows, power limits, maximum
clocks) through a `Session` (`_session`) and words NVML's numbers with
`_decode`. `sample()`, what changes all the time, is in `_sample` and uses the
helpers here (`_not_here`, `_ok`, `_MIB`).

NVML's `NotSupported` is an answer, not a failure: it becomes a reading with
status `not_supported`. No library, no driver or no GPU gives one `no_gpu`
result that says which.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from gpulab.probes.model import ProbeResult, Reading, Table, Value, summarise
from gpulab.probes.nvml._decode import compute_mode_name, cuda_version_text, enabled_text
from gpulab.probes.nvml._session import Field, NvmlUnavailable, Session, no_gpu_text, nvml_session
from gpulab.probes.registry import title_of

__all__ = ["inventory"]

_MIB = 1 << 20
_NVLINK_LINKS = 36  # the most links NVML numbers (NVML_NVLINK_MAX_LINKS)


# ---- shared by both probes ------------------------------------------------------------------


def _not_here(probe: str, title: str, exc: NvmlUnavailable) -> ProbeResult:
    if exc.status == "no_gpu":
        return ProbeResult(probe, title, "no_gpu", no_gpu_text(exc.reason))
    return ProbeResult(probe, title, "unavailable", exc.reason)


def _count(number: int, thing: str) -> str:
    return f"{number} {thing}{'' if number == 1 else 's'}"


def _ok(readings: Sequence[Reading], key: str) -> Value:
    found = next((r for r in readings if r.key == key), None)
    return found.value if found is not None and found.status == "ok" else None


# ---- inventory ------------------------------------------------------------------------------


def inventory(backend: Any = None) -> ProbeResult:
    """What NVML says about every GPU: readings for the first, a table when there are more."""
    probe = "nvml_inventory"
    title = title_of(probe)
    try:
        with nvml_session(backend) as s:
            readings = [
                *s.read(
                    "nvmlSystemGetDriverVersion", (), Field("driver_version", "Driver version")
                ),
                *s.read(
                    "nvmlSystemGetCudaDriverVersion",
                    (),
                    Field(
                        "cuda_driver_version",
                        "CUDA version the driver supports",
                        extract=cuda_version_text,
                    ),
                ),
                *s.read("nvmlSystemGetNVMLVersion", (), Field("nvml_version", "NVML version")),
            ]
            count = s.count
            readings.append(Reading("gpu_count", "GPUs", count, "GPUs"))
            per_gpu = []
            for index in range(count):
                try:
                    handle = s.call("nvmlDeviceGetHandleByIndex", index)
                except s.pm.NVMLError as exc:
                    per_gpu.append([s.problem("name", "Name", s.last_call, exc)])
                else:
                    per_gpu.append(_device_readings(s, handle))
    except NvmlUnavailable as exc:
        return _not_here(probe, title, exc)
    readings.extend(per_gpu[0])
    tables = (_gpu_table(per_gpu),) if count > 1 else ()
    name = _ok(readings, "name") or "GPU 0"
    facts = [f"{_count(count, 'GPU')}: {name}"]
    for key, text in (
        ("driver_version", "driver {}"),
        ("cuda_driver_version", "CUDA {}"),
        ("memory_total_mib", "{} MiB"),
        ("power_limit", "{:.0f} W limit"),
    ):
        value = _ok(readings, key)
        if value is not None:
            facts.append(text.format(value))
    gen, width = _ok(readings, "pcie_gen_current"), _ok(readings, "pcie_width_current")
    if gen is not None and width is not None:
        facts.append(f"PCIe Gen{gen} x{width}")
    missing = sum(r.status == "not_supported" for r in readings)
    failed = sum(r.status == "error" for r in readings)
    message = ", ".join(facts)
    if missing:
        message += f"; {_count(missing, 'reading')} not supported here"
    if failed:
        message += f"; {_count(failed, 'reading')} failed"
    return ProbeResult(
        probe, title, summarise(readings), message, tuple(readings), tables, device=str(name)
    )


def _device_readings(s: Session, h: Any) -> list[Reading]:
    """Everything the inventory reads about one GPU, in the order people read it."""
    pm = s.pm
    mib = "bytes / 2^20, as nvidia-smi shows it"
    readings = [
        *s.read("nvmlDeviceGetName", (h,), Field("name", "Name")),
        *s.read("nvmlDeviceGetUUID", (h,), Field("uuid", "UUID")),
        *s.read(
            "nvmlDeviceGetCudaComputeCapability",
            (h,),
            Field(
                "compute_capability", "Compute capability", extract=lambda cc: f"{cc[0]}.{cc[1]}"
            ),
        ),
        *s.read(
            "nvmlDeviceGetMemoryInfo",
            (h,),
            Field("memory_total", "Memory (total)", "bytes", lambda m: int(m.total)),
            Field("memory_total_mib", "Memory (total)", "MiB", lambda m: int(m.total) // _MIB, mib),
        ),
        *s.read(
            "nvmlDeviceGetBAR1MemoryInfo",
            (h,),
            Field(
                "bar1_total",
                "BAR1 aperture",
                "bytes",
                lambda m: int(m.bar1Total),
                "the window through which the CPU and peers can map GPU memory",
            ),
            Field(
                "bar1_total_mib", "BAR1 aperture", "MiB", lambda m: int(m.bar1Total) // _MIB, mib
            ),
        ),
        *s.read(
            "nvmlDeviceGetCurrPcieLinkGeneration",
            (h,),
            Field("pcie_gen_current", "PCIe generation (now)"),
        ),
        *s.read(
            "nvmlDeviceGetMaxPcieLinkGeneration",
            (h,),
            Field(
                "pcie_gen_max",
                "PCIe generation (max)",
                convention="the most this GPU and this host allow",
            ),
        ),
        *s.read(
            "nvmlDeviceGetCurrPcieLinkWidth",
            (h,),
            Field("pcie_width_current", "PCIe link width (now)", "lanes"),
        ),
        *s.read(
            "nvmlDeviceGetMaxPcieLinkWidth",
            (h,),
            Field("pcie_width_max", "PCIe link width (max)", "lanes"),
        ),
        *s.read(
            "nvmlDeviceGetComputeMode",
            (h,),
            Field("compute_mode", "Compute mode", extract=compute_mode_name),
        ),
        *s.read(
            "nvmlDeviceGetPersistenceMode",
            (h,),
            Field("persistence_mode", "Persistence mode", extract=enabled_text),
        ),
        *s.read(
            "nvmlDeviceGetMigMode",
            (h,),
            Field("mig_mode_current", "MIG mode (now)", extract=lambda m: enabled_text(m[0])),
            Field(
                "mig_mode_pending", "MIG mode (after reset)", extract=lambda m: enabled_text(m[1])
            ),
        ),
        *s.read(
            "nvmlDeviceGetEccMode",
            (h,),
            Field("ecc_mode_current", "ECC (now)", extract=lambda m: enabled_text(m[0])),
            Field("ecc_mode_pending", "ECC (after reboot)", extract=lambda m: enabled_text(m[1])),
        ),
    ]
    for counter, when, convention in (
        (pm.NVML_VOLATILE_ECC, "volatile", "since the driver last loaded"),
        (pm.NVML_AGGREGATE_ECC, "aggregate", "over the GPU's life"),
    ):
        for kind, error_type in (
            ("corrected", pm.NVML_MEMORY_ERROR_TYPE_CORRECTED),
            ("uncorrected", pm.NVML_MEMORY_ERROR_TYPE_UNCORRECTED),
        ):
            readings += s.read(
                "nvmlDeviceGetTotalEccErrors",
                (h, error_type, counter),
                Field(
                    f"ecc_{when}_{kind}",
                    f"ECC errors, {kind} ({when})",
                    "errors",
                    convention=convention,
                ),
            )
    readings += s.read(
        "nvmlDeviceGetRemappedRows",
        (h,),
        Field(
            "remapped_rows_correctable",
            "Rows remapped (correctable errors)",
            "rows",
            lambda r: int(r[0]),
        ),
        Field(
            "remapped_rows_uncorrectable",
            "Rows remapped (uncorrectable errors)",
            "rows",
            lambda r: int(r[1]),
        ),
        Field(
            "remapped_rows_pending",
            "Row remapping pending (needs a reset)",
            extract=lambda r: bool(r[2]),
        ),
        Field("remapped_rows_failure", "Row remapping failed", extract=lambda r: bool(r[3])),
    )
    for cause, kind in (
        (pm.NVML_PAGE_RETIREMENT_CAUSE_MULTIPLE_SINGLE_BIT_ECC_ERRORS, "single_bit"),
        (pm.NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR, "double_bit"),
    ):
        readings += s.read(
            "nvmlDeviceGetRetiredPages",
            (h, cause),
            Field(
                f"retired_pages_{kind}",
                f"Retired pages ({kind.replace('_', '-')} ECC)",
                "pages",
                len,
                "the older mechanism that row remapping replaced",
            ),
        )
    readings += s.read(
        "nvmlDeviceGetRetiredPagesPendingStatus",
        (h,),
        Field("retired_pages_pending", "Page retirement pending", extract=bool),
    )
    watts = lambda mw: mw / 1000  # noqa: E731
    readings += [
        *s.read(
            "nvmlDeviceGetEnforcedPowerLimit",
            (h,),
            Field(
                "power_limit",
                "Power limit (enforced)",
                "W",
                watts,
                "the lowest of every limit in force",
            ),
        ),
        *s.read(
            "nvmlDeviceGetPowerManagementDefaultLimit",
            (h,),
            Field("power_limit_default", "Power limit (default)", "W", watts),
        ),
        *s.read(
            "nvmlDeviceGetPowerManagementLimitConstraints",
            (h,),
            Field("power_limit_min", "Power limit (lowest allowed)", "W", lambda c: c[0] / 1000),
            Field("power_limit_max", "Power limit (highest allowed)", "W", lambda c: c[1] / 1000),
        ),
        *s.read(
            "nvmlDeviceGetMaxClockInfo",
            (h, pm.NVML_CLOCK_SM),
            Field("clocks_max_sm", "SM clock (max)", "MHz"),
        ),
        *s.read(
            "nvmlDeviceGetMaxClockInfo",
            (h, pm.NVML_CLOCK_MEM),
            Field("clocks_max_mem", "Memory clock (max)", "MHz"),
        ),
        *s.read(
            "nvmlDeviceGetNumaNodeId",
            (h,),
            Field("numa_node", "NUMA node", convention="the host NUMA node closest to the GPU"),
        ),
        *s.read("nvmlDeviceGetFanSpeed", (h,), Field("fan_speed", "Fan speed", "%")),
    ]
    return readings + _nvlink_readings(s, h)


def _nvlink_readings(s: Session, h: Any) -> list[Reading]:
    """One reading per NVLink link; a single not-supported reading on a GPU without them."""
    first = s.read(
        "nvmlDeviceGetNvLinkState",
        (h, 0),
        Field("nvlink_links_active", "NVLink links active", "links"),
    )
    if first[0].status != "ok":
        return first
    states = [bool(first[0].value)]
    for link in range(1, _NVLINK_LINKS):
        answer = s.value("nvmlDeviceGetNvLinkState", h, link)
        if answer is None:
            break  # past the last link: NVML answers InvalidArgument or NotSupported
        states.append(bool(answer))
    return [
        Reading(
            "nvlink_links_active",
            "NVLink links active",
            sum(states),
            "links",
            f"of {len(states)} links",
        )
    ] + [
        Reading(f"nvlink_link_{link}", f"NVLink link {link}", "Active" if active else "Inactive")
        for link, active in enumerate(states)
    ]


_TABLE_COLUMNS = (
    ("name", "name", ""),
    ("uuid", "UUID", ""),
    ("memory_total_mib", "memory", "MiB"),
    ("pcie_gen_current", "PCIe gen", ""),
    ("pcie_width_current", "PCIe width", "lanes"),
    ("power_limit", "power limit", "W"),
    ("compute_mode", "compute mode", ""),
    ("persistence_mode", "persistence", ""),
    ("mig_mode_current", "MIG", ""),
    ("ecc_mode_current", "ECC", ""),
)


def _gpu_table(per_gpu: Sequence[Sequence[Reading]]) -> Table:
    rows = tuple(
        (index, *(_ok(readings, key) for key, _, _ in _TABLE_COLUMNS))
        for index, readings in enumerate(per_gpu)
    )
    return Table(
        "GPUs",
        ("index", *(column for _, column, _ in _TABLE_COLUMNS)),
        rows,
        ("", *(unit for _, _, unit in _TABLE_COLUMNS)),
    )
