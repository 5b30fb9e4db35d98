"""Kernel answers: CUDA C text compiled and run by the trusted side in a fresh worker.

The CPU tests cover what needs no GPU: launch configurations, refused jobs, the
worker's answer when CUDA is missing, and a GPU exercise judged on a machine
without a GPU. The `gpu` tests run real kernels on the device: a right one, and
one for each way a learner's kernel fails (compile error, missing name, refused
launch, out-of-bounds fault, endless loop, no grid stride), and the judge's
own guarantees: guard zones on both sides of the output that see any write
(a NaN too), a reference taken before the launch (a kernel that overwrites
its inputs cannot make itself right), fresh inputs and a check for every
timed launch (a kernel that skips work it finds done is timed doing it; one
wrong on some inputs is caught on those), grids rotated in a repeated case,
and compute-sanitizer's memcheck and racecheck where it can run. The rules of
kernel answers and the wrong-answer fixtures are in test_wrong_kernel_answers.
"""

from __future__ import annotations

import time

import pytest

from gpulab.course import load_course
from gpulab.grading.build import solution_path
from gpulab.grading.checks.cells import answer_cells, setup_cells
from gpulab.grading.checks.gpu import (
    MAX_SOURCE_BYTES,
    KernelAnswerError,
    SanitizerVerdict,
    device_facts,
    gpu_missing,
    new_seed,
    run_kernel,
    sanitize_kernel,
    sanitizer_missing,
)
from gpulab.grading.checks.learner import Learner
from gpulab.grading.checks.notebook import read_notebook
from gpulab.grading.checks.runner import run_checks
from gpulab.grading.checks.tasks.common import TaskError, classify, launch_shape

needs_gpu = pytest.mark.skipif(gpu_missing() is not None, reason=str(gpu_missing()))
needs_sanitizer = pytest.mark.skipif(
    sanitizer_missing() is not None, reason=str(sanitizer_missing())
)


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
    return (
        'extern "C" __global__ void vector_add(const float* a, const float* b, float* c, '
        f"int n) {{\n{body}\n}}\n"
    )


CASES = [
    {"label": "n = 1", "n": 1, "config": {"blocks": 1, "threads": 32}},
    {"label": "n = 33", "n": 33, "config": {"blocks": 2, "threads": 32}},
    {"label": "small grid", "n": 10_001, "config": {"blocks": 2, "threads": 64}},
]


# -- no GPU needed ----------------------------------------------------------------------
@pytest.mark.parametrize(
    ("config", "shape"),
    [
        ({"blocks": 4, "threads": 256}, ((4,), (256,), 0)),
        ({"grid": [8, 2], "block": [32, 8], "shared_mem": 4096}, ((8, 2), (32, 8), 4096)),
        ({"grid": 3, "block": [16, 16, 1]}, ((3,), (16, 16, 1), 0)),
    ],
)
def test_launch_shapes(config: dict[str, object], shape: tuple[object, ...]) -> None:
    assert launch_shape(config, "n = 5") == shape


@pytest.mark.parametrize(
    ("config", "words"),
    [
        ([4, 256], "should be a dict"),
        ({"blocks": 4.0, "threads": 256}, "whole number"),
        ({"blocks": 0, "threads": 256}, "at least 1"),
        ({"blocks": True, "threads": 256}, "whole number"),
        ({"grid": [1, 70000], "block": [32]}, "larger than CUDA allows"),
        ({"blocks": 1, "threads": 32, "shared_mem": -1}, "number of bytes"),
        ({"grid": [1, 1, 1, 1], "block": [32]}, "one to three"),
    ],
)
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
    found = run_kernel(
        "vector_add",
        vector_add_solution(),
        {
            "seed": new_seed(),
            "cases": CASES,
            "timed": {"n": 2**24, "config": {"blocks": 32 * sm_count, "threads": 256}},
        },
    )
    assert [case["wrong"] for case in found["cases"]] == [0, 0, 0]
    timed = found["timed"]
    assert timed["wrong"] == 0 and timed["overrun"] == 0 and timed["failed_launches"] == 0
    assert timed["ms"] > 0 and timed["reference_ms"] > 0 and timed["launches"] >= 4
    assert timed["ratio"] == pytest.approx(timed["reference_ms"] / timed["ms"])
    assert 0.7 < timed["ratio"] < 1.4  # the trusted kernel is the same code


