"""Hidden checks of the pinned-transfer exercise: cases drawn afresh on every run.

`size_ladder` meets bounds and limits drawn at random, some no powers of two.
`fit_latency_bandwidth` and `half_peak_size` get four new synthetic curves
(two as slow as pageable copies, where an ordinary least squares goes most
wrong; other size ranges; curves that dip at the end), `link_gbs` every
width a slot can have. `gpu_numa_node` meets recorded machines changed here:
a GPU whose numa_node is -1 on a two-socket server (its local CPUs decide), one
whose local CPUs span both sockets (no single node), the H200 VM without
NUMA folders, nvidia-smi's eight-digit spelling of an address, and an address
with no device. The answers for changed machines come from the trusted reading
of the same changed tree. On a GPU, copies are compared at another size,
drawn at random.
"""

from __future__ import annotations

import random
import tempfile
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from gpulab.grading.checks.learner import LearnerError
from gpulab.grading.checks.machines import materialize
from gpulab.grading.checks.pytest_plugin import visible_checks
from gpulab.grading.checks.reference import pinned_transfer as ref


def _visible() -> ModuleType:
    """The visible checks' module (one copy of the helpers for both files)."""
    return visible_checks(__file__)


_V = _visible()
KiB, MiB, GiB = _V.KiB, _V.MiB, _V.GiB
RNG = random.SystemRandom()


@pytest.mark.points(1)
def test_size_ladder_fresh(learner: Any) -> None:
    """size_ladder on bounds and limits drawn afresh"""
    for _ in range(6):
        lo = RNG.choice([2 ** RNG.randint(0, 16), RNG.randint(1, 100_000)])
        hi = RNG.choice([2 ** RNG.randint(16, 32), RNG.randint(lo, 10**10)])
        limit = RNG.choice([2**40, RNG.randint(1, 2**33)])
        why = _V.judge_ladder(learner.call("size_ladder", lo, hi, limit), lo, hi, limit,
                              "bounds drawn at random")
        assert why is None, why


def fresh_curves() -> list[tuple[str, list[int], list[float], float, float]]:
    """Four synthetic curves: two slow ones (3-12 GB/s), two fast (12-120 GB/s)."""
    curves = []
    for slow in (True, False, True, False):
        fixed_us = round(RNG.uniform(2, 40), 2)
        gbs = round(RNG.uniform(3, 12) if slow else RNG.uniform(12, 120), 2)
        noise = RNG.uniform(0.005, 0.02)
        lo, hi = 2 ** RNG.randint(12, 14), 2 ** RNG.randint(28, 30)
        sizes, seconds = _V.synthetic_curve(RNG.randrange(2**32), fixed_us, gbs, noise, lo, hi)
        what = (f"a curve from {lo} to {hi} bytes (a = {fixed_us} µs, B = {gbs} GB/s, "
                f"{noise:.1%} noise)")
        curves.append((what, sizes, seconds, fixed_us, gbs))
    return curves


@pytest.mark.points(2)
def test_fit_fresh_curves(learner: Any) -> None:
    """fit_latency_bandwidth on four curves drawn afresh, two of them slow"""
    for what, sizes, seconds, fixed_us, gbs in fresh_curves():
        why = _V.judge_fit(learner, what, sizes, seconds, fixed_us, gbs)
        assert why is None, why


@pytest.mark.points(1)
def test_half_peak_fresh(learner: Any) -> None:
    """half_peak_size on fresh curves, some of which dip at the end"""
    for i, (what, sizes, seconds, _, _) in enumerate(fresh_curves()):
        rates = [n / t / 1e9 for n, t in zip(sizes, seconds, strict=True)]
        if i % 2:
            dip = RNG.uniform(0.6, 0.9)
            rates[-3:] = [rate * dip for rate in rates[-3:]]
            what += ", its last three sizes slower"
        why = _V.judge_half_peak(learner, what, sizes, rates)
        assert why is None, why


