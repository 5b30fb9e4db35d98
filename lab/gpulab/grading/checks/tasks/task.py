"""One kernel task's run, written once: each task gives its own parts as a `Task`.

`run_task(source, params, task)` is every task's ``run``:

1. refuse a source that breaks the exercise's rules (`rules`), before
   anything compiles it;
2. with ``params["sanitize"]``, run the kernel under compute-sanitizer in
   another kernel worker (`sanitize.under_sanitizer`); with ``params["plain"]``
   (that worker), launch it once per case on inputs made on the host
   (`sanitize.plain_launches`, with the task's `Task.plain_args`);
3. else compile it, draw the task's random state from ``params["seed"]``
   (`Task.draws`) and run each case as `judge.repeat_case` says: every launch
   on fresh inputs (`Task.prepare`), launched (`Task.launch`), synchronized and
   judged (`Task.check`), beside the busy kernel where a case asks for it;
4. with ``params["timed"]``, time it against the task's reference
   (`Task.timed`).

It returns ``{"cases": [...]}`` (and ``"timed"``): per case its label, its size
(`Task.size`: ``n``, or ``M``, ``N`` and ``K``, or ``rows`` and ``cols``) and
what `judge.repeat_case` found. Cases and findings stay plain JSON-shaped dicts:
they are what the check files send and read, key by key.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from gpulab.grading.checks.tasks import judge, sanitize
from gpulab.grading.checks.tasks.common import compile_kernel, synchronize
from gpulab.grading.checks.tasks.rules import Rules, check_rules

__all__ = ["Case", "Findings", "Size", "Task", "run_task"]

Case = dict[str, Any]
"""A case as a check file sends it: ``label``, its size, ``config`` or ``configs``, ..."""
Findings = dict[str, Any]
"""What a launch or a timed run found, sent back to the check as JSON."""
Size = dict[str, int]
"""A case's size by name, in the order it is reported: ``{"n": ...}``, ``{"M", "N", "K"}``."""

Draws = TypeVar("Draws")
Work = TypeVar("Work")


@dataclass(frozen=True)
class Task(Generic[Draws, Work]):
    """What makes a kernel task itself; `run_task` does the rest."""

    name: str
    """The task's module in this package (``vector_add``): what the sanitizer's worker runs."""
    kernel: str
    """The kernel's name in the learner's source."""
    rules: Rules
    plain_args: Callable[[Any, Any, Case], tuple[Any, ...]]
    """``(numpy, rng, case)``: the kernel's arguments for a launch under compute-sanitizer."""
    size: Callable[[Case], Size]
    what: Callable[[Case, Size], str]
    """How the messages about a case name it."""
    draws: Callable[[int], Draws]
    """The task's random state for a seed: the generators `prepare` and `timed` draw from."""
    prepare: Callable[[Draws, Size], Work]
    """Fresh inputs, their expected result and NaN-filled outputs for one launch."""
    launch: Callable[[Any, Any, Work, str], None]
    """``(kernel, config, work, what)``: the kernel launched once on `work`."""
    check: Callable[[Work], Findings]
    """The launch's output judged: findings with ``"ok"``."""
    timed: Callable[[Any, Draws, dict[str, Any]], Findings]
    """``(kernel, draws, params["timed"])``: the timed run against the task's reference."""


def run_task(source: str, params: dict[str, Any], task: Task[Any, Any]) -> Findings:
    check_rules(source, task.rules)  # before anything compiles it
    if "sanitize" in params:
        return sanitize.under_sanitizer(task.name, source, params)
    if params.get("plain"):
        return sanitize.plain_launches(
            compile_kernel(source, task.kernel, ("-lineinfo",)),
            params["cases"],
            int(params["seed"]),
            task.plain_args,
        )
    kernel = compile_kernel(source, task.kernel)
    draws = task.draws(int(params["seed"]))
    busy = judge.Busy() if any(case.get("busy") for case in params["cases"]) else None
    out: Findings = {"cases": []}
    for case in params["cases"]:
        size = task.size(case)
        what = task.what(case, size)

        def once(config: Any, beside: bool, size: Size = size, what: str = what) -> Findings:
            work = task.prepare(draws, size)
            if beside and busy is not None:
                busy.start()
            task.launch(kernel, config, work, what)
            synchronize(what)
            return {"config": config, **task.check(work)}

        found = judge.repeat_case(case, once, busy)
        out["cases"].append({"label": case.get("label", ""), **size, **found})
    timed = params.get("timed")
    if timed:
        out["timed"] = task.timed(kernel, draws, timed)
    return out
