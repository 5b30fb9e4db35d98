"""What the GPU-to-GPU probe reports: each pair's figures, and the readings and table made of them.

`PairFigures` holds everything `measure_pair` (`_p2p`) measured from one GPU
to another; `p2p_readings` reports the fastest pair (`fastest_pair`) and
`p2p_table` every pair; `p2p_bytes` sizes the buffer the copies move. How the
figures are measured, and what each one counts, is described in `_p2p`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from gpulab.probes.micro._common import GiB, MiB, pow2_floor, ratio
from gpulab.probes.model import Reading, Table, Telemetry

__all__ = ["PairFigures", "fastest_pair", "p2p_bytes", "p2p_readings", "p2p_table"]

_SMALL_COPIES = 200  # 4-byte copies per timed batch
_ONE_WAY = "bytes copied / time: one direction, each byte counted once"


# ---------------------------------------------------------------------------
# Pure helpers: no GPU needed, tested exactly.
# ---------------------------------------------------------------------------


def p2p_bytes(free_bytes: int, cap: int = GiB) -> int:
    """Buffer size for the copies: a quarter of the smaller GPU's free memory, at most `cap`.

    A power of two (so a multiple of the 16 bytes the copy kernel moves at
    once); the receiving GPU holds the buffer and a reference copy to check it.
    """
    return pow2_floor(max(16, min(cap, free_bytes // 4)))


@dataclass(frozen=True)
class PairFigures:
    """Everything measured from GPU `src` to GPU `dst` (times are medians)."""

    src: int
    dst: int
    nbytes: int
    peer_access: bool  # dst can read src's memory (always True for src == dst)
    memcpy_gbs: float  # cudaMemcpyPeerAsync
    kernel_gbs: float | None  # SM copy on dst reading src; None without peer access
    staged_gbs: float  # src -> pinned host -> dst, end to end
    memcpy_latency_us: float  # per 4-byte cudaMemcpyPeerAsync
    peer_read_cycles: float | None  # per dependent load from src's memory, on dst
    local_read_cycles: float  # per dependent load from dst's own memory
    clock_mhz: float | None = None  # dst's SM clock, to turn cycles into time
    clock_how: str = ""
    telemetry: Telemetry | None = None

    @property
    def name(self) -> str:
        return f"GPU {self.src} → GPU {self.dst}"

    def ns(self, cycles: float | None) -> float | None:
        return None if cycles is None or not self.clock_mhz else cycles / self.clock_mhz * 1000


def fastest_pair(figures: Mapping[tuple[int, int], PairFigures]) -> tuple[int, int]:
    """The ordered pair with the highest cudaMemcpyPeer bandwidth (first in order on a tie)."""
    if not figures:
        raise ValueError("no pairs measured")
    return max(sorted(figures), key=lambda pair: figures[pair].memcpy_gbs)


def _size(nbytes: int) -> str:
    return f"{nbytes / GiB:g} GiB" if nbytes >= GiB else f"{nbytes // MiB} MiB"


def p2p_readings(figures: Mapping[tuple[int, int], PairFigures]) -> list[Reading]:
    """The probe's readings: every pair's peer access, then the fastest pair's figures."""
    best = figures[fastest_pair(figures)]
    back = figures.get((best.dst, best.src))
    blocked = [f"{f.src}→{f.dst}" for _, f in sorted(figures.items()) if not f.peer_access]
    size = f"{_size(best.nbytes)} per copy"
    readings = [
        Reading(
            "peer_access",
            "Peer access between every pair",
            not blocked,
            convention="cudaDeviceCanAccessPeer, both directions of every pair",
            detail=f"no peer access: {', '.join(blocked)}"
            if blocked
            else f"{len(figures)} ordered pairs",
        ),
        Reading(
            "p2p_memcpy_bandwidth",
            "cudaMemcpyPeer, fastest pair",
            round(best.memcpy_gbs, 1),
            "GB/s",
            _ONE_WAY,
            detail=f"{best.name}, {size}, median of 5 x 3 copies",
        ),
    ]
    if back is None:
        readings.append(
            Reading.not_supported(
                "p2p_memcpy_bandwidth_reverse",
                "cudaMemcpyPeer, same pair reversed",
                "the reverse pair was not measured",
            )
        )
    else:
        readings.append(
            Reading(
                "p2p_memcpy_bandwidth_reverse",
                "cudaMemcpyPeer, same pair reversed",
                round(back.memcpy_gbs, 1),
                "GB/s",
                _ONE_WAY,
                detail=f"{back.name}, {size}",
            )
        )
    key, label = "p2p_kernel_bandwidth", "SM copy kernel reading the other GPU"
    readings.append(
        Reading.not_supported(
            key, label, f"{best.name}: no peer access, so a kernel cannot read the other GPU"
        )
        if best.kernel_gbs is None
        else Reading(
            key,
            label,
            round(best.kernel_gbs, 1),
            "GB/s",
            _ONE_WAY,
            detail=f"copy_float4 on GPU {best.dst} loading from GPU {best.src}, {size}",
        )
    )
    readings += [
        Reading(
            "host_staged_bandwidth",
            "Host-staged copy",
            round(best.staged_gbs, 2),
            "GB/s",
            _ONE_WAY,
            detail=f"{best.name} through pinned host memory: device-to-host, "
            "then host-to-device, not overlapped",
        ),
        Reading(
            "p2p_over_host_staged",
            "cudaMemcpyPeer / host-staged",
            ratio(best.memcpy_gbs, best.staged_gbs),
            "x",
            "p2p_memcpy_bandwidth / host_staged_bandwidth, same pair, same run",
        ),
        Reading(
            "p2p_memcpy_latency",
            "Small peer copy",
            round(best.memcpy_latency_us, 2),
            "µs",
            "time per 4-byte cudaMemcpyPeerAsync, back to back on one stream",
            detail=f"{best.name}, median of 5 x {_SMALL_COPIES} copies",
        ),
    ]
    for key, label, cycles, where in (
        (
            "p2p_read_latency",
            "Load from the other GPU's memory",
            best.peer_read_cycles,
            f"GPU {best.dst} reading GPU {best.src}",
        ),
        (
            "local_read_latency",
            "Load from the GPU's own memory",
            best.local_read_cycles,
            f"GPU {best.dst} reading itself",
        ),
    ):
        if cycles is None:
            readings += [
                Reading.not_supported(k, label, f"{where}: no peer access")
                for k in (f"{key}_cycles", key)
            ]
            continue
        readings.append(
            Reading(
                f"{key}_cycles",
                label,
                round(cycles, 1),
                "cycles",
                "SM clock cycles per dependent load (clock64), one thread",
                detail=where,
            )
        )
        ns = best.ns(cycles)
        readings.append(
            Reading.not_supported(key, label, best.clock_how)
            if ns is None
            else Reading(
                key,
                label,
                round(ns, 1),
                "ns",
                "cycles / SM clock",
                detail=f"{where}; {best.clock_how}: {best.clock_mhz:.0f} MHz",
            )
        )
    return readings


