"""`gpulab grade` on GPU work: faults, endless kernels and VRAM hogs stay in their own job.

Run on a lent GPU (``pytest -m gpu``). The class answers the vector-add
exercise; hostile learners put an out-of-bounds write or an endless loop in
their kernel, or hold most of the GPU's memory while the checks run. Each must
get its grade, the GPU must come back after each job (NVML shows it as it was
before the run), and the good learners, graded after them on the same GPU,
must still pass.
"""

from __future__ import annotations

import importlib.util
import os
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import nbformat
import pytest
from test_cluster import SEED, Processes, courseless

from gpulab.grading import sandbox
from gpulab.grading.checks.gpu import gpu_missing
from gpulab.grading.classrun.grade import grade_class
from gpulab.grading.classrun.grade_model import GradeOptions, GradeSummary, Target
from gpulab.multicast import NO_MULTICAST

ROOT = Path(__file__).resolve().parents[2]
SOLUTION = ROOT / "solutions" / "cuda-programming" / "vector-add.ipynb"
STUB = ROOT / "exercises" / "cuda-programming" / "vector-add.ipynb"

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(bool(gpu_missing()), reason=gpu_missing() or ""),
    pytest.mark.skipif(
        not sandbox.available().bubblewrap,
        reason="bubblewrap cannot make a sandbox here: " + sandbox.available().bubblewrap_problem,
    ),
]

GOOD_LOOP = "c[i] = a[i] + b[i];"
KERNELS = {
    "out-of-bounds": "c[i + ((size_t)1 << 40)] = a[i] + b[i];",
    # an atomic in the loop is a side effect: the compiler may not drop the endless loop
    "endless-kernel": "while (true) { atomicAdd(c + i, a[i] + b[i]); }",
}
PREFIX = {
    # the learner's Python holds 70 % of the GPU's memory while its checks run (the share,
    # not a size: 100 GiB was most of an H200 and more than an H100 has)
    "vram-hog": (
        "import cupy\n"
        "_hog = cupy.empty(int(0.7 * cupy.cuda.Device().mem_info[1]), dtype=cupy.uint8)\n"
    ),
    # a CuPy kernel that writes far out of bounds, in the learner's own process
    "cupy-fault": (
        "import cupy\n_k = cupy.RawKernel(r'''extern \"C\" __global__ void f(float* x)"
        " { x[(size_t)1 << 40] = 1; }''', 'f')\n_x = cupy.zeros(1, cupy.float32)\n"
        "_k((1,), (1,), (_x,))\ncupy.cuda.runtime.deviceSynchronize()\n"
    ),
}


def _learner(folder: Path, name: str) -> None:
    notebook = nbformat.read(SOLUTION, as_version=4)
    for cell in notebook.cells:
        meta = cell.get("metadata", {}).get("gpulab", {})
        if meta.get("role") != "answer":
            continue
        if meta.get("part") == "kernel" and name in KERNELS:
            assert GOOD_LOOP in cell.source
            cell.source = cell.source.replace(GOOD_LOOP, KERNELS[name])
        if meta.get("part") == "kernel" and name in PREFIX:
            cell.source = PREFIX[name] + cell.source
    (folder / name).mkdir(parents=True)
    nbformat.write(notebook, folder / name / "vector-add.ipynb")


def test_gpu_faults_stay_with_their_learner(tmp_path: Path) -> None:
    folder = tmp_path / "class"
    names = [
        "a-good",
        "out-of-bounds",
        "b-good",
        "endless-kernel",
        "vram-hog",
        "cupy-fault",
        "c-good",
    ]
    for name in names:
        _learner(folder, name)
    summary = grade_class(
        GradeOptions(folder, tmp_path / "out", ("vector-add",), workers=2, timeout=120)
    )
    worth = summary.maxima["vector-add"]
    got = {learner.slug: learner.exercises[0] for learner in summary.learners}
    shown = "; ".join(f"{slug}: {g.kind} {g.earned:g} {g.message[:100]}" for slug, g in got.items())
    for good in ("a-good", "b-good", "c-good", "vram-hog"):
        assert got[good].kind == "right" and got[good].earned == worth, shown
    assert got["out-of-bounds"].kind == "gpu-fault", shown
    assert got["endless-kernel"].kind == "timeout", shown
    assert got["out-of-bounds"].earned < worth and got["endless-kernel"].earned < worth
    # the learner's own CUDA context is poisoned; the checks' kernel runs elsewhere
    assert got["cupy-fault"].kind in ("right", "wrong", "crashed"), shown
    assert not summary.gpu_events, summary.gpu_events


