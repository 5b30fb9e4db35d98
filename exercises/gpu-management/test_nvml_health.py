"""Checks of the nvml-health exercise (lesson: the GPU as a managed device).

Each check calls your functions in a separate process and reads the same GPU
through NVML itself: ``inventory`` must match the check's own readings
(exactly, for what does not change while the GPU runs), ``sample`` must be
plausible against what the check samples from the same GPU while your
function runs, and ``decode_reasons`` must agree with the check's own table of
reason bits, built from pynvml's ``nvmlClocksEventReason*`` and
``nvmlClocksThrottleReason*`` constants (that part needs no GPU).
"""

from __future__ import annotations

import contextlib
import functools
import importlib
import math
import statistics
import threading
import time
from collections import Counter
from collections.abc import Iterator
from typing import Any, NamedTuple

import pytest

# -- the reason bits, from pynvml's constants --------------------------------------------------
REASON_NAMES = (
    ("GpuIdle", "GPU idle"),
    ("ApplicationsClocksSetting", "Applications clocks setting"),
    ("SwPowerCap", "SW power cap"),
    ("HwSlowdown", "HW slowdown"),
    ("SyncBoost", "Sync boost"),
    ("SwThermalSlowdown", "SW thermal slowdown"),
    ("HwThermalSlowdown", "HW thermal slowdown"),
    ("HwPowerBrakeSlowdown", "HW power brake slowdown"),
    ("DisplayClockSetting", "Display clock setting"),
    ("BoardLimit", "Board limit"),
    ("Reliability", "Reliability"),
)


def pynvml() -> Any:
    return importlib.import_module("pynvml")


@functools.cache
def reason_bits() -> tuple[tuple[int, str], ...]:
    """(bit, name) for every reason the installed pynvml defines, lowest bit first."""
    pm = pynvml()
    found = []
    for suffix, name in REASON_NAMES:
        bit = getattr(pm, f"nvmlClocksEventReason{suffix}",
                      getattr(pm, f"nvmlClocksThrottleReason{suffix}", 0))
        if bit:
            found.append((int(bit), name))
    return tuple(sorted(found))


def decode(mask: int) -> list[str]:
    """The check's own decoding: known names lowest bit first, then one 'unknown (0x..)'."""
    names, known = [], 0
    for bit, name in reason_bits():
        known |= bit
        if mask & bit:
            names.append(name)
    if mask & ~known:
        names.append(f"unknown ({mask & ~known:#x})")
    return names


def check_decode(learner: Any, masks: list[int]) -> None:
    for mask in masks:
        got = learner.call("decode_reasons", mask)
        want = decode(mask)
        if got == want:
            continue
        hint = ""
        if isinstance(got, list) and sorted(map(str, got)) == sorted(want):
            hint = ": the right names, in the wrong order (lowest bit first, unknown last)"
        elif any(name.startswith("unknown") for name in want):
            hint = (": bits without a name go together into one last entry, "
                    f"{want[-1]!r} (lowercase hex, no leading zeros)")
        elif not want:
            hint = ": a mask of 0 means nothing holds the clocks back, so the list is empty"
        raise AssertionError(f"decode_reasons({mask:#x}) returned {got!r}, want {want!r}{hint}")


# -- the checks' own NVML readings -------------------------------------------------------------
@contextlib.contextmanager
def nvml() -> Iterator[Any]:
    pm = pynvml()
    pm.nvmlInit()
    try:
        yield pm
    finally:
        pm.nvmlShutdown()


def read(pm: Any, query: str, *args: Any) -> Any:
    """pm.query(*args), or None where NVML says the GPU or the driver cannot answer."""
    try:
        return getattr(pm, query)(*args)
    except (pm.NVMLError_NotSupported, pm.NVMLError_FunctionNotFound):
        return None


def enabled(state: Any) -> str | None:
    return None if state is None else ("Enabled" if state else "Disabled")


def watts(milliwatts: Any) -> float | None:
    return None if milliwatts is None else milliwatts / 1000


