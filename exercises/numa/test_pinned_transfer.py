"""Checks of the pinned-transfer exercise (lesson: NUMA, CPU affinity and PCIe).

Parts 1 and 3 need no GPU. `link_gbs` is compared with the lesson's table of
PCIe generations, `size_ladder` with the check's own ladder, and
`fit_latency_bandwidth` and `half_peak_size` get synthetic curves: copy times
t = a + n/B made up here from an a and a B the check chose, with a few percent
of noise, so the right answer is known. Part 4's `gpu_numa_node` reads
recorded machines' /sys files (a two-socket server, the course's H200 VM).

Part 2 and the rest of part 4 measure: the check times the same copies itself,
in this process and in the same run (`gpulab.grading.checks.reference.pinned_transfer`,
the `pcie_bandwidth` probe's way: CUDA events around cudaMemcpyAsync after a
warm-up, the median of several repeats), records both figures beside your
prediction, and wants yours within a stated tolerance of its own. Sizes come
from this machine's free host and GPU memory. The comparison of NUMA-local and
remote pinned memory needs two NUMA nodes and is skipped, saying so, on a
machine with one.
"""

from __future__ import annotations

import math
import os
import random
from typing import Any

import pytest

from gpulab.grading.checks.learner import LearnerError
from gpulab.grading.checks.reference import pinned_transfer as ref

KiB, MiB, GiB = 2**10, 2**20, 2**30
MACHINES = {  # recorded machine: (CUDA's spelling of a GPU's address, its node, why)
    "two-socket": [
        ("0000:1B:00.0", 0, "numa_node says 0"),
        ("0000:43:00.0", 1, "numa_node says 1"),
    ],
    "h200-vm": [
        (
            "0000:00:06.0",
            0,
            "numa_node says -1 (the firmware gave none), and local_cpulist 0-15 are node 0's",
        )
    ],
}
PINNED_TOLERANCE = 0.2  # pinned copies: the link decides, and it varies little
PAGEABLE_TOLERANCE = 0.6  # pageable copies: the host's memcpy and caches decide: 12 against
#                            8.3 GB/s in two processes on one H100 machine at 4 MiB


# -- helpers ------------------------------------------------------------------------------
def is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def synthetic_curve(seed: int, fixed_us: float, gbs: float, noise: float,
                    lo: int = 4 * KiB, hi: int = GiB) -> tuple[list[int], list[float]]:
    """Copy sizes lo..hi (powers of two) and times t = a + n/B, each off by `noise` (a
    relative standard deviation, log-normal), from the random generator `seed`."""
    rng = random.Random(seed)
    sizes = [2**k for k in range(lo.bit_length() - 1, hi.bit_length())]
    seconds = [(fixed_us * 1e-6 + n / (gbs * 1e9)) * math.exp(rng.gauss(0, noise))
               for n in sizes]
    return sizes, seconds