def test_a_gpu_that_does_not_recover_is_taken_out_of_rotation(tmp_path: Path) -> None:
    """Something outside the run takes GPU memory mid-run: the GPU is retired, the run ends."""
    folder = tmp_path / "class"
    names = [f"learner-{n}" for n in range(4)]
    for name in names:
        _learner(folder, "a-good")
        (folder / "a-good").rename(folder / name)
    squatter: list[subprocess.Popen[bytes]] = []

    def progress(text: str, done: int, total: int) -> None:
        if done == 1 and not squatter:  # after the first job: hold 4 GiB and wait
            squatter.append(
                subprocess.Popen(
                    [
                        sys.executable,
                        "-c",
                        "import cupy, time; x = cupy.ones(2**30, cupy.float32);"
                        " cupy.cuda.runtime.deviceSynchronize(); print('held', flush=True); "
                        "time.sleep(300)",
                    ],
                    stdout=subprocess.PIPE,
                )
            )
            assert squatter[0].stdout is not None
            squatter[0].stdout.readline()

    try:
        summary = grade_class(
            GradeOptions(
                folder,
                tmp_path / "out",
                ("vector-add",),
                workers=1,
                timeout=120,
                gpu_recovery_s=3.0,
            ),
            progress=progress,
        )
    finally:
        for process in squatter:
            process.kill()
            process.wait()
            if process.stdout is not None:
                process.stdout.close()
    kinds = [learner.exercises[0].kind for learner in summary.learners]
    assert kinds[0] == "right"
    assert "partial" in kinds, kinds  # the rest ran without a GPU
    assert any("taken out of rotation" in event for event in summary.gpu_events)
    partial = [e for learner in summary.learners for e in learner.exercises if e.kind == "partial"]
    assert all(e.message.startswith("every GPU was taken out of rotation: ") for e in partial)
    time.sleep(2)


def _gpu_count() -> int:
    try:
        import pynvml

        pynvml.nvmlInit()
        try:
            return int(pynvml.nvmlDeviceGetCount())
        finally:
            pynvml.nvmlShutdown()
    except Exception:  # no NVML: the module's skip marks already say why
        return 0


@pytest.mark.skipif(_gpu_count() < 2, reason=f"needs two GPUs: NVML sees {_gpu_count()}")
def test_twenty_learners_spread_over_two_gpus_and_a_failed_gpu_stops_only_itself(
    tmp_path: Path,
) -> None:
    """`--gpus 0,1`: both GPUs take jobs; when GPU 1 stops recovering, GPU 0 grades the rest."""
    folder = tmp_path / "class"
    hostile = {3: "out-of-bounds", 11: "endless-kernel"}
    names = [f"{n:02d}-{hostile.get(n, 'good')}" for n in range(20)]
    for name in names:
        _learner(folder, name.split("-", 1)[1])
        (folder / name.split("-", 1)[1]).rename(folder / name)
    squatter: list[subprocess.Popen[bytes]] = []

    def progress(text: str, done: int, total: int) -> None:
        if done == 6 and not squatter:  # an outside process takes 4 GiB of GPU 1 and stays
            squatter.append(
                subprocess.Popen(
                    [
                        sys.executable,
                        "-c",
                        "import cupy, time; x = cupy.ones(2**30, cupy.float32);"
                        " cupy.cuda.runtime.deviceSynchronize(); print('held', flush=True); "
                        "time.sleep(600)",
                    ],
                    stdout=subprocess.PIPE,
                    env={**os.environ, "CUDA_VISIBLE_DEVICES": "1", **NO_MULTICAST},
                )
            )
            assert squatter[0].stdout is not None
            squatter[0].stdout.readline()

    out = tmp_path / "out"
    try:
        summary = grade_class(
            GradeOptions(
                folder,
                out,
                ("vector-add",),
                workers=2,
                timeout=120,
                gpus=("0", "1"),
                gpu_recovery_s=3.0,
            ),
            progress=progress,
        )
    finally:
        for process in squatter:
            process.kill()
            process.wait()
            if process.stdout is not None:
                process.stdout.close()
    worth = summary.maxima["vector-add"]
    got = {learner.slug: learner.exercises[0] for learner in summary.learners}
    shown = "; ".join(f"{slug}: {g.kind} {g.earned:g} {g.message[:80]}" for slug, g in got.items())
    assert len(got) == 20, shown
    for slug, grade in got.items():
        if "good" in slug:
            assert (grade.kind, grade.earned) == ("right", worth), shown
    assert got["03-out-of-bounds"].kind == "gpu-fault", shown
    assert got["11-endless-kernel"].kind == "timeout", shown
    assert [e for e in summary.gpu_events if "GPU 1" in e and "out of rotation" in e], (
        summary.gpu_events
    )
    assert not [e for e in summary.gpu_events if "GPU 0" in e], summary.gpu_events
    with sqlite3.connect(out / "gradebook.sqlite") as db:
        per_gpu = dict(db.execute("SELECT gpu, count(*) FROM grades GROUP BY gpu").fetchall())
    assert set(per_gpu) == {"0", "1"} and sum(per_gpu.values()) == 20, per_gpu
    assert per_gpu["0"] > per_gpu["1"] >= 1, per_gpu


