"""The course bundle a grader sends its cluster's workers: what it holds, and how a worker
unpacks it (`gpulab.grading.classrun.cluster.bundle`). Real files and real tars, no cluster: the
bundle's way through Dask is in test_cluster.py."""

from __future__ import annotations

import hashlib
import io
import os
import shutil
import tarfile
from pathlib import Path

import pytest

from gpulab.course import load_course
from gpulab.grading.classrun.cluster import bundle as cluster_bundle
from gpulab.grading.classrun.cluster.bundle import Bundle, BundleError, Shelf, pack, unpack
from gpulab.grading.classrun.fingerprint import checks_hash

ROOT = Path(__file__).resolve().parents[2]


def _copy(target: Path) -> Path:
    for part in ("lessons", "exercises", "solutions"):
        shutil.copytree(ROOT / part, target / part)
    return target


def _names(bundle: Bundle) -> list[str]:
    with tarfile.open(fileobj=io.BytesIO(bundle.data)) as tar:
        return [member.name for member in tar.getmembers()]


def test_the_same_course_makes_the_same_bundle_anywhere(tmp_path: Path) -> None:
    """Another folder, other times and modes, and leftovers of Python and Jupyter: the same
    bytes, so the same sha256."""
    bundle = pack(ROOT)
    copy = _copy(tmp_path / "elsewhere")
    for path in copy.rglob("*"):
        os.utime(path, (1_000_000, 1_000_000))
        path.chmod(0o700 if path.is_dir() else 0o600)
    (copy / "exercises" / "landscape" / "__pycache__").mkdir()
    (copy / "exercises" / "landscape" / "__pycache__" / "x.cpython-311.pyc").write_bytes(b"\0")
    (copy / "exercises" / "landscape" / ".ipynb_checkpoints").mkdir()
    (copy / "exercises" / "landscape" / ".ipynb_checkpoints" / "a.ipynb").write_text("{}")
    (copy / "lessons" / ".DS_Store").write_bytes(b"\0")
    assert pack(copy) == bundle
    assert bundle.digest == hashlib.sha256(bundle.data).hexdigest()
    assert len(bundle.data) < 4 * 2**20


def test_a_bundle_holds_the_checks_and_no_solution(tmp_path: Path) -> None:
    names = _names(pack(ROOT))
    assert names == sorted(names)
    assert "lessons/course.toml" in names and "lessons/specs.toml" in names
    for entry in load_course().exercises():
        lesson, name = entry.lesson, entry.name.replace("-", "_")
        assert f"exercises/{lesson}/{entry.name}.ipynb" in names
        assert f"exercises/{lesson}/test_{name}.py" in names
        assert f"solutions/{lesson}/test_{name}_hidden.py" in names
        assert f"solutions/{lesson}/{entry.name}.ipynb" not in names
    assert not [n for n in names if n.startswith("solutions/") and n.endswith(".ipynb")]
    assert {n.split("/")[0] for n in names} == {"lessons", "exercises", "solutions"}


def test_a_link_in_the_course_is_refused_with_its_path(tmp_path: Path) -> None:
    copy = _copy(tmp_path / "course")
    link = copy / "solutions" / "landscape" / "helper.py"
    link.symlink_to(ROOT / "solutions" / "landscape" / "test_env_report_hidden.py")
    with pytest.raises(BundleError, match="a link or a special file") as raised:
        pack(copy)
    assert str(link) in str(raised.value)


def test_a_course_over_the_limit_is_refused_naming_its_largest_file(tmp_path: Path) -> None:
    copy = _copy(tmp_path / "course")
    (copy / "lessons" / "data.bin").write_bytes(b"\0" * 3 * 2**20)
    with pytest.raises(BundleError) as raised:
        pack(copy, limit=2 * 2**20)
    said = str(raised.value)
    assert "over the 2 MiB they take" in said and "lessons/data.bin (3.0 MiB)" in said


