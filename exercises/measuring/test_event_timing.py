"""Checks of the event-timing exercise (lesson: Measuring GPU performance).

Part 1 needs no GPU: `median_ms` gets timings with outliers, an even count and
values no timing can have; `achieved_gbs` gets byte counts and times whose
bandwidth is worked out below by hand. Parts 2 to 4 time the setup's kernel on
this GPU, on buffers of `size()` floats each (1/32 of the GPU's free memory each,
the rule of the setup's `buffer_elements()`), always with a factor your process
has never launched. Right after each of your functions returns, the check times
the same kernel, launched the same way on buffers of the same size, in its own
process (`gpulab.grading.checks.reference.event_timing`: CUDA events after a warm-up, a
host timer with and without synchronisation, the first launch of a new kernel),
records both figures beside your prediction (`measured`), and compares them.
"""

from __future__ import annotations

import functools
import math
from typing import Any

import pytest

from gpulab.grading.checks.learner import LearnerError
from gpulab.grading.checks.reference.event_timing import (
    elements,
    fresh_factor,
    gbs,
    own_cold_ms,
    own_events_ms,
    own_host_naive_ms,
    own_host_synced_ms,
)

EVENTS_TOLERANCE = 0.20  # time_events against the check's own events
SYNCED_TOLERANCE = 0.25  # time_host_synced against the check's own synchronised host timer
GBS_TOLERANCE = 0.20  # compare()'s bandwidth against the check's (recorded)
NAIVE_BELOW = 0.25  # time_host_naive must stay below this share of the event time
COLD_AT_LEAST = 0.4  # time_cold against the check's own first launch of a new kernel,
COLD_OVER_WARM = 2.0  # or against its warm launch, whichever asks less
LAUNCHES, REPEATS = 20, 5

HOST_TIMER = (
    "a host timer around an asynchronous launch: a launch only queues the kernel and "
    "returns, so a clock read before the GPU has run it measures the queueing, not the "
    "kernel"
)
FIRST_LAUNCH = (
    "the kernel's first launch: CuPy compiles it with NVRTC and loads it then, while the GPU "
    "waits between your events"
)


# -- helpers (pure: they judge figures, so that tests can try them without a GPU) ----------
@functools.cache
def size() -> int:
    """Floats per buffer for this run: read once from the GPU's free memory."""
    return elements()


def close(a: float, b: float, rel: float = 1e-9) -> bool:
    return abs(a - b) <= rel * max(1.0, abs(a), abs(b))


def a_number(got: Any) -> bool:
    return isinstance(got, int | float) and not isinstance(got, bool) and math.isfinite(got)


def positive(got: Any, call: str, unit: str = "milliseconds") -> float:
    assert a_number(got) and got > 0, (
        f"{call} returned {got!r:.80}: return {unit}, a positive number"
    )
    return float(got)


