"""The view a sandboxed job gets, proven by its content wherever the grader keeps things.

The red team's H1: an instructor whose checkout, venv and Python (pyenv, conda,
uv) live in their home folder could not grade. bubblewrap makes the folders
above each shown path, so the sandbox had a ``/home``; the proof asked only
whether ``/home`` existed, refused, and told the instructor to pass
``--unsafe``. H4: the view showed all of ``/usr`` (a course copy in
``/usr/local`` gave full marks) and whole ``PYTHONPATH`` and
``LD_LIBRARY_PATH`` folders (an ssh key beside one was read).

Here a home folder is built for real (``/home/<tmp>/alice`` as root, as CI
runs; a folder in this user's home otherwise) holding a copy of the checkout,
a venv made there by ``python -m venv`` with gpulab installed editable, and a
copy of the Python it runs on, as pyenv keeps one. Beside them lie planted
secrets: an ssh key, notes, a course copy with its solutions, files beside the
venv and the Python, and, as root, course copies under ``/usr/local`` and
``/usr/src`` (removed after). ``PYTHONPATH`` names the home folder itself,
``LD_LIBRARY_PATH`` the Python's lib folder. ``gpulab grade`` then grades a
small class from there, as root and as an ordinary user (nobody): it must grade
(no refusal), the honest learner must earn full marks, a learner who searches
the whole file system must find none of the planted files, and one who looks
for any copy of the solutions must find none and earn the stub's nothing.
"""

from __future__ import annotations

import csv
import dataclasses
import json
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
from collections.abc import Iterator
from pathlib import Path

import nbformat
import pytest

from gpulab.grading import sandbox
from gpulab.grading.sandbox import bubblewrap
from gpulab.grading.sandbox import proof as sandbox_proof
from gpulab.grading.sandbox import view as sandbox_view
from helpers.adversarial_class import ROOT, SOLUTION, STUB, _prefixed, _write
from helpers.instructor_home import MARK, Home, course_copy, home_base, make_home, plant

GUARDS = sandbox.available()
NOBODY = 65534

pytestmark = pytest.mark.skipif(
    not shutil.which("bwrap"), reason="bubblewrap is not installed here"
)


@pytest.fixture(scope="module")
def home() -> Iterator[Home]:
    base = home_base()
    system: list[Path] = []
    try:
        made = make_home(base)
        if os.geteuid() == 0:  # course copies where JupyterHub images and admins keep them
            for folder in ("/usr/local/src", "/usr/local/share", "/usr/src"):
                copy = Path(tempfile.mkdtemp(prefix=f"{MARK}-", dir=folder))
                system.append(copy)
                made.secrets += course_copy(copy / "gpulab")
        yield made
    finally:
        for folder in system:
            shutil.rmtree(folder, ignore_errors=True)
        shutil.rmtree(base, ignore_errors=True)


# -- the class ----------------------------------------------------------------------------

SEARCH = """
import os
_saw = [p for p in {secrets!r} if os.path.lexists(p)]
for _folder, _dirs, _files in os.walk("/"):
    _dirs[:] = [d for d in _dirs if os.path.join(_folder, d) not in ("/proc", "/sys", "/dev")]
    _saw += [os.path.join(_folder, n) for n in _files + _dirs
             if "gpulab-decoy" in n or n.endswith("_hidden.py") or n.startswith("id_rsa")]
import helpers                                   # PYTHONPATH's own module is there
if _saw or helpers.VALUE != 42:
    raise RuntimeError("the sandbox showed me: " + ", ".join(sorted(set(_saw))[:8]))
"""

THIEF = """
import json, os
if "_stolen" not in globals():
    _stolen = {}
    for _folder, _dirs, _files in os.walk("/"):
        _dirs[:] = [d for d in _dirs if os.path.join(_folder, d) not in ("/proc", "/sys", "/dev")]
        if _folder.endswith("solutions/memory-hierarchy") and "roofline.ipynb" in _files:
            with open(os.path.join(_folder, "roofline.ipynb")) as _f:
                _stolen = json.load(_f)
            break
_theirs = [c for c in _stolen.get("cells", [])
           if c.get("metadata", {}).get("gpulab", {}).get("part") == {part!r}]
exec("".join(_theirs[0]["source"]) if _theirs else {own!r}, globals())
"""


def _thief(target: Path) -> None:
    """The stub, each of whose answers is taken from any copy of the solutions it finds."""
    notebook = nbformat.read(STUB, as_version=4)
    for cell in notebook.cells:
        meta = cell.get("metadata", {}).get("gpulab", {})
        if cell.cell_type == "code" and meta.get("role") == "answer":
            code = THIEF.replace("{part!r}", repr(meta.get("part")))
            cell.source = code.replace("{own!r}", repr(cell.source))
    _write(notebook, target)


