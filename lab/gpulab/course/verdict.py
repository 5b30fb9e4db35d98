"""Does a measurement agree with a claim? Spec, measured value, verdict.

A claim names a figure (a value or a range, a unit, a tolerance) and the
device it is about. A measurement from another device is not a disagreement:
an H100's SM count says nothing about an H200 claim. Units convert within a
kind (bytes to MB, MHz to GHz); a unit of no known kind must match exactly.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Literal

from gpulab.course.claims import Claim
from gpulab.course.units import conversions

__all__ = ["Verdict", "applies_to", "judge"]

_MODEL = re.compile(r"\b(?:[A-Z]{1,2}\d{2,4}[A-Za-z]?|RTX \d{4})\b")


@dataclass(frozen=True)
class Verdict:
    """The outcome of comparing one measurement with one claim."""

    kind: Literal["agrees", "differs", "other_device", "not_comparable", "not_measured"]
    text: str
    measured: float | None = None  # in the claim's unit


def applies_to(claim: Claim, device: str) -> bool:
    """Is the claim about this device (by GPU model and form factor)?

    "any" (or a claim naming no GPU model) applies everywhere.
    """
    wanted = {m.replace(" ", "") for m in _MODEL.findall(claim.device)}
    if not wanted or claim.device.strip().lower().startswith("any"):
        return True
    name = device.replace("GeForce ", "")
    have = {m.replace(" ", "") for m in _MODEL.findall(name)}
    if not wanted & have:
        return False
    # "PCIe" names a form factor only right after a model ("H100 PCIe"); elsewhere
    # ("PCIe Gen5 x16") it names a link.
    pcie_claim = re.search(r"\b[A-Z]{1,2}\d{2,4}[A-Za-z]?\s+PCIe", claim.device) is not None
    pcie_device = "PCIe" in device
    sxm_claim = "SXM" in claim.device
    return not (pcie_claim and not pcie_device and not sxm_claim) and not (
        sxm_claim and pcie_device and not pcie_claim
    )


def judge(claim: Claim, value: float | str | None, unit: str, device: str) -> Verdict:
    """Compare a measured `value` in `unit`, taken on `device`, with `claim`."""
    if value is None:
        return Verdict("not_measured", "not measured")
    if not applies_to(claim, device):
        return Verdict(
            "other_device",
            f"measured on {device or 'this machine'}; the claim is about {claim.device}",
        )
    try:
        number = float(value)
    except (TypeError, ValueError):
        return Verdict("not_comparable", f"measured {value!r}, not a number")
    # A reading without a unit (a compute capability, a ratio written plainly)
    # is compared as the number it is.
    candidates = conversions(number, unit, claim.unit) if unit.strip() else [number]
    if not candidates:
        return Verdict(
            "not_comparable", f"measured in {unit or 'no unit'}, the claim is in {claim.unit}"
        )
    low, high = _bounds(claim)
    middle = (low + high) / 2
    best = min(candidates, key=lambda c: (_distance(c, low, high), abs(c - middle)))
    shown = f"{best:.4g} {claim.unit}"
    if _distance(best, low, high) == 0:
        return Verdict("agrees", f"{shown}: agrees with {claim.expected}", best)
    return Verdict(
        "differs", f"{shown}: differs from {claim.expected} (tolerance {claim.tolerance:.0%})", best
    )


def _bounds(claim: Claim) -> tuple[float, float]:
    tolerance = claim.tolerance
    if claim.value is not None:
        low = high = claim.value
    else:
        assert claim.min is not None and claim.max is not None
        low, high = claim.min, claim.max
    return low - abs(low) * tolerance, high + abs(high) * tolerance


def _distance(value: float, low: float, high: float) -> float:
    if (
        low <= value <= high
        or math.isclose(value, low, rel_tol=1e-9)
        or math.isclose(value, high, rel_tol=1e-9)
    ):
        return 0.0
    return min(abs(value - low), abs(value - high))