COMPUTE_MODES = {0: "Default", 1: "Exclusive_Thread", 2: "Prohibited", 3: "Exclusive_Process"}
INVENTORY_KEYS = ("name", "uuid", "memory_total_bytes", "power_limit_w", "power_limit_default_w",
                  "power_limit_min_w", "power_limit_max_w", "max_sm_clock_mhz",
                  "max_memory_clock_mhz", "ecc_mode", "mig_mode", "compute_mode",
                  "persistence_mode", "remapped_rows", "fan_speed_pct", "numa_node")
WATT_KEYS = ("power_limit_w", "power_limit_default_w", "power_limit_min_w", "power_limit_max_w")
MODE_KEYS = ("ecc_mode", "mig_mode", "persistence_mode")


def own_inventory(index: int) -> tuple[dict[str, Any], set[int]]:
    """The check's inventory of GPU `index`, and every memory total NVML gives for it."""
    with nvml() as pm:
        h = pm.nvmlDeviceGetHandleByIndex(index)
        ecc, mig = read(pm, "nvmlDeviceGetEccMode", h), read(pm, "nvmlDeviceGetMigMode", h)
        constraints = read(pm, "nvmlDeviceGetPowerManagementLimitConstraints", h)
        rows = read(pm, "nvmlDeviceGetRemappedRows", h)
        compute = read(pm, "nvmlDeviceGetComputeMode", h)
        totals = {int(pm.nvmlDeviceGetMemoryInfo(h).total)}
        with contextlib.suppress(pm.NVMLError, AttributeError):
            totals.add(int(pm.nvmlDeviceGetMemoryInfo(h, pm.nvmlMemory_v2).total))
        want = {
            "name": pm.nvmlDeviceGetName(h),
            "uuid": pm.nvmlDeviceGetUUID(h),
            "memory_total_bytes": int(pm.nvmlDeviceGetMemoryInfo(h).total),
            "power_limit_w": watts(read(pm, "nvmlDeviceGetPowerManagementLimit", h)),
            "power_limit_default_w": watts(read(pm, "nvmlDeviceGetPowerManagementDefaultLimit",
                                                h)),
            "power_limit_min_w": None if constraints is None else watts(constraints[0]),
            "power_limit_max_w": None if constraints is None else watts(constraints[1]),
            "max_sm_clock_mhz": read(pm, "nvmlDeviceGetMaxClockInfo", h, pm.NVML_CLOCK_SM),
            "max_memory_clock_mhz": read(pm, "nvmlDeviceGetMaxClockInfo", h, pm.NVML_CLOCK_MEM),
            "ecc_mode": None if ecc is None else enabled(ecc[0]),
            "mig_mode": None if mig is None else enabled(mig[0]),
            "compute_mode": None if compute is None else
            COMPUTE_MODES.get(compute, f"unknown ({compute})"),
            "persistence_mode": enabled(read(pm, "nvmlDeviceGetPersistenceMode", h)),
            "remapped_rows": None if rows is None else {
                "correctable": int(rows[0]), "uncorrectable": int(rows[1]),
                "pending": bool(rows[2]), "failure": bool(rows[3])},
            "fan_speed_pct": read(pm, "nvmlDeviceGetFanSpeed", h),
            "numa_node": read(pm, "nvmlDeviceGetNumaNodeId", h),
        }
    return want, totals


