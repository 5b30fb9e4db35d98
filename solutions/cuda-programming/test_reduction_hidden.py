"""Hidden checks of reduction: secret sizes, one block, and the edges of a loop round.

All cases run in one job of the kernel worker, as in the visible checks, and
are judged with the visible file's helpers and messages.
"""

from __future__ import annotations

import random
from typing import Any

import pytest

from gpulab.grading.checks.gpu import device_facts
from gpulab.grading.checks.pytest_plugin import visible_checks

visible = visible_checks(__file__)
TINY = (2, 3, 4, 5, 7, 8, 9, 255, 1023, 1025, 4097)


@pytest.fixture(scope="module")
def hidden_run(learner: Any) -> dict[str, Any]:
    draw = random.SystemRandom()
    sm_count = device_facts()["sm_count"]
    sizes = (*TINY, visible.secret_size(4097, 10**5), 2**27 + (draw.randrange(1, 2**20) | 1))
    cases = visible.learner_cases(learner, sizes)
    # One configuration, several n around the edges of its loop rounds: exactly one
    # round of float4s for the whole grid, one float more, three more, one float4 less.
    config = visible.learner_config(learner, 10**6, sm_count)
    per_round = 4 * config["blocks"] * config["threads"]
    for n in (per_round, per_round + 1, per_round + 3, per_round - 4, 2 * per_round + 2):
        cases.append({"label": f"n = {n:,} (around a whole round of your grid)", "n": n,
                      "config": config})
    n = visible.secret_size(10**5, 10**6)
    cases.append({"label": "a single block", "n": n, "config": {**config, "blocks": 1}})
    return visible.findings(learner, cases, None)


@pytest.mark.gpu
@pytest.mark.points(3)
def test_secret_sizes(hidden_run: dict[str, Any]) -> None:
    """Right on tiny sizes, a secret size and a secret size above 2^27."""
    for case in hidden_run["cases"][:len(TINY) + 2]:
        assert visible.passed(case), visible.describe(case)


@pytest.mark.gpu
@pytest.mark.points(2)
def test_round_edges(hidden_run: dict[str, Any]) -> None:
    """Right at, just past and just short of a whole round of your grid, and with one block."""
    for case in hidden_run["cases"][len(TINY) + 2:]:
        assert visible.passed(case), visible.describe(case)