def judge_fit(learner: Any, what: str, sizes: list[int], seconds: list[float],
              fixed_us: float, gbs: float) -> str | None:
    """Why fit_latency_bandwidth is wrong on one synthetic curve; None when it is right."""
    got = learner.call("fit_latency_bandwidth", sizes, seconds)
    call = f"fit_latency_bandwidth on {what}"
    if not (isinstance(got, list | tuple) and len(got) == 2 and all(map(is_number, got))):
        return (f"{call} returned {got!r:.120}: return two numbers, (fixed cost in "
                "microseconds, bandwidth in GB/s)")
    a, b = got
    truth = f"the curve was made with a = {fixed_us:.4g} µs and B = {gbs:.4g} GB/s"
    if b > 0 and abs(b / gbs * GiB / 1e9 - 1) < 0.02:
        return (f"{call} says B = {b:.4g} GB/s; {truth}. Yours is about 1e9/2**30 of it: "
                "that is GiB/s. A GB is 10**9 bytes")
    if b > 0 and abs(b / gbs * 1e9 / GiB - 1) < 0.02:
        return (f"{call} says B = {b:.4g} GB/s; {truth}. Yours is about 2**30/1e9 of it: "
                "bytes per second divided by 2**30 somewhere, or multiplied back. A GB is "
                "10**9 bytes")
    if abs(a * 1e6 / fixed_us - 1) < 0.2 or abs(a / 1e6 / fixed_us - 1) < 0.2:
        return (f"{call} says a = {a:.4g}; {truth}: the fixed cost in microseconds, please "
                "(the times are in seconds)")
    if not abs(b - gbs) <= 0.04 * gbs:
        return (f"{call} says B = {b:.4g} GB/s; {truth} (4 % allowed): B is 1/slope of t "
                "against n, in 10**9 bytes per second")
    if not abs(a - fixed_us) <= max(0.2 * fixed_us, 0.5):
        return (f"{call} says a = {a:.4g} µs; {truth} (20 % allowed). The times run from "
                "microseconds to a fraction of a second: an ordinary least squares lets the "
                "largest copies decide alone, and their noise swamps a. Fit the relative "
                "errors: divide each equation a + n/B = t by its t")
    return None


FIT_CURVES = [  # (what, seed, a in µs, B in GB/s, noise)
    ("a pinned copy over PCIe Gen5 (a = 8 µs, B = 55 GB/s, 2 % noise)", 11, 8.0, 55.0, 0.02),
    ("a pinned copy over PCIe Gen4 (a = 12 µs, B = 24 GB/s, 2 % noise)", 12, 12.0, 24.0, 0.02),
    ("a pageable copy (a = 25 µs, B = 6.9 GB/s, 2 % noise)", 13, 25.0, 6.9, 0.02),
]


def here_bytes() -> int:
    """The size the GPU checks copy; skip where this machine cannot spare it."""
    nbytes = ref.check_bytes()
    if not nbytes:
        pytest.skip("too little free host or GPU memory here for a 16 MiB copy")
    return nbytes


_YOURS: dict[tuple[int, int, str, bool], float] = {}
_OURS: dict[tuple[int, str, bool], float] = {}


def yours(learner: Any, nbytes: int, direction: str, pinned: bool) -> float:
    """transfer_gbs(nbytes, direction, pinned) of the learner, checked to be a number (asked
    once per learner and case: several checks judge the same figures)."""
    key = (id(learner), nbytes, direction, pinned)
    if key not in _YOURS:
        call = f"transfer_gbs({nbytes}, {direction!r}, {pinned})"
        got = learner.call("transfer_gbs", nbytes, direction, pinned)
        assert is_number(got) and got > 0, (
            f"{call} returned {got!r:.80}: return the bandwidth in GB/s, a positive number")
        _YOURS[key] = float(got)
    return _YOURS[key]


def ours(nbytes: int, direction: str, pinned: bool) -> float:
    """The check's own figure for the same copy (measured once per run and case)."""
    key = (nbytes, direction, pinned)
    if key not in _OURS:  # pageable: the better of two, as one copy can meet a cold cache
        _OURS[key] = max(ref.own_transfer_gbs(nbytes, direction, pinned)
                         for _ in range(1 if pinned else 2))
    return _OURS[key]


def label(nbytes: int, direction: str, pinned: bool) -> str:
    way = {"h2d": "host to device", "d2h": "device to host"}[direction]
    return f"{'pinned' if pinned else 'pageable'} {way}, {size_text(nbytes)}"


def size_text(nbytes: int) -> str:
    for unit, size in (("GiB", GiB), ("MiB", MiB), ("KiB", KiB)):
        if nbytes >= size and nbytes % size == 0:
            return f"{nbytes // size} {unit}"
    return f"{nbytes} bytes"


