"""Claim verdicts: spec against measurement, units, tolerance and the device."""

from __future__ import annotations

import pytest

from gpulab.course.claims import Claim
from gpulab.course.units import conversions, convert
from gpulab.course.verdict import applies_to, judge


def claim(**fields: object) -> Claim:
    base: dict[str, object] = dict(
        id="c",
        statement="s",
        unit="GB/s",
        device="H200 SXM",
        source="https://example.org",
        probe="p",
        tolerance=0.1,
        value=4.8,
    )
    base.update(fields)
    return Claim(**base)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("value", "unit", "kind"),
    [
        (4.5, "GB/s", "agrees"),
        (4.32, "GB/s", "agrees"),
        (4.31, "GB/s", "differs"),
        (4500, "MB/s", "agrees"),
        (5.25, "GB/s", "agrees"),
        (5.3, "GB/s", "differs"),
        (5.3, "GHz", "not_comparable"),
        (None, "GB/s", "not_measured"),
    ],
)
def test_value_with_tolerance(value: float | None, unit: str, kind: str) -> None:
    assert judge(claim(), value, unit, "NVIDIA H200").kind == kind


def test_range_and_exact_claims() -> None:
    chase = claim(
        unit="cycles", value=None, min=600, max=860, tolerance=0.0, device="A100, H100, H200"
    )
    assert judge(chase, 690, "cycles", "NVIDIA H200").kind == "agrees"
    verdict = judge(chase, 590, "cycles", "NVIDIA H200")
    assert verdict.kind == "differs"
    assert verdict.text == "590 cycles: differs from 600–860 cycles (tolerance 0%)"
    sms = claim(unit="SMs", value=132, tolerance=0.0)
    assert judge(sms, 132, "SMs", "NVIDIA H200").kind == "agrees"
    assert judge(sms, 114, "SMs", "NVIDIA H200").kind == "differs"


def test_sizes_convert_both_ways() -> None:
    smem = claim(unit="KB", value=228, tolerance=0.0, device="any")
    agrees = judge(smem, 233472, "bytes", "NVIDIA H200")
    assert agrees.kind == "agrees" and agrees.measured == 228
    assert conversions(1, "GiB", "MB") == [pytest.approx(1073.741824), 1024]
    assert conversions(1, "GB/s", "MB/s") == [1000]
    assert convert(1, "SMs", "SMs") == 1 and convert(1, "SMs", "threads") is None


@pytest.mark.parametrize(
    ("device_claim", "device", "applies"),
    [
        ("H200 SXM", "NVIDIA H200", True),
        ("H100 SXM5", "NVIDIA H100 PCIe", False),
        ("H100 PCIe", "NVIDIA H100 PCIe", True),
        ("H100 PCIe", "NVIDIA H100 80GB HBM3", False),
        ("any", "NVIDIA H200", True),
        ("A100, H100, H200", "NVIDIA H200", True),
        ("RTX 4090", "NVIDIA GeForce RTX 4090", True),
        ("A100 SXM4 / PCIe", "NVIDIA H200", False),
        ("compute capability 8.0 / 9.0 (A100, H100, H200)", "NVIDIA A100-SXM4-80GB", True),
    ],
)
def test_applies_to(device_claim: str, device: str, applies: bool) -> None:
    assert applies_to(claim(device=device_claim), device) is applies


def test_other_device_is_not_a_disagreement() -> None:
    verdict = judge(
        claim(device="H100 SXM5", unit="SMs", value=132, tolerance=0.0),
        132,
        "SMs",
        "NVIDIA H100 PCIe",
    )
    assert verdict.kind == "other_device"
    assert "the claim is about H100 SXM5" in verdict.text


def test_unitless_and_text_readings() -> None:
    capability = claim(unit="compute capability", value=9.0, tolerance=0.0, device="H100, H200")
    assert judge(capability, "9.0", "", "NVIDIA H200").kind == "agrees"
    assert judge(capability, "8.9", "", "NVIDIA H200").kind == "differs"
    assert judge(capability, "n/a", "", "NVIDIA H200").kind == "not_comparable"


def test_a_link_named_pcie_is_not_a_form_factor() -> None:
    link = claim(device="H100, H200 (PCIe Gen5 x16)", unit="GB/s", value=63, tolerance=0.15)
    assert applies_to(link, "NVIDIA H200")
    assert judge(link, 55.2, "GB/s", "NVIDIA H200").kind == "agrees"


def test_an_agreeing_size_is_shown_in_the_reading_that_fits() -> None:
    memory = claim(unit="GB", value=141, tolerance=0.1)
    verdict = judge(memory, 150_754_820_096, "bytes", "NVIDIA H200")
    assert verdict.kind == "agrees"
    assert verdict.text.startswith("140.4 GB")