@pytest.mark.gpu
@needs_gpu
def test_no_grid_stride_shows_untouched_elements() -> None:
    source = vector_add(
        "int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) c[i] = a[i] + b[i];"
    )
    found = run_kernel("vector_add", source, {"seed": new_seed(), "cases": CASES})
    small_grid = found["cases"][2]
    assert small_grid["untouched"] == 10_001 - 128
    assert small_grid["first_wrong"]["index"] == 128 and small_grid["first_wrong"]["got"] == "nan"
    assert found["cases"][0]["wrong"] == 0


@pytest.mark.gpu
@needs_gpu
@pytest.mark.parametrize(
    ("source", "config", "kind", "words"),
    [
        (vector_add("c[0] = a[0] + undeclared;"), None, "compile", "line 2"),
        (
            'extern "C" __global__ void vector_sum(float* c) { c[0] = 1; }',
            None,
            "missing",
            "does not mention a kernel named vector_add",
        ),
        (
            "// vector_add\n__global__ void vector_add(float* c) { c[0] = 1; }",
            None,
            "missing",
            'without extern "C" its name is mangled',
        ),
        (
            vector_add("c[threadIdx.x] = 1;"),
            {"blocks": 1, "threads": 2048},
            "launch",
            "2048 threads",
        ),
        (
            vector_add("c[((size_t)1 << 40) + threadIdx.x] = a[0];"),
            None,
            "gpu-fault",
            "index past the end",
        ),
    ],
)
def test_failures_name_their_kind(
    source: str, config: dict[str, int] | None, kind: str, words: str
) -> None:
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


GRID_STRIDE = (
    "const size_t stride = (size_t)blockDim.x * gridDim.x;\n"
    "for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < (size_t)n; "
    "i += stride) {{ {body} }}"
)


@pytest.mark.gpu
@needs_gpu
@pytest.mark.parametrize(
    ("extra", "before", "after"),
    [
        ("c[n] = 1.0f;", 0, 1),
        ("c[-1] = 2.0f;", 1, 0),
        ("c[n] = a[n];", 0, 1),  # a NaN (from a's guard) written into c's guard shows too
        ("c[n + 4000] = 3.0f; c[-4000] = 4.0f;", 1, 1),
    ],
)
def test_guard_zones_see_writes_past_either_end(extra: str, before: int, after: int) -> None:
    source = vector_add(
        GRID_STRIDE.format(body="c[i] = a[i] + b[i];")
        + f"\nif (blockIdx.x == 0 && threadIdx.x == 0) {{ {extra} }}"
    )
    found = run_kernel("vector_add", source, {"seed": new_seed(), "cases": CASES})
    for case in found["cases"]:
        assert case["wrong"] == 0
        assert (case["overrun_before"], case["overrun"] - case["overrun_before"]) == (before, after)


@pytest.mark.gpu
@needs_gpu
def test_a_kernel_that_overwrites_its_inputs_cannot_make_itself_right() -> None:
    source = vector_add(
        GRID_STRIDE.format(body="((float*)a)[i] = 0.0f; ((float*)b)[i] = 0.0f; c[i] = 0.0f;")
    )
    found = run_kernel("vector_add", source, {"seed": new_seed(), "cases": CASES})
    assert [case["wrong"] for case in found["cases"]] == [1, 33, 10_001]


@pytest.mark.gpu
@needs_gpu
def test_every_timed_launch_is_checked_on_fresh_inputs() -> None:
    """Wrong only when a[0] < 0.5: some timed launches are wrong, and they are caught."""
    source = vector_add(GRID_STRIDE.format(body="c[i] = a[i] + b[i] + (a[0] < 0.5f);"))
    sm_count = device_facts()["sm_count"]
    timed = run_kernel(
        "vector_add",
        source,
        {
            "seed": new_seed(),
            "cases": [],
            "timed": {"n": 2**20 + 3, "config": {"blocks": 4 * sm_count, "threads": 256}},
        },
    )["timed"]
    assert 0 < timed["failed_launches"] < timed["launches"], timed
    assert timed["wrong"] > 0 and timed["failed_at"] >= 1


