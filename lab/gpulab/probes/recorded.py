"""Readings recorded on gpulab's own H200, for machines without a GPU.

`recorded/h200.json` is the output of `gpulab probe run --all --json` on the
project's lent NVIDIA H200 (a probe added later is appended from its own run on
the same machine; each result's `started` says when it ran). Every result read
from it carries `recorded`, so the app and the CLI label it "recorded on NVIDIA
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

__all__ = ["RECORDED_FILE", "recorded_results"]

RECORDED_FILE = "h200.json"


@functools.cache
def recorded_results() -> dict[str, ProbeResult]:
    """The recorded results that ran (ok or partial) by probe name; empty if none ship with
    this copy."""
    resource = files("gpulab.probes").joinpath("recorded", RECORDED_FILE)
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
            result, recorded=Recorded(result.device or "NVIDIA H200", result.started[:10])
        )
        for result in document.results
        if result.status in ("ok", "partial")
    }