def judge_median(got: Any, samples: list[float], want: float, what: str) -> str | None:
    """None if `got` is the median `want` of `samples`, else what it looks like."""
    said = f"median_ms({samples!r}) ({what}) returned {got!r:.80}, want {want!r}"
    if not a_number(got):
        return f"{said}: return a number of milliseconds"
    if close(got, want):
        return None
    ordered = sorted(samples)
    half = len(ordered) // 2
    if close(got, sum(samples) / len(samples)):
        return (
            f"{said}: that is the mean. The slow outlier ({max(samples)!r}) pulls the mean "
            "up; the median, the middle of the sorted timings, stays with the typical run"
        )
    if len(ordered) % 2 == 0 and (close(got, ordered[half]) or close(got, ordered[half - 1])):
        return f"{said}: for an even count, the median is the mean of the two middle values"
    if close(got, ordered[0]):
        return f"{said}: that is the minimum, a useful figure too, but not the median"
    if close(got, samples[len(samples) // 2]):
        return f"{said}: that is the middle of the list as given: sort the timings first"
    return said


def judge_gbs(got: Any, want: float, call: str, tolerance: float = 0.01) -> str | None:
    """None if `got` GB/s is within `tolerance` of `want`, else what the difference looks
    like."""
    if not a_number(got) or got <= 0:
        return f"{call} returned {got!r:.80}: return GB/s, a positive number"
    ratio = got / want
    if abs(ratio - 1) <= tolerance:
        return None
    said = f"{call} says {got:.6g} GB/s, want {want:.6g} ({ratio:.3g} times as much)"
    if 1.8 < ratio < 2.2:
        return (
            f"{said}: bytes counted twice. A byte the kernel reads is counted once, a byte "
            "it writes once: bytes read + bytes written, no more"
        )
    if 0.45 < ratio < 0.55:
        return f"{said}: half the traffic. Count the bytes read and the bytes written"
    if 0.9 < ratio < 0.96 or 1.04 < ratio < 1.1:
        return f"{said}: GB are decimal, 1e9 bytes; 2**30 bytes is a GiB"
    if 500 < ratio < 2000 or 0.0005 < ratio < 0.002:
        return f"{said}: a factor of 1000 is a unit: ms is 1e-3 s, and GB/s is 1e9 bytes/s"
    return said


def raised_value_error(learner: Any, function: str, *args: Any) -> tuple[bool, str]:
    """Did the call raise ValueError, judged by the exception's type (not its message)? And
    what it did, in words."""
    try:
        got = learner.call(function, *args)
    except LearnerError as exc:
        if exc.raised_as(NotImplementedError):
            raise
        first = str(exc).splitlines()[0]  # "while calling f(): TypeError: message"
        did = f"raised {first.split(': ', 1)[-1]}"
        if exc.raised_as(ValueError):
            return True, did
        return False, did + ", which is not a ValueError (its type decides, not its message)"
    return False, f"returned {got!r:.80}"


def judge_events(got: float, want: float, call: str, launches: int) -> str | None:
    """None if `got` ms per launch agrees with the check's event time `want`."""
    ratio = got / want
    if abs(ratio - 1) <= EVENTS_TOLERANCE:
        return None
    said = (
        f"{call} says {got:.4g} ms per launch, but the check's own CUDA events, around the "
        f"same kernel on buffers of the same size, measured {want:.4g} ms just now "
        f"({ratio:.3g} times as much)"
    )
    if 0.0005 < ratio < 0.002:
        return f"{said}: cp.cuda.get_elapsed_time gives milliseconds already"
    if ratio < 0.25:
        return (
            f"{said}: that looks like {HOST_TIMER}. Time between two events recorded on the "
            "stream around the launches, and read them after end.synchronize()"
        )
    if launches > 1 and abs(ratio / launches - 1) <= EVENTS_TOLERANCE:
        return f"{said}: that is the time of all {launches} launches; return it per launch"
    if ratio > 1:
        return (
            f"{said}. Something besides the kernel ran between your events: {FIRST_LAUNCH} "
            "(warm up before recording the start event), an allocation, a synchronisation "
            "or a print"
        )
    return said


def judge_naive(got: float, events: float, call: str) -> str | None:
    """None if the naive host timing is far below the kernel's event time, as it must be."""
    if got < NAIVE_BELOW * events:
        return None
    return (
        f"{call} says {got:.4g} ms, {got / events:.2g} of the kernel's event time "
        f"({events:.4g} ms, the check's own timing): more than {NAIVE_BELOW:g} of it. Part 3's "
        "naive timer is a host timer around an asynchronous launch on purpose: the launch "
        "only queues the kernel and returns, so the timer reads the launch call, "
        "microseconds, whatever the kernel. Yours waited for the GPU: a synchronisation "
        "inside the timed region (or a hidden one: .get(), .item(), printing a GPU array), "
        "or the first launch's compilation, timed without a warm-up"
    )


def judge_synced(got: float, want: float, call: str, launches: int) -> str | None:
    """None if the synchronised host timing agrees with the check's own."""
    ratio = got / want
    if abs(ratio - 1) <= SYNCED_TOLERANCE:
        return None
    said = (
        f"{call} says {got:.4g} ms per launch, but the check's own host timer, synchronised "
        f"before and after the same launches, measured {want:.4g} ms just now ({ratio:.3g} "
        "times as much)"
    )
    if ratio < 0.25:
        return (
            f"{said}: that is {HOST_TIMER}. Synchronise (cp.cuda.Device().synchronize()) "
            "after the launches, before you read the clock the second time"
        )
    if launches > 1 and abs(ratio / launches - 1) <= SYNCED_TOLERANCE:
        return f"{said}: that is the time of all {launches} launches; return it per launch"
    if 500 < ratio < 2000:
        return f"{said}: perf_counter counts seconds; return milliseconds"
    if ratio > 1:
        return (
            f"{said}: was earlier work still running when you started the clock (synchronise "
            f"first), or did the first launch's compilation count (warm up)?"
        )
    return said


def judge_cold(got: float, cold: float, events: float, call: str) -> str | None:
    """None if the first launch's timing holds what the check's own first launch holds: at
    least COLD_AT_LEAST of it, or (where compiling is slow here) twice a warm launch."""
    if got >= min(COLD_AT_LEAST * cold, COLD_OVER_WARM * events):
        return None
    return (
        f"{call} says {got:.4g} ms, but the check's own first launch of a new kernel took "
        f"{cold:.4g} ms and a warm launch {events:.4g} ms: yours looks like a warm launch. "
        f"The figure must hold {FIRST_LAUNCH}: no warm-up, one pair of events around the "
        "very first launch of the factor you are given"
    )


# -- part 1: median_ms and achieved_gbs ------------------------------------------------
MEDIANS = [
    ([0.98, 1.0, 1.01, 1.02, 9.7], 1.01, "five timings, one slow outlier"),
    ([1.25, 1.5, 1.0, 1.75], 1.375, "four timings, not sorted"),
    ([0.31, 0.3, 7.9, 0.29, 0.3, 12.4], 0.305, "six timings, two outliers"),
    ([2.5], 2.5, "one timing"),
]


@pytest.mark.points(2)
def test_median_ms(learner: Any) -> None:
    """median_ms: the middle of the sorted timings, the mean of the middle two for an even
    count, whatever the outliers"""
    problems = [
        why
        for samples, want, what in MEDIANS
        if (why := judge_median(learner.call("median_ms", samples), samples, want, what))
    ]
    assert not problems, "\n".join(problems)


@pytest.mark.points(1)
def test_median_ms_refuses_what_is_no_timing(learner: Any) -> None:
    """median_ms raises ValueError for no timings, NaN, an infinity and a negative time"""
    for samples, what in (
        ([], "an empty list"),
        ([1.0, math.nan, 1.2], "a NaN among the timings"),
        ([1.0, math.inf], "an infinity"),
        ([1.0, -0.5, 1.1], "a negative time"),
    ):
        refused, did = raised_value_error(learner, "median_ms", samples)
        assert refused, (
            f"median_ms on {what} ({samples!r}) {did}: a summary of no timings, or of values "
            "no timing can have, is no figure to report; raise ValueError saying why"
        )


GBS_CASES = [
    (2e9, 2e9, 1.25, 3200.0, "2 GB read and 2 GB written in 1.25 ms"),
    (8 * 2**26, 4 * 2**26, 0.25, 3221.225472, "the lesson's vector add: 2**26 floats, 250 µs"),
    (3e9, 0.0, 2.0, 1500.0, "a kernel that only reads: 3 GB in 2 ms"),
    (1e6, 3e6, 0.004, 1000.0, "1 MB read and 3 MB written in 4 µs"),
]


@pytest.mark.points(2)
def test_achieved_gbs(learner: Any) -> None:
    """achieved_gbs: bytes read + bytes written, each counted once, per second, in 1e9"""
    problems = []
    for read, written, ms, want, what in GBS_CASES:
        call = f"achieved_gbs({read:g}, {written:g}, {ms:g}) ({what})"
        why = judge_gbs(learner.call("achieved_gbs", read, written, ms), want, call)
        if why:
            problems.append(why)
    assert not problems, "\n".join(problems)


@pytest.mark.points(1)
def test_achieved_gbs_refuses_what_is_no_time(learner: Any) -> None:
    """achieved_gbs raises ValueError for a time of 0, below 0, NaN or infinite, and for a
    negative byte count"""
    for args, what in (
        ((1e9, 1e9, 0.0), "a time of 0 ms"),
        ((1e9, 1e9, -1.0), "a negative time"),
        ((1e9, 1e9, math.nan), "a time that is NaN"),
        ((1e9, 1e9, math.inf), "an infinite time"),
        ((-1e9, 1e9, 1.0), "a negative byte count"),
        ((1e9, math.nan, 1.0), "a byte count that is NaN"),
    ):
        refused, did = raised_value_error(learner, "achieved_gbs", *args)
        assert refused, (
            f"achieved_gbs{args!r} ({what}) {did}: a bandwidth from it would be a number "
            "that means nothing; raise ValueError saying why"
        )


# -- part 2: time_events -----------------------------------------------------------------
def label(what: str, n: int) -> str:
    return f"{what}, {n:,} floats a buffer"


@pytest.mark.gpu
@pytest.mark.points(3)
def test_time_events(learner: Any, measured: Any) -> None:
    """time_events(factor, n, 20, 5) agrees within 20 % with the check's own CUDA events"""
    n = size()
    call = f"time_events(factor, {n}, {LAUNCHES}, {REPEATS})"
    got = positive(learner.call("time_events", fresh_factor(), n, LAUNCHES, REPEATS), call)
    want = own_events_ms(n, LAUNCHES, REPEATS)
    measured(
        "events_ms",
        label=label("CUDA events, ms per launch, 20 launches a timing, median of 5", n),
        unit="ms",
        yours=got,
        trusted=want,
        tolerance=EVENTS_TOLERANCE,
    )
    why = judge_events(got, want, call, LAUNCHES)
    assert why is None, why


@pytest.mark.gpu
@pytest.mark.points(2)
def test_time_events_on_a_kernel_never_launched(learner: Any, measured: Any) -> None:
    """time_events with a factor never launched, 2 launches and one timing: only a warm-up
    keeps the compilation out"""
    n = size()
    call = f"time_events(new factor, {n}, 2, 1)"
    got = positive(learner.call("time_events", fresh_factor(), n, 2, 1), call)
    want = own_events_ms(n, 2, 3)
    measured(
        "events_new_kernel_ms",
        label=label("CUDA events on a kernel never launched before, 2 launches, one timing", n),
        unit="ms",
        yours=got,
        trusted=want,
        tolerance=EVENTS_TOLERANCE,
    )
    why = judge_events(got, want, call, 2)
    if why and got > (1 + EVENTS_TOLERANCE) * want:
        why = (
            f"{call} says {got:.4g} ms per launch, but the check's own CUDA events on the same "
            f"kernel, warmed up, measured {want:.4g} ms just now ({got / want:.3g} times as "
            "much). This call asked for one timing of 2 launches with a factor your process "
            f"had never launched, so no median can hide {FIRST_LAUNCH}. Warm up: launch a few "
            "times before you record the start event"
        )
    assert why is None, why


# -- part 3: host timers -----------------------------------------------------------------
@pytest.mark.gpu
@pytest.mark.points(2)
def test_time_host_naive(learner: Any, measured: Any) -> None:
    """time_host_naive reads the launch call only: below a quarter of the kernel's event time"""
    n = size()
    call = f"time_host_naive(factor, {n}, 15)"
    got = positive(learner.call("time_host_naive", fresh_factor(), n, 15), call)
    naive = own_host_naive_ms(n, 15)
    events = own_events_ms(n, LAUNCHES, 3)
    measured(
        "naive_ms",
        label=label("host timer around one launch, no synchronisation, ms", n),
        unit="ms",
        yours=got,
        trusted=naive,
    )
    why = judge_naive(got, events, call)
    assert why is None, why


@pytest.mark.gpu
@pytest.mark.points(2)
def test_time_host_synced(learner: Any, measured: Any) -> None:
    """time_host_synced(factor, n, 20, 5) agrees within 25 % with the check's own
    synchronised host timing"""
    n = size()
    call = f"time_host_synced(factor, {n}, {LAUNCHES}, {REPEATS})"
    got = positive(learner.call("time_host_synced", fresh_factor(), n, LAUNCHES, REPEATS), call)
    want = own_host_synced_ms(n, LAUNCHES, REPEATS)
    measured(
        "synced_ms",
        label=label("host timer with synchronisation, ms per launch, 20 launches", n),
        unit="ms",
        yours=got,
        trusted=want,
        tolerance=SYNCED_TOLERANCE,
    )
    why = judge_synced(got, want, call, LAUNCHES)
    assert why is None, why


# -- part 4: time_cold and compare ---------------------------------------------------------
@pytest.mark.gpu
@pytest.mark.points(2)
def test_time_cold(learner: Any, measured: Any) -> None:
    """time_cold times the first launch of a new kernel: at least 0.4 of the check's own,
    or twice a warm launch"""
    n = size()
    call = f"time_cold(new factor, {n})"
    got = positive(learner.call("time_cold", fresh_factor(), n), call)
    cold = own_cold_ms(n)
    events = own_events_ms(n, LAUNCHES, 3)
    measured(
        "cold_ms",
        label=label("CUDA events around the first launch of a new kernel, ms", n),
        unit="ms",
        yours=got,
        trusted=cold,
    )
    why = judge_cold(got, cold, events, call)
    assert why is None, why


KEYS = ("naive_ms", "synced_ms", "events_ms", "cold_ms", "events_gbs")


@pytest.mark.gpu
@pytest.mark.points(3)
def test_compare(learner: Any, measured: Any) -> None:
    """compare(n): the four ways side by side, each as the check measures it, and the event
    time's bandwidth, each byte counted once"""
    n = size()
    got = learner.call("compare", n)
    assert isinstance(got, dict) and all(key in got for key in KEYS), (
        f"compare({n}) returned {got!r:.200}: want a dict with the keys {', '.join(KEYS)}"
    )
    for key in KEYS:
        positive(got[key], f"compare({n})[{key!r}]", "GB/s" if key == "events_gbs" else "ms")
    events = own_events_ms(n, LAUNCHES, REPEATS)
    trusted = {
        "naive_ms": own_host_naive_ms(n, LAUNCHES),
        "synced_ms": own_host_synced_ms(n, LAUNCHES, REPEATS),
        "events_ms": events,
        "cold_ms": own_cold_ms(n),
        "events_gbs": gbs(n, events),
    }
    labels = {
        "naive_ms": "host timer around one launch, no synchronisation, ms",
        "synced_ms": "host timer with synchronisation, ms per launch",
        "events_ms": "CUDA events, ms per launch",
        "cold_ms": "CUDA events around the first launch of a new kernel, ms",
        "events_gbs": "bandwidth of the event time, bytes read + written",
    }
    tolerances = {"synced_ms": SYNCED_TOLERANCE, "events_ms": EVENTS_TOLERANCE}
    for key in KEYS:
        measured(
            key,
            label=label(f"compare(): {labels[key]}", n),
            unit="GB/s" if key == "events_gbs" else "ms",
            yours=got[key],
            trusted=trusted[key],
            tolerance=GBS_TOLERANCE if key == "events_gbs" else tolerances.get(key),
        )
    mine = f"compare({n})"
    found = [
        judge_events(got["events_ms"], events, f"{mine}['events_ms']", LAUNCHES),
        judge_naive(got["naive_ms"], events, f"{mine}['naive_ms']"),
        judge_synced(got["synced_ms"], trusted["synced_ms"], f"{mine}['synced_ms']", LAUNCHES),
        judge_cold(got["cold_ms"], trusted["cold_ms"], events, f"{mine}['cold_ms']"),
        judge_gbs(  # the bandwidth of the learner's own event time: the bytes alone differ
            got["events_gbs"],
            gbs(n, got["events_ms"]),
            f"{mine}['events_gbs'] (the bandwidth of your own events_ms)",
            0.05,
        ),
    ]
    problems = [why for why in found if why]
    assert not problems, "\n".join(problems)
