"""Hidden checks of the event-timing exercise: inputs the notebook does not show.

`median_ms` meets fresh skewed timings of random length, odd and even, with slow
outliers; `achieved_gbs` meets fresh byte counts and times over many orders of
magnitude. On a GPU, `time_events`, `time_host_synced` and `time_host_naive` time
the kernel on buffers of another size (1/24 to 1/64 of the free memory each) and
with other numbers of launches and repeats, against the check's own timing of the
same. The inputs vary per run: each check draws them from the run's seed
(`gpulab.grading.checks.draws`; GPULAB_CHECK_SEED=<n> replays a run), and its failure
messages name it.
"""

from __future__ import annotations

import statistics
from types import ModuleType
from typing import Any

import pytest

from gpulab.grading.checks.draws import SEEN, rng, telling
from gpulab.grading.checks.pytest_plugin import visible_checks
from gpulab.grading.checks.reference.event_timing import (
    elements,
    fresh_factor,
    own_events_ms,
    own_host_synced_ms,
)


def _visible() -> ModuleType:
    """The visible checks' module (one copy of the helpers for both files)."""
    return visible_checks(__file__)


_V = _visible()
judge_median, judge_gbs, positive = _V.judge_median, _V.judge_gbs, _V.positive
judge_events, judge_naive, judge_synced = _V.judge_events, _V.judge_naive, _V.judge_synced


def skewed_timings(draw: Any) -> list[float]:
    """Timings as a GPU gives them: close to a typical time, and a few slow outliers."""
    typical = draw.uniform(0.005, 50.0)
    count = draw.randint(3, 40)
    samples = [round(typical * draw.uniform(0.97, 1.05), 6) for _ in range(count)]
    for _ in range(draw.randint(1, max(1, count // 5))):
        samples[draw.randrange(count)] = round(typical * draw.uniform(3.0, 40.0), 6)
    return samples


@pytest.mark.points(2)
def test_median_ms_on_fresh_timings(learner: Any) -> None:
    """median_ms on fresh skewed timings of random length, odd and even, with outliers"""
    draw = rng("test_median_ms_on_fresh_timings")
    problems = []
    for case in range(8):
        samples = skewed_timings(draw)
        if case < 2:  # one odd and one even count, whatever else is drawn
            samples = samples[: len(samples) - (len(samples) % 2 == case % 2)] or samples
        with telling(f"on drawn timings {samples!r}"):
            got = learner.call("median_ms", samples)
        want = statistics.median(samples)
        why = judge_median(got, samples, want, f"{len(samples)} drawn timings")
        if why:
            problems.append(f"{why} {SEEN}")
    assert not problems, "\n".join(problems)


@pytest.mark.points(2)
def test_achieved_gbs_on_fresh_figures(learner: Any) -> None:
    """achieved_gbs on fresh byte counts (reads and writes unequal) and times"""
    draw = rng("test_achieved_gbs_on_fresh_figures")
    problems = []
    for _ in range(8):
        read = float(draw.randrange(1, 10**11))
        written = float(draw.choice([0, draw.randrange(1, 10**11)]))
        ms = 10 ** draw.uniform(-3, 3)
        call = f"achieved_gbs({read:g}, {written:g}, {ms:.6g})"
        with telling(f"in {call}"):
            got = learner.call("achieved_gbs", read, written, ms)
        why = judge_gbs(got, (read + written) / (ms / 1e3) / 1e9, call)
        if why:
            problems.append(f"{why} {SEEN}")
    assert not problems, "\n".join(problems)


def other_size(check: str) -> int:
    """Floats per buffer for a hidden GPU check: 1/24 to 1/64 of the free memory each."""
    return elements(rng(check).randint(24, 64))


@pytest.mark.gpu
@pytest.mark.points(2)
def test_time_events_other_size_and_counts(learner: Any) -> None:
    """time_events on buffers of another size, with other numbers of launches and repeats"""
    draw = rng("test_time_events_other_size_and_counts")
    n = other_size("test_time_events_other_size_and_counts")
    launches, repeats = draw.randint(5, 30), draw.randint(3, 7)
    call = f"time_events(factor, {n}, {launches}, {repeats})"
    got = positive(learner.call("time_events", fresh_factor(), n, launches, repeats), call)
    why = judge_events(got, own_events_ms(n, launches, repeats), call, launches)
    assert why is None, f"{why} {SEEN}"


@pytest.mark.gpu
@pytest.mark.points(1)
def test_time_host_synced_other_size(learner: Any) -> None:
    """time_host_synced on buffers of another size, with other numbers of launches"""
    draw = rng("test_time_host_synced_other_size")
    n = other_size("test_time_host_synced_other_size")
    launches, repeats = draw.randint(10, 30), draw.randint(3, 7)
    call = f"time_host_synced(factor, {n}, {launches}, {repeats})"
    got = positive(learner.call("time_host_synced", fresh_factor(), n, launches, repeats), call)
    why = judge_synced(got, own_host_synced_ms(n, launches, repeats), call, launches)
    assert why is None, f"{why} {SEEN}"


@pytest.mark.gpu
@pytest.mark.points(1)
def test_time_host_naive_other_size(learner: Any) -> None:
    """time_host_naive on buffers of another size still reads the launch call only"""
    n = other_size("test_time_host_naive_other_size")
    repeats = rng("test_time_host_naive_other_size").randint(9, 25)
    call = f"time_host_naive(factor, {n}, {repeats})"
    got = positive(learner.call("time_host_naive", fresh_factor(), n, repeats), call)
    why = judge_naive(got, own_events_ms(n, 20, 3), call)
    assert why is None, f"{why} {SEEN}"
