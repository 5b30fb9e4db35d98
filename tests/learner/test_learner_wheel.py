"""gpulab as a learner gets it: the wheel alone, in a fresh environment, as root and not.

The distribution must carry everything a learner and the book need and nothing
an instructor keeps back; installed with its runtime dependencies only, it must
take a learner from `gpulab init` to a checked exercise without the repository.
"""

from __future__ import annotations

import csv
import email
import hashlib
import html
import io
import json
import re
import shutil
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import nbformat
import pytest

from gpulab.course import load_course
from helpers.learner_env import (
    ROOT,
    TEST_ONLY,
    Learner,
    distributions,
    network_env,
    shared_folder,
    solve,
    tree_digest,
    wheel_names,
    which,
)

COURSE = load_course(ROOT / "lessons")
SOLUTION_FILES = {
    hashlib.sha256(p.read_bytes()).hexdigest(): p
    for p in (ROOT / "solutions").rglob("*")
    if p.is_file()
}


def _no_answers(names: list[str], read: dict[str, bytes], where: str) -> None:
    """Nothing of solutions/ in a distribution: no such path, no hidden check, no solved cell."""
    assert not [n for n in names if "solutions/" in n or n.endswith("_hidden.py")], where
    for name, data in read.items():
        assert hashlib.sha256(data).hexdigest() not in SOLUTION_FILES, f"{where}: {name}"
        if name.endswith(".ipynb"):
            assert b"BEGIN SOLUTION" not in data, f"{where}: {name} holds an answer"


def _text(page: str) -> str:
    """A page's text, as a reader sees it (no tags, entities decoded)."""
    return html.unescape(re.sub(r"<[^>]+>", "", page))


def _solved_lines(lesson: str, exercise: str) -> list[str]:
    """The lines between the solution's answer markers that the released notebook lacks."""
    notebook = nbformat.read(ROOT / "solutions" / lesson / f"{exercise}.ipynb", as_version=4)
    solved = [
        part
        for cell in notebook.cells
        for part in re.findall(r"### BEGIN SOLUTION(.*?)### END SOLUTION", cell.source, flags=re.S)
    ]
    released = "\n".join(
        cell.source
        for cell in nbformat.read(
            ROOT / "exercises" / lesson / f"{exercise}.ipynb", as_version=4
        ).cells
    )
    lines = [line.strip() for part in solved for line in part.splitlines()]
    return [line for line in lines if len(line) > 20 and line not in released]


def test_the_wheel_carries_the_course_and_no_answers(built: tuple[Path, Path]) -> None:
    wheel, _ = built
    names = wheel_names(wheel)
    course = "gpulab/_course/"
    with zipfile.ZipFile(wheel) as archive:
        read = {n: archive.read(n) for n in names if not n.endswith("/")}
    for entry in COURSE.exercises():  # every learner notebook and its visible checks
        for path in (
            entry.notebook,
            entry.notebook.with_name(f"test_{entry.name.replace('-', '_')}.py"),
        ):
            shipped = f"{course}exercises/{entry.lesson}/{path.name}"
            assert read[shipped] == path.read_bytes(), f"{shipped} is not the pristine copy"
    for lesson in COURSE.entries:
        assert f"{course}lessons/{lesson.id}.md" in read
    needed = [
        f"{course}lessons/course.toml",
        f"{course}lessons/specs.toml",
        f"{course}lessons/reference/h200-baseline.json",  # recorded H200 readings
        "gpulab/probes/recorded/h200.json",
        f"{course}book/templates/base.html",
        f"{course}book/assets/book.css",
        f"{course}book/assets/vendor/markmap-view.min.js",  # vendored markmap
        f"{course}book/assets/vendor/d3.min.js",
        "gpulab/tui/gpulab.tcss",
        # grading's packages, with the data their modules read beside them
        "gpulab/grading/checks/reference/warp_divergence.cu",
        "gpulab/grading/checks/machines/h200-vm/machine.json",
        "gpulab/grading/checks/tasks/two_paths.py",
        "gpulab/grading/sandbox/jobtime.py",
        "gpulab/grading/classrun/cluster/bundle.py",
        "gpulab/grading/machines.py",  # the old path learners' notebooks import
    ]
    assert not [n for n in needed if n not in read]
    assert not [n for n in names if "__pycache__" in n or ".ipynb_checkpoints" in n]
    _no_answers(names, read, wheel.name)

    metadata = email.message_from_bytes(
        read[next(n for n in names if n.endswith(".dist-info/METADATA"))]
    )
    requires = metadata.get_all("Requires-Dist") or []
    assert any(r.startswith("pytest") and "extra ==" not in r for r in requires), (
        "pytest runs the checks: it must be a runtime dependency"
    )
    for cuda in ("12", "13"):
        assert any(
            r.startswith(f"cupy-cuda{cuda}x[ctk]")
            and f"extra == 'cuda{cuda}'" in r.replace('"', "'")
            for r in requires
        ), f"cuda{cuda} needs CuPy's ctk"