def copy_problem(got: float, want: float, tolerance: float, *, what: str,
                 other: float | None, link: float | None) -> str | None:
    """Why the learner's figure `got` for a copy is not the check's `want`; None if within
    `tolerance`. `other`: the check's figure for the other kind of host memory."""
    if abs(got - want) <= tolerance * want:
        return None
    ratio = got / want
    said = (f"transfer_gbs says {got:.4g} GB/s for a {what} copy, but the check's own copy "
            f"of the same size measured {want:.4g} GB/s just now ({tolerance:.0%} allowed)")
    if 1.6 < ratio < 2.6:
        return (f"{said}: yours is about twice the check's. Were the bytes counted twice "
                "(read plus written)? A copy moves each byte across the link once")
    if ratio > 3 or (link and got > 1.15 * link):
        beyond = (f", more than the PCIe link itself can carry ({link:.4g} GB/s per direction)"
                  if link and got > 1.15 * link else ", far faster than any copy here")
        unit = (" (Or is yours in MB/s? GB/s is bytes per second / 1e9.)"
                if 700 < ratio < 1500 else "")
        return (f"{said}{beyond}. A host timer around an asynchronous copy measures only how "
                "long it took to queue it: time on the GPU, with CUDA events recorded on the "
                "copy's stream after a warm-up, and wait for the end event before reading "
                f"the time.{unit}")
    if other is not None and abs(got - other) <= max(tolerance, PAGEABLE_TOLERANCE) * other:
        kind = "pageable" if "pinned" in what else "pinned"
        hint = ("A NumPy array is pageable memory, whatever you call it: a pinned buffer "
                "comes from CuPy's pinned allocator" if kind == "pageable" else
                "pageable means an ordinary NumPy array, not CuPy's pinned allocator")
        return (f"{said}, and yours is what the check measured for {kind} memory "
                f"({other:.4g} GB/s). {hint}")
    return (f"{said}: is every page of the host buffer touched before the timing, the copy "
            "warmed up once, and the median of several timed repeats returned?")


# -- part 1: link_gbs and size_ladder -----------------------------------------------------
LINKS = [(1, 16), (2, 16), (3, 16), (4, 16), (5, 16), (5, 8), (4, 4), (3, 1)]


@pytest.mark.points(1)
def test_link_gbs(learner: Any) -> None:
    """link_gbs gives the lesson's table: Gen1-5, per direction, after encoding"""
    for generation, width in LINKS:
        want = ref.link_gbs(generation, width)
        assert want is not None
        got = learner.call("link_gbs", generation, width)
        call = f"link_gbs({generation}, {width})"
        assert is_number(got), f"{call} returned {got!r:.80}: want GB/s, a number"
        if abs(got - want) <= 0.005 * want:
            continue
        raw = {1: 2.5, 2: 5.0, 3: 8.0, 4: 16.0, 5: 32.0}[generation] * width / 8
        hint = (": that adds both directions; a copy uses one" if abs(got / want - 2) < 0.05
                else ": the encoding costs bits (8b/10b for Gen1-2, 128b/130b for Gen3-5)"
                if abs(got - raw) <= 0.005 * raw
                else ": GT/s counts bits per lane; a byte is 8 of them"
                if abs(got / want - 8) < 0.4 else
                ": rate per lane x encoding x lanes / 8")
        raise AssertionError(f"{call} returned {got!r}, want {want} GB/s per direction{hint}")
    for generation, width in ((6, 16), (0, 16), (5, 0)):
        got = learner.call("link_gbs", generation, width)
        assert got is None, (
            f"link_gbs({generation}, {width}) returned {got!r:.80}: want None, since "
            + ("Gen6 is no row of the lesson's table with a rate after encoding"
               if generation == 6 else "that is no PCIe link"))


LADDERS = [  # (lo, hi, limit, what it tries)
    (4 * KiB, GiB, 2**40, "4 KiB to 1 GiB with memory to spare"),
    (4 * KiB, GiB, 300 * MiB, "a limit of 300 MiB"),
    (4000, 10**9, 2**40, "lo and hi that are no powers of two"),
    (4 * KiB, GiB, 1000, "a limit below lo"),
    (64 * KiB, 64 * KiB, GiB, "lo equal to hi"),
]


