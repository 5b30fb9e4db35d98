"""The boundary between a learner's code (the worker) and the trusted side (`Learner`).

What crosses it and how it is judged: gpulab's own code is refused to the learner's cells
(an import hook and no gpulab in sys.modules), but not to the released setup cells nor to
the worker's own work; an exception's type is sent as the built-in classes of its MRO, so
a check judges "raises ValueError" by type, never by text; NaN and infinities are refused
on both sides; a recorded NVML session answers `pynvml` for one call only; and the worker
builds recorded machines, links included, in a folder of its own.
"""

from __future__ import annotations

import pytest

from gpulab.grading.checks.cells import Cell
from gpulab.grading.checks.learner import Learner, LearnerError
from gpulab.grading.checks.worker import REFUSED


def worker(*answers: str, setup: tuple[str, ...] = ()) -> Learner:
    """A worker with released setup cells and the learner's answer cells."""
    cells = [Cell(f"setup {n}", source) for n, source in enumerate(setup, start=1)]
    cells += [Cell(f"answer part{n}", source) for n, source in enumerate(answers, start=1)]
    return Learner(cells, timeout=30)


# ---- gpulab is not the learner's to use ---------------------------------------------------------

LIBRARY = "from gpulab.probes.system import parse_cpu_list\n"


def test_an_answer_cell_cannot_import_gpulab() -> None:
    answer = LIBRARY + "def f(text):\n    return parse_cpu_list(text)\n"
    with worker(answer) as learner, pytest.raises(LearnerError) as caught:
        learner.call("f", "0-3")
    said = str(caught.value)
    assert "not defined, because your cell 'answer part1' did not run" in said
    assert REFUSED in said and "import gpulab is refused" in said


@pytest.mark.parametrize(
    "route",
    [
        "import gpulab",
        "import gpulab.grading.checks.worker",
        "__import__('gpulab.probes.system')",
        "import importlib; importlib.import_module('gpulab.probes.system')",
        "exec('from gpulab.probes import system')",
    ],
)
def test_every_import_route_is_refused_at_call_time(route: str) -> None:
    body = "\n".join("    " + line for line in route.split("; "))
    answer = f"def f():\n{body}\n    return 'imported'\n"
    with worker(answer) as learner, pytest.raises(LearnerError) as caught:
        learner.call("f")
    assert caught.value.raised_as(ImportError)
    assert REFUSED in str(caught.value)


def test_no_gpulab_module_is_left_in_sys_modules() -> None:
    code = (
        "import sys\n"
        "def f():\n"
        "    return sorted(m for m in sys.modules if m.split('.')[0] == 'gpulab')\n"
    )
    with worker(code) as learner:
        assert learner.call("f") == []
        learner.machine("firecracker-vm")  # the worker's own work opens it...
        assert learner.call("f") == []  # ... and closes it again


def test_a_released_setup_cell_may_use_gpulab_and_its_functions_still_work() -> None:
    setup = (
        "from gpulab.probes.system import compact_cpu_list\n"
        "def show(cpus):\n    return compact_cpu_list(cpus)\n"
    )
    with worker("def f(cpus):\n    return show(cpus)\n", setup=(setup,)) as learner:
        assert learner.call("f", [0, 1, 2, 5]) == "0-2,5"


# ---- exceptions judged by type ------------------------------------------------------------------


def raised(code: str) -> LearnerError:
    with worker(f"def f():\n    {code}\n") as learner, pytest.raises(LearnerError) as caught:
        learner.call("f")
    return caught.value


def test_a_value_error_is_told_by_its_type() -> None:
    error = raised("raise ValueError('not a link')")
    assert error.raised_as(ValueError) and error.raised_as(Exception)
    assert error.raised == ("ValueError", "Exception", "BaseException")
    assert not error.raised_as(TypeError)


def test_a_message_that_names_value_error_is_no_value_error() -> None:
    for code in (
        "raise ZeroDivisionError(': ValueError')",
        "raise RuntimeError('not a ValueError at all')",
    ):
        error = raised(code)
        assert "ValueError" in str(error)  # the text says so ...
        assert not error.raised_as(ValueError)  # ... the type does not


