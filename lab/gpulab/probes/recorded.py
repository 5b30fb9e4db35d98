"""Readings recorded on the GPUs gpulab is developed on, for machines without a GPU.

`recorded/h200.json` and `recorded/h100.json` are the output of `gpulab probe
run --all --json` on the project's lent NVIDIA H200 and H100 (a probe added
later is appended from its own run on the same machine; each result's `started`
says when it ran). The H200's is the course's main recording (`recorded_results`,
what a claim card compares with); `recorded_runs` gives every recording, by its
name, so a card or a table can set them side by side. Every result read from
them carries `recorded`, so the app and the CLI label it "recorded on NVIDIA
H200, <date>" and never pass it off as a reading of the learner's machine. A
recording that is not such a document is a damaged copy of gpulab: a
`GpulabError` names the file and where in it (``$.results[3].readings[0].value``).
"""

from __future__ import annotations

import functools
from importlib.resources import files

import msgspec

from gpulab.errors import GpulabError
from gpulab.probes.model import ProbeResult, Recorded, RunDocument

__all__ = ["RECORDED_FILE", "RECORDINGS", "recorded_results", "recorded_runs"]

RECORDINGS = {"h200": "NVIDIA H200", "h100": "NVIDIA H100"}
"""The recordings gpulab ships, by name (their file is NAME.json), with the GPU each was made
on where a result does not say; the first is the course's main one."""
RECORDED_FILE = "h200.json"
"""The main recording's file (tests point it elsewhere to see a copy without one)."""


def recorded_runs() -> dict[str, dict[str, ProbeResult]]:
    """Every recording that ships with this copy, by name ("h200", "h100"), in `RECORDINGS`'
    order: its results that ran, by probe name."""
    runs = {name: recorded_results(name) for name in RECORDINGS}
    return {name: results for name, results in runs.items() if results}


@functools.cache
def recorded_results(name: str = "h200") -> dict[str, ProbeResult]:
    """The results of recording `name` that ran (ok or partial) by probe name; empty if it
    does not ship with this copy."""
    resource = files("gpulab.probes").joinpath(
        "recorded", RECORDED_FILE if name == "h200" else f"{name}.json"
    )
    try:
        document = RunDocument.from_json(resource.read_bytes())
    except FileNotFoundError:
        return {}
    except (OSError, msgspec.DecodeError) as exc:
        raise GpulabError(
            f"{resource}: the recorded readings cannot be read: {exc}. This "
            "copy of gpulab is damaged: reinstall it."
        ) from None
    return {
        result.probe: msgspec.structs.replace(
            result, recorded=Recorded(result.device or RECORDINGS[name], result.started[:10])
        )
        for result in document.results
        if result.status in ("ok", "partial")
    }
