"""Helpers for the probe tests (a module name no other test folder uses)."""

from __future__ import annotations

from typing import Any

import pytest


def cuda_device() -> Any:
    """CuPy with a usable GPU, or skip with the reason."""
    cupy = pytest.importorskip("cupy", reason="CuPy is not installed (GPU tests run on a GPU "
                                              "machine with the cuda12 or cuda13 extra)")
    try:
        if cupy.cuda.runtime.getDeviceCount() < 1:
            pytest.skip("CuPy finds no CUDA device")
    except Exception as exc:  # no driver: skip, do not fail
        pytest.skip(f"no usable NVIDIA GPU or driver: {exc}")
    return cupy
