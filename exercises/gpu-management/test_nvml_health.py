"""Checks of the nvml-health exercise (lesson: the GPU as a managed device).

Each check calls your functions in a separate process. ``inventory`` and
``sample`` run while ``pynvml`` answers from recorded NVML sessions of other
GPUs (an H100 board with MIG on, a consumer RTX 4090, an A100 on an older
driver), on any machine, and are compared field by field with the answers
worked out from each recording (`gpulab.grading.checks.machines`). On a GPU,
``inventory`` must also match the check's own reading of that GPU (gpulab's
NVML inventory probe), and ``sample`` must be plausible against what the check
samples from the same GPU while your function runs. ``decode_reasons`` must
agree with gpulab's decoder of the reason bits, which takes them from pynvml's
``nvmlClocksEventReason*`` and ``nvmlClocksThrottleReason*`` constants (that
part needs no GPU).
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

from gpulab.grading.checks.learner import LearnerError
from gpulab.grading.checks.machines import nvml_expected, nvml_recording
from gpulab.probes.nvml import decode_clock_event_reasons

EXERCISE = "nvml-health"

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
    """What decode_reasons(mask) should give: gpulab's own decoding of the mask."""
    return list(decode_clock_event_reasons(mask))


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


# -- judging inventory(), wherever its right answer comes from ---------------------------------
INVENTORY_KEYS = ("name", "uuid", "memory_total_bytes", "power_limit_w", "power_limit_default_w",
                  "power_limit_min_w", "power_limit_max_w", "max_sm_clock_mhz",
                  "max_memory_clock_mhz", "ecc_mode", "mig_mode", "compute_mode",
                  "persistence_mode", "remapped_rows", "fan_speed_pct", "numa_node")
WATT_KEYS = ("power_limit_w", "power_limit_default_w", "power_limit_min_w", "power_limit_max_w")
MODE_KEYS = ("ecc_mode", "mig_mode", "persistence_mode")
COMPUTE_NAMES = ("Default", "Exclusive_Thread", "Prohibited", "Exclusive_Process")
# The NVML call behind each key (the notebook's table) and its arguments after the handle:
# 1 is NVML_CLOCK_SM, 2 NVML_CLOCK_MEM.
CALLS: dict[str, tuple[str, tuple[int, ...]]] = {
    "name": ("nvmlDeviceGetName", ()), "uuid": ("nvmlDeviceGetUUID", ()),
    "memory_total_bytes": ("nvmlDeviceGetMemoryInfo", ()),
    "power_limit_w": ("nvmlDeviceGetPowerManagementLimit", ()),
    "power_limit_default_w": ("nvmlDeviceGetPowerManagementDefaultLimit", ()),
    "power_limit_min_w": ("nvmlDeviceGetPowerManagementLimitConstraints", ()),
    "power_limit_max_w": ("nvmlDeviceGetPowerManagementLimitConstraints", ()),
    "max_sm_clock_mhz": ("nvmlDeviceGetMaxClockInfo", (1,)),
    "max_memory_clock_mhz": ("nvmlDeviceGetMaxClockInfo", (2,)),
    "ecc_mode": ("nvmlDeviceGetEccMode", ()), "mig_mode": ("nvmlDeviceGetMigMode", ()),
    "compute_mode": ("nvmlDeviceGetComputeMode", ()),
    "persistence_mode": ("nvmlDeviceGetPersistenceMode", ()),
    "remapped_rows": ("nvmlDeviceGetRemappedRows", ()),
    "fan_speed_pct": ("nvmlDeviceGetFanSpeed", ()),
    "numa_node": ("nvmlDeviceGetNumaNodeId", ()),
}


class Truth(NamedTuple):
    """What inventory() should give in one place, and what the messages may say about it."""

    where: str                      # "inventory(0) on the recorded RTX 4090 (a consumer card)"
    want: dict[str, Any]            # every field's right value
    totals: set[int]                # every memory total NVML gives for the GPU
    raw: dict[str, tuple[str, Any]]     # key -> NVML's own answer, ("ok", value) or
    #                                     ("error", "NVMLError_..."), where the check knows it
    live: bool = False              # a running GPU: the fan may move between two readings


