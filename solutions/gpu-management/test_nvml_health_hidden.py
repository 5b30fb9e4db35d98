"""Hidden checks of the nvml-health exercise: inputs the notebook does not show.

Random reason masks (known bits, unknown bits, 64-bit values) against gpulab's
decoder; ``inventory`` and ``sample`` for the second GPU of the recorded H100
board (its own UUID, a power limit below the default, MIG off, sampled at
that limit), on any machine; on a GPU, ``inventory`` twice (the static fields
must not change) and for the last GPU of a multi-GPU machine, read here
without gpulab's probe, and ``sample`` with other intervals and durations,
down to a single sample, judged as in the visible checks.
"""

from __future__ import annotations

import contextlib
import random
from types import ModuleType
from typing import Any

import pytest

from gpulab.grading.checks.draws import SEED
from gpulab.grading.checks.pytest_plugin import visible_checks


def _visible() -> ModuleType:
    """The visible checks' module (one copy of the helpers for both files)."""
    return visible_checks(__file__)


_V = _visible()
reason_bits, check_decode, check_inventory = _V.reason_bits, _V.check_decode, _V.check_inventory
sample_run, nvml, read, watts = _V.sample_run, _V.nvml, _V.read, _V.watts
check_sample_timing, check_sample_values = _V.check_sample_timing, _V.check_sample_values
recorded_inventory_problems = _V.recorded_inventory_problems
recorded_sample_problems = _V.recorded_sample_problems
COMPUTE_MODES = {0: "Default", 1: "Exclusive_Thread", 2: "Prohibited", 3: "Exclusive_Process"}


def _enabled(state: Any) -> str | None:
    return None if state is None else ("Enabled" if state else "Disabled")


def this_gpu(index: int) -> tuple[dict[str, Any], set[int]]:
    """The check's own reading of GPU `index`, call by call (the visible checks read GPU 0
    through gpulab's probe), and every memory total NVML gives for it."""
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
            "ecc_mode": None if ecc is None else _enabled(ecc[0]),
            "mig_mode": None if mig is None else _enabled(mig[0]),
            "compute_mode": None if compute is None else
            COMPUTE_MODES.get(compute, f"unknown ({compute})"),
            "persistence_mode": _enabled(read(pm, "nvmlDeviceGetPersistenceMode", h)),
            "remapped_rows": None if rows is None else {
                "correctable": int(rows[0]), "uncorrectable": int(rows[1]),
                "pending": bool(rows[2]), "failure": bool(rows[3])},
            "fan_speed_pct": read(pm, "nvmlDeviceGetFanSpeed", h),
            "numa_node": read(pm, "nvmlDeviceGetNumaNodeId", h),
        }
    return want, totals


@pytest.mark.points(2)
def test_random_masks(learner: Any) -> None:
    """decode_reasons on random masks: known bits, unknown bits, up to 64 bits"""
    rng = random.Random(SEED)
    bits = [bit for bit, _ in reason_bits()]
    masks = []
    for _ in range(60):
        known = sum(bit for bit in bits if rng.random() < 0.3)
        unknown = rng.getrandbits(rng.choice((12, 32, 64))) & ~sum(bits) if rng.random() < 0.5 \
            else 0
        masks.append(known | unknown)
    check_decode(learner, masks)


@pytest.mark.points(1)
def test_inventory_second_recorded_gpu(learner: Any) -> None:
    """inventory(1) on the recorded H100 board: the second GPU's own UUID, limit and modes"""
    problems = recorded_inventory_problems(learner, "h100-mig", 1)
    assert not problems, "\n".join(problems)


@pytest.mark.points(1)
def test_sample_second_recorded_gpu(learner: Any) -> None:
    """sample(0.2, 0.05, 1) on the recorded H100 board's second GPU, at its power limit"""
    problems = recorded_sample_problems(learner, "h100-mig", 1, 0.2, 0.05)
    assert not problems, "\n".join(problems)


GPU_NAMES = ("NVIDIA GeForce RTX 4090", "NVIDIA GeForce RTX 4080 SUPER", "NVIDIA RTX A6000",
             "NVIDIA L4", "NVIDIA RTX 6000 Ada Generation", "NVIDIA GeForce RTX 3090")


