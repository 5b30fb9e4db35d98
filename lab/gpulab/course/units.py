"""Units the course knows: each name maps to its kind and its factor to the kind's base.

The linter uses them to match "1.41 GHz" with a spec of 1410 MHz; claim
verdicts use them to compare a probe's bytes with a claim's MB.
"""

from __future__ import annotations

__all__ = ["UNITS", "convert"]

# Units a number may carry: name -> (kind, factor to the kind's base unit).
UNITS: dict[str, tuple[str, float]] = {
    "B": ("bytes", 1),
    "byte": ("bytes", 1),
    "bytes": ("bytes", 1),
    "KB": ("bytes", 1e3),
    "kB": ("bytes", 1e3),
    "MB": ("bytes", 1e6),
    "GB": ("bytes", 1e9),
    "TB": ("bytes", 1e12),
    "PB": ("bytes", 1e15),
    "KiB": ("bytes", 2**10),
    "MiB": ("bytes", 2**20),
    "GiB": ("bytes", 2**30),
    "TiB": ("bytes", 2**40),
    "B/s": ("bytes/s", 1),
    "KB/s": ("bytes/s", 1e3),
    "MB/s": ("bytes/s", 1e6),
    "GB/s": ("bytes/s", 1e9),
    "TB/s": ("bytes/s", 1e12),
    "GiB/s": ("bytes/s", 2**30),
    "MiB/s": ("bytes/s", 2**20),
    "TiB/s": ("bytes/s", 2**40),
    "Hz": ("hertz", 1),
    "kHz": ("hertz", 1e3),
    "MHz": ("hertz", 1e6),
    "GHz": ("hertz", 1e9),
    "s": ("seconds", 1),
    "ms": ("seconds", 1e-3),
    "us": ("seconds", 1e-6),
    "µs": ("seconds", 1e-6),
    "μs": ("seconds", 1e-6),
    "ns": ("seconds", 1e-9),
    "ps": ("seconds", 1e-12),
    "W": ("watts", 1),
    "kW": ("watts", 1e3),
    "mW": ("watts", 1e-3),
    "FLOPS": ("flops", 1),
    "GFLOPS": ("flops", 1e9),
    "TFLOPS": ("flops", 1e12),
    "PFLOPS": ("flops", 1e15),
    "TFLOP/s": ("flops", 1e12),
    "GFLOP/s": ("flops", 1e9),
    "TOPS": ("ops", 1e12),
    "GOPS": ("ops", 1e9),
    "GT/s": ("transfers/s", 1e9),
    "MT/s": ("transfers/s", 1e6),
    "%": ("percent", 1),
    "×": ("ratio", 1),
    "x": ("ratio", 1),
    "°C": ("celsius", 1),
    "C": ("celsius", 1),
    "cycles": ("cycles", 1),
    "cycle": ("cycles", 1),
    "clk": ("cycles", 1),
    "bit": ("bits", 1),
    "bits": ("bits", 1),
}


def convert(value: float, unit: str, to: str) -> float | None:
    """`value` in `unit` expressed in `to`; None when the units are not of one kind.

    Units gpulab does not know convert only to themselves ("SMs" to "SMs").
    """
    if unit.strip() == to.strip():
        return value
    mine, theirs = UNITS.get(unit.strip()), UNITS.get(to.strip())
    if mine is None or theirs is None or mine[0] != theirs[0]:
        return None
    return value * mine[1] / theirs[1]


_BINARY = {"KB": 2**10, "kB": 2**10, "MB": 2**20, "GB": 2**30, "TB": 2**40, "PB": 2**50}


def conversions(value: float, unit: str, to: str) -> list[float]:
    """Every reasonable reading of `value` `unit` in `to`; empty when not one kind.

    Memory sizes are ambiguous: NVIDIA writes "256 KB" of registers for 256
    KiB, and "80 GB" of HBM for roughly 80·10⁹ bytes. So a size in KB, MB, GB
    or TB converts both ways (decimal and binary); everything else converts
    one way.
    """
    exact = convert(value, unit, to)
    if exact is None:
        return []
    found = [exact]
    mine, theirs = UNITS.get(unit.strip()), UNITS.get(to.strip())
    if mine and theirs and mine[0] == "bytes":
        factor_from = _BINARY.get(unit.strip(), mine[1])
        factor_to = _BINARY.get(to.strip(), theirs[1])
        found.append(value * factor_from / factor_to)
    return found