@pytest.mark.gpu
@needs_gpu
def test_a_kernel_that_skips_work_it_finds_done_is_timed_doing_it() -> None:
    """Timed on the same buffers, this kernel would look free after its first launch.

    Each thread looks only at the first element it owns, which no other thread
    writes, so within one launch on a NaN-filled c the test never passes.
    """
    skip = (
        "const size_t i0 = (size_t)blockIdx.x * blockDim.x + threadIdx.x;\n"
        "if (i0 < (size_t)n && c[i0] == a[i0] + b[i0]) return;\n"
    )
    source = vector_add(skip + GRID_STRIDE.format(body="c[i] = a[i] + b[i];"))
    sm_count = device_facts()["sm_count"]
    timed = run_kernel(
        "vector_add",
        source,
        {
            "seed": new_seed(),
            "cases": [],
            "timed": {"n": 2**24 + 1, "config": {"blocks": 32 * sm_count, "threads": 256}},
        },
    )["timed"]
    assert timed["failed_launches"] == 0 and timed["ratio"] < 1.5, timed


@pytest.mark.gpu
@needs_gpu
def test_a_repeated_case_rotates_its_grids_beside_a_busy_kernel() -> None:
    source = vector_add(GRID_STRIDE.format(body="c[i] = a[i] + b[i] + (gridDim.x == 3);"))
    grids = [{"blocks": 2, "threads": 64}, {"blocks": 3, "threads": 64}]
    (case,) = run_kernel(
        "vector_add",
        source,
        {
            "seed": new_seed(),
            "cases": [
                {"label": "repeated", "n": 5000, "configs": grids, "repeat": 4, "busy": True}
            ],
        },
    )["cases"]
    assert (case["launches"], case["failed_launches"], case["failed_at"]) == (4, 2, 2)
    assert case["config"] == grids[1] and case["wrong"] == 5000


TRANSPOSE_WITHOUT_BARRIER = r"""
extern "C" __global__ void transpose(const float* in, float* out, int rows, int cols)
{
    __shared__ float tile[32][33];
    const int x = blockIdx.x * 32 + threadIdx.x;
    for (int j = threadIdx.y; j < 32; j += 8) {
        const int y = blockIdx.y * 32 + j;
        if (y < rows && x < cols)
            tile[j][threadIdx.x] = in[(size_t)y * cols + x];
    }
    const int ox = blockIdx.y * 32 + threadIdx.x;
    for (int j = threadIdx.y; j < 32; j += 8) {
        const int oy = blockIdx.x * 32 + j;
        if (oy < cols && ox < rows)
            out[(size_t)oy * rows + ox] = tile[threadIdx.x][j];
    }
}
"""


@pytest.mark.gpu
@needs_gpu
@needs_sanitizer
def test_sanitizer_finds_a_bad_read_and_a_race_and_passes_a_right_kernel() -> None:
    small = [{"label": "n = 1000", "n": 1000, "config": {"blocks": 4, "threads": 256}}]
    clean = sanitize_kernel("vector_add", vector_add_solution(), small, ("memcheck",))
    assert clean == SanitizerVerdict(), clean
    past_end = vector_add(GRID_STRIDE.format(body="c[i] = a[i + 1] + b[i];"))
    found = sanitize_kernel("vector_add", past_end, small, ("memcheck",))
    assert found.skipped is None and found.problem is not None
    assert "memcheck found" in found.problem and "line 3" in found.problem, found
    race = sanitize_kernel(
        "transpose",
        TRANSPOSE_WITHOUT_BARRIER,
        [
            {
                "label": "63 x 65",
                "rows": 63,
                "cols": 65,
                "config": {"grid": [3, 2], "block": [32, 8]},
            }
        ],
    )
    assert race.skipped is None and race.problem is not None
    assert "racecheck found" in race.problem and "memcheck" not in race.problem, race
