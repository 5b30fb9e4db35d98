"""`gpulab grade --cluster` and `gpulab worker` on a real Dask scheduler and real workers.

Everything runs on loopback: a `dask scheduler` process and `gpulab worker`
processes (real TCP, real processes, bubblewrap), started here and ended by
their pid whatever happens. This machine has no GPU, so GPU workers serve
fake GPUs (``--fake-gpus``: indices as labels, no NVML check): a job sent to
one runs without a GPU device, which is what "one job per GPU" needs to be
shown. The class is built from the solutions and released notebooks of
env-report and roofline, and a hostile answer whose messages no encoder takes.

The shared cluster's worker has no course: it runs in a folder of its own, with
a copy of the gpulab package beside which no course lies (`PYTHONPATH`), and
no ``GPULAB_COURSE_DIR``; it grades with the bundle each grader sends.
"""

from __future__ import annotations

import importlib.util
import itertools
import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from types import SimpleNamespace

import nbformat
import pytest

from gpulab.course.catalog import Course
from gpulab.grading import sandbox
from gpulab.grading.classrun.cluster.bundle import Bundle, pack
from gpulab.grading.classrun.cluster.client import run_on_cluster
from gpulab.grading.classrun.cluster.slurm import slurm_cluster
from gpulab.grading.classrun.fingerprint import checks_hash
from gpulab.grading.classrun.grade import grade_class
from gpulab.grading.classrun.grade_model import GradeOptions, GradeSummary, Target
from gpulab.grading.classrun.run import Done, GpuEvent, Job
from gpulab.grading.gradebook import Gradebook
from gpulab.grading.gradebook.verdict import ExerciseGrade
from helpers.adversarial_class import SOLUTION as ROOFLINE
from helpers.adversarial_class import _answer, _prefixed, _write
from helpers.run_attacks import _raises_in_a_check, graded_count, sha, tagged_processes

ROOT = Path(__file__).resolve().parents[2]
ENV_REPORT = ROOT / "solutions" / "landscape" / "env-report.ipynb"
WRONG_ENV_REPORT = (
    ROOT / "tests" / "fixtures" / "wrong_answers" / "env-report" / "wrong1-split-every-equals.ipynb"
)
STUBS = {
    "env-report": ROOT / "exercises" / "landscape" / "env-report.ipynb",
    "roofline": ROOT / "exercises" / "memory-hierarchy" / "roofline.ipynb",
}
TIMEOUT = 30.0
SEED = "20260807"  # the hidden checks' draws (GPULAB_CHECK_SEED): the same here and there

pytestmark = [
    pytest.mark.skipif(
        importlib.util.find_spec("distributed") is None,
        reason="gpulab[cluster] is not installed (distributed, dask-jobqueue): "
        "make test installs it",
    ),
    pytest.mark.skipif(
        not sandbox.available().bubblewrap,
        reason="bubblewrap cannot make a sandbox on this machine: "
        + sandbox.available().bubblewrap_problem,
    ),
]


class Processes:
    """The processes a test starts, each ended by its pid at the end, whatever happened."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.started: list[subprocess.Popen[bytes]] = []

    def start(
        self,
        name: str,
        *argv: str,
        env: dict[str, str | None] | None = None,
        cwd: Path | None = None,
    ) -> tuple[subprocess.Popen[bytes], Path]:
        """`python ARGV`, its output in a log; `env` adds to this environment (None: removes)."""
        log = self.folder / f"{name}-{uuid.uuid4().hex[:6]}.log"
        merged = {**os.environ, **(env or {})}
        with log.open("wb") as out:
            process = subprocess.Popen(
                [sys.executable, *argv],
                stdout=out,
                stderr=out,
                env={k: v for k, v in merged.items() if v is not None},
                cwd=cwd,
            )
        self.started.append(process)
        return process, log

    def scheduler(self) -> str:
        """A scheduler on 127.0.0.1; its address."""
        where = self.folder / f"scheduler-{uuid.uuid4().hex[:6]}.json"
        process, log = self.start(
            "scheduler",
            "-m",
            "distributed.cli.dask_scheduler",
            "--host",
            "127.0.0.1",
            "--port",
            "0",
            "--dashboard-address",
            "127.0.0.1:0",
            "--scheduler-file",
            str(where),
            env={"DASK_DISTRIBUTED__SCHEDULER__ALLOWED_FAILURES": "2"},
        )
        _until(lambda: where.is_file() and where.stat().st_size > 0, 30, process, log)
        return str(json.loads(where.read_text())["address"])

    def worker(
        self,
        address: str,
        *args: str,
        env: dict[str, str | None] | None = None,
        ready: bool = True,
        cwd: Path | None = None,
    ) -> tuple[subprocess.Popen[bytes], Path]:
        """`gpulab worker ADDRESS ARGS`; with `ready`, once it serves."""
        process, log = self.start(
            "worker", "-m", "gpulab", "worker", address, *args, env=env, cwd=cwd
        )
        if ready:
            _until(lambda: "gpulab worker: serving" in log.read_text(), 60, process, log)
        return process, log

    def end(self) -> None:
        for process in self.started:
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + 10
        for process in self.started:
            try:
                process.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def _until(done: object, seconds: float, process: subprocess.Popen[bytes], log: Path) -> None:
    assert callable(done)
    deadline = time.monotonic() + seconds
    while not done():
        assert process.poll() is None, f"it ended:\n{log.read_text()[-3000:]}"
        assert time.monotonic() < deadline, f"not ready in {seconds} s:\n{log.read_text()}"
        time.sleep(0.1)


@pytest.fixture
def processes(tmp_path: Path) -> Iterator[Processes]:
    started = Processes(tmp_path)
    try:
        yield started
    finally:
        started.end()


@dataclass(frozen=True)
class Served:
    """The shared cluster: its scheduler's address, and where its worker keeps things."""

    address: str
    home: Path  # the worker's working folder: nothing of a course in it
    package: Path  # the gpulab it imports: a copy, with no course beside it
    local: Path  # its --local-directory: its gpulab-cluster-<pid>-... folder lies there

    def courses(self) -> Path:
        """Where the worker unpacks the bundles it is sent, one folder per sha256."""
        (folder,) = self.local.glob("gpulab-cluster-*")
        return folder / "courses"