def p2p_table(figures: Mapping[tuple[int, int], PairFigures]) -> Table:
    """Every ordered pair and all its figures."""

    def r(value: float | None, digits: int = 1) -> float | None:
        return None if value is None else round(value, digits)

    rows = tuple(
        (
            f.src,
            f.dst,
            f.peer_access,
            r(f.memcpy_gbs),
            r(f.kernel_gbs),
            r(f.staged_gbs, 2),
            ratio(f.memcpy_gbs, f.staged_gbs),
            r(f.memcpy_latency_us, 2),
            r(f.peer_read_cycles),
            r(f.ns(f.peer_read_cycles)),
            r(f.local_read_cycles),
            r(f.ns(f.local_read_cycles)),
        )
        for _, f in sorted(figures.items())
    )
    return Table(
        "Every ordered pair (bandwidth: one direction, bytes counted once)",
        (
            "from",
            "to",
            "peer access",
            "cudaMemcpyPeer",
            "SM copy kernel",
            "host-staged",
            "memcpyPeer / staged",
            "4-byte peer copy",
            "peer load",
            "peer load",
            "local load",
            "local load",
        ),
        rows,
        ("GPU", "GPU", "", "GB/s", "GB/s", "GB/s", "x", "µs", "cycles", "ns", "cycles", "ns"),
    )