def _drawn_card(rng: random.Random) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Fresh values for the recorded GeForce card's identity, memory, power and clocks, as
    NVML answers (milliwatts, bytes), and what inventory(0) should say of them."""
    h = {"__handle__": 0}
    low = rng.randrange(50_000, 200_000, 1000)
    high = rng.randrange(low + 50_000, 800_001, 1000)
    default = rng.randrange(low, high + 1, 1000)
    limit = rng.randrange(low, default + 1, 1000)
    total = rng.choice((8, 12, 16, 20, 24, 32, 48)) * 2**30 - rng.randrange(0, 2**28, 2**20)
    sm, mem = rng.randint(1200, 3200), rng.randint(5000, 14000)
    name = rng.choice(GPU_NAMES)
    uuid = "GPU-" + "-".join(f"{rng.getrandbits(4 * n):0{n}x}" for n in (8, 4, 4, 4, 12))
    answers = [
        {"call": "nvmlDeviceGetName", "args": [h], "result": name},
        {"call": "nvmlDeviceGetUUID", "args": [h], "result": uuid},
        {"call": "nvmlDeviceGetMemoryInfo", "args": [h], "result": {
            "__struct__": "c_nvmlMemory_t", "total": total, "free": total // 2,
            "used": total - total // 2}},
        {"call": "nvmlDeviceGetPowerManagementLimit", "args": [h], "result": limit},
        {"call": "nvmlDeviceGetPowerManagementDefaultLimit", "args": [h], "result": default},
        {"call": "nvmlDeviceGetPowerManagementLimitConstraints", "args": [h],
         "result": [low, high]},
        {"call": "nvmlDeviceGetMaxClockInfo", "args": [h, 1], "result": sm},
        {"call": "nvmlDeviceGetMaxClockInfo", "args": [h, 2], "result": mem}]
    drawn = {"name": name, "uuid": uuid, "memory_total_bytes": total,
             "power_limit_w": limit / 1000, "power_limit_default_w": default / 1000,
             "power_limit_min_w": low / 1000, "power_limit_max_w": high / 1000,
             "max_sm_clock_mhz": sm, "max_memory_clock_mhz": mem}
    return answers, drawn


@pytest.mark.points(1)
def test_inventory_drawn_card(learner: Any) -> None:
    """inventory(0) on the recorded GeForce card with its name, memory, power and clocks drawn
    afresh each run"""
    rng = random.Random(f"{SEED}:test_inventory_drawn_card")
    want_rest = _V.nvml_expected("rtx-4090", _V.EXERCISE)["inventory"]["0"]
    for _ in range(2):
        answers, drawn = _drawn_card(rng)
        want = {**want_rest, **drawn}
        got = learner.call_with_nvml("rtx-4090", "inventory", 0, nvml_answers=answers)
        assert isinstance(got, dict), (
            f"inventory(0) on a GeForce card named {drawn['name']!r} returned {got!r:.120}, "
            f"not a dict (seed {SEED})")
        wrong = [f"{key} is {got.get(key, '(missing)')!r}, but NVML says {value!r}"
                 for key, value in want.items() if got.get(key) != value]
        assert not wrong, (f"inventory(0) on a GeForce card named {drawn['name']!r}: "
                           + "; ".join(wrong) + f" (seed {SEED})")


@pytest.mark.gpu
@pytest.mark.points(1)
def test_inventory_is_stable(learner: Any) -> None:
    """inventory() twice: the static fields agree with NVML both times"""
    check_inventory(learner, 0)
    check_inventory(learner, 0)


@pytest.mark.gpu
@pytest.mark.points(1)
def test_inventory_of_last_gpu(learner: Any) -> None:
    """inventory(index) reads the GPU it is asked about (the last one)"""
    with nvml() as pm:
        count = pm.nvmlDeviceGetCount()
    last = count - 1                        # GPU 0 again on a machine with one GPU
    check_inventory(learner, last, reading=this_gpu(last))


@pytest.mark.gpu
@pytest.mark.points(2)
def test_fast_sampling(learner: Any) -> None:
    """sample(0.6, 0.05): 12 samples, 50 ms apart, plausible values"""
    run = sample_run(learner, 0.6, 0.05)
    check_sample_timing(run)
    check_sample_values(run)


@pytest.mark.gpu
@pytest.mark.points(1)
def test_few_samples(learner: Any) -> None:
    """sample(0.5, 0.25) gives 2 samples and sample(0.3, 0.3) one"""
    for seconds, interval in ((0.5, 0.25), (0.3, 0.3)):
        run = sample_run(learner, seconds, interval)
        check_sample_timing(run)
        check_sample_values(run)
