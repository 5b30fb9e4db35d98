"""Helpers for the probe tests."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pynvml
import pytest

H200_NVML = Path(__file__).resolve().parents[1] / "fixtures" / "nvml" / "h200.json"
"""NVML's answers on gpulab's H200, recorded there: a machine with a driver, replayed."""


def cuda_device() -> Any:
    """CuPy with a usable GPU, or skip with the reason."""
    cupy = pytest.importorskip(
        "cupy",
        reason="CuPy is not installed (GPU tests run on a GPU "
        "machine with the cuda12 or cuda13 extra)",
    )
    try:
        if cupy.cuda.runtime.getDeviceCount() < 1:
            pytest.skip("CuPy finds no CUDA device")
    except Exception as exc:  # no driver: skip, do not fail
        pytest.skip(f"no usable NVIDIA GPU or driver: {exc}")
    return cupy


def no_driver_here() -> str:
    """Why NVML finds no GPU on this very machine, in the NVML probes' own words; skips
    where NVML finds one (the no-driver path cannot be seen there)."""
    from gpulab.probes import nvml

    found = nvml.inventory()
    if found.status != "no_gpu":
        pytest.skip(f"NVML answers here ({found.status}): this checks a machine without a driver")
    return found.message


# ---- editing NVML recordings (gpulab.probes.nvml) -----------------------------------


def entries(data: dict[str, Any], call: str, args: list[Any] | None = None) -> list[Any]:
    """Every recorded entry of `call` (with these arguments, if given), in order."""
    return [e for e in data["calls"] if e["call"] == call and (args is None or e["args"] == args)]


def set_answer(
    data: dict[str, Any],
    call: str,
    *,
    result: Any = None,
    error: int | None = None,
    args: list[Any] | None = None,
) -> None:
    """Make `call` (with these arguments, if given) answer `result` or raise `error`.

    With `args` and no such entry yet, the entry is added.
    """
    found = entries(data, call, args)
    if not found:
        assert args is not None, call
        found = [{"call": call, "args": args}]
        data["calls"].append(found[0])
    for entry in found:
        entry.pop("result", None)
        entry.pop("error", None)
        if error is None:
            entry["result"] = result
        else:
            entry["error"] = {
                "class": type(pynvml.NVMLError(error)).__name__,
                "value": error,
                "text": str(pynvml.NVMLError(error)),
            }