@pytest.mark.points(1)
def test_link_gbs_every_width(learner: Any) -> None:
    """link_gbs for every generation of the table and every width a slot can have"""
    cases = [(RNG.randint(1, 5), RNG.choice([1, 2, 4, 8, 12, 16, 32])) for _ in range(6)]
    for generation, width in cases:
        want = ref.link_gbs(generation, width)
        got = learner.call("link_gbs", generation, width)
        assert _V.is_number(got) and want is not None and abs(got - want) <= 0.005 * want, (
            f"link_gbs({generation}, {width}) returned {got!r:.80}, want {want} GB/s: rate "
            "per lane x encoding x lanes / 8, per direction")
    for generation, width in ((RNG.choice([0, 6, 7]), 16), (4, RNG.choice([0, -1]))):
        got = learner.call("link_gbs", generation, width)
        assert got is None, (
            f"link_gbs({generation}, {width}) returned {got!r:.80}: want None, for a "
            "generation not in the table or a width below 1")


PCI = "sys/bus/pci/devices"


def changed_machines() -> list[tuple[str, str, dict[str, str | None], str]]:
    """(machine, CUDA's address of a GPU, the files changed, what it tries)."""
    gpu, other = RNG.choice([("1b", "43"), ("43", "1b")])
    return [
        ("two-socket", f"0000:{gpu.upper()}:00.0",
         {f"{PCI}/0000:{gpu}:00.0/numa_node": "-1\n"},
         "numa_node -1 on a two-socket server: the local CPUs name one node"),
        ("two-socket", f"0000:{other.upper()}:00.0",
         {f"{PCI}/0000:{other}:00.0/numa_node": "-1\n",
          f"{PCI}/0000:{other}:00.0/local_cpulist": "0-223\n"},
         "numa_node -1 and local CPUs on both sockets: no single node"),
        ("h200-vm", "0000:00:06.0", {"sys/devices/system/node": None},
         "numa_node -1 and a kernel without NUMA folders"),
        ("two-socket", f"00000000:{gpu.upper()}:00.0", {},
         "nvidia-smi's spelling of the address, eight-digit domain"),
    ]


@pytest.mark.points(2)
def test_gpu_numa_node_changed_machines(learner: Any) -> None:
    """gpu_numa_node on recorded machines changed here, and an address with no device"""
    for machine, bus, files, what in changed_machines():
        with tempfile.TemporaryDirectory(prefix="pinned-transfer-") as folder:
            want = ref.gpu_numa_node(bus, str(materialize(machine, Path(folder), files=files)))
        problem = _V.judge_numa_node(learner, machine, bus, want, what, files=files)
        assert problem is None, problem
    root = learner.machine("two-socket")
    try:
        got = learner.call("gpu_numa_node", "0000:99:00.0", root)
    except LearnerError as exc:
        if exc.raised_as(NotImplementedError):
            raise
        assert exc.raised_as(ValueError), (
            f"gpu_numa_node('0000:99:00.0', root), an address with no device, raised "
            f"{str(exc).splitlines()[0]}: want ValueError, naming the address")
    else:
        raise AssertionError(
            f"gpu_numa_node('0000:99:00.0', root) returned {got!r:.80} for an address with no "
            "device under root: raise ValueError, naming the address")


@pytest.mark.gpu
@pytest.mark.points(2)
def test_copies_at_another_size(learner: Any, measured: Any) -> None:
    """transfer_gbs agrees with the check's own copies at a size drawn afresh"""
    top = _V.here_bytes()
    nbytes = RNG.choice(ref.size_ladder(4 * MiB, max(top // 2, 4 * MiB), top))
    problems = []
    for direction, pinned in (("h2d", True), ("d2h", True), ("h2d", False)):
        tolerance = _V.PINNED_TOLERANCE if pinned else _V.PAGEABLE_TOLERANCE
        got = _V.yours(learner, nbytes, direction, pinned)
        want = _V.ours(nbytes, direction, pinned)
        what = _V.label(nbytes, direction, pinned)
        measured(f"{'pinned' if pinned else 'pageable'}_{direction}_other_size", label=what,
                 unit="GB/s", yours=got, trusted=want, tolerance=tolerance)
        problems.append(_V.copy_problem(got, want, tolerance, what=what, link=None,
                                        other=_V.ours(nbytes, direction, not pinned)))
    assert not any(problems), "\n".join(p for p in problems if p)
