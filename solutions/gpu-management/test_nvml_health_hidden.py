"""Hidden checks of the nvml-health exercise: inputs the notebook does not show.

Random reason masks (known bits, unknown bits, 64-bit values) against the
check's own table; ``inventory`` twice (the static fields must not change) and
for the last GPU of a multi-GPU machine; ``sample`` with other intervals and
durations, down to a single sample, judged as in the visible checks.
"""

from __future__ import annotations

import random
import secrets
from types import ModuleType
from typing import Any

import pytest

from gpulab.grading.pytest_plugin import visible_checks


def _visible() -> ModuleType:
    """The visible checks' module (one copy of the helpers for both files)."""
    return visible_checks(__file__)


_V = _visible()
reason_bits, check_decode, check_inventory = _V.reason_bits, _V.check_decode, _V.check_inventory
sample_run, nvml = _V.sample_run, _V.nvml
check_sample_timing, check_sample_values = _V.check_sample_timing, _V.check_sample_values
SEED = secrets.randbits(32)


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
    check_inventory(learner, count - 1)     # GPU 0 again on a machine with one GPU


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