def field_problem(key: str, got: Any, want: Any, totals: set[int]) -> str | None:
    """Why inventory()[key] is wrong, in words, or None when it is right."""
    said = f"inventory()[{key!r}] is {got!r:.120}"
    if want is None:
        if got is None:
            return None
        return (f"{said}, but NVML answers NotSupported for it on this GPU: catch "
                "nv.NVMLError_NotSupported (and nv.NVMLError_FunctionNotFound) and return None")
    if got is None:
        return f"{said}, but this GPU does answer: NVML says {want!r}"
    if key == "memory_total_bytes":
        if got in totals:
            return None
        unit = {want // 2**20: "MiB", want // 2**30: "GiB"}.get(got, "")
        return (f"{said}, but nvmlDeviceGetMemoryInfo(h).total is {want} bytes" +
                (f": you gave {unit}, the table asks for bytes" if unit else ""))
    if key in WATT_KEYS:
        if isinstance(got, int | float) and not isinstance(got, bool) and \
                math.isclose(got, want, rel_tol=1e-9, abs_tol=1e-9):
            return None
        milli = isinstance(got, int | float) and math.isclose(got, want * 1000, rel_tol=1e-9)
        return (f"{said}, but NVML says {want:g} W" +
                (": NVML answers in milliwatts, divide by 1000" if milli else ""))
    if key == "fan_speed_pct":
        ok = isinstance(got, int) and not isinstance(got, bool) and abs(got - want) <= 20
        return None if ok else f"{said}, but NVML reads {want} % now"
    if got == want and type(got) is type(want):
        return None
    if key in MODE_KEYS:
        return (f"{said}, but NVML says {want!r}: spell the current mode as nvidia-smi does, "
                "'Enabled' or 'Disabled' (for ECC and MIG, the first of the pair NVML returns)")
    if key == "compute_mode":
        return f"{said}, but NVML says {want!r}: give its name from COMPUTE_MODES"
    if key == "remapped_rows":
        return (f"{said}, but NVML says {want!r}: the four numbers are correctable, "
                "uncorrectable, pending and failure, the last two as True/False")
    if key in ("max_sm_clock_mhz", "max_memory_clock_mhz"):
        return (f"{said}, but NVML says {want} MHz: nvmlDeviceGetMaxClockInfo with "
                f"{'NVML_CLOCK_SM' if key == 'max_sm_clock_mhz' else 'NVML_CLOCK_MEM'}")
    return f"{said}, but NVML says {want!r}"


def check_inventory(learner: Any, index: int) -> None:
    got = learner.call("inventory", index)
    want, totals = own_inventory(index)
    assert isinstance(got, dict), f"inventory({index}) returned {got!r:.100}, not a dict"
    missing = [key for key in INVENTORY_KEYS if key not in got]
    assert not missing, f"inventory({index}) has no {', '.join(missing)}: got {sorted(got)}"
    problems = [p for key in INVENTORY_KEYS
                if (p := field_problem(key, got[key], want[key], totals)) is not None]
    assert not problems, "\n".join(problems)


# -- sampling: the learner's samples and the check's own, over the same time -------------------
SAMPLE_KEYS = {"t": (int, float), "utilization_pct": (int,), "sm_clock_mhz": (int,),
               "power_w": (int, float), "temperature_c": (int,), "reasons": (int,)}


class Watch:
    """The check's own samples, taken every 10 ms in a thread while the learner's run."""

    def __init__(self, index: int) -> None:
        self.index = index
        self.readings: list[dict[str, Any]] = []
        self.error: BaseException | None = None
        self.stop = threading.Event()

    def run(self) -> None:
        try:
            with nvml() as pm:
                h = pm.nvmlDeviceGetHandleByIndex(self.index)
                while not self.stop.is_set():
                    self.readings.append(own_sample(pm, h))
                    self.stop.wait(0.01)
        except BaseException as exc:  # reported by the check, not lost in the thread
            self.error = exc


def own_sample(pm: Any, h: Any) -> dict[str, Any]:
    try:
        temperature = pm.nvmlDeviceGetTemperatureV(h, pm.NVML_TEMPERATURE_GPU)
    except (AttributeError, pm.NVMLError):
        temperature = pm.nvmlDeviceGetTemperature(h, pm.NVML_TEMPERATURE_GPU)
    try:
        reasons = pm.nvmlDeviceGetCurrentClocksEventReasons(h)
    except (AttributeError, pm.NVMLError_FunctionNotFound):
        reasons = pm.nvmlDeviceGetCurrentClocksThrottleReasons(h)
    return {"utilization_pct": int(pm.nvmlDeviceGetUtilizationRates(h).gpu),
            "sm_clock_mhz": int(pm.nvmlDeviceGetClockInfo(h, pm.NVML_CLOCK_SM)),
            "power_w": pm.nvmlDeviceGetPowerUsage(h) / 1000,
            "temperature_c": int(temperature), "reasons": int(reasons)}


class SampleRun(NamedTuple):
    seconds: float
    interval: float
    samples: Any
    elapsed: float                  # seconds the learner's call took, measured here
    seen: list[dict[str, Any]]      # the check's own samples over the same time
    max_sm_clock: int | None
    max_power: float | None


_RUNS: dict[tuple[float, float, int], SampleRun] = {}


def sample_run(learner: Any, seconds: float, interval: float, index: int = 0) -> SampleRun:
    """Call the learner's sample once per session and argument set, watching meanwhile."""
    key = (seconds, interval, index)
    if key not in _RUNS:
        assert learner.pid is not None          # start the learner's worker first
        watch = Watch(index)
        thread = threading.Thread(target=watch.run, daemon=True)
        thread.start()
        while not watch.readings and watch.error is None and thread.is_alive():
            time.sleep(0.005)
        start = time.monotonic()
        try:
            samples = learner.call("sample", seconds, interval, index)
        finally:
            elapsed = time.monotonic() - start
            time.sleep(0.05)
            watch.stop.set()
            thread.join(timeout=10)
        if watch.error is not None:
            raise watch.error
        with nvml() as pm:
            h = pm.nvmlDeviceGetHandleByIndex(index)
            max_sm = read(pm, "nvmlDeviceGetMaxClockInfo", h, pm.NVML_CLOCK_SM)
            constraints = read(pm, "nvmlDeviceGetPowerManagementLimitConstraints", h)
        _RUNS[key] = SampleRun(seconds, interval, samples, elapsed, watch.readings, max_sm,
                               None if constraints is None else constraints[1] / 1000)
    return _RUNS[key]


def count_of(seconds: float, interval: float) -> int:
    return max(1, round(seconds / interval))


def check_sample_form(run: SampleRun) -> None:
    call = f"sample({run.seconds}, {run.interval})"
    samples, n = run.samples, count_of(run.seconds, run.interval)
    assert isinstance(samples, list), f"{call} returned {samples!r:.100}, not a list"
    assert len(samples) == n, (
        f"{call} returned {len(samples)} samples, want round({run.seconds} / {run.interval}) "
        f"= {n}: the first at once, then one every {run.interval} s")
    for k, s in enumerate(samples):
        assert isinstance(s, dict), f"{call}[{k}] is {s!r:.100}, not a dict"
        for key, types in SAMPLE_KEYS.items():
            assert key in s, f"{call}[{k}] has no {key!r}: got {sorted(s)}"
            value = s[key]
            assert isinstance(value, types) and not isinstance(value, bool), (
                f"{call}[{k}][{key!r}] is {value!r}: want "
                f"{' or '.join(t.__name__ for t in types)}")


def check_sample_timing(run: SampleRun) -> None:
    check_sample_form(run)
    call, interval = f"sample({run.seconds}, {run.interval})", run.interval
    times = [s["t"] for s in run.samples]
    assert 0 <= times[0] <= 0.05, (
        f"{call}: the first sample is at t = {times[0]!r} s, want 0 (or very close): t counts "
        "seconds since sampling began")
    for k in range(1, len(times)):
        gap = times[k] - times[k - 1]
        assert 0.5 * interval <= gap <= 1.5 * interval + 0.05, (
            f"{call}: samples {k - 1} and {k} are {gap:.3f} s apart, want about {interval} s: "
            "sleep until start + k x interval before sample k")
    span, want_span = times[-1] - times[0], (len(times) - 1) * interval
    assert abs(span - want_span) <= 0.1 * want_span + 0.05, (
        f"{call}: the samples span {span:.3f} s, want about {want_span:.3f} s: do the queries' "
        "own times add up? Sleep until each sample's planned time instead")
    assert run.elapsed >= want_span - 0.02, (
        f"{call} returned after {run.elapsed:.3f} s, but its samples claim to span "
        f"{span:.3f} s: take each sample at its time, do not compute the timestamps")


def check_sample_values(run: SampleRun) -> None:
    check_sample_form(run)
    call, samples, seen = f"sample({run.seconds}, {run.interval})", run.samples, run.seen
    assert seen, "the check could not sample the GPU itself while yours ran"

    def spread(key: str) -> tuple[float, float]:
        values = [r[key] for r in seen]
        return min(values), max(values)

    def median(key: str) -> float:
        return float(statistics.median(s[key] for s in samples))

    low, high = spread("power_w")
    top = run.max_power or 2000.0
    for s in samples:
        assert 0 < s["power_w"] <= 1.1 * top, (
            f"{call}: power_w is {s['power_w']!r}, but this GPU's power limit is at most "
            f"{top:g} W" + (": NVML answers in milliwatts, divide by 1000"
                            if s["power_w"] > 10 * top else ""))
    assert 0.5 * low - 10 <= median("power_w") <= 1.5 * high + 10, (
        f"{call}: your power readings (median {median('power_w'):.1f} W) are far from the "
        f"check's, {low:.1f} to {high:.1f} W at the same time: use nvmlDeviceGetPowerUsage")

    low, high = spread("sm_clock_mhz")
    for s in samples:
        assert 0 < s["sm_clock_mhz"] <= (run.max_sm_clock or 10_000), (
            f"{call}: sm_clock_mhz is {s['sm_clock_mhz']}, above the SM's maximum of "
            f"{run.max_sm_clock} MHz: is it the memory clock? Ask for nv.NVML_CLOCK_SM")
    assert 0.8 * low <= median("sm_clock_mhz") <= 1.2 * high, (
        f"{call}: your SM clocks (median {median('sm_clock_mhz'):.0f} MHz) are far from the "
        f"check's, {low} to {high} MHz at the same time: nvmlDeviceGetClockInfo(h, "
        "nv.NVML_CLOCK_SM)")

    low, high = spread("temperature_c")
    for s in samples:
        assert low - 5 <= s["temperature_c"] <= high + 5, (
            f"{call}: temperature_c is {s['temperature_c']}, but the GPU read {low} to {high} °C "
            "at the same time: the GPU sensor (NVML_TEMPERATURE_GPU), in °C")

    low, high = spread("utilization_pct")
    for s in samples:
        assert 0 <= s["utilization_pct"] <= 100, (
            f"{call}: utilization_pct is {s['utilization_pct']}, not a percentage")
    assert low - 30 <= median("utilization_pct") <= high + 30, (
        f"{call}: your utilisation (median {median('utilization_pct'):.0f} %) is far from the "
        f"check's, {low} to {high} % at the same time: nvmlDeviceGetUtilizationRates(h).gpu")

    masks = {r["reasons"] for r in seen}
    common, _ = Counter(s["reasons"] for s in samples).most_common(1)[0]
    assert common in masks, (
        f"{call}: your most frequent reason mask is {common:#x}, but the check saw only "
        f"{', '.join(f'{m:#x}' for m in sorted(masks))} at the same time: return the raw mask "
        "of nvmlDeviceGetCurrentClocksEventReasons(h)")


# -- the checks --------------------------------------------------------------------------------
@pytest.mark.points(2)
def test_decode_known_reasons(learner: Any) -> None:
    """decode_reasons names single bits and combinations, lowest bit first"""
    masks = [0x0] + [bit for bit, _ in reason_bits()] + [0x5, 0x44, 0x8 | 0x40 | 0x80]
    masks.append(functools.reduce(lambda a, b: a | b, (bit for bit, _ in reason_bits())))
    check_decode(learner, masks)


@pytest.mark.points(1)
def test_decode_unknown_bits(learner: Any) -> None:
    """bits without a name come back together as one 'unknown (0x...)'"""
    check_decode(learner, [1 << 20, 0x1 | 1 << 11 | 1 << 12, 1 << 40 | 0x4, 1 << 63])


@pytest.mark.gpu
@pytest.mark.points(3)
def test_inventory_matches_nvml(learner: Any) -> None:
    """inventory() agrees with the check's own NVML readings, field by field"""
    check_inventory(learner, 0)


@pytest.mark.gpu
@pytest.mark.points(2)
def test_sample_count_and_timing(learner: Any) -> None:
    """sample(1.0, 0.1): 10 samples, 0.1 s apart"""
    check_sample_timing(sample_run(learner, 1.0, 0.1))


@pytest.mark.gpu
@pytest.mark.points(2)
def test_sample_values_plausible(learner: Any) -> None:
    """sample(1.0, 0.1): power, clock, temperature, utilisation and reasons as the GPU reads"""
    check_sample_values(sample_run(learner, 1.0, 0.1))