def is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def spelled(state: Any) -> str:
    return "Enabled" if state else "Disabled"


def none_problem(key: str, said: str, truth: Truth) -> str:
    """Why a value is wrong where NVML cannot give one."""
    call = CALLS[key][0]
    answer = truth.raw.get(key, ("error", ""))[1]
    if answer == "NVMLError_FunctionNotFound":
        why = f"this driver has no {call} (NVMLError_FunctionNotFound, as older drivers)"
    elif answer == "NVMLError_NotSupported":
        why = f"NVML answers NotSupported to {call} there"
    else:
        why = "NVML answers NotSupported (or FunctionNotFound) for it there"
    if key in MODE_KEYS:
        what = "a mode that is not supported is None, not 'Disabled'"
    elif key == "remapped_rows":
        what = "counts NVML cannot give are None as a whole, not zeros"
    else:
        what = "a value NVML cannot give is None, not 0 or a guess"
    return f"{said}, but {why}: {what}"


def field_problem(key: str, got: Any, truth: Truth) -> str | None:
    """Why inventory()[key] is wrong, in words, or None when it is right."""
    want, said = truth.want[key], f"{truth.where} gave {key} {got!r:.100}"
    status, answer = truth.raw.get(key, ("", None))
    if want is None:
        return None if got is None else none_problem(key, said, truth)
    if got is None:
        return f"{said}, but that GPU does answer {CALLS[key][0]}: {want!r}"
    if key == "memory_total_bytes":
        if got in truth.totals and type(got) is int:
            return None
        unit = {want // 2**20: "MiB", want // 2**30: "GiB"}.get(got, "") if is_number(got) \
            else ""
        return (f"{said}, but nvmlDeviceGetMemoryInfo(h).total is {want} bytes there" +
                (f": you gave {unit}, the table asks for bytes" if unit else ""))
    if key in WATT_KEYS:
        if is_number(got) and math.isclose(got, want, rel_tol=1e-9, abs_tol=1e-9):
            return None
        hint = ""
        if is_number(got) and math.isclose(got, want * 1000, rel_tol=1e-9):
            hint = ": NVML answers in milliwatts, divide by 1000"
        elif key == "power_limit_w" and got == truth.want["power_limit_default_w"]:
            hint = (": that is the default limit; this GPU's limit was changed, and the "
                    "one in force is what nvmlDeviceGetPowerManagementLimit answers")
        elif key in ("power_limit_min_w", "power_limit_max_w") and got in (
                truth.want["power_limit_min_w"], truth.want["power_limit_max_w"]):
            hint = ": the constraints are a pair (lowest allowed, highest allowed), in that order"
        return f"{said}, but NVML says {want:g} W there{hint}"
    if key == "fan_speed_pct" and truth.live:
        ok = isinstance(got, int) and not isinstance(got, bool) and abs(got - want) <= 20
        return None if ok else f"{said}, but NVML reads {want} % now"
    if got == want and type(got) is type(want):
        return None
    if key in ("ecc_mode", "mig_mode") and status == "ok" and answer[0] != answer[1] \
            and got == spelled(answer[1]):
        return (f"{said}, but that is the pending mode, the one the GPU takes after its next "
                f"reset or reboot; the field is the mode in force now, {want!r}, the first of "
                "the pair NVML returns")
    if key in MODE_KEYS and got not in ("Enabled", "Disabled"):
        return (f"{said}, but NVML says {want!r}: spell the current mode as nvidia-smi does, "
                "'Enabled' or 'Disabled' (for ECC and MIG, the first of the pair NVML returns)")
    if key == "compute_mode" and got not in COMPUTE_NAMES:
        return f"{said}, but NVML says {want!r}: give its name from COMPUTE_MODES"
    if key == "remapped_rows" and not (isinstance(got, dict) and set(got) == set(want) and all(
            type(got[part]) is type(want[part]) for part in want)):
        return (f"{said}, but NVML says {want!r}: the four numbers are correctable, "
                "uncorrectable, pending and failure, the last two as True/False")
    if key == "max_sm_clock_mhz" and got == truth.want["max_memory_clock_mhz"]:
        return (f"{said}, but that is the memory clock's maximum; the SM clock's is "
                f"{want} MHz (NVML_CLOCK_SM)")
    if key in ("max_sm_clock_mhz", "max_memory_clock_mhz"):
        return (f"{said}, but NVML says {want} MHz: nvmlDeviceGetMaxClockInfo with "
                f"{'NVML_CLOCK_SM' if key == 'max_sm_clock_mhz' else 'NVML_CLOCK_MEM'}")
    if key in ("name", "uuid"):
        return (f"{said}, but NVML says {want!r} for that GPU: ask NVML about the GPU at "
                "that index, do not write in what yours says")
    return f"{said}, but NVML says {want!r}"


def inventory_problems(got: Any, truth: Truth) -> list[str]:
    if not isinstance(got, dict):
        return [f"{truth.where} returned {got!r:.100}, not a dict"]
    missing = [key for key in INVENTORY_KEYS if key not in got]
    if missing:
        return [f"{truth.where} has no {', '.join(missing)}: got {sorted(map(str, got))}"]
    return [p for key in INVENTORY_KEYS if (p := field_problem(key, got[key], truth)) is not None]


# -- recorded NVML sessions: inventory() and sample() on other GPUs ----------------------------
RECORDED = ("h100-mig", "rtx-4090", "old-driver")


def recorded(session: str, call: str, index: int, *args: Any) -> tuple[str, Any]:
    """The recorded session's answer to `call` for GPU `index`: ("ok", answer) or
    ("error", the NVMLError class's name)."""
    calls = nvml_recording(session)["calls"]
    handle = next(c["result"] for c in calls
                  if c["call"] == "nvmlDeviceGetHandleByIndex" and c["args"] == [index])
    for c in calls:
        if c["call"] == call and c["args"] == [handle, *args]:
            return ("error", c["error"]["class"]) if "error" in c else ("ok", c["result"])
    raise LookupError(f"the recorded session {session!r} holds no {call} for GPU {index}")


def escaped(function: str, said: str) -> str:
    """A hint for an exception the learner's code let out, by what its message names."""
    if "NVMLError_FunctionNotFound" in said:
        return ("\nthe driver there is older than a function your code calls: NVML raises "
                "NVMLError_FunctionNotFound, an answer like NotSupported (that field is None)")
    if "NVMLError_NotSupported" in said and function == "sample":
        return ("\nthe GPU asked for answers every call sample() makes there; the NotSupported "
                "came from another GPU (GPU 0 of that board runs MIG, which has no whole-GPU "
                "utilisation): open the handle of the GPU at the index asked for")
    if "NVMLError_NotSupported" in said:
        return "\nNVML answers NotSupported there: that field is None, not a crash"
    if "NotRecorded" in said:
        return ("\nthe recordings answer the calls the notebook's tables name, with nvmlInit, "
                "nvmlDeviceGetHandleByIndex and nvmlShutdown")
    return ""


def call_recorded(learner: Any, session: str, function: str,
                  *args: Any) -> tuple[Any, str | None]:
    """The learner's answer with pynvml answering from `session`, or why there is none."""
    try:
        return learner.call_with_nvml(session, function, *args), None
    except LearnerError as exc:
        if exc.raised_as(NotImplementedError):
            raise
        return None, f"failed: {exc}{escaped(function, str(exc))}"


def recorded_inventory_problems(learner: Any, session: str, index: int) -> list[str]:
    """What is wrong with inventory(index) on a recorded session, one line a field."""
    expected = nvml_expected(session, EXERCISE)
    where = f"inventory({index}) on {expected['about']}"
    got, failed = call_recorded(learner, session, "inventory", index)
    if failed:
        return [f"{where} {failed}"]
    raw = {key: recorded(session, call, index, *args) for key, (call, args) in CALLS.items()}
    want = expected["inventory"][str(index)]
    return inventory_problems(got, Truth(where, want, {want["memory_total_bytes"]}, raw))


SAMPLED = ("utilization_pct", "sm_clock_mhz", "power_w", "temperature_c", "reasons")


def sample_value_problem(key: str, got: Any, want: Any, session: str, index: int) -> str | None:
    """Why one sample's `key` is wrong on a recorded session (every answer there repeats)."""
    if key == "power_w":
        if is_number(got) and abs(got - want) <= 0.5:
            return None
        milli = is_number(got) and math.isclose(got, want * 1000, rel_tol=1e-3)
        return (f"power_w is {got!r}, but NVML reads {want:g} W there" +
                (": NVML answers in milliwatts, divide by 1000" if milli else ""))
    if got == want and type(got) is type(want):
        return None
    if key == "utilization_pct":
        memory = recorded(session, "nvmlDeviceGetUtilizationRates", index)[1]["memory"]
        return (f"utilization_pct is {got!r}, but the GPU was busy {want} % of the time there" +
                (": that is the memory's busy share (.memory), not the GPU's (.gpu)"
                 if got == memory else ""))
    if key == "sm_clock_mhz":
        memory = recorded(session, "nvmlDeviceGetClockInfo", index, 2)[1]
        return (f"sm_clock_mhz is {got!r}, but the SM clock read {want} MHz there" +
                (": that is the memory clock (NVML_CLOCK_MEM), not the SM's" if got == memory
                 else ""))
    if key == "reasons":
        return (f"reasons is {got!r:.80}, but NVML's mask there is {want:#x}: return the mask "
                "nvmlDeviceGetCurrentClocksEventReasons gives, as it is")
    return f"{key} is {got!r}, but NVML reads {want!r} there"


def recorded_sample_problems(learner: Any, session: str, index: int, seconds: float = 0.3,
                             interval: float = 0.1) -> list[str]:
    """What is wrong with sample(seconds, interval, index) on a recorded session."""
    expected = nvml_expected(session, EXERCISE)
    where = f"sample({seconds}, {interval}, {index}) on {expected['about']}"
    samples, failed = call_recorded(learner, session, "sample", seconds, interval, index)
    if failed:
        return [f"{where} {failed}"]
    form = form_problem(where, samples, count_of(seconds, interval))
    if form:
        return [form]
    want = expected["sample"][str(index)]
    problems = []
    for key in SAMPLED:
        for k, s in enumerate(samples):
            why = sample_value_problem(key, s[key], want[key], session, index)
            if why:
                problems.append(f"{where}, sample {k}: {why}")
                break
    return problems


# -- this GPU: the check's own reading, through gpulab's NVML inventory probe -----------------
@contextlib.contextmanager
def nvml(backend: Any = None) -> Iterator[Any]:
    nv = pynvml() if backend is None else backend
    nv.nvmlInit()
    try:
        yield nv
    finally:
        nv.nvmlShutdown()


def read(nv: Any, query: str, *args: Any) -> Any:
    """nv.query(*args), or None where NVML says the GPU or the driver cannot answer."""
    pm = pynvml()                   # the error classes (a recorded backend has only calls)
    try:
        return getattr(nv, query)(*args)
    except (pm.NVMLError_NotSupported, pm.NVMLError_FunctionNotFound):
        return None


def watts(milliwatts: Any) -> float | None:
    return None if milliwatts is None else milliwatts / 1000


# inventory()'s keys as gpulab's inventory probe names its readings (of GPU 0)
PROBE_KEYS = {"name": "name", "uuid": "uuid", "memory_total_bytes": "memory_total",
              "power_limit_default_w": "power_limit_default",
              "power_limit_min_w": "power_limit_min", "power_limit_max_w": "power_limit_max",
              "max_sm_clock_mhz": "clocks_max_sm", "max_memory_clock_mhz": "clocks_max_mem",
              "ecc_mode": "ecc_mode_current", "mig_mode": "mig_mode_current",
              "compute_mode": "compute_mode", "persistence_mode": "persistence_mode",
              "fan_speed_pct": "fan_speed", "numa_node": "numa_node"}
ROW_PARTS = ("correctable", "uncorrectable", "pending", "failure")


def own_inventory(backend: Any = None) -> tuple[dict[str, Any], set[int]]:
    """The check's reading of GPU 0 in inventory()'s keys, and every memory total NVML gives.

    The fields come from gpulab's NVML inventory probe (a reading it could not make is
    None); the probe reads the enforced power limit, so the limit the notebook asks for is
    read here. `backend` is pynvml, or a stand-in answering from a recording.
    """
    from gpulab.probes.nvml import inventory as inventory_probe

    result = inventory_probe(backend)
    assert result.status in ("ok", "partial"), (
        f"the check could not read this GPU through NVML: {result.message}")
    found = {r.key: r.value if r.status == "ok" else None for r in result.readings}
    want: dict[str, Any] = {key: found.get(reading) for key, reading in PROBE_KEYS.items()}
    rows = [found.get(f"remapped_rows_{part}") for part in ROW_PARTS]
    want["remapped_rows"] = None if None in rows else dict(zip(ROW_PARTS, rows, strict=True))
    pm = pynvml()
    with nvml(backend) as nv:
        h = nv.nvmlDeviceGetHandleByIndex(0)
        want["power_limit_w"] = watts(read(nv, "nvmlDeviceGetPowerManagementLimit", h))
        totals = {want["memory_total_bytes"]}
        with contextlib.suppress(pm.NVMLError, AttributeError):
            totals.add(int(nv.nvmlDeviceGetMemoryInfo(h, pm.nvmlMemory_v2).total))
    return {key: want[key] for key in INVENTORY_KEYS}, totals


def check_inventory(learner: Any, index: int = 0,
                    reading: tuple[dict[str, Any], set[int]] | None = None) -> None:
    """inventory(index) against the check's reading of this machine's GPU `index`
    (`reading`, or the probe's of GPU 0)."""
    got = learner.call("inventory", index)
    want, totals = reading if reading is not None else own_inventory()
    problems = inventory_problems(got, Truth(f"inventory({index}) on this GPU", want, totals,
                                             {}, live=True))
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


def form_problem(call: str, samples: Any, n: int) -> str | None:
    """Why `samples` is not a list of n sample dicts with the right types, or None."""
    if not isinstance(samples, list):
        return f"{call} returned {samples!r:.100}, not a list"
    if len(samples) != n:
        return (f"{call} returned {len(samples)} samples, want round(seconds / interval) = {n}: "
                "the first at once, then one every interval")
    for k, s in enumerate(samples):
        if not isinstance(s, dict):
            return f"{call}[{k}] is {s!r:.100}, not a dict"
        for key, types in SAMPLE_KEYS.items():
            if key not in s:
                return f"{call}[{k}] has no {key!r}: got {sorted(map(str, s))}"
            value = s[key]
            if not isinstance(value, types) or isinstance(value, bool):
                return (f"{call}[{k}][{key!r}] is {value!r:.80}: want "
                        f"{' or '.join(t.__name__ for t in types)}")
    return None


def check_sample_form(run: SampleRun) -> None:
    call = f"sample({run.seconds}, {run.interval})"
    problem = form_problem(call, run.samples, count_of(run.seconds, run.interval))
    assert problem is None, problem


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


@pytest.mark.points(3)
def test_inventory_recorded_gpus(learner: Any) -> None:
    """inventory() on recorded H100 (MIG on), RTX 4090 and older-driver A100 sessions"""
    problems = [p for session in RECORDED for p in recorded_inventory_problems(learner, session, 0)]
    assert not problems, "\n".join(problems)


@pytest.mark.points(1)
def test_sample_recorded_gpu(learner: Any) -> None:
    """sample() on the recorded RTX 4090 under load: units, .gpu, the SM clock, the raw mask"""
    problems = recorded_sample_problems(learner, "rtx-4090", 0)
    assert not problems, "\n".join(problems)


@pytest.mark.gpu
@pytest.mark.points(3)
def test_inventory_matches_nvml(learner: Any) -> None:
    """inventory() agrees with the check's own NVML readings of this GPU, field by field"""
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
