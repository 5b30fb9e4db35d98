"""Kernel answers: CUDA C text compiled and run by the trusted side in a fresh worker.

The CPU tests cover what needs no GPU: launch configurations, refused jobs, the
worker's answer when CUDA is missing, and a GPU exercise judged on a machine
without a GPU. The `gpu` tests run real kernels on the device: a right one, and
one for each way a learner's kernel fails (compile error, missing name, refused
launch, out-of-bounds fault, endless loop, no grid stride).
"""

from __future__ import annotations

import time

import pytest

from gpulab.course import load_course
from gpulab.grading.build import solution_path
from gpulab.grading.cells import answer_cells, setup_cells
from gpulab.grading.gpu import (
    MAX_SOURCE_BYTES,
    KernelAnswerError,
    device_facts,
    gpu_missing,
    new_seed,
    run_kernel,
)
from gpulab.grading.learner import Learner
from gpulab.grading.notebook import read_notebook
from gpulab.grading.runner import run_checks
from gpulab.grading.tasks.common import TaskError, classify, launch_shape

needs_gpu = pytest.mark.skipif(gpu_missing() is not None, reason=str(gpu_missing()))


def vector_add_solution() -> str:
    """The reference kernel's source, taken from the solution notebook through a worker."""
    entry = next(e for e in load_course().exercises() if e.name == "vector-add")
    notebook = solution_path(entry)
    cells = read_notebook(notebook)
    with Learner([*setup_cells(cells), *answer_cells(cells, notebook).values()]) as learner:
        source = learner.call("vector_add_source")
    assert isinstance(source, str)
    return source


def vector_add(body: str) -> str:
    return ('extern "C" __global__ void vector_add(const float* a, const float* b, float* c, '
            f"int n) {{\n{body}\n}}\n")


CASES = [{"label": "n = 1", "n": 1, "config": {"blocks": 1, "threads": 32}},
         {"label": "n = 33", "n": 33, "config": {"blocks": 2, "threads": 32}},
         {"label": "small grid", "n": 10_001, "config": {"blocks": 2, "threads": 64}}]


# -- no GPU needed ----------------------------------------------------------------------
@pytest.mark.parametrize(("config", "shape"), [
    ({"blocks": 4, "threads": 256}, ((4,), (256,), 0)),
    ({"grid": [8, 2], "block": [32, 8], "shared_mem": 4096}, ((8, 2), (32, 8), 4096)),
    ({"grid": 3, "block": [16, 16, 1]}, ((3,), (16, 16, 1), 0)),
])
def test_launch_shapes(config: dict[str, object], shape: tuple[object, ...]) -> None:
    assert launch_shape(config, "n = 5") == shape


@pytest.mark.parametrize(("config", "words"), [
    ([4, 256], "should be a dict"),
    ({"blocks": 4.0, "threads": 256}, "whole number"),
    ({"blocks": 0, "threads": 256}, "at least 1"),
    ({"blocks": True, "threads": 256}, "whole number"),
    ({"grid": [1, 70000], "block": [32]}, "larger than CUDA allows"),
    ({"blocks": 1, "threads": 32, "shared_mem": -1}, "number of bytes"),
    ({"grid": [1, 1, 1, 1], "block": [32]}, "one to three"),
])
def test_bad_launch_shapes_say_what_and_where(config: object, words: str) -> None:
    with pytest.raises(TaskError) as caught:
        launch_shape(config, "n = 33")
    assert caught.value.kind == "config"
    assert str(caught.value).startswith("n = 33: ") and words in str(caught.value)


def test_classify_tells_faults_from_crashes() -> None:
    kind, message = classify(RuntimeError("cudaErrorIllegalAddress: an illegal memory access"))
    assert kind == "gpu-fault" and "index past the end" in message
    assert classify(ValueError("bad"))[0] == "crashed"


def test_refused_jobs() -> None:
    with pytest.raises(ValueError, match="no kernel task named"):
        run_kernel("../../etc", "x", {})
    with pytest.raises(ValueError, match="no kernel task named"):
        run_kernel("no_such_task", "x", {})
    with pytest.raises(KernelAnswerError, match="string of CUDA C, not list") as caught:
        run_kernel("vector_add", ["not", "text"], {})
    assert caught.value.kind == "source"
    with pytest.raises(KernelAnswerError, match="over 256 KiB"):
        run_kernel("vector_add", "x" * (MAX_SOURCE_BYTES + 1), {})