def test_the_sdist_builds_the_same_wheel_and_holds_no_answers(built: tuple[Path, Path]) -> None:
    wheel, sdist = built
    with tarfile.open(sdist) as archive:
        members = [m for m in archive.getmembers() if m.isfile()]
        read = {m.name: archive.extractfile(m).read() for m in members}  # type: ignore[union-attr]
        names = list(read)
        _no_answers(names, read, sdist.name)
        assert not [n for n in names if "/tests/" in n or "/bench/" in n]
        unpacked = shared_folder("gpulab-sdist-")
        try:
            archive.extractall(unpacked, filter="data")
            (top,) = unpacked.iterdir()
            again = subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "hatchling",
                    "build",
                    "-t",
                    "wheel",
                    "-d",
                    str(unpacked / "out"),
                ],
                cwd=top,
                capture_output=True,
                text=True,
                timeout=300,
            )
            assert again.returncode == 0, again.stderr
            (rebuilt,) = (unpacked / "out").glob("*.whl")
            assert sorted(wheel_names(rebuilt)) == sorted(wheel_names(wheel))
        finally:
            shutil.rmtree(unpacked, ignore_errors=True)


def test_the_environment_has_runtime_dependencies_only(wheel_env: Path) -> None:
    installed = distributions(wheel_env)
    assert "gpulab" in installed and "pytest" in installed and "jupyterlab" in installed
    assert not installed & set(TEST_ONLY)


def test_a_learner_from_init_to_a_checked_exercise(learner: Learner) -> None:
    """`gpulab init`, a solved CPU exercise passes and shows in `gpulab list`, an untouched
    one fails, hints and the book work; the checkout's exercises/ is never written."""
    before = tree_digest(ROOT / "exercises")
    made = learner.run("init")
    assert made.returncode == 0, made.stderr
    workspace = learner.home / "gpulab-exercises"
    assert f"Made your workspace {workspace}" in made.stdout
    doctor = {c["name"]: c["status"] for c in json.loads(learner.run("doctor", "--json").stdout)}
    assert doctor["exercise checks"] == doctor["JupyterLab"] == doctor["your workspace"] == "pass"
    roofline = workspace / "memory-hierarchy" / "roofline.ipynb"
    solve(roofline, "roofline", "memory-hierarchy")
    learner.own(roofline)
    elsewhere = learner.home / "somewhere"  # the commands work from any folder
    elsewhere.mkdir()
    learner.own(elsewhere)

    passed = learner.run("check", "roofline", cwd=elsewhere)
    assert passed.returncode == 0, passed.stdout + passed.stderr
    assert passed.stdout.startswith("roofline: passed")
    failing = learner.run("check", "namespaces", cwd=elsewhere)
    assert failing.returncode == 1 and failing.stdout.startswith("namespaces: failed")
    listing = learner.run("list", cwd=elsewhere)
    assert listing.returncode == 0, listing.stderr
    total = len(COURSE.exercises())  # the course's own count: it grows
    assert f"Exercises: 1 of {total} passed, 1 failing" in listing.stdout
    row = next(line for line in listing.stdout.splitlines() if line.startswith("roofline "))
    assert "✓ passed" in row
    hint = learner.run("hint", "namespaces", cwd=elsewhere)
    assert hint.returncode == 0 and hint.stdout.startswith("Hint 1 of ")

    book = learner.run("book", "--out", str(learner.home / "book"), timeout=600)
    assert book.returncode == 0, book.stdout + book.stderr
    page = _text((learner.home / "book" / "exercises" / "roofline.html").read_text())
    assert "raise NotImplementedError" in page  # the notebook as released, not mine
    assert not [line for line in _solved_lines("memory-hierarchy", "roofline") if line in page]
    assert tree_digest(ROOT / "exercises") == before  # the checkout was never written

    authoring = learner.run("dev", "check", "roofline")
    assert authoring.returncode == 2 and "--course DIR" in authoring.stderr
    assert "Traceback" not in authoring.stderr


