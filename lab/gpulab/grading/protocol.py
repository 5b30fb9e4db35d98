"""Why a learner's code gave no answer: the one vocabulary every process of a check uses.

The learner's worker (`gpulab.grading.learner`), the kernel worker and its
tasks (`gpulab.grading.gpu`, `gpulab.grading.tasks`), the pytest plugin's
report (`gpulab.grading.runner`) and the verdict (`gpulab.grading.verdict`)
name a failure with these words and no others; the words cross process
boundaries as they are, and a word outside them is refused where it is read
(`failure_named`), never guessed at.

- "error": the learner's code raised, or answered with something unusable;
- "invalid": the notebook's answer cells are not there to run;
- "timeout": the code ran past its time limit and was stopped;
- "crashed": the process running it ended (exit, signal, memory limit);
- "gpu-fault": the learner's kernel failed on the GPU;
- "source", "rule", "compile", "missing", "config", "launch": a kernel that is
  not CUDA C text, breaks a rule of kernel answers (refused before compiling),
  does not compile, has no kernel of the name asked, has an unusable launch
  configuration, or that CUDA refused to launch.

An exercise's kind (`gpulab.grading.verdict.Kind`) takes the failures in
`DECISIVE` by the same name; the others make a wrong answer.
"""

from __future__ import annotations

from typing import Literal, get_args

__all__ = ["DECISIVE", "FAILURES", "Decisive", "Failure", "failure_named"]

Failure = Literal["error", "invalid", "timeout", "crashed", "gpu-fault", "source", "rule",
                  "compile", "missing", "config", "launch"]
FAILURES: tuple[Failure, ...] = get_args(Failure)

Decisive = Literal["invalid", "gpu-fault", "timeout", "crashed"]
"""Failures that are also an exercise's kind (`gpulab.grading.verdict.Kind`)."""
DECISIVE: tuple[Decisive, ...] = get_args(Decisive)
"""Failures that decide an exercise's kind, the first found in this order wins."""


def failure_named(word: object) -> Failure:
    """`word` as a Failure; ValueError when it is not one."""
    for failure in FAILURES:
        if word == failure:
            return failure
    raise ValueError(f"not a failure gpulab knows: {word!r:.40} (known: {', '.join(FAILURES)})")