@pytest.mark.skipif(gpu_missing() is None, reason="this machine has a GPU")
def test_without_cuda_the_worker_answers_with_a_reason() -> None:
    """No CuPy or no GPU: the kernel worker still answers, with why, and no traceback."""
    with pytest.raises(KernelAnswerError) as caught:
        run_kernel("vector_add", vector_add("c[0] = 1;"), {"seed": 1, "cases": CASES})
    assert caught.value.kind in ("crashed", "gpu-fault")
    assert "Traceback" not in str(caught.value)


@pytest.mark.skipif(gpu_missing() is None, reason="this machine has a GPU")
def test_gpu_exercise_without_gpu_is_not_a_pass() -> None:
    """Its CPU checks pass, its GPU checks skip: not checked here, and the reason."""
    entry = next(e for e in load_course().exercises() if e.name == "vector-add")
    report = run_checks(entry, solution_path(entry))
    assert report.status == "skipped"
    assert "checks did not run: needs an NVIDIA GPU" in report.message
    outcomes = {r.check: (r.outcome, r.needs_gpu) for r in report.results}
    assert outcomes["test_launch_config"] == ("passed", False)
    assert outcomes["test_edge_sizes"] == ("skipped", True)


# -- on the GPU -------------------------------------------------------------------------
@pytest.mark.gpu
@needs_gpu
def test_reference_kernel_is_right_and_timed() -> None:
    sm_count = device_facts()["sm_count"]
    found = run_kernel("vector_add", vector_add_solution(), {
        "seed": new_seed(), "cases": CASES,
        "timed": {"n": 2**24, "config": {"blocks": 32 * sm_count, "threads": 256}}})
    assert [case["wrong"] for case in found["cases"]] == [0, 0, 0]
    timed = found["timed"]
    assert timed["wrong"] == 0 and timed["ms"] > 0 and timed["reference_ms"] > 0
    assert timed["ratio"] == pytest.approx(timed["reference_ms"] / timed["ms"])


@pytest.mark.gpu
@needs_gpu
def test_no_grid_stride_shows_untouched_elements() -> None:
    source = vector_add("int i = blockIdx.x * blockDim.x + threadIdx.x; "
                        "if (i < n) c[i] = a[i] + b[i];")
    found = run_kernel("vector_add", source, {"seed": new_seed(), "cases": CASES})
    small_grid = found["cases"][2]
    assert small_grid["untouched"] == 10_001 - 128
    assert small_grid["first_wrong"]["index"] == 128 and small_grid["first_wrong"]["got"] == "nan"
    assert found["cases"][0]["wrong"] == 0


@pytest.mark.gpu
@needs_gpu
@pytest.mark.parametrize(("source", "config", "kind", "words"), [
    (vector_add("c[0] = a[0] + undeclared;"), None, "compile", "line 2"),
    ('extern "C" __global__ void vector_sum(float* c) { c[0] = 1; }', None, "missing",
     "does not mention a kernel named vector_add"),
    ('// vector_add\n__global__ void vector_add(float* c) { c[0] = 1; }', None, "missing",
     "without extern \"C\" its name is mangled"),
    (vector_add("c[threadIdx.x] = 1;"), {"blocks": 1, "threads": 2048}, "launch",
     "2048 threads"),
    (vector_add("c[((size_t)1 << 40) + threadIdx.x] = a[0];"), None, "gpu-fault",
     "index past the end"),
])
def test_failures_name_their_kind(source: str, config: dict[str, int] | None, kind: str,
                                  words: str) -> None:
    cases = CASES if config is None else [{"label": "big block", "n": 5, "config": config}]
    with pytest.raises(KernelAnswerError) as caught:
        run_kernel("vector_add", source, {"seed": 1, "cases": cases})
    assert caught.value.kind == kind
    assert words in str(caught.value)


@pytest.mark.gpu
@needs_gpu
def test_endless_kernel_is_stopped_and_the_gpu_recovers() -> None:
    endless = vector_add("volatile int spin = 1; while (spin) { c[0] = a[0]; }")
    started = time.monotonic()
    with pytest.raises(KernelAnswerError) as caught:
        run_kernel("vector_add", endless, {"seed": 1, "cases": CASES}, timeout=20)
    assert caught.value.kind == "timeout"
    assert time.monotonic() - started < 40
    found = run_kernel("vector_add", vector_add_solution(), {"seed": 2, "cases": CASES})
    assert [case["wrong"] for case in found["cases"]] == [0, 0, 0]