def judge_ladder(got: Any, lo: int, hi: int, limit: int, what: str) -> str | None:
    want = ref.size_ladder(lo, hi, limit)
    if got == want:
        return None
    call = f"size_ladder({lo}, {hi}, {limit}) ({what})"
    if not (isinstance(got, list) and all(isinstance(n, int) for n in got)):
        return f"{call} returned {got!r:.120}: want a list of ints (bytes)"
    odd = [n for n in got if n < 1 or n & (n - 1)]
    if odd and odd[0] % 1000 == 0:
        return (f"{call} returned sizes such as {odd[0]}: the ladder goes by powers of "
                "two (4 KiB is 4096 bytes, 1 MiB 2**20), not by powers of ten")
    if odd:
        return (f"{call} returned {odd[0]}, which is no power of two: the ladder lists the "
                "powers of two that lie between lo and hi, not lo doubled again and again")
    over = [n for n in got if n > limit or n > hi or n < lo]
    if over:
        return (f"{call} returned {over[0]}, outside lo <= n <= min(hi, limit): "
                "a copy larger than the machine can spare is no size to measure")
    return (f"{call} returned {got!r:.160}, want {want!r:.160}: every power of two from "
            "lo to hi, both ends included where they are powers of two, ascending")


@pytest.mark.points(2)
def test_size_ladder(learner: Any) -> None:
    """size_ladder: powers of two from lo to hi, none above the limit"""
    for lo, hi, limit, what in LADDERS:
        why = judge_ladder(learner.call("size_ladder", lo, hi, limit), lo, hi, limit, what)
        assert why is None, why


# -- part 3: fit_latency_bandwidth and half_peak_size -------------------------------------
@pytest.mark.points(3)
def test_fit_on_synthetic_curves(learner: Any) -> None:
    """fit_latency_bandwidth finds a and B of three noisy curves t = a + n/B"""
    for what, seed, fixed_us, gbs, noise in FIT_CURVES:
        sizes, seconds = synthetic_curve(seed, fixed_us, gbs, noise)
        why = judge_fit(learner, what, sizes, seconds, fixed_us, gbs)
        assert why is None, why


def judge_half_peak(learner: Any, what: str, sizes: list[int], gbs: list[float]) -> str | None:
    want = ref.half_peak_size(sizes, gbs)
    got = learner.call("half_peak_size", sizes, gbs)
    if got == want:
        return None
    peak = max(gbs)
    hint = ("the peak is the largest figure on the curve, wherever it is"
            if got in sizes and got > want else
            "the first size whose figure is at least half the peak, in bytes"
            if got in sizes else "return one of the sizes given, in bytes")
    return (f"half_peak_size on {what} returned {got!r:.80}, want {want}: the curve peaks at "
            f"{peak:.3g} GB/s, and {want} is the smallest size reaching {peak / 2:.3g}: {hint}")


@pytest.mark.points(1)
def test_half_peak_size(learner: Any) -> None:
    """half_peak_size finds n½ on the synthetic curves and on a curve that dips at the end"""
    cases = [("a curve that peaks before its end", [1, 2, 4, 8, 16], [1.0, 2.9, 6.0, 5.0, 4.0])]
    for what, seed, fixed_us, gbs, noise in FIT_CURVES:
        sizes, seconds = synthetic_curve(seed, fixed_us, gbs, noise)
        cases.append((what, sizes, [n / t / 1e9 for n, t in zip(sizes, seconds, strict=True)]))
    for what, sizes, rates in cases:
        why = judge_half_peak(learner, what, sizes, rates)
        assert why is None, why