def test_a_class_of_the_learners_named_value_error_is_no_value_error() -> None:
    error = raised("class ValueError(Exception): pass\n    raise ValueError('mine')")
    assert not error.raised_as(ValueError) and error.raised == ("Exception", "BaseException")


def test_a_subclass_of_value_error_is_one() -> None:
    error = raised("class Bad(ValueError): pass\n    raise Bad('mine')")
    assert error.raised_as(ValueError)


def test_rebinding_builtins_does_not_change_the_names_sent() -> None:
    error = raised(
        "import builtins; builtins.ValueError = ZeroDivisionError\n    raise ZeroDivisionError(1)"
    )
    assert error.raised_as(ZeroDivisionError) and not error.raised_as(ValueError)


def test_names_outside_the_closed_list_are_dropped() -> None:
    error = LearnerError("x", raised=["ValueError", "NVMLError", "<script>", 3])  # type: ignore[list-item]
    assert error.raised == ("ValueError",)
    assert not LearnerError("y", raised=["Handle"]).raised_as(ValueError)


# ---- no NaN, no infinity ------------------------------------------------------------------


@pytest.mark.parametrize("value", ["float('nan')", "float('inf')", "[1.0, -float('inf')]"])
def test_a_result_that_is_not_finite_is_refused_by_the_worker(value: str) -> None:
    answer = f"def f():\n    return {value}\n"
    with worker(answer) as learner, pytest.raises(LearnerError) as caught:
        learner.call("f")
    assert "NaN or an infinity" in str(caught.value)


@pytest.mark.parametrize("token", ["NaN", "Infinity", "-Infinity", "1e999"])
def test_a_reply_with_nan_or_infinity_is_refused_by_the_trusted_side(token: str) -> None:
    # Learner code that writes its own "reply" on the worker's pipe, past the worker's guard.
    code = (
        "import os, sys\n"
        "def f():\n"
        f'    os.write(int(sys.argv[1]), b\'{{"ok": true, "value": {token}}}\\n\')\n'
        "    return 1\n"
    )
    with worker(code) as learner, pytest.raises(LearnerError) as caught:
        learner.call("f")
    said = str(caught.value)
    assert "which is not a number a check can compare" in said
    assert token.lstrip("-") in said or "infinity" in said


# ---- recorded NVML sessions ---------------------------------------------------------------------

REPORT = """def report():
    try:
        pynvml.nvmlInit()
    except pynvml.NVMLError as exc:
        return type(exc).__name__
    try:
        count = pynvml.nvmlDeviceGetCount()
        return [driver(), pynvml.nvmlSystemGetCudaDriverVersion(),
                [pynvml.nvmlDeviceGetName(pynvml.nvmlDeviceGetHandleByIndex(i))
                 for i in range(count)]]
    finally:
        pynvml.nvmlShutdown()


def inside():
    import pynvml as mine
    return mine.nvmlSystemGetDriverVersion()
"""


def nvml_worker() -> Learner:
    return worker(
        "from pynvml import nvmlSystemGetDriverVersion as driver\n\n" + REPORT,
        setup=("import pynvml\n",),
    )


def test_a_call_with_a_recorded_session_sees_that_machine() -> None:
    with nvml_worker() as learner:
        assert learner.call_with_nvml("h200", "report") == ["580.159.04", 13000, ["NVIDIA H200"]]
        assert learner.call_with_nvml("two-h100", "report") == [
            "550.127.05",
            12040,
            ["NVIDIA H100 80GB HBM3"] * 2,
        ]
        assert learner.call_with_nvml("no-library", "report") == "NVMLError_LibraryNotFound"
        assert learner.call_with_nvml("h200", "inside") == "580.159.04"  # imported in the call