@pytest.mark.skipif(
    importlib.util.find_spec("distributed") is None,
    reason="gpulab[cluster] is not installed (distributed, dask-jobqueue): make test installs it",
)
def test_a_worker_on_this_gpu_grades_gpu_work_as_this_machine_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`--cluster` on a real GPU: a scheduler beside a `gpulab worker --gpus 0` that has no
    course of its own grades the class with the same grades, faults and timeouts included."""
    monkeypatch.setenv("GPULAB_CHECK_SEED", SEED)
    folder = tmp_path / "class"
    for name in ("a-good", "out-of-bounds", "endless-kernel"):
        _learner(folder, name)
    (folder / "stub").mkdir()
    nbformat.write(nbformat.read(STUB, as_version=4), folder / "stub" / "vector-add.ipynb")
    home = tmp_path / "home"
    home.mkdir()
    # the worker's gpulab is a copy with no course beside it; the rest of PYTHONPATH
    # (where CuPy or Dask may lie) it keeps
    lab = (ROOT / "lab").resolve()
    kept = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    path = os.pathsep.join([str(tmp_path / "pkg"), *(p for p in kept if Path(p).resolve() != lab)])
    processes = Processes(tmp_path)
    try:
        address = processes.scheduler()
        processes.worker(
            address,
            "--gpus",
            "0",
            "--cpu-slots",
            "1",
            env={**courseless(tmp_path), "PYTHONPATH": path, "GPULAB_CHECK_SEED": SEED},
            cwd=home,
        )
        here = grade_class(
            GradeOptions(folder, tmp_path / "here", ("vector-add",), workers=1, timeout=45)
        )
        there = grade_class(
            GradeOptions(
                folder,
                tmp_path / "there",
                ("vector-add",),
                workers=1,
                timeout=45,
                cluster=Target(address, wait_s=60.0),
            )
        )
    finally:
        processes.end()

    def seen(summary: GradeSummary) -> dict[str, tuple[object, ...]]:
        return {
            learner.slug: (
                grade.kind,
                grade.earned,
                tuple((c.check, c.outcome, c.earned) for c in grade.checks),
            )
            for learner in summary.learners
            for grade in learner.exercises
        }

    local, remote = seen(here), seen(there)
    shown = "\n".join(f"{slug}: here {local[slug][:2]}, there {remote.get(slug)}" for slug in local)
    assert remote == local, shown
    worth = here.maxima["vector-add"]
    assert remote["a-good"][:2] == ("right", worth), shown
    assert remote["out-of-bounds"][0] == "gpu-fault", shown
    assert remote["endless-kernel"][0] == "timeout", shown
    assert remote["stub"][0] == "wrong", shown
    assert any("graded on the Dask cluster at" in note for note in there.notes), there.notes
    assert not there.gpu_events and not there.problems, (there.gpu_events, there.problems)