# -- part 4 on recorded machines ----------------------------------------------------------
def judge_numa_node(learner: Any, machine: str, bus: str, want: int | None, why: str,
                    **changes: Any) -> str | None:
    root = learner.machine(machine, **changes)
    call = f"gpu_numa_node({bus!r}, root) on the recorded machine {machine!r}"
    try:
        got = learner.call("gpu_numa_node", bus, root)
    except LearnerError as exc:
        if exc.raised_as(NotImplementedError):
            raise
        return (f"{call} failed: {exc}\nCUDA writes PCI addresses in capitals; sysfs names "
                "its folders in lower case with a four-digit domain (the setup's bus_id)")
    if got == want:
        return None
    hint = ("-1 means the firmware named no node, not that there is none: the GPU's "
            "local_cpulist says which node's CPUs are near it"
            if got in (-1, None) and want is not None else
            "no single node holds the GPU's local CPUs: there is no one node to name"
            if want is None else "read numa_node of the GPU's own folder under root")
    return f"{call} returned {got!r:.80}, want {want!r} ({why}): {hint}"


@pytest.mark.points(2)
def test_gpu_numa_node_recorded_machines(learner: Any) -> None:
    """gpu_numa_node finds each GPU's node on a two-socket server and on the H200 VM"""
    for machine, gpus in MACHINES.items():
        for bus, want, why in gpus:
            problem = judge_numa_node(learner, machine, bus, want, why)
            assert problem is None, problem


# -- part 2: transfer_gbs -----------------------------------------------------------------
@pytest.mark.gpu
@pytest.mark.points(3)
def test_pinned_copies_agree(learner: Any, measured: Any) -> None:
    """transfer_gbs from and into pinned memory agrees with the check's own copies"""
    nbytes = here_bytes()
    link = ref.own_link_gbs()
    if link is not None:
        generation, width, rate = link
        try:
            computed = learner.call("link_gbs", generation, width)
        except LearnerError:  # part 1 is judged by its own checks
            computed = None
        measured("link_gbs", label=f"PCIe link per direction (Gen{generation} x{width})",
                 unit="GB/s", yours=computed, trusted=rate, tolerance=0.005)
    problems = []
    for direction in ref.DIRECTIONS:
        got = yours(learner, nbytes, direction, True)
        want = ours(nbytes, direction, True)
        measured(f"pinned_{direction}", label=label(nbytes, direction, True), unit="GB/s",
                 yours=got, trusted=want, tolerance=PINNED_TOLERANCE)
        problems.append(copy_problem(got, want, PINNED_TOLERANCE,
                                     what=label(nbytes, direction, True),
                                     other=ours(nbytes, direction, False),
                                     link=link[2] if link else None))
    assert not any(problems), "\n".join(p for p in problems if p)


@pytest.mark.gpu
@pytest.mark.points(2)
def test_pageable_copies_agree(learner: Any, measured: Any) -> None:
    """transfer_gbs from and into pageable memory agrees with the check's own copies"""
    nbytes = here_bytes()
    problems = []
    for direction in ref.DIRECTIONS:
        got = yours(learner, nbytes, direction, False)
        want = ours(nbytes, direction, False)
        measured(f"pageable_{direction}", label=label(nbytes, direction, False), unit="GB/s",
                 yours=got, trusted=want, tolerance=PAGEABLE_TOLERANCE)
        problems.append(copy_problem(got, want, PAGEABLE_TOLERANCE,
                                     what=label(nbytes, direction, False),
                                     other=ours(nbytes, direction, True), link=None))
    assert not any(problems), "\n".join(p for p in problems if p)