def courseless(folder: Path) -> dict[str, str | None]:
    """A copy of gpulab in `folder`/pkg and the environment that imports it: beside it (and
    so for `find_course_dir`) there is no course, and GPULAB_COURSE_DIR names none."""
    shutil.copytree(
        ROOT / "lab" / "gpulab",
        folder / "pkg" / "gpulab",
        ignore=shutil.ignore_patterns("__pycache__", "_course"),
    )
    return {"PYTHONPATH": str(folder / "pkg"), "GPULAB_COURSE_DIR": None}


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """A scheduler with one node, two fake GPUs and two CPU slots, whose worker has no
    course: it runs in a folder of its own, with a copy of gpulab and no course beside it."""
    base = tmp_path_factory.mktemp("cluster")
    home, local = base / "home", base / "local"
    home.mkdir()
    local.mkdir()
    env = courseless(base)
    started = Processes(base)
    try:
        address = started.scheduler()
        started.worker(
            address,
            "--gpus",
            "0,1",
            "--fake-gpus",
            "--cpu-slots",
            "2",
            "--local-directory",
            str(local),
            env={**env, "GPULAB_CHECK_SEED": SEED},
            cwd=home,
        )
        yield Served(address, home, base / "pkg", local)
    finally:
        started.end()


@pytest.fixture
def cluster(served: Served) -> str:
    """The shared cluster's address."""
    return served.address


def _target(address: str) -> Target:
    return Target(address, wait_s=30.0)


def _class(folder: Path) -> None:
    """good: both solved; stub: both as released; wrong: a wrong env-report, and a roofline
    whose messages hold text no encoder takes; late: roofline only."""
    for exercise, source in (("env-report", ENV_REPORT), ("roofline", ROOFLINE)):
        _write(nbformat.read(source, as_version=4), folder / "good" / f"{exercise}.ipynb")
        _write(nbformat.read(STUBS[exercise], as_version=4), folder / "stub" / f"{exercise}.ipynb")
    _write(nbformat.read(WRONG_ENV_REPORT, as_version=4), folder / "wrong" / "env-report.ipynb")
    _raises_in_a_check(folder / "wrong" / "roofline.ipynb")
    _write(nbformat.read(ROOFLINE, as_version=4), folder / "late" / "roofline.ipynb")


def _grades(summary: GradeSummary) -> dict[tuple[str, str], ExerciseGrade]:
    return {
        (learner.slug, grade.exercise): grade
        for learner in summary.learners
        for grade in learner.exercises
    }


def _seen(grade: ExerciseGrade) -> tuple[object, ...]:
    return (
        grade.kind,
        grade.earned,
        grade.possible,
        grade.notebook_hash,
        grade.guards,
        tuple((c.check, c.outcome, c.earned, c.hidden) for c in grade.checks),
    )


def _whence(dask_worker: object) -> dict[str, str]:
    """Run on a worker (pickled by value): its gpulab, the course it would find, its folder."""
    import gpulab
    from gpulab.course.catalog import find_course_dir

    return {"gpulab": gpulab.__file__, "course": str(find_course_dir()), "cwd": os.getcwd()}


def _on_workers(address: str, function: object) -> dict[str, object]:
    """`function` (of this module, pickled by value) run on every worker of `address`."""
    import cloudpickle
    from distributed import Client

    cloudpickle.register_pickle_by_value(sys.modules[__name__])
    try:
        with Client(address, set_as_default=False) as client:
            return dict(client.run(function))
    finally:
        cloudpickle.unregister_pickle_by_value(sys.modules[__name__])


