"""Fresh inputs for hidden checks: drawn anew on every run, replayable on demand.

A learner's code sees every argument a hidden check passes it, so inputs that
stay the same from run to run can be learnt and special-cased. A hidden check
file draws its inputs instead, from `rng(check)`: the run's seed (a new one in
every checks process, or ``GPULAB_CHECK_SEED`` to replay a run) and the
check's name decide them, so a failure can be reproduced from the seed that
every message about drawn inputs carries (`SEEN`, `telling`).
"""

from __future__ import annotations

import contextlib
import random
import secrets
from collections.abc import Iterator

from gpulab.environment import CHECK_SEED
from gpulab.grading.checks.learner import LearnerError

__all__ = ["ENV", "SEED", "SEEN", "new_seed", "rng", "telling"]

ENV = CHECK_SEED.name


def new_seed() -> int:
    """``GPULAB_CHECK_SEED`` where it is set to a number, else 32 fresh random bits."""
    given = (CHECK_SEED.get() or "").strip()
    return int(given) if given.isdigit() else secrets.randbits(32)


SEED = new_seed()
SEEN = f"(seed {SEED})"
"""The words that end a message about drawn inputs."""


def rng(check: str) -> random.Random:
    """The random inputs of one check: the run's seed and the check's name decide them."""
    return random.Random(f"{SEED}:{check}")


@contextlib.contextmanager
def telling(about: str) -> Iterator[None]:
    """Where the learner's code fails on drawn inputs, say which inputs, and the seed."""
    try:
        yield
    except LearnerError as exc:
        if exc.raised_as(NotImplementedError):
            raise  # not written yet: nothing to explain
        raise LearnerError(f"{exc}\n({about} {SEEN})", exc.kind, exc.raised) from None