@pytest.mark.gpu
@pytest.mark.points(2)
def test_pinned_beats_pageable(learner: Any) -> None:
    """pinned copies beat pageable ones by the margin the check measures here"""
    nbytes = here_bytes()
    for direction in ref.DIRECTIONS:
        mine = yours(learner, nbytes, direction, True) / yours(learner, nbytes, direction, False)
        truth = ours(nbytes, direction, True) / ours(nbytes, direction, False)
        need = 1 + (truth - 1) / 2 if truth >= 1.5 else truth / 1.35
        assert mine >= need, (
            f"{label(nbytes, direction, True)} over {label(nbytes, direction, False)}: your "
            f"copies are {mine:.2f}x apart, the check's {truth:.2f}x, and at least {need:.2f}x "
            "is wanted. A pinned buffer is one the driver can hand to the copy engine "
            "directly: is yours really page-locked (CuPy's pinned allocator), and the "
            "pageable one an ordinary NumPy array?")


@pytest.mark.gpu
@pytest.mark.points(2)
def test_curve_shape(learner: Any, measured: Any) -> None:
    """your pinned curve from 4 KiB up is latency-bound at the small end, like the check's"""
    top = here_bytes()
    sizes = ref.size_ladder(4 * KiB, top, top)[::2]  # every other power of two: x4 steps
    mine = [yours(learner, n, "h2d", True) for n in sizes]
    truth = [ours(n, "h2d", True) for n in sizes]
    for key, unit, pick in (("fixed_cost_us", "µs", 0), ("half_peak_bytes", "bytes", None)):
        measured(key, unit=unit, tolerance=None,
                 label=("fixed cost per copy, fitted to the pinned curve" if pick == 0 else
                        "n½: the smallest copy reaching half the peak (pinned, x4 steps)"),
                 yours=_curve_figure(sizes, mine, pick), trusted=_curve_figure(sizes, truth, pick))
    small, small_truth = mine[0] / max(mine), truth[0] / max(truth)
    allowed = max(0.25, 2 * small_truth)
    assert small <= allowed, (
        f"your 4 KiB pinned copy reaches {small:.0%} of your curve's peak, the check's "
        f"{small_truth:.0%} of its own ({allowed:.0%} allowed): a small copy is limited by "
        "its fixed cost of microseconds, not by the link. Is the time of each copy measured "
        "on the GPU between events, and divided by the number of copies between them?")


def _curve_figure(sizes: list[int], gbs: list[float], pick: int | None) -> float:
    """The fixed cost in µs (pick 0) or n½ in bytes (None) of a curve, by the check's fit."""
    if pick == 0:
        seconds = [n / (rate * 1e9) for n, rate in zip(sizes, gbs, strict=True)]
        return ref.fit_latency_bandwidth(sizes, seconds)[0]
    return float(ref.half_peak_size(sizes, gbs))


# -- part 4 on this machine ---------------------------------------------------------------
@pytest.mark.gpu
@pytest.mark.points(1)
def test_gpu_numa_node_here(learner: Any) -> None:
    """gpu_numa_node names the node of this machine's GPU 0 as the check reads it"""
    bus = ref.cuda_bus(0)
    want = ref.gpu_numa_node(bus)
    got = learner.call("gpu_numa_node", bus)
    assert got == want, (
        f"gpu_numa_node({bus!r}) returned {got!r:.80} on this machine, but its sysfs gives "
        f"{want!r}: numa_node of /sys/bus/pci/devices/{ref.bus_id(bus)}, or where that is "
        "-1, the one node whose CPUs its local_cpulist names")


def numa_plan(pid: int | None) -> tuple[int | None, dict[int, list[int]]]:
    """GPU 0's node here, and each node's CPUs that the learner's worker (or, without its
    pid, this process) may use; nodes without such CPUs left out."""
    allowed = set(os.sched_getaffinity(pid or 0))
    nodes = {n: sorted(set(cpus) & allowed) for n, cpus in ref.node_cpus().items()}
    return ref.gpu_numa_node(ref.cuda_bus(0)), {n: c for n, c in nodes.items() if c}


