"""The checks' own answers to the parts of an exercise that read the machine they run on.

A visible check file ships to the learner beside the exercise, so it holds no
answer to a part; where a check must compare the learner's reading of this
machine with one of its own (NVML's view of the GPUs, a timed peer copy), the
trusted side's reading lives here. Learner code cannot import it (the worker
refuses ``gpulab`` to the learner's cells); the modules are named after their
exercise.
"""

from __future__ import annotations

__all__: list[str] = []
