"""Why a learner's code gave no answer: the one vocabulary every process of a check uses.

The learner's worker (`gpulab.grading.checks.learner`), the kernel worker and its
tasks (`gpulab.grading.checks.gpu`, `gpulab.grading.checks.tasks`), the pytest plugin's
report (`gpulab.grading.checks.runner`) and the verdict (`gpulab.grading.gradebook.verdict`)
name a failure with these words and no others; the words cross process
boundaries as they are, and a word outside them is refused where it is read
(`failure_named`), never guessed at.

- "error": the learner's code raised, or answered with something unusable;
- "invalid": the notebook's answer cells are not there to run;
- "timeout": the code ran past its time limit and was stopped;
- "busy": the grading machine kept the code from the CPU for several times its
  time limit (`gpulab.grading.sandbox.jobtime`): no verdict, the check is to run again;
- "crashed": the process running it ended (exit, signal, memory limit);
- "gpu-fault": the learner's kernel failed on the GPU;
- "source", "rule", "compile", "missing", "config", "launch": a kernel that is
  not CUDA C text, breaks a rule of kernel answers (refused before compiling),
  does not compile, has no kernel of the name asked, has an unusable launch
  configuration, or that CUDA refused to launch.

An exercise's kind (`gpulab.grading.gradebook.verdict.Kind`) takes the failures in
`DECISIVE` by the same name; "busy" makes it ``not-run``; the others make a
wrong answer.

The checks' report is defined here once, with msgspec: `CheckResult` per check
and `PluginReport` around them. The pytest plugin encodes it
(`encode_report`), the runner decodes it (`decode_report`), and decoding
refuses a field missing, one of the wrong type, a word outside the vocabulary
or an unknown field, saying where (``$.checks[3].kind``), never guessing.
"""

from __future__ import annotations

from typing import Literal, get_args

import msgspec

from gpulab.course.progress import Measurement

__all__ = [
    "DECISIVE",
    "FAILURES",
    "MAX_MEASUREMENTS",
    "CheckResult",
    "Decisive",
    "Failure",
    "Outcome",
    "PluginReport",
    "decode_report",
    "encodable",
    "encode_report",
    "failure_named",
]

Failure = Literal[
    "error",
    "invalid",
    "timeout",
    "busy",
    "crashed",
    "gpu-fault",
    "source",
    "rule",
    "compile",
    "missing",
    "config",
    "launch",
]
FAILURES: tuple[Failure, ...] = get_args(Failure)

Decisive = Literal["invalid", "gpu-fault", "timeout", "crashed"]
"""Failures that are also an exercise's kind (`gpulab.grading.gradebook.verdict.Kind`)."""
DECISIVE: tuple[Decisive, ...] = get_args(Decisive)
"""Failures that decide an exercise's kind, the first found in this order wins."""


def failure_named(word: object) -> Failure:
    """`word` as a Failure; ValueError when it is not one."""
    for failure in FAILURES:
        if word == failure:
            return failure
    raise ValueError(f"not a failure gpulab knows: {word!r:.40} (known: {', '.join(FAILURES)})")


Outcome = Literal["passed", "failed", "skipped"]

MAX_MEASUREMENTS = 32
"""The most figures one check records: a check's own list, never the learner's."""


class CheckResult(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """One check: did it pass, what it is worth, and what it says."""

    check: str
    title: str
    outcome: Outcome
    points: float
    message: str = ""
    hidden: bool = False
    needs_gpu: bool = False  # skipped because this machine has no usable NVIDIA GPU
    kind: Failure | None = None  # why the learner's code gave no answer (LearnerError.kind)
    # what the check measured beside the learner (the `measured` fixture), in its order
    measurements: list[Measurement] = msgspec.field(default_factory=list)

    @property
    def earned(self) -> float:
        return self.points if self.outcome == "passed" else 0.0


class PluginReport(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """What the pytest plugin reports: every check, and how many pytest collected (fewer
    results than that means a run that stopped part way)."""

    collected: int
    checks: list[CheckResult]


def encode_report(report: PluginReport) -> bytes:
    return msgspec.json.encode(report)


def encodable(text: str) -> str:
    """`text` with each lone surrogate (which no UTF-8 can carry; a learner's message may
    hold one) as U+FFFD, so the report can be written."""
    return "".join("\ufffd" if "\ud800" <= ch <= "\udfff" else ch for ch in text)


def decode_report(data: bytes) -> PluginReport:
    """The report in `data`; ValueError (msgspec's, naming the field) for anything else."""
    return msgspec.json.decode(data, type=PluginReport)
