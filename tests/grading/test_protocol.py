"""One vocabulary of failure across the processes of a check (`gpulab.grading.checks.protocol`)."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

import gpulab
from gpulab.grading.checks.protocol import DECISIVE, FAILURES, CheckResult, failure_named
from gpulab.grading.checks.runner import CheckReport, _read_report
from gpulab.grading.gradebook.verdict import KINDS, verdict


def test_the_failures_that_decide_a_kind_are_kinds_and_failures() -> None:
    assert set(DECISIVE) <= set(FAILURES) and set(DECISIVE) <= set(KINDS)
    assert len(set(FAILURES)) == len(FAILURES)


@pytest.mark.parametrize("word", ["crash", "fault", "Timeout", "", 3, None])
def test_a_word_outside_the_vocabulary_is_refused(word: object) -> None:
    with pytest.raises(ValueError, match="not a failure gpulab knows"):
        failure_named(word)


def _report(tmp_path: Path, kind: object) -> Path:
    path = tmp_path / "report.json"
    path.write_text(
        json.dumps(
            {
                "collected": 1,
                "checks": [
                    {
                        "check": "c",
                        "title": "t",
                        "outcome": "failed",
                        "points": 1,
                        "message": "m",
                        "hidden": False,
                        "needs_gpu": False,
                        "kind": kind,
                    }
                ],
            }
        )
    )
    return path


def test_the_checks_report_carries_the_words_as_they_are(tmp_path: Path) -> None:
    for kind in (*FAILURES, None):
        results, _ = _read_report(_report(tmp_path, kind))
        assert results[0].kind == kind


@pytest.mark.parametrize("kind", ["crash", "fault", "took longer than 5 s"])
def test_the_checks_report_refuses_another_word(tmp_path: Path, kind: str) -> None:
    """A process that says "crash" where the vocabulary says "crashed" is caught where the
    report is read, not turned silently into a wrong answer."""
    with pytest.raises(ValueError, match=r"Invalid enum value .* at `\$\.checks\[0\]\.kind`"):
        _read_report(_report(tmp_path, kind))


@pytest.mark.parametrize(
    ("change", "words"),
    [
        ({"points": "1"}, "Expected `float`, got `str` - at `$.checks[0].points`"),
        ({"extra": 1}, "Object contains unknown field `extra` - at `$.checks[0]`"),
        ({"outcome": "won"}, "Invalid enum value 'won' - at `$.checks[0].outcome`"),
    ],
)
def test_a_report_with_a_wrong_field_is_refused_saying_where(
    tmp_path: Path, change: dict[str, object], words: str
) -> None:
    path = _report(tmp_path, None)
    data = json.loads(path.read_text())
    data["checks"][0].update(change)
    path.write_text(json.dumps(data))
    with pytest.raises(ValueError) as caught:
        _read_report(path)
    assert str(caught.value) == words


def test_a_report_missing_a_field_is_refused(tmp_path: Path) -> None:
    path = _report(tmp_path, None)
    data = json.loads(path.read_text())
    del data["checks"][0]["points"]
    path.write_text(json.dumps(data))
    with pytest.raises(ValueError, match="missing required field `points`"):
        _read_report(path)


def _failed(kind: object, check: str = "c") -> CheckResult:
    return CheckResult(check, check, "failed", 1.0, f"{kind} happened", kind=kind)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("kinds", "expected"),
    [
        (["error"], "wrong"),
        (["compile"], "wrong"),
        (["launch", "config"], "wrong"),
        (["crashed"], "crashed"),
        (["error", "timeout"], "timeout"),
        (["crashed", "timeout"], "timeout"),
        (["timeout", "gpu-fault"], "gpu-fault"),
        (["gpu-fault", "invalid"], "invalid"),
    ],
)
def test_the_exercise_kind_is_the_first_decisive_failure(kinds: list[str], expected: str) -> None:
    report = CheckReport(
        "e", Path("e.ipynb"), "failed", "", tuple(_failed(k, f"c{i}") for i, k in enumerate(kinds))
    )
    kind, message, _ = verdict(report)
    assert kind == expected
    assert message == ("" if expected == "wrong" else f"{expected} happened")


def test_every_failure_raised_in_gpulab_is_a_word_of_the_vocabulary() -> None:
    """mypy checks the Literal; this catches a word built at run time past it, e.g. a
    string from a reply passed on without `failure_named`."""
    package = Path(gpulab.__file__).parent
    raisers = {"LearnerError": 1, "KernelAnswerError": 0, "TaskError": 0}
    seen = 0
    for path in package.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id in raisers
            ):
                continue
            where = f"{path.relative_to(package)}:{node.lineno}"
            at = raisers[node.func.id]
            kind = (
                node.args[at]
                if len(node.args) > at
                else next((k.value for k in node.keywords if k.arg == "kind"), None)
            )
            if kind is None:
                continue  # the default, "error"
            seen += 1
            if isinstance(kind, ast.Constant):
                assert kind.value in FAILURES, where
            else:  # a name: it must have come through failure_named or a Failure value
                text = ast.unparse(kind)
                assert text in ("kind", "exc.kind") or text.startswith("failure_named("), (
                    f"{where}: kind given as {text}"
                )
    assert seen >= 15