def test_a_hidden_check_can_change_a_sessions_answers_for_one_call() -> None:
    changes = [
        {"call": "nvmlSystemGetDriverVersion", "args": [], "result": "999.12.34"},
        {"call": "nvmlDeviceGetName", "args": [{"__handle__": 1}], "result": "NVIDIA H100 NVL"},
        {"call": "nvmlSystemGetCudaDriverVersion", "args": [], "error": {"value": 13}},
    ]
    with nvml_worker() as learner:
        with pytest.raises(LearnerError, match="NVMLError_FunctionNotFound"):
            learner.call_with_nvml("two-h100", "report", nvml_answers=changes)
        assert learner.call_with_nvml("two-h100", "report", nvml_answers=changes[:2]) == [
            "999.12.34",
            12040,
            ["NVIDIA H100 80GB HBM3", "NVIDIA H100 NVL"],
        ]
        assert learner.call_with_nvml("two-h100", "report") == [  # the session as recorded
            "550.127.05",
            12040,
            ["NVIDIA H100 80GB HBM3"] * 2,
        ]
        with pytest.raises(LearnerError, match="not an NVML answer"):
            learner.call_with_nvml(
                "h200", "report", nvml_answers=[{"call": "os.system", "args": [], "result": 0}]
            )


def test_the_real_pynvml_is_back_after_the_call() -> None:
    with nvml_worker() as learner:
        real = learner.call("report")  # this machine, before ...
        learner.call_with_nvml("h200", "report")
        assert learner.call("report") == real  # ... and after a replayed call


def test_a_call_the_session_does_not_hold_says_so() -> None:
    code = (
        "import pynvml\ndef f():\n    pynvml.nvmlInit()\n"
        "    return pynvml.nvmlDeviceGetSerial(pynvml.nvmlDeviceGetHandleByIndex(0))\n"
    )
    with worker(code) as learner, pytest.raises(LearnerError) as caught:
        learner.call_with_nvml("two-h100", "f")
    said = str(caught.value)
    assert "NotRecorded" in said and "nvmlDeviceGetSerial" in said
    assert "it answers the calls the exercise names" in said


# ---- recorded machines ---------------------------------------------------------------------

TREE = """import os
from pathlib import Path


def look(root, link):
    return [Path(root, "etc/os-release").read_text().splitlines()[0], os.readlink(Path(root, link)),
            Path(root, ".dockerenv").exists()]
"""


def test_a_machine_is_built_with_its_links_and_files() -> None:
    with worker(TREE) as learner:
        root = learner.machine("docker-container")
        assert learner.call("look", root, "proc/self/ns/pid") == [
            'NAME="Alpine Linux"',
            "pid:[4026532613]",
            True,
        ]
        changed = learner.machine(
            "docker-container",
            files={".dockerenv": None},
            links={"proc/self/ns/pid": "pid:[4026531836]"},
        )
        assert changed != root
        assert learner.call("look", changed, "proc/self/ns/pid")[1:] == ["pid:[4026531836]", False]
        assert learner.call("look", root, "proc/self/ns/pid")[2] is True  # each a fresh copy


SCRIBBLE = """
from pathlib import Path
def scribble(root, how):
    release = Path(root, "etc/os-release")
    if how == "append":
        release.write_text(release.read_text() + "ID=changed\\n")
    elif how == "add":
        Path(root, "etc/added").write_text("x")
    elif how == "remove":
        release.unlink()
    return Path(root, "etc/os-release").read_text() if release.exists() else None
"""


@pytest.mark.parametrize("how", ["append", "add", "remove"])
def test_a_machine_is_built_once_and_again_only_after_the_learner_changed_it(how: str) -> None:
    """The same request gets the same folder while it holds what it held when built; once
    the learner's code has written into it, the next request gets a fresh, pristine one."""
    with worker(SCRIBBLE) as learner:
        first = learner.machine("docker-container")
        assert learner.machine("docker-container") == first
        pristine = learner.call("scribble", first, "read")
        learner.call("scribble", first, how)
        again = learner.machine("docker-container")
        assert again != first
        assert learner.call("scribble", again, "read") == pristine
        assert learner.machine("docker-container") == again


@pytest.mark.parametrize("path", ["../outside", "/etc/passwd", "a/../../b"])
def test_a_change_outside_the_machine_is_refused(path: str) -> None:
    with worker(TREE) as learner, pytest.raises(LearnerError) as caught:
        learner.machine("docker-container", files={path: "x"})
    assert "not a path inside a machine" in str(caught.value)


def test_an_unknown_machine_is_refused() -> None:
    with worker(TREE) as learner, pytest.raises(LearnerError, match="not a machine name"):
        learner.machine("../../etc")
