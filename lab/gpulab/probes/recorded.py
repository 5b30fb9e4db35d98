"""Readings recorded on gpulab's own H200, for machines without a GPU.

`recorded/h200.json` is the output of `gpulab probe run --all --json` on the
project's lent NVIDIA H200. Every result read from it carries `recorded`, so
the app and the CLI label it "recorded on NVIDIA H200, <date>" and never pass
it off as a reading of the learner's machine.
"""

from __future__ import annotations

import functools
import json
from importlib.resources import files

from gpulab.probes.model import ProbeResult

__all__ = ["RECORDED_FILE", "recorded_results"]

RECORDED_FILE = "h200.json"


@functools.cache
def recorded_results() -> dict[str, ProbeResult]:
    """The recorded results by probe name; empty if none ship with this copy."""
    resource = files("gpulab.probes").joinpath("recorded", RECORDED_FILE)
    try:
        data = json.loads(resource.read_text(encoding="utf-8"))
    except (FileNotFoundError, ValueError):
        return {}
    found: dict[str, ProbeResult] = {}
    for item in data.get("results", []):
        result = ProbeResult.from_dict(item)
        if result.status not in ("ok", "partial"):
            continue
        machine = result.device or data.get("device", "") or "NVIDIA H200"
        found[result.probe] = ProbeResult.from_dict(
            {**item, "recorded": {"machine": machine, "date": result.started[:10]}})
    return found
