"""The lessons' claims and the probes that measure them agree on names and units.

On a GPU, every claim about this GPU is measured and judged; the verdicts are
written to $GPULAB_VERDICTS (or printed) so a run on the device can be read
back, and every claim with a zero tolerance (SM counts, warp size, limits)
must agree.
"""

from __future__ import annotations

import functools
import json
import os
from pathlib import Path

import pytest

from gpulab.course import load_course
from gpulab.course.verdict import applies_to, judge
from gpulab.probes import PROBES, ProbeResult, run_probe
from gpulab.probes.recorded import recorded_results

COURSE = load_course(Path(__file__).resolve().parents[2] / "lessons")
NAMES = {info.name for info in PROBES}


def test_every_claim_names_a_probe_that_exists() -> None:
    unknown = {c.id: c.probe for c in COURSE.claims.values() if c.probe not in NAMES}
    assert unknown == {}


def test_claim_readings_exist_in_the_recorded_h200_results() -> None:
    recorded = recorded_results()
    if not recorded:
        pytest.skip("this copy ships no recorded H200 results")
    missing = {}
    for claim in COURSE.claims.values():
        result = recorded.get(claim.probe)
        if claim.reading and result is not None and result.reading(claim.reading) is None:
            missing[claim.id] = f"{claim.probe} has no reading {claim.reading!r}"
    assert missing == {}


@functools.cache
def measured(probe: str) -> ProbeResult:
    return run_probe(probe)


@pytest.mark.gpu
def test_claims_about_this_gpu_are_measured_and_judged() -> None:
    pytest.importorskip("cupy", reason="CuPy is needed to run the GPU probes")
    inventory = measured("nvml_inventory")
    name = inventory.reading("name")
    if name is None or name.status != "ok":
        pytest.skip(f"no NVIDIA GPU here: {inventory.message}")
    device = str(name.value)
    rows = []
    exact_failures = []
    for claim in COURSE.claims.values():
        if not claim.reading or not applies_to(claim, device):
            continue
        result = measured(claim.probe)
        if result.status == "unavailable":  # p2p_bandwidth on one GPU: "needs two GPUs"
            rows.append(
                {
                    "claim": claim.id,
                    "expected": claim.expected,
                    "measured": "",
                    "verdict": "not_measured",
                    "text": result.message,
                }
            )
            continue
        reading = result.reading(claim.reading)
        assert reading is not None, f"{claim.id}: {claim.probe} returned no {claim.reading!r}"
        verdict = judge(claim, reading.value, reading.unit, device)
        rows.append(
            {
                "claim": claim.id,
                "expected": claim.expected,
                "measured": reading.shown,
                "verdict": verdict.kind,
                "text": verdict.text,
            }
        )
        # A reading this machine cannot give (the cgroup period of a process in the root
        # cgroup) is listed as not measured; anything measured must agree exactly.
        if claim.tolerance == 0 and verdict.kind != "agrees" and reading.status == "ok":
            exact_failures.append(f"{claim.id}: {verdict.text}")
    out = os.environ.get("GPULAB_VERDICTS")
    if out:
        Path(out).write_text(json.dumps({"device": device, "verdicts": rows}, indent=1))
    for row in rows:
        print(f"{row['claim']:32} {row['verdict']:14} {row['text']}")
    assert rows, "no claim applies to this GPU"
    assert exact_failures == []