def _class(folder: Path, secrets: list[Path]) -> None:
    _write(nbformat.read(SOLUTION, as_version=4), folder / "honest" / "roofline.ipynb")
    search = SEARCH.replace("{secrets!r}", repr([str(s) for s in secrets]))
    _prefixed(SOLUTION, search)(folder / "searcher" / "roofline.ipynb")
    _thief(folder / "thief" / "roofline.ipynb")


def _grade(home: Home, grader: str, tag: str) -> tuple[subprocess.CompletedProcess[str], Path]:
    """`gpulab grade` run by the venv in the home folder; the process and --out."""
    work = home.alice / f"run-{tag}"
    work.mkdir()
    _class(work / "class", home.secrets)
    out = work / "out"
    state = home.alice / "state"
    state.mkdir(exist_ok=True)
    argv = [str(home.python), "-m", "gpulab", "grade", str(work / "class"), "--out", str(out)]
    argv += ["--exercises", "roofline", "--workers", "2", "--timeout", "60"]
    if grader == "nobody":
        ssh = home.alice / ".ssh"
        for path in (home.alice, state, ssh, *ssh.iterdir(), work, *work.rglob("*")):
            os.chown(path, NOBODY, NOBODY)  # the instructor's own files, their key included
        argv = ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", "--", *argv]
    done = subprocess.run(
        argv, cwd=home.alice, env=home.env, capture_output=True, text=True, timeout=540
    )
    return done, out


def _points(out: Path) -> dict[str, tuple[float, float]]:
    rows = list(csv.reader((out / "grades.csv").read_text(encoding="utf-8").splitlines()))
    worth = float(rows[1][2])
    return {row[1]: (float(row[2] or 0), worth) for row in rows[2:]}


def _nobody_skip() -> str | None:
    if os.geteuid() != 0:
        return "the grader already runs as an ordinary user here: see the other case"
    if shutil.which("setpriv") is None:
        return "no setpriv to run a grader as nobody"
    return None


@pytest.mark.parametrize(
    "grader",
    [
        pytest.param("self", id="grader-as-this-user"),
        pytest.param(
            "nobody",
            id="grader-as-nobody",
            marks=pytest.mark.skipif(_nobody_skip() is not None, reason=_nobody_skip() or ""),
        ),
    ],
)
def test_a_class_is_graded_from_a_home_folder_and_sees_none_of_it(home: Home, grader: str) -> None:
    """H1 and H4 together: the checkout, venv and Python in a home folder; planted files in
    it, beside every shown folder, on PYTHONPATH and LD_LIBRARY_PATH, and under /usr."""
    done, out = _grade(home, grader, grader)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "--unsafe" not in done.stderr
    points = _points(out)

    def page(slug: str) -> str:
        return (out / "feedback" / f"{slug}.md").read_text(encoding="utf-8")[-3000:]

    earned, worth = points["honest"]
    assert earned == worth > 0, page("honest")
    assert points["searcher"] == (worth, worth), page("searcher")
    assert points["thief"][0] == 0, page("thief")  # found no solutions to copy
    assert "bubblewrap" in page("honest")


# -- the proof ----------------------------------------------------------------------------


def test_the_proof_accepts_the_folders_bubblewrap_makes_on_the_way(
    home: Home, monkeypatch: pytest.MonkeyPatch
) -> None:
    """H1 at its root: a Python path in a home folder (and, as root, in /srv) makes bubblewrap
    make /home (and /srv) in the sandbox, empty but for the way on; the proof accepts that."""
    package = home.alice / "tools"
    plant(package / "__init__.py", "VALUE = 1  # ")
    paths = [str(home.alice)]
    if os.geteuid() == 0:
        Path("/srv").mkdir(exist_ok=True)
        srv = Path(tempfile.mkdtemp(prefix="gpulab-view-", dir="/srv"))
        plant(srv / "srvtools" / "__init__.py", "VALUE = 2  # ")
        plant(srv / f"beside-{MARK}")
        srv.chmod(0o755)
        paths.append(str(srv))
    try:
        monkeypatch.setenv("PYTHONPATH", os.pathsep.join(paths))
        assert sandbox_proof.prove(sandbox.Policy(), sandbox.spawn) == ""
        shown = sandbox_view.shown_paths((), (), gpu=False)
        listings = sandbox_proof.expected_listings(shown)
        assert listings[str(home.alice.parent)] == ["alice"]  # bubblewrap makes these
        assert listings[str(home.alice)] == ["helpers.py", "tools"]  # what Python imports
    finally:
        if os.geteuid() == 0:
            shutil.rmtree(paths[-1], ignore_errors=True)