def _tar(*members: tuple[tarfile.TarInfo, bytes]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for info, data in members:
            info.size = len(data) if info.isfile() else 0
            tar.addfile(info, io.BytesIO(data) if info.isfile() else None)
    return buffer.getvalue()


def _member(name: str, kind: bytes = tarfile.REGTYPE, target: str = "") -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type, info.linkname = kind, target
    return info


@pytest.mark.parametrize(
    ("member", "said"),
    [
        (_member("/etc/evil"), "by relative names"),
        (_member("solutions/../../evil"), "by relative names"),
        (_member("elsewhere/evil.py"), "by relative names"),
        (_member("lessons/link", tarfile.SYMTYPE, "/etc/passwd"), "not a plain file or folder"),
        (_member("lessons/hard", tarfile.LNKTYPE, "lessons/course.toml"), "not a plain file"),
        (_member("lessons/null", tarfile.CHRTYPE), "not a plain file or folder"),
        (_member("lessons/fifo", tarfile.FIFOTYPE), "not a plain file or folder"),
    ],
)
def test_unpack_refuses_what_a_bundle_never_holds(
    tmp_path: Path, member: tarfile.TarInfo, said: str
) -> None:
    data = _tar((_member("lessons/course.toml"), b"[course]\n"), (member, b"evil"))
    with pytest.raises(BundleError, match=said):
        unpack(data, tmp_path / "course")
    assert not (tmp_path / "course").exists()  # nothing was written
    assert not Path("/etc/evil").exists() and not (tmp_path.parent / "evil").exists()


def test_unpack_refuses_what_is_no_tar(tmp_path: Path) -> None:
    with pytest.raises(BundleError, match="not a tar a worker can unpack"):
        unpack(b"\x7fELF" + b"\0" * 2000, tmp_path / "course")


def _shelf(tmp_path: Path) -> Shelf:
    (tmp_path / "private").mkdir(parents=True)
    return Shelf(tmp_path / "courses", tmp_path / "private")


def test_a_shelf_unpacks_a_bundle_once_and_proves_its_checks(tmp_path: Path) -> None:
    bundle = pack(ROOT)
    shelf = _shelf(tmp_path)
    with shelf.course(bundle.digest, bundle.data) as course:
        assert course.root == tmp_path / "courses" / bundle.digest
        manifest = course.root / "lessons" / "course.toml"
        made = manifest.stat().st_mtime_ns
        local = {e.name: checks_hash(e) for e in load_course().exercises()}
        assert course.hashes == local  # what was unpacked is what this checkout grades with
        assert course.lessons == course.root / "lessons"
    with shelf.course(bundle.digest, bundle.data) as again:
        assert again is course and manifest.stat().st_mtime_ns == made
    assert not list((tmp_path / "private").iterdir())  # nothing left where it unpacks


def test_a_shelf_refuses_bytes_that_are_not_the_ones_named(tmp_path: Path) -> None:
    bundle = pack(ROOT)
    shelf = _shelf(tmp_path)
    for digest, data in (
        (bundle.digest, bundle.data.replace(b"def test_", b"def xest_")),
        ("../../" + bundle.digest[6:], bundle.data),
    ):
        with (
            pytest.raises(BundleError, match="is not the one the grader named"),
            shelf.course(digest, data),
        ):
            pass
    assert (
        not (tmp_path / "courses").exists() and not (tmp_path.parent / bundle.digest[6:]).exists()
    )


def test_a_shelf_keeps_the_courses_used_lately_and_those_in_use(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(cluster_bundle, "KEEP", 1)
    copies = [_copy(tmp_path / f"course{n}") for n in range(3)]
    for n, copy in enumerate(copies):
        (copy / "lessons" / "n.txt").write_text(str(n))
    bundles = [pack(copy) for copy in copies]
    shelf = _shelf(tmp_path / "worker")
    with shelf.course(bundles[0].digest, bundles[0].data) as first:
        with shelf.course(bundles[1].digest, bundles[1].data):
            pass
        with shelf.course(bundles[2].digest, bundles[2].data):
            assert first.root.is_dir()  # in use: kept
            assert not (shelf.folder / bundles[1].digest).exists()
    kept = sorted(p.name for p in shelf.folder.iterdir())
    assert kept == sorted([bundles[0].digest, bundles[2].digest])
