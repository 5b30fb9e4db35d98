"""Hidden checks of vector-add: secret sizes, odd block sizes, a one-warp grid."""

from __future__ import annotations

import random
from typing import Any

import pytest

from gpulab.grading.checks.pytest_plugin import visible_checks

visible = visible_checks(__file__)


@pytest.mark.gpu
@pytest.mark.points(3)
def test_secret_sizes(learner: Any) -> None:
    """Right on secret sizes, with your configuration and with odd grids of ours."""
    draw = random.SystemRandom()
    sizes = (draw.randrange(2, 4096) | 1, draw.randrange(10**5, 10**7) | 1,
             2**27 + draw.randrange(1, 2**20))
    cases = visible.learner_cases(learner, sizes)
    n = draw.randrange(10**4, 10**6) | 1
    cases += [{"label": "one warp for the whole array", "n": n,
               "config": {"blocks": 1, "threads": 32}},
              {"label": "blocks of 96 threads", "n": n, "config": {"blocks": 7, "threads": 96}}]
    for case in visible.findings(learner, cases, None)["cases"]:
        assert visible.passed(case), visible.describe(case)
