"""The sustained matmul probe: its window arithmetic on CPU, the probe itself on the GPU."""

from __future__ import annotations

import json

import pytest

from gpulab.probes.micro import Window, sustained_matmul, trace_rows
from gpulab.probes.model import ProbeResult
from gpulab.probes.nvml import Sample
from helpers.probes import cuda_device

FLOPS = 2.0 * 8192**3


def test_each_sample_belongs_to_the_window_that_holds_its_time() -> None:
    windows = [
        Window(0.0, 0.5, 40, 500.0),
        Window(0.5, 1.0, 40, 550.0),
        Window(1.0, 1.5, 40, 520.0),
    ]
    samples = [
        Sample(0.0, 1980, 400.0, 40),
        Sample(0.2, 1980, 600.0, 41),
        Sample(0.5, 1755, 700.0, 44),  # the second window's start is its own
        Sample(0.9, 1785, None, None),
        Sample(1.5, 1700, 690.0, 50),
    ]  # after the last
    rows = trace_rows(windows, samples, FLOPS)
    assert rows[0] == (0.5, round(40 * FLOPS / 0.5 / 1e12, 1), 1980, 500.0, 41)
    assert rows[1] == (1.0, round(40 * FLOPS / 0.55 / 1e12, 1), 1770, 700.0, 44)
    assert rows[2][2:] == (None, None, None)  # no sample inside: nothing made up


def test_without_samples_the_rows_still_hold_the_throughput() -> None:
    (row,) = trace_rows([Window(0.0, 0.6, 10, 600.0)], [], FLOPS)
    assert row == (0.6, round(10 * FLOPS / 0.6 / 1e12, 1), None, None, None)


def test_a_duration_that_is_not_positive_is_refused() -> None:
    with pytest.raises(ValueError, match="duration_s must be positive"):
        sustained_matmul(0)


@pytest.mark.gpu
def test_a_short_sustained_run_times_every_window_beside_nvml() -> None:
    cuda_device()
    result = sustained_matmul(duration_s=4.0)
    assert result.status == "ok", result.message
    (table,) = result.tables
    ends = [row[0] for row in table.rows]
    assert ends == sorted(ends) and ends[-1] >= 4.0 and len(ends) >= 6
    speeds = [row[1] for row in table.rows]
    assert min(speeds) > 0
    first, held = result.reading("first_tflops"), result.reading("sustained_tflops")
    assert first is not None and held is not None and first.value == speeds[0]
    # a window holds several 100 ms samples: every window has a clock and a power
    assert all(row[2] is not None and row[3] is not None for row in table.rows)
    assert result.telemetry is not None and result.telemetry.samples >= len(ends)
    data = json.loads(json.dumps(result.to_dict()))
    assert ProbeResult.from_dict(data).to_dict() == data