@pytest.mark.gpu
@pytest.mark.points(2)
def test_pinned_on_node_here(learner: Any, measured: Any) -> None:
    """pinned_on_node on the GPU's own node agrees with the check and leaves the CPUs as
    they were"""
    node, nodes = numa_plan(learner.pid)
    if node is None or node not in nodes:
        pytest.skip("this GPU's NUMA node is not known here (numa_node -1, and its local CPUs "
                    "are on no single node), or none of its CPUs may be used")
    nbytes = here_bytes()
    before = sorted(os.sched_getaffinity(learner.pid)) if learner.pid else None
    got = learner.call("pinned_on_node", node, nbytes, "h2d")
    after = sorted(os.sched_getaffinity(learner.pid)) if learner.pid else None
    assert is_number(got) and got > 0, (
        f"pinned_on_node({node}, {nbytes}, 'h2d') returned {got!r:.80}: want GB/s, a number")
    want = ref.own_transfer_gbs(nbytes, "h2d", True, cpus=nodes[node])
    measured("numa_local_h2d", label=f"pinned host to device from node {node}'s memory, "
             f"{size_text(nbytes)}", unit="GB/s", yours=got, trusted=want,
             tolerance=PINNED_TOLERANCE)
    problem = copy_problem(got, want, PINNED_TOLERANCE, link=None, other=None,
                           what=f"pinned host to device from node {node}")
    assert problem is None, problem.replace("transfer_gbs", "pinned_on_node")
    assert before == after, (
        f"before pinned_on_node the worker could run on CPUs {before!r:.80}, after it only on "
        f"{after!r:.80}: put the process's CPU set back when the copy is done (whatever "
        "runs next runs where you left it)")


@pytest.mark.gpu
@pytest.mark.points(3)
def test_numa_local_vs_remote(learner: Any, measured: Any) -> None:
    """pinned memory on the GPU's node copies at least as fast as on another node"""
    node, nodes = numa_plan(learner.pid)
    if len(nodes) < 2:
        pytest.skip(f"needs two NUMA nodes: this machine has {len(nodes)} with CPUs to use")
    if node is None or node not in nodes:
        pytest.skip("this GPU's NUMA node is not known here: no local and remote to compare")
    nbytes = here_bytes()
    remote = min((n for n in nodes if n != node), key=lambda n: abs(n - node))
    local_got = learner.call("pinned_on_node", node, nbytes, "h2d")
    remote_got = learner.call("pinned_on_node", remote, nbytes, "h2d")
    for what, got in (("local", local_got), ("remote", remote_got)):
        assert is_number(got) and got > 0, (
            f"pinned_on_node ({what} node) returned {got!r:.80}: want GB/s, a number")
    # The check's own buffers are placed beyond doubt: touched first from the node's CPUs,
    # then registered with CUDA, and the kernel asked where their pages are.
    local_want, local_at = ref.own_pinned_on_node(nodes[node], nbytes, "h2d")
    remote_want, remote_at = ref.own_pinned_on_node(nodes[remote], nbytes, "h2d")
    if local_at != node or remote_at != remote:
        pytest.skip(f"the check's own buffers landed on nodes {local_at} and {remote_at}, not "
                    f"{node} and {remote} (a node short of memory?): no comparison to trust")
    measured("numa_remote_h2d", label=f"pinned host to device from node {remote} (the GPU is "
             f"on node {node}), {size_text(nbytes)}", unit="GB/s", yours=remote_got,
             trusted=remote_want)
    gap, mine = local_want / remote_want, local_got / remote_got
    need = 1 + (gap - 1) / 2 if gap >= 1.1 else 1 / 1.1
    assert mine >= need, (
        f"your copies from node {node} (the GPU's) and node {remote} ran at {local_got:.4g} "
        f"and {remote_got:.4g} GB/s, a ratio of {mine:.2f}; the check's at {local_want:.4g} "
        f"and {remote_want:.4g} GB/s ({gap:.2f}), so at least {need:.2f} is wanted. Is the "
        "thread pinned to the node's CPUs before the pinned buffer is allocated and first "
        "written, and is each buffer allocated afresh (a pool hands back one placed earlier)?")
