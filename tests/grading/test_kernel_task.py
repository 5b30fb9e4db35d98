"""The one kernel-task runner (`tasks.task.run_task`), on a task made of recorders: no GPU.

What each task does on a GPU (its inputs, launch, check and timed run) is tested on the
device (test_kernel_answers.py, test_wrong_kernel_answers.py); here, that the runner calls
those parts in the order a careful judge needs, and reports what they found as before.
"""

from __future__ import annotations

import importlib
from typing import Any

import pytest

from gpulab.grading.checks.tasks import task as task_module
from gpulab.grading.checks.tasks.rules import Rules
from gpulab.grading.checks.tasks.task import Task, run_task

TASKS = ("copy_floats", "vector_add", "sgemm", "transpose", "reduce_sum")


class Recorder:
    def __init__(self) -> None:
        self.calls: list[tuple[Any, ...]] = []
        self.made = 0

    def prepare(self, draws: str, size: dict[str, int]) -> str:
        self.made += 1
        self.calls.append(("prepare", draws, size))
        return f"work{self.made}"

    def launch(self, kernel: str, config: Any, work: str, what: str) -> None:
        self.calls.append(("launch", kernel, config, work, what))

    def check(self, work: str) -> dict[str, Any]:
        self.calls.append(("check", work))
        return {"ok": work != "work3", "work": work}

    def timed(self, kernel: str, draws: str, timed: dict[str, Any]) -> dict[str, Any]:
        self.calls.append(("timed", kernel, draws, timed))
        return {"ms": 1.0}


@pytest.fixture
def recorder(monkeypatch: pytest.MonkeyPatch) -> Recorder:
    seen = Recorder()
    monkeypatch.setattr(
        task_module, "check_rules", lambda source, rules: seen.calls.append(("rules",))
    )
    monkeypatch.setattr(
        task_module,
        "compile_kernel",
        lambda source, name, options=(): seen.calls.append(("compile", name, options)) or "K",
    )
    monkeypatch.setattr(task_module, "synchronize", lambda what: seen.calls.append(("sync", what)))
    return seen


def _task(seen: Recorder) -> Task[str, str]:
    return Task(
        name="fake",
        kernel="fake_kernel",
        rules=Rules("vector-add"),
        plain_args=lambda np, rng, case: (),
        size=lambda case: {"n": int(case["n"])},
        what=lambda case, size: f"{case.get('label', 'n')} (n = {size['n']:,})",
        draws=lambda seed: f"rng{seed}",
        prepare=seen.prepare,
        launch=seen.launch,
        check=seen.check,
        timed=seen.timed,
    )


def test_each_launch_on_fresh_work_judged_and_reported(recorder: Recorder) -> None:
    params = {
        "seed": "7",
        "cases": [
            {"label": "one", "n": "1", "config": "c1"},
            {"n": 2000, "configs": ["a", "b"], "repeat": 3},
        ],
        "timed": {"n": 9, "config": "t"},
    }
    out = run_task("src", params, _task(recorder))
    assert out == {
        "cases": [
            {"label": "one", "n": 1, "config": "c1", "ok": True, "work": "work1",
             "launches": 1, "failed_launches": 0},
            {"label": "", "n": 2000, "config": "b", "ok": False, "work": "work3",
             "failed_at": 2, "launches": 3, "failed_launches": 1},
        ],
        "timed": {"ms": 1.0},
    }  # fmt: skip
    assert list(out["cases"][1])[:3] == ["label", "n", "config"]
    assert recorder.calls == [
        ("rules",),
        ("compile", "fake_kernel", ()),
        ("prepare", "rng7", {"n": 1}),
        ("launch", "K", "c1", "work1", "one (n = 1)"),
        ("sync", "one (n = 1)"),
        ("check", "work1"),
        *[
            call
            for number, config in ((2, "a"), (3, "b"), (4, "a"))
            for call in (
                ("prepare", "rng7", {"n": 2000}),
                ("launch", "K", config, f"work{number}", "n (n = 2,000)"),
                ("sync", "n (n = 2,000)"),
                ("check", f"work{number}"),
            )
        ],
        ("timed", "K", "rng7", {"n": 9, "config": "t"}),
    ]


def test_the_sanitizer_and_its_plain_launches_take_their_own_way(
    recorder: Recorder, monkeypatch: pytest.MonkeyPatch
) -> None:
    sanitize = task_module.sanitize
    monkeypatch.setattr(sanitize, "under_sanitizer", lambda name, source, params: {"under": name})
    monkeypatch.setattr(
        sanitize,
        "plain_launches",
        lambda kernel, cases, seed, args_of: {"plain": [kernel, len(cases), seed]},
    )
    task = _task(recorder)
    assert run_task("src", {"sanitize": "memcheck", "seed": 1, "cases": []}, task) == {
        "under": "fake"
    }
    assert run_task("src", {"plain": True, "seed": "5", "cases": [{}]}, task) == {
        "plain": ["K", 1, 5]
    }
    assert recorder.calls == [("rules",), ("rules",), ("compile", "fake_kernel", ("-lineinfo",))]


@pytest.mark.parametrize("name", TASKS)
def test_every_task_runs_through_the_one_runner(name: str) -> None:
    module = importlib.import_module(f"gpulab.grading.checks.tasks.{name}")
    spec = module.TASK
    assert (spec.name, spec.kernel, spec.rules) == (name, module.KERNEL, module.RULES)
    assert spec.plain_args is module._plain_args


@pytest.mark.parametrize(
    ("name", "case", "reported", "what"),
    [
        ("copy_floats", {"n": "4096"}, {"n": 4096}, "n (n = 4,096)"),
        ("vector_add", {"label": "tail", "n": 1000}, {"n": 1000}, "tail (n = 1,000)"),
        ("reduce_sum", {"n": 1 << 24}, {"n": 1 << 24}, "n (n = 16,777,216)"),
        (
            "sgemm",
            {"M": 33, "N": "31", "K": 17},
            {"M": 33, "N": 31, "K": 17},
            "a case (M = 33, N = 31, K = 17)",
        ),
        ("transpose", {"label": "odd", "rows": 33, "cols": 65}, {"rows": 33, "cols": 65},
         "odd (33 x 65)"),
    ],
)  # fmt: skip
def test_each_task_names_its_cases_as_its_messages_always_did(
    name: str, case: dict[str, Any], reported: dict[str, int], what: str
) -> None:
    spec = importlib.import_module(f"gpulab.grading.checks.tasks.{name}").TASK
    size = spec.size(case)
    assert size == reported and list(size) == list(reported)
    assert spec.what(case, size) == what
