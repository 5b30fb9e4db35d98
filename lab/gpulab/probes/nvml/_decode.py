"""NVML's numbers in the words nvidia-smi uses: clock-event reasons, compute mode, CUDA
version, P-state.

Pure functions, except that `decode_clock_event_reasons` asks pynvml for its
reason bits (imported on the first call, never at module import).
"""

from __future__ import annotations

import functools

__all__ = [
    "COMPUTE_MODES",
    "compute_mode_name",
    "cuda_version_text",
    "decode_clock_event_reasons",
    "pstate_name",
]

# The nvidia-smi spellings (`nvidia-smi --query-gpu=compute_mode`).
COMPUTE_MODES = {0: "Default", 1: "Exclusive_Thread", 2: "Prohibited", 3: "Exclusive_Process"}

# Clock-event reasons in bit order: the suffix of pynvml's constant and its name.
_REASONS = (
    ("GpuIdle", "GPU idle"),
    ("ApplicationsClocksSetting", "Applications clocks setting"),
    ("SwPowerCap", "SW power cap"),
    ("HwSlowdown", "HW slowdown"),
    ("SyncBoost", "Sync boost"),
    ("SwThermalSlowdown", "SW thermal slowdown"),
    ("HwThermalSlowdown", "HW thermal slowdown"),
    ("HwPowerBrakeSlowdown", "HW power brake slowdown"),
    ("DisplayClockSetting", "Display clock setting"),
    ("BoardLimit", "Board limit"),
    ("Reliability", "Reliability"),
)


# ---- pure decoders ------------------------------------------------------------------------


@functools.cache
def _reason_bits() -> tuple[tuple[int, str], ...]:
    """pynvml's clock-event reason bits with their names, lowest bit first."""
    from gpulab.probes.nvml._session import pynvml_module

    pm = pynvml_module()
    found = []
    for suffix, name in _REASONS:
        bit = getattr(
            pm,
            f"nvmlClocksEventReason{suffix}",
            getattr(pm, f"nvmlClocksThrottleReason{suffix}", None),
        )
        if bit:
            found.append((int(bit), name))
    return tuple(sorted(found))


def decode_clock_event_reasons(mask: int) -> tuple[str, ...]:
    """The names of the reasons set in an NVML clock-event reason mask.

    0x1 -> ("GPU idle",); bits NVML does not name come back as "unknown (0x...)".
    """
    names = []
    known = 0
    for bit, name in _reason_bits():
        known |= bit
        if mask & bit:
            names.append(name)
    if mask & ~known:
        names.append(f"unknown (0x{mask & ~known:x})")
    return tuple(names)


def compute_mode_name(mode: int) -> str:
    """NVML's compute mode number as nvidia-smi spells it: 0 -> "Default"."""
    return COMPUTE_MODES.get(mode, f"unknown ({mode})")


def cuda_version_text(version: int) -> str:
    """NVML's CUDA driver version number as people write it: 13000 -> "13.0"."""
    return f"{version // 1000}.{version % 1000 // 10}"


def pstate_name(state: int) -> str:
    """A performance state number as nvidia-smi shows it: 0 -> "P0"."""
    return f"P{state}" if 0 <= state <= 15 else "unknown"


def enabled_text(state: int) -> str:
    return "Enabled" if state else "Disabled"