def test_the_proof_refuses_a_view_that_shows_more_than_it_names(
    home: Home, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A view that binds a whole home folder shows what lies beside the course: the proof
    lists the folders above what it shows, and says what it saw."""
    real = sandbox_view.build_view

    def whole_home(**kwargs: object) -> sandbox_view.View:
        view = real(**kwargs)  # type: ignore[arg-type]
        end = view.args.index("--remount-ro")
        extra = ["--ro-bind", str(home.alice / ".ssh"), str(home.alice / ".ssh")]
        return dataclasses.replace(view, args=[*view.args[:end], *extra, *view.args[end:]])

    monkeypatch.setattr(bubblewrap, "build_view", whole_home)
    problem = sandbox_proof.prove(sandbox.Policy(), sandbox.spawn)
    assert problem.startswith("bubblewrap could not build the view gpulab asked for"), problem
    assert f"in / it saw {home.alice.parts[1]}, which the view does not show" in problem
    monkeypatch.setenv("PYTHONPATH", str(home.alice))  # its helpers.py is shown: .ssh is not
    problem = sandbox_proof.prove(sandbox.Policy(), sandbox.spawn)
    assert f"in {home.alice} it saw .ssh, which the view does not show" in problem, problem
    assert "To fix it: " in problem and "--unsafe" not in problem


def test_a_refusal_says_what_bubblewrap_could_not_do_and_never_unsafe_while_installed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A sandbox that does not start is refused with bubblewrap's words and a fix; --unsafe is
    the advice only where bubblewrap is not installed."""
    monkeypatch.setattr(bubblewrap, "ISOLATION", ("--no-such-option", *bubblewrap.ISOLATION))
    problem = sandbox_proof.prove(sandbox.Policy(), sandbox.spawn)
    assert problem.startswith("bubblewrap could not start a sandbox here (bwrap: "), problem
    assert "--no-such-option" in problem and "To fix it: " in problem
    guards = sandbox.Guards(bubblewrap_problem=problem)
    refused = sandbox.refusal(guards, "grade")
    assert refused.startswith("refusing to grade: ") and problem in refused
    assert "--unsafe" not in refused and "Install" not in refused
    monkeypatch.setenv("PATH", "/nonexistent")
    refused = sandbox.refusal(sandbox.Guards(bubblewrap_problem="not installed"), "serve")
    assert "bubblewrap is not installed" in refused and "apt install bubblewrap" in refused
    assert "pass --unsafe to serve without it" in refused


# -- the view, job by job -----------------------------------------------------------------

LOOK = """
import json, os, sys
spec = json.loads(sys.argv[1])
print(json.dumps({
    "seen": [p for p in spec["secrets"] if os.path.lexists(p)],
    "there": [p for p in spec["shown"] if os.path.exists(p)],
    "usr": sorted(os.listdir("/usr")),
    "local": sorted(os.listdir("/usr/local")) if os.path.isdir("/usr/local") else [],
}))
"""


@pytest.mark.skipif(not GUARDS.bubblewrap, reason=f"no sandbox here: {GUARDS.bubblewrap_problem}")
def test_python_paths_show_what_python_imports_and_usr_only_programs_and_libraries(
    home: Home, monkeypatch: pytest.MonkeyPatch
) -> None:
    """H4: of a PYTHONPATH folder only its packages and modules, of an LD_LIBRARY_PATH folder
    only its shared libraries, of /usr only programs and libraries (no /usr/local/src)."""
    libs = home.alice / "cuda-libs"
    library = plant(libs / "libdecoy.so.1", "\x7fELF")
    (libs / "libdecoy.so").symlink_to("libdecoy.so.1")
    secrets = [*home.secrets, plant(libs / f"notes-{MARK}.txt"), plant(libs / "include" / "x.h")]
    monkeypatch.setenv("PYTHONPATH", str(home.alice))
    monkeypatch.setenv("LD_LIBRARY_PATH", str(libs))
    spec = {
        "secrets": [str(s) for s in secrets],
        "shown": [str(home.alice / "helpers.py"), str(library), str(libs / "libdecoy.so")],
    }
    job = sandbox.spawn(
        [sys.executable, "-c", textwrap.dedent(LOOK), json.dumps(spec)],
        env=dict(os.environ),
        cwd="/",
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        policy=sandbox.Policy(private=(str(ROOT / "solutions"),)),
    )
    try:
        out, err = job.process.communicate(timeout=120)
    finally:
        job.close()
    lines = out.decode().strip().splitlines()
    assert lines, err.decode(errors="replace")[-2000:]
    seen = json.loads(lines[-1])
    assert seen["seen"] == [], seen
    assert sorted(seen["there"]) == sorted(spec["shown"]), seen
    assert "src" not in seen["usr"] and "include" not in seen["usr"], seen["usr"]
    assert not {"src", "share"} & set(seen["local"]), seen["local"]