def test_a_cluster_grades_a_class_as_this_machine_does(
    served: Served, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The worker has no course at all: it grades with the one this grader sends, as here."""
    cluster = served.address
    for said in _on_workers(cluster, _whence).values():
        assert isinstance(said, dict)
        assert Path(said["gpulab"]).is_relative_to(served.package)
        assert not Path(said["course"]).exists() and said["cwd"] == str(served.home)
    monkeypatch.setenv("GPULAB_CHECK_SEED", SEED)
    folder = tmp_path / "class"
    _class(folder)
    here = grade_class(GradeOptions(folder, tmp_path / "here", workers=2, timeout=TIMEOUT))
    there = grade_class(
        GradeOptions(
            folder, tmp_path / "there", workers=2, timeout=TIMEOUT, cluster=_target(cluster)
        )
    )
    local, remote = _grades(here), _grades(there)
    assert len(local) == 8 and set(local) == set(remote)
    assert {key: _seen(g) for key, g in remote.items()} == {
        key: _seen(g) for key, g in local.items()
    }
    kinds = {key: g.kind for key, g in remote.items()}
    assert kinds[("good", "roofline")] == kinds[("good", "env-report")] == "right"
    assert kinds[("stub", "roofline")] == kinds[("wrong", "env-report")] == "wrong"
    assert kinds[("late", "env-report")] == "missing"
    hostile = remote[("wrong", "roofline")]
    message = next(c.message for c in hostile.checks if c.check == "test_arithmetic_intensity")
    assert "\ufffd lone \ufffd" in message  # made storable, as locally
    assert there.graded == here.graded == 7 and not there.problems
    assert any("graded on the Dask cluster at" in note for note in there.notes)
    bundle = pack(ROOT)
    assert any(f"one bundle of {bundle.size}" in note for note in there.notes)
    assert (served.courses() / bundle.digest / "lessons" / "course.toml").is_file()
    with Gradebook(tmp_path / "there" / "gradebook.sqlite") as book:
        runs = book.db.execute("SELECT status FROM runs").fetchall()
    assert runs == [("finished",)]


def test_no_two_jobs_overlap_on_one_gpu(cluster: str, tmp_path: Path) -> None:
    """Jobs of a CPU exercise sent as GPU jobs: each fake GPU runs one at a time."""
    from gpulab.course import load_course

    course = load_course()
    jobs = _gpu_jobs(course, tmp_path, 6)
    timeline: list[tuple[str, str, float, float]] = []
    policy = sandbox.Policy(tag=uuid.uuid4().hex[:12])
    results = list(
        run_on_cluster(
            _target(cluster),
            jobs,
            course=course,
            policy=policy,
            timeout=TIMEOUT,
            recovery_s=1.0,
            notes=[],
            problems=[],
            timeline=timeline,
        )
    )
    done = [r for r in results if isinstance(r, Done)]
    assert len(done) == len(results) == 6
    assert sorted(d.job.slug for d in done) == [f"l{n}" for n in range(6)]
    assert all(d.grade.kind == "right" for d in done), [d.grade.message for d in done]
    gpus = {gpu for gpu, *_ in timeline}
    assert len(timeline) == 6 and len(gpus) == 2 and all(g.endswith((":0", ":1")) for g in gpus)
    assert {d.gpu for d in done} == gpus
    for gpu in gpus:
        spans = sorted((start, end) for g, _, start, end in timeline if g == gpu)
        for (_, end), (start, _) in itertools.pairwise(spans):
            assert end <= start, f"two jobs at once on GPU {gpu}: {spans}"


def _gpu_jobs(course: Course, folder: Path, count: int) -> list[Job]:
    """`count` learners' right env-report notebooks, sent as GPU jobs (l0, l1, ...)."""
    entry = next(e for e in course.exercises() if e.name == "env-report")
    jobs = []
    for n in range(count):
        notebook = folder / f"l{n}" / "env-report.ipynb"
        _write(nbformat.read(ENV_REPORT, as_version=4), notebook)
        jobs.append(
            Job(
                f"l{n}",
                replace(entry, gpu=True),
                notebook,
                sha(notebook),
                checks_hash(entry),
                15.0,
                (),
            )
        )
    return jobs


class _Stuck:
    """A GPU that never recovers: put in a worker's place of its NVML check (`GpuPool`)."""

    recovery_s = 1.0

    def after_job(self, gpu: str) -> str:
        return f"did not recover within {self.recovery_s:g} s after a job (test {gpu})"


def _stick(dask_worker: object) -> str:
    """Run on a worker (pickled by value): its GPU never recovers from now on."""
    from gpulab.grading.classrun.cluster.node import _STATIONS

    _STATIONS[str(dask_worker.name)].pool = _Stuck()  # type: ignore[attr-defined,assignment]
    return str(dask_worker.name)


def test_a_gpu_that_does_not_recover_retires_its_worker(
    processes: Processes, tmp_path: Path
) -> None:
    """Both GPUs stick after their first job: each is retired, with its event, and the jobs
    left run on the CPU slot, as locally when every GPU is out of rotation."""
    import cloudpickle
    from distributed import Client

    from gpulab.course import load_course

    address = processes.scheduler()
    worker, _ = processes.worker(address, "--gpus", "0,1", "--fake-gpus", "--cpu-slots", "1")
    cloudpickle.register_pickle_by_value(sys.modules[__name__])
    try:
        with Client(address, set_as_default=False) as client:
            stuck = client.run(
                _stick,
                workers=[
                    a
                    for a, i in client.scheduler_info()["workers"].items()
                    if i["resources"].get("GPU")
                ],
            )
    finally:
        cloudpickle.unregister_pickle_by_value(sys.modules[__name__])
    assert len(stuck) == 2
    course = load_course()
    jobs = _gpu_jobs(course, tmp_path, 4)
    timeline: list[tuple[str, str, float, float]] = []
    notes: list[str] = []
    results = list(
        run_on_cluster(
            _target(address),
            jobs,
            course=course,
            policy=sandbox.Policy(tag=uuid.uuid4().hex[:12]),
            timeout=TIMEOUT,
            recovery_s=1.0,
            notes=notes,
            problems=[],
            timeline=timeline,
        )
    )
    events = [r for r in results if isinstance(r, GpuEvent)]
    done = [r for r in results if isinstance(r, Done)]
    assert sorted(e.gpu[-2:] for e in events) == [":0", ":1"]
    assert all("did not recover within 1 s" in e.text for e in events)
    assert sorted(d.job.slug for d in done) == ["l0", "l1", "l2", "l3"]
    assert all(d.grade.kind == "right" for d in done)
    assert sorted(gpu[-2:] for gpu, *_ in timeline) == ["", "", ":0", ":1"]  # once each
    assert worker.poll() is None  # its CPU slot serves on
    with Client(address, set_as_default=False) as client:
        left = client.scheduler_info()["workers"].values()
    assert [i["resources"] for i in left] == [{"CPU_SLOT": 1}]


def test_a_worker_killed_mid_job_loses_and_duplicates_nothing(
    processes: Processes, tmp_path: Path
) -> None:
    address = processes.scheduler()
    first, _ = processes.worker(address, "--gpus", "", "--cpu-slots", "1")
    second, _ = processes.worker(address, "--gpus", "", "--cpu-slots", "1")
    folder = tmp_path / "class"
    for name in ("a", "b", "c"):
        _write(nbformat.read(ROOFLINE, as_version=4), folder / name / "roofline.ipynb")
    slow = nbformat.read(ROOFLINE, as_version=4)  # right, but slow: killed in the middle
    _answer(slow).source = "import time\ntime.sleep(2)\n\n" + _answer(slow).source
    _write(slow, folder / "slow" / "roofline.ipynb")
    killed: list[int] = []

    def kill_the_slow_ones_worker() -> None:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            worker = _grading("/slow/", {first.pid, second.pid})
            if worker:
                time.sleep(0.5)  # its learner code sleeps (2 s)
                os.kill(worker, signal.SIGKILL)
                killed.append(worker)
                return
            time.sleep(0.05)

    killer = threading.Thread(target=kill_the_slow_ones_worker)
    killer.start()
    try:
        summary = grade_class(
            GradeOptions(folder, tmp_path / "out", timeout=TIMEOUT, cluster=_target(address))
        )
    finally:
        killer.join()
    assert killed and killed[0] in (first.pid, second.pid)
    survivor = second if killed[0] == first.pid else first
    assert survivor.poll() is None
    grades = _grades(summary)
    worth = summary.maxima["roofline"]
    assert {key: (g.kind, g.earned) for key, g in grades.items()} == {
        (name, "roofline"): ("right", worth) for name in ("a", "b", "c", "slow")
    }
    assert summary.graded == 4 and not summary.problems  # each job's grade yielded once
    assert any("left the cluster" in note for note in summary.notes)
    with Gradebook(tmp_path / "out" / "gradebook.sqlite") as book:
        rows = book.db.execute(
            "SELECT learner, count(*) FROM grades GROUP BY learner ORDER BY learner"
        ).fetchall()
    assert rows == [("a", 1), ("b", 1), ("c", 1), ("slow", 1)]
    deadline = time.monotonic() + 15  # the killed worker's jobs died with it
    while tagged_processes(summary.tag) and time.monotonic() < deadline:
        time.sleep(0.2)
    left = tagged_processes(summary.tag)
    assert not left, [_described(pid) for pid in left]


def _grading(part: str, workers: set[int]) -> int | None:
    """Which of `workers` runs the checks of a notebook whose path holds `part`, once its
    learner code runs in bubblewrap (so the kill lands in the middle of the job)."""
    for entry in Path("/proc").iterdir():
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if not any(
            item.startswith(b"--gpulab-notebook=") and part.encode() in item for item in argv
        ) or not _sandboxed_below(int(entry.name)):
            continue
        pid = int(entry.name)
        while pid > 1:  # up to the worker that started it
            if pid in workers:
                return pid
            try:
                status = Path(f"/proc/{pid}/status").read_text()
            except OSError:
                break
            pid = int(
                next(line.split()[1] for line in status.splitlines() if line.startswith("PPid:"))
            )
    return None


def _sandboxed_below(pid: int) -> bool:
    """Whether a bubblewrap process runs below `pid` (its learner code's sandbox)."""
    todo, seen = [pid], set()
    while todo:
        current = todo.pop()
        for task in Path(f"/proc/{current}/task").glob("*"):
            try:
                children = {int(c) for c in (task / "children").read_text().split()}
            except OSError:
                continue
            for child in children - seen:
                try:
                    if Path(f"/proc/{child}/comm").read_text().strip() == "bwrap":
                        return True
                except OSError:
                    continue
            todo.extend(children - seen)
            seen |= children
    return False


def _described(pid: int) -> str:
    try:
        command = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
        status = Path(f"/proc/{pid}/status").read_text().splitlines()
    except OSError:
        return f"{pid}: gone"
    return f"{pid}: {command[:300]} " + " ".join(
        s for s in status if s.startswith(("PPid", "State"))
    )


def _one_learner(folder: Path) -> None:
    _write(nbformat.read(ROOFLINE, as_version=4), folder / "solo" / "roofline.ipynb")


def _refused(
    cluster: str, tmp_path: Path, worker: subprocess.Popen[bytes], log: Path, reason: str
) -> None:
    """Grading with `worker` on the cluster: it is refused for `reason`, the class graded."""
    _one_learner(tmp_path / "class")
    summary = grade_class(
        GradeOptions(
            tmp_path / "class", tmp_path / "out", timeout=TIMEOUT, cluster=_target(cluster)
        )
    )
    assert [(g.kind, g.earned) for g in _grades(summary).values()] == [
        ("right", summary.maxima["roofline"])
    ]
    refused = [p for p in summary.problems if " refused: " in p]
    assert len(refused) == 1 and reason in refused[0], summary.problems
    worker.wait(timeout=20)  # its only Dask worker was retired
    assert reason in log.read_text()  # and it said why, where it runs


def _roofline_jobs(course: Course, folder: Path, count: int) -> list[Job]:
    """`count` learners' right roofline notebooks, as CPU jobs (r0, r1, ...)."""
    entry = next(e for e in course.exercises() if e.name == "roofline")
    jobs = []
    for n in range(count):
        notebook = folder / f"r{n}" / "roofline.ipynb"
        _write(nbformat.read(ROOFLINE, as_version=4), notebook)
        jobs.append(
            Job(f"r{n}", entry, notebook, sha(notebook), checks_hash(entry), 15.0, ("bwrap",))
        )
    return jobs


@pytest.mark.parametrize("tampered", ["bytes", "name"])
def test_a_bundle_that_is_not_the_one_named_is_never_used(
    served: Served, tmp_path: Path, tampered: str
) -> None:
    """Bytes that are not those whose sha256 the job names (a hidden check changed on the
    way; a name that is no sha256 at all): each job is not run and says why, nothing of
    the bundle is unpacked, and the worker, which did nothing wrong, serves on."""
    from gpulab.course import load_course

    good = pack(ROOT)
    if tampered == "bytes":  # the same length: still a tar, one that passes every check
        bad = Bundle(good.data.replace(b"def test_", b"def xest_"), good.digest)
    else:
        bad = Bundle(good.data, "../../" + good.digest[6:])
    course = load_course()
    notes: list[str] = []
    problems: list[str] = []
    results = list(
        run_on_cluster(
            _target(served.address),
            _roofline_jobs(course, tmp_path, 3),
            course=course,
            policy=sandbox.Policy(tag=uuid.uuid4().hex[:12]),
            timeout=TIMEOUT,
            recovery_s=1.0,
            notes=notes,
            problems=problems,
            bundle=bad,
        )
    )
    assert len(results) == 3 and all(isinstance(r, Done) for r in results)
    for done in results:
        assert isinstance(done, Done)
        assert done.grade.kind == "not-run" and done.grade.earned == 0
        assert done.grade.message.startswith(
            "not graded: the course bundle it came with is not the one the grader named: "
            "its sha256 is "
        ), done.grade.message
    assert not problems and not any("left the cluster" in n for n in notes)
    unpacked = list(served.local.glob("gpulab-cluster-*/**/*.py"))
    assert not any(b"def xest_" in path.read_bytes() for path in unpacked)
    assert not list(served.local.glob("gpulab-cluster-*/*/unpack-*"))
    assert len(_on_workers(served.address, _whence)) == 3  # it serves on, whole


def test_two_courses_graded_at_once_on_the_same_workers_do_not_mix(
    served: Served, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two graders started together on the same worker, one (`gpulab grade --course`) with a
    copy of the course whose roofline has one hidden check more (one no answer passes),
    one with the course: each class gets its own course's grades, and each course has a
    folder of its own on the worker."""
    from gpulab.course import load_course

    monkeypatch.setenv("GPULAB_CHECK_SEED", SEED)
    other = tmp_path / "other"
    for part in ("lessons", "exercises", "solutions"):
        shutil.copytree(ROOT / part, other / part)
    hidden = other / "solutions" / "memory-hierarchy" / "test_roofline_hidden.py"
    hidden.write_text(
        hidden.read_text()
        + "\n\n@pytest.mark.points(3)\ndef test_only_in_the_other_course() -> None:\n"
        + '    """A check of the other course alone"""\n    assert False\n'
    )
    for name in ("this", "other"):
        for learner in ("a", "b", "c"):
            notebook = tmp_path / f"class-{name}" / learner / "roofline.ipynb"
            _write(nbformat.read(ROOFLINE, as_version=4), notebook)
    argv = [sys.executable, "-m", "gpulab", "grade", str(tmp_path / "class-other")]
    argv += ["--out", str(tmp_path / "out-other"), "--timeout", str(TIMEOUT)]
    argv += ["--cluster", served.address, "--course", str(other)]
    with subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT) as process:
        try:
            grade_class(
                GradeOptions(
                    tmp_path / "class-this",
                    tmp_path / "out-this",
                    timeout=TIMEOUT,
                    cluster=_target(served.address),
                ),
                course=load_course(),
            )
            said = process.communicate(timeout=300)[0].decode()
        finally:
            if process.poll() is None:
                process.kill()
    assert process.returncode == 0, said[-3000:]
    found = {}
    for name in ("this", "other"):
        with Gradebook(tmp_path / f"out-{name}" / "gradebook.sqlite") as book:
            known = book.exercise("roofline")
            assert known is not None
            found[name] = (known.max_points, book.learners(["roofline"]))
    worth = found["this"][0]
    assert found["other"][0] == worth + 3
    for name, (_, learners) in found.items():
        assert len(learners) == 3
        for learner in learners:
            (grade,) = learner.exercises
            names = {c.check for c in grade.checks}
            if name == "this":
                assert (grade.kind, grade.earned) == ("right", worth)
                assert "test_only_in_the_other_course" not in names
            else:
                assert (grade.kind, grade.earned, grade.possible) == ("wrong", worth, worth + 3)
                assert "test_only_in_the_other_course" in names
    digests = {"this": pack(ROOT).digest, "other": pack(other).digest}
    assert digests["this"] != digests["other"]
    for name, digest in digests.items():
        unpacked = served.courses() / digest / "solutions" / "memory-hierarchy"
        text = (unpacked / "test_roofline_hidden.py").read_text()
        assert ("test_only_in_the_other_course" in text) == (name == "other")


PEEK = """
import os
_lessons = os.environ.get("GPULAB_COURSE_DIR", "")
_course = os.path.dirname(_lessons)  # <worker's folder>/courses/<sha256>
_worker = os.path.dirname(os.path.dirname(_course))
if os.path.basename(os.path.dirname(_course)) != "courses" or not os.path.isfile(
    os.path.join(_lessons, "specs.toml")
):
    raise RuntimeError("this is not a worker's unpacked course: " + _lessons)
_saw = [p for p in (
    os.path.join(_course, "solutions"),
    os.path.join(_course, "solutions", "memory-hierarchy", "test_roofline_hidden.py"),
    os.path.join(_worker, "private"),
) if os.path.lexists(p)]
_saw += [os.path.join(_worker, "courses", n) for n in os.listdir(os.path.join(_worker, "courses"))
         if n != os.path.basename(_course)]
for _folder, _dirs, _files in os.walk("/"):
    _dirs[:] = [d for d in _dirs if os.path.join(_folder, d) not in ("/proc", "/sys", "/dev")]
    _saw += [os.path.join(_folder, n) for n in _files if n.endswith("_hidden.py")]
if _saw:
    raise RuntimeError("the sandbox showed me: " + ", ".join(sorted(set(_saw))[:8]))
"""


def test_learner_code_on_a_worker_sees_the_course_but_not_its_hidden_checks(
    served: Served, tmp_path: Path
) -> None:
    """A learner who looks, from the sandbox, for the hidden checks the worker unpacked
    (beside the lessons it is shown, in the worker's other folders, anywhere) finds none,
    and earns the full marks of the right answer it also gives."""
    folder = tmp_path / "class"
    _write(nbformat.read(ROOFLINE, as_version=4), folder / "honest" / "roofline.ipynb")
    _prefixed(ROOFLINE, PEEK)(folder / "peeker" / "roofline.ipynb")
    summary = grade_class(
        GradeOptions(folder, tmp_path / "out", timeout=TIMEOUT, cluster=_target(served.address))
    )
    grades = _grades(summary)
    worth = summary.maxima["roofline"]
    peeker = grades[("peeker", "roofline")]
    assert (peeker.kind, peeker.earned) == ("right", worth), [
        c.message for c in peeker.checks if c.outcome != "passed"
    ]
    assert (grades[("honest", "roofline")].kind, peeker.guards[0][:10]) == ("right", "bubblewrap")
    hidden = served.courses() / pack(ROOT).digest / "solutions" / "memory-hierarchy"
    assert (hidden / "test_roofline_hidden.py").is_file()  # there, on the worker, all along


def test_a_worker_without_bubblewrap_is_refused(
    cluster: str, tmp_path: Path, processes: Processes
) -> None:
    empty = tmp_path / "bin"  # a PATH without bwrap: bubblewrap is not installed
    empty.mkdir()
    plain, log = processes.worker(
        cluster, "--gpus", "", "--cpu-slots", "1", env={"PATH": str(empty)}, ready=False
    )
    assert plain.wait(timeout=30) == 2
    assert "refusing to serve" in log.read_text() and "--unsafe" in log.read_text()
    worker, log = processes.worker(
        cluster, "--gpus", "", "--cpu-slots", "1", "--unsafe", env={"PATH": str(empty)}
    )
    _refused(
        cluster,
        tmp_path,
        worker,
        log,
        "this grader's jobs run in bubblewrap, which it has not: bubblewrap is not installed",
    )


def test_only_slurm_needs_dask_jobqueue(
    processes: Processes, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A worker, and a grader that names a scheduler, need Dask's distributed alone: where
    dask-jobqueue cannot be imported, both grade; Slurm pilot jobs are refused in words."""
    from gpulab.grading.classrun.cluster.client import need_distributed
    from gpulab.grading.classrun.cluster.coordinator import ClusterError

    shim = tmp_path / "shim"
    shim.mkdir()
    (shim / "dask_jobqueue.py").write_text("raise ImportError('dask_jobqueue: not here')\n")
    path = os.pathsep.join(p for p in (str(shim), os.environ.get("PYTHONPATH")) if p)
    address = processes.scheduler()
    processes.worker(address, "--gpus", "", "--cpu-slots", "1", env={"PYTHONPATH": path})
    monkeypatch.setitem(sys.modules, "dask_jobqueue", None)  # this grader cannot import it
    folder = tmp_path / "class"
    _one_learner(folder)
    summary = grade_class(
        GradeOptions(folder, tmp_path / "out", workers=1, timeout=TIMEOUT, cluster=_target(address))
    )
    assert summary.graded == 1 and not summary.problems, summary.problems
    assert summary.learners[0].exercises[0].kind == "right"
    with pytest.raises(ClusterError, match=r"needs gpulab\[cluster\] .*dask_jobqueue"):
        need_distributed(slurm=True)


def test_slurm_pilot_jobs_each_run_gpulab_worker(tmp_path: Path) -> None:
    """What dask-jobqueue would submit (no Slurm here): a pilot job per node, each running
    `gpulab worker` with the node's GPUs and CPU slots, on this scheduler (and no course:
    the grader sends it)."""
    from gpulab.cli import _parser

    pilots = slurm_cluster(
        Target("slurm", nodes=8, gpus_per_node=4, cpu_slots=8, partition="gpu", walltime="2:00:00")
    )
    try:
        script, address = pilots.job_script(), pilots.scheduler_address
    finally:
        pilots.close()
    header = [line for line in script.splitlines() if line.startswith("#SBATCH")]
    assert {
        "#SBATCH -p gpu",
        "#SBATCH -t 2:00:00",
        "#SBATCH --gres=gpu:4",
        "#SBATCH --cpus-per-task=12",
        "#SBATCH -J gpulab-worker",
    } <= set(header)
    command = shlex.split(script.strip().splitlines()[-1])
    assert command[:5] == [sys.executable, "-m", "gpulab", "worker", address]
    args = _parser().parse_args(command[3:])  # gpulab's own parser takes it
    assert (args.cpu_slots, args.gpus) == (8, None) and "--course" not in script
    # the GPUs: those Slurm gives the job, in CUDA_VISIBLE_DEVICES (gpulab worker's default);
    # on nodes asked for no GPU, none, whatever the node has
    pilots = slurm_cluster(Target("slurm", cpu_slots=4))
    try:
        script = pilots.job_script()
    finally:
        pilots.close()
    assert "--gres" not in script and "--cpu-slots 4 " in script
    assert _parser().parse_args(shlex.split(script.strip().splitlines()[-1])[3:]).gpus == "none"
    bad = subprocess.run(
        [sys.executable, "-m", "gpulab", "grade", str(tmp_path), "--nodes", "2"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert bad.returncode == 2 and "go with --cluster slurm" in bad.stderr


def _contents(out: Path) -> dict[str, list[tuple[object, ...]]]:
    """The gradebook's grades and checks, the run's own folder written as OUT."""
    with Gradebook(out / "gradebook.sqlite") as book:
        dump = book.dump()
    return {
        table: [
            tuple(str(v).replace(str(out), "OUT") if isinstance(v, str) else v for v in row)
            for row in dump[table]
        ]
        for table in ("grades", "checks")
    }


@pytest.mark.parametrize("kill_at", [1, 3])
def test_the_coordinator_killed_mid_run_resumes(cluster: str, tmp_path: Path, kill_at: int) -> None:
    """`gpulab grade --cluster` killed (SIGKILL) once the gradebook holds `kill_at` grades:
    the same command again grades only what is left, and the gradebook is the one a run
    on this machine makes; the workers serve on."""
    folder = tmp_path / "class"
    for n in range(5):
        _write(nbformat.read(ROOFLINE, as_version=4), folder / f"l{n}" / "roofline.ipynb")
    _write(nbformat.read(STUBS["roofline"], as_version=4), folder / "stub" / "roofline.ipynb")
    _raises_in_a_check(folder / "hostile" / "roofline.ipynb")
    reference = tmp_path / "reference"
    grade_class(GradeOptions(folder, reference, ("roofline",), workers=2, timeout=TIMEOUT))
    out = tmp_path / "out"
    command = [
        sys.executable,
        "-m",
        "gpulab",
        "grade",
        str(folder),
        "--out",
        str(out),
        "--exercises",
        "roofline",
        "--timeout",
        str(TIMEOUT),
        "--cluster",
        cluster,
    ]
    log = tmp_path / "killed.log"
    with log.open("wb") as written:
        process = subprocess.Popen(
            command, stdout=written, stderr=subprocess.STDOUT, start_new_session=True
        )
    try:
        deadline = time.monotonic() + 120
        while process.poll() is None and graded_count(out) < kill_at:
            assert time.monotonic() < deadline, log.read_text()
            time.sleep(0.02)
        assert process.poll() is None, f"it finished first:\n{log.read_text()}"
        os.killpg(process.pid, signal.SIGKILL)  # the coordinator, as `kill -9` does
        process.wait()
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
    kept = graded_count(out)
    assert kill_at <= kept < 7
    done = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert "was left running by a grader that was killed: marked killed" in done.stdout
    assert _contents(out) == _contents(reference)
    with Gradebook(out / "gradebook.sqlite") as book:
        runs = book.db.execute("SELECT id, status, tag FROM runs ORDER BY id").fetchall()
        by_run = dict(
            book.db.execute("SELECT run_id, count(*) FROM grades GROUP BY run_id").fetchall()
        )
    assert [status for _, status, _ in runs] == ["killed", "finished"]
    assert by_run == {runs[0][0]: kept, runs[1][0]: 7 - kept}  # nothing graded twice
    deadline = time.monotonic() + 30  # the killed run's jobs end on the workers
    while tagged_processes(runs[0][2]) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not tagged_processes(runs[0][2])


def test_what_sbatch_said_reaches_the_message_not_the_screen(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """dask-jobqueue logs a refused sbatch as a traceback through tornado's logger; the
    grader keeps sbatch's own words for its message and prints none of it."""
    import logging

    import distributed  # noqa: F401  (it sets its loggers up as it is imported)

    from gpulab.grading.classrun.cluster.slurm import SbatchErrors, lost_pilots

    error = RuntimeError(
        "Command exited with non-zero exit code.\nstderr:\nsbatch: error: "
        "invalid partition specified: nosuch\nsbatch: error: Batch job "
        "submission failed: Invalid partition name specified\n"
    )
    with SbatchErrors() as sbatch:
        try:
            raise error
        except RuntimeError:
            logging.getLogger("tornado.application").exception("Exception in callback")
    assert sbatch.said == [
        "invalid partition specified: nosuch",
        "Batch job submission failed: Invalid partition name specified",
    ]
    captured = capsys.readouterr()
    assert "Traceback" not in captured.out + captured.err

    class Pilot:  # a pilot job sbatch refused has no job id
        job_id = None

    pilots = SimpleNamespace(workers={"slurm-0": Pilot()})
    said = lost_pilots(pilots, [], Target("slurm"), sbatch.said)
    assert said == (
        "sbatch refused 1 pilot job: invalid partition specified: nosuch; "
        "Batch job submission failed: Invalid partition name specified"
    )