@pytest.mark.skipif(
    shutil.which("bwrap") is None, reason="bubblewrap is not installed (.ci/run installs it)"
)
def test_an_instructor_grades_from_the_wheel_with_the_course_checkout(
    wheel_env: Path, tmp_path: Path
) -> None:
    """The wheel has no hidden checks: `gpulab grade` says so, and grades with --course."""
    instructor = Learner(wheel_env, tmp_path)
    learner_folder = tmp_path / "submissions" / "ada"
    learner_folder.mkdir(parents=True)
    shutil.copy(
        ROOT / "exercises" / "memory-hierarchy" / "roofline.ipynb",
        learner_folder / "roofline.ipynb",
    )
    solve(learner_folder / "roofline.ipynb", "roofline", "memory-hierarchy")
    refused = instructor.run("grade", "submissions", "--out", "graded")
    assert refused.returncode == 2 and "--course DIR" in refused.stderr, refused.stderr
    graded = instructor.run(
        "grade",
        "submissions",
        "--out",
        "graded",
        "--course",
        str(ROOT),
        "--workers",
        "1",
        timeout=600,
    )
    assert graded.returncode == 0, graded.stdout[-2000:] + graded.stderr[-2000:]
    rows = list(csv.reader(io.StringIO((tmp_path / "graded" / "grades.csv").read_text())))
    possible = next(r for r in rows if r[0] == "Points possible")
    ada = next(r for r in rows if r[0] == "ada")
    column = rows[0].index("roofline")
    assert float(ada[column]) == float(possible[column]) > 11  # hidden checks counted too


@pytest.mark.parametrize("tool", ["uv", "pipx"])
def test_uv_tool_and_pipx_give_a_working_gpulab(tool: str, built: tuple[Path, Path]) -> None:
    program = which(tool)
    if program is None:
        pytest.skip(f"{tool} is not installed (the test extra installs it)")
    base = shared_folder(f"gpulab-{tool}-")
    try:
        bin_dir = base / "bin"
        env = {
            **network_env(),
            "HOME": str(base),
            "PATH": f"{bin_dir}:/usr/bin:/bin",
            "LANG": "C.UTF-8",
            "UV_TOOL_DIR": str(base / "tools"),
            "UV_TOOL_BIN_DIR": str(bin_dir),
            "UV_CACHE_DIR": str(base / "cache"),
            "PIPX_HOME": str(base / "pipx"),
            "PIPX_BIN_DIR": str(bin_dir),
            "PIPX_MAN_DIR": str(base / "man"),
        }
        install = (
            [program, "tool", "install", str(built[0])]
            if tool == "uv"
            else [program, "install", str(built[0])]
        )
        done = subprocess.run(install, env=env, capture_output=True, text=True, timeout=900)
        assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
        learner = Learner(bin_dir, base)
        assert learner.run("init").returncode == 0
        solve(
            base / "gpulab-exercises" / "memory-hierarchy" / "roofline.ipynb",
            "roofline",
            "memory-hierarchy",
        )
        checked = learner.run("check", "roofline")
        assert checked.returncode == 0, checked.stdout + checked.stderr
        assert checked.stdout.startswith("roofline: passed")
    finally:
        shutil.rmtree(base, ignore_errors=True)
