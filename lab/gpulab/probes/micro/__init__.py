"""Microbenchmarks: the GPU's memory hierarchy, arithmetic and links, measured here.

The probes, by what they measure:

- device memory (`_bandwidth`, `_occupancy`): `hbm_bandwidth`, `stride_sweep`,
  `occupancy_bandwidth`;
- host-device copies (`_pcie`): `pcie_bandwidth`;
- latency (`_latency`): `pointer_chase_latency`;
- shared memory (`_smem`): `smem_latency`, `smem_bank_conflicts`;
- arithmetic (`_compute`, `_matmul`): `warp_divergence`, `fp32_peak`, `matmul_throughput`;
- the GPU held under load for many seconds (`_sustained`): `sustained_matmul`;
- between GPUs (`_p2p`, what it reports in `_p2p_figures`): `p2p_bandwidth`;
- what NVML's utilisation means (`_util`): `util_one_thread`.

They work alike. Each probe runs small CUDA C kernels (`gpulab.kernels`) or
library calls, checks that they computed the right thing (a copy equals its
source, a chase ends where the cycle says, a matmul matches a float64
reference), and times them with CUDA events after a warm-up, reporting the
median of several repeats. Each reading states its unit and how it counts;
where a ceiling can be measured in the same run (cudaMemcpy for copies) it
is. NVML telemetry (SM clock, power, temperature, clock-event reasons) is
recorded while the timed part runs. Sizes are scaled from the device's
memory and L2 so that a probe takes a few seconds on an H200 and still fits
a small GPU. A wrong result makes the probe's status `error`: a fast wrong
kernel measures nothing.

The pure helpers exported beside the probes (buffer sizes, unit arithmetic,
plateaus, bank arithmetic, the P2P tables) need no GPU and are tested
exactly. What every probe shares (`measure`, `watch_telemetry`, the checks)
is in `_common`, private to this package. CuPy and NumPy are imported only
when a probe runs, never when this package is imported.
"""

from gpulab.probes.micro._bandwidth import (
    gb_per_s,
    hbm_bandwidth,
    scaled_bytes,
    sector_overfetch,
    stride_sweep,
)
from gpulab.probes.micro._common import GiB, KiB, MiB, ratio
from gpulab.probes.micro._compute import fp32_lanes_per_sm, fp32_peak, tflops, warp_divergence
from gpulab.probes.micro._latency import (
    CHASE_RANGES,
    chase_footprints,
    chase_plan,
    plateaus,
    pointer_chase_latency,
)
from gpulab.probes.micro._matmul import bf16_bits, matmul_size, matmul_throughput
from gpulab.probes.micro._occupancy import occupancy_bandwidth, occupancy_blocks, occupancy_smem
from gpulab.probes.micro._p2p import CHASE_BYTES, measure_pair, p2p_bandwidth
from gpulab.probes.micro._p2p_figures import (
    PairFigures,
    fastest_pair,
    p2p_bytes,
    p2p_readings,
    p2p_table,
)
from gpulab.probes.micro._pcie import pcie_bandwidth, pcie_bytes, pcie_link_gb_per_s
from gpulab.probes.micro._smem import (
    bank_conflict_ways,
    bank_count,
    smem_bank_conflicts,
    smem_latency,
)
from gpulab.probes.micro._sustained import Window, sustained_matmul, trace_rows
from gpulab.probes.micro._util import SETTLE_S, SPIN_S, util_one_thread

__all__ = [
    "CHASE_BYTES",
    "CHASE_RANGES",
    "SETTLE_S",
    "SPIN_S",
    "GiB",
    "KiB",
    "MiB",
    "PairFigures",
    "Window",
    "bank_conflict_ways",
    "bank_count",
    "bf16_bits",
    "chase_footprints",
    "chase_plan",
    "fastest_pair",
    "fp32_lanes_per_sm",
    "fp32_peak",
    "gb_per_s",
    "hbm_bandwidth",
    "matmul_size",
    "matmul_throughput",
    "measure_pair",
    "occupancy_bandwidth",
    "occupancy_blocks",
    "occupancy_smem",
    "p2p_bandwidth",
    "p2p_bytes",
    "p2p_readings",
    "p2p_table",
    "pcie_bandwidth",
    "pcie_bytes",
    "pcie_link_gb_per_s",
    "plateaus",
    "pointer_chase_latency",
    "ratio",
    "scaled_bytes",
    "sector_overfetch",
    "smem_bank_conflicts",
    "smem_latency",
    "stride_sweep",
    "sustained_matmul",
    "tflops",
    "trace_rows",
    "util_one_thread",
    "warp_divergence",
]
