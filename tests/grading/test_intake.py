"""The intake of a class's submissions: every layout, and every hazard a hostile submission holds.

Everything is real: folders, links, FIFOs and zips built in tmp_path (zips with
zipfile, some patched byte by byte where zipfile will not write the hazard),
notebooks made with nbformat, and `collect` copying into a work folder.
"""

from __future__ import annotations

import hashlib
import os
import stat
import tracemalloc
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import nbformat
import pytest

from gpulab.grading.checks.notebook import MAX_BYTES
from gpulab.grading.intake import (
    Intake,
    IntakeError,
    LearnerSubmission,
    ZipLimits,
    collect,
)
from gpulab.grading.intake.zipread import MIB, count_headers, read_directory
from helpers.intake_attacks import directory_bomb

EXERCISES = ("roofline", "reduction")
NBFORMAT: Any = nbformat  # it has no type hints


def notebook(text: str = "") -> bytes:
    """A small valid notebook whose one cell holds `text`, so copies can be told apart."""
    nb = NBFORMAT.v4.new_notebook(cells=[NBFORMAT.v4.new_code_cell(text, id="answer")])
    return str(NBFORMAT.writes(nb)).encode()


def put(path: Path, data: bytes | None = None) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(notebook(path.name) if data is None else data)
    return path


def make_zip(path: Path, members: dict[str, bytes], method: int = zipfile.ZIP_DEFLATED) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(path, "w", method) as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return path


def zip_bytes(members: dict[str, bytes], tmp: Path) -> bytes:
    return make_zip(tmp, members).read_bytes()


def patch(path: Path, old: bytes, new: bytes) -> None:
    """Replace bytes in a zip (names in both headers) where zipfile will not write the hazard."""
    assert len(old) == len(new)
    data = path.read_bytes()
    assert old in data
    path.write_bytes(data.replace(old, new))


def flag(path: Path, bits: int) -> None:
    """Set general-purpose flag bits on every member, in the local and central headers."""
    data = bytearray(path.read_bytes())
    for signature, offset in ((b"PK\x03\x04", 6), (b"PK\x01\x02", 8)):
        start = data.find(signature)
        while start != -1:
            at = start + offset
            value = int.from_bytes(data[at : at + 2], "little") | bits
            data[at : at + 2] = value.to_bytes(2, "little")
            start = data.find(signature, start + 4)
    path.write_bytes(bytes(data))


def learners(intake: Intake) -> dict[str, LearnerSubmission]:
    return {learner.learner: learner for learner in intake.learners}


def files(root: Path) -> dict[str, bytes]:
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and not p.is_symlink()
    }


def snapshot(root: Path, work: Path) -> dict[str, str]:
    """Every path under `root` but `work`, with what it is, to show nothing else was written."""
    seen: dict[str, str] = {}
    for folder, dirs, names in os.walk(root):
        here = Path(folder)
        if here == work or work in here.parents:
            continue
        for name in dirs + names:
            path = here / name
            if path == work:
                continue
            info = path.lstat()
            seen[os.fsencode(path).hex()] = f"{stat.S_IFMT(info.st_mode)}:{info.st_size}"
    return seen


def assert_sane(intake: Intake, work: Path) -> None:
    """Copies sit in work/<slug>/, match their hashes; all text is printable UTF-8."""
    slugs = [learner.slug for learner in intake.learners]
    assert slugs == sorted(slugs) and len(set(slugs)) == len(slugs)
    texts = list(intake.problems)
    for learner in intake.learners:
        assert learner.slug and all(
            (c.isalnum() and c.isascii()) or c in "._-" for c in learner.slug
        )
        assert not set(learner.notebooks) & set(learner.problems)
        assert set(learner.notebooks) == set(learner.hashes)
        for exercise, copy in learner.notebooks.items():
            assert copy == work / learner.slug / f"{exercise}.ipynb"
            assert copy.is_file() and not copy.is_symlink()
            assert learner.hashes[exercise] == hashlib.sha256(copy.read_bytes()).hexdigest()
        texts += [learner.learner, str(learner.source), *learner.problems.values()]
    for text in texts:
        text.encode("utf-8")
        assert text.isprintable(), text


def run(
    submissions: Path,
    work: Path,
    exercises: tuple[str, ...] = EXERCISES,
    limits: ZipLimits | None = None,
) -> Intake:
    before = snapshot(work.parent, work)
    intake = collect(submissions, exercises, work, limits=limits or ZipLimits())
    assert snapshot(work.parent, work) == before, "something was written outside work"
    assert_sane(intake, work)
    copies = {f"{s.slug}/{e}.ipynb" for s in intake.learners for e in s.notebooks}
    assert set(files(work)) == copies, "the work folder holds more than the copies"
    return intake


# Layouts


def test_a_folder_per_learner(tmp_path: Path) -> None:
    sub, work = tmp_path / "sub", tmp_path / "work"
    put(sub / "ada" / "roofline.ipynb")
    put(sub / "ada" / "a" / "b" / "c" / "reduction.ipynb")  # three levels: found
    put(sub / "ada" / ".ipynb_checkpoints" / "roofline.ipynb")  # ignored, so no duplicate
    put(sub / "ada" / "other.ipynb")
    put(sub / "bob" / "a" / "b" / "c" / "d" / "roofline.ipynb")  # four levels: not looked at
    put(sub / "bob" / "notes.txt", b"hello")
    (sub / "carol").mkdir()
    put(sub / "README.md", b"# the class")

    intake = run(sub, work)

    assert [s.slug for s in intake.learners] == ["ada", "bob", "carol"]
    ada, bob, carol = intake.learners
    assert ada.learner == "ada" and ada.source == sub / "ada"
    assert set(ada.notebooks) == {"roofline", "reduction"} and not ada.problems
    assert ada.notebooks["reduction"].read_bytes() == notebook("reduction.ipynb")
    assert bob.notebooks == {} and bob.problems == {} and carol.notebooks == {}
    assert intake.problems == (
        f"{sub}/bob/a/b/c/d: more than 3 folders deep in the learner's folder; not looked into",
    )


def test_a_zip_per_learner(tmp_path: Path) -> None:
    sub, work = tmp_path / "sub", tmp_path / "work"
    make_zip(
        sub / "ada.zip",
        {
            "ada/": b"",
            "ada/roofline.ipynb": notebook("r"),
            "ada/part/reduction.ipynb": notebook("s"),
            "__MACOSX/ada/._roofline.ipynb": b"\0\5\26\7",
            "__MACOSX/roofline.ipynb": b"junk",
        },
    )
    make_zip(sub / "Bob.ZIP", {"roofline.ipynb": notebook("b")})

    intake = run(sub, work)

    ada, bob = learners(intake)["ada"], learners(intake)["Bob"]
    assert ada.source == sub / "ada.zip" and bob.slug == "bob"
    assert ada.notebooks["roofline"].read_bytes() == notebook("r")
    assert set(ada.notebooks) == {"roofline", "reduction"}
    assert set(bob.notebooks) == {"roofline"} and intake.problems == ()


def test_a_folder_and_a_zip_of_one_name_are_one_learner(tmp_path: Path) -> None:
    sub, work = tmp_path / "sub", tmp_path / "work"
    put(sub / "ada" / "roofline.ipynb")
    make_zip(sub / "ada.zip", {"reduction.ipynb": notebook()})
    (ada,) = run(sub, work).learners
    assert set(ada.notebooks) == {"roofline", "reduction"} and ada.source == sub


def test_moodle_folders(tmp_path: Path) -> None:
    sub, work = tmp_path / "sub", tmp_path / "work"
    put(sub / "Ada Lovelace_1234_assignsubmission_file_" / "roofline.ipynb")
    put(sub / "Ada Lovelace_1234_assignsubmission_onlinetext_" / "onlinetext.html", b"<p>")
    make_zip(
        sub / "Ada Lovelace_1234_assignsubmission_file_" / "work.zip",
        {"work/reduction.ipynb": notebook("zipped")},
    )
    put(sub / "Ada Lovelace_777_assignsubmission_file_" / "reduction.ipynb")  # another Ada
    put(sub / "Charles Babbage_99_assignsubmission_file_roofline.ipynb")  # flat download

    intake = run(sub, work)

    assert [(s.learner, s.slug) for s in intake.learners] == [  # the id tells the Adas apart
        ("Ada Lovelace", "ada-lovelace-1234"),
        ("Ada Lovelace", "ada-lovelace-777"),
        ("Charles Babbage", "charles-babbage-99"),
    ]
    first, second, charles = intake.learners
    assert set(first.notebooks) == {"roofline", "reduction"} and first.source == sub
    assert first.notebooks["reduction"].read_bytes() == notebook("zipped")
    assert set(second.notebooks) == {"reduction"}
    assert second.source == sub / "Ada Lovelace_777_assignsubmission_file_"
    assert set(charles.notebooks) == {"roofline"} and intake.problems == ()


def test_canvas_flat_files(tmp_path: Path) -> None:
    sub, work = tmp_path / "sub", tmp_path / "work"
    put(sub / "lovelaceada_1001_5001_roofline.ipynb", notebook("first"))
    put(sub / "lovelaceada_LATE_1001_5002_roofline-1.ipynb", notebook("second"))
    put(sub / "lovelaceada_1001_5003_roofline-2.ipynb", notebook("third"))
    put(sub / "lovelaceada_1001_5004_reduction.ipynb", notebook("reduce"))
    put(sub / "babbagecharles_1002_5005_reduction-1.ipynb")
    put(sub / "babbagecharles_1002_5006_reduction-1.ipynb")
    make_zip(
        sub / "hoppergrace_LATE_1003_5007_my work.zip",
        {"my work/roofline.ipynb": notebook("grace")},
    )
    put(sub / "turingalan_1004_5008_essay.pdf", b"%PDF")

    intake = run(sub, work)

    found = learners(intake)
    ada = found["lovelaceada"]
    assert ada.notebooks["roofline"].read_bytes() == notebook("third") and not ada.problems
    assert ada.notebooks["reduction"].read_bytes() == notebook("reduce")
    charles = found["babbagecharles"]
    assert charles.notebooks == {}
    assert "5005_reduction-1.ipynb" in charles.problems["reduction"]
    assert "5006_reduction-1.ipynb" in charles.problems["reduction"]
    assert found["hoppergrace"].notebooks["roofline"].read_bytes() == notebook("grace")
    assert found["turingalan"].notebooks == {} and intake.problems == ()


def test_resubmission_numbers_count_only_for_canvas(tmp_path: Path) -> None:
    sub, work = tmp_path / "sub", tmp_path / "work"
    put(sub / "ada" / "roofline-1.ipynb")
    (ada,) = run(sub, work).learners
    assert ada.notebooks == {}
    assert ada.problems == {
        "roofline": f"no roofline.ipynb: {sub}/ada/roofline-1.ipynb: named "
        "like roofline.ipynb but not that; not read"
    }


def test_a_bulk_zip_is_read_like_a_folder(tmp_path: Path) -> None:
    sub, work = tmp_path / "bulk.zip", tmp_path / "work"
    inner = zip_bytes({"reduction.ipynb": notebook("inner")}, tmp_path / "scratch" / "b.zip")
    make_zip(
        sub,
        {
            "Ada Lovelace_12_assignsubmission_file_/roofline.ipynb": notebook("ada"),
            "bob.zip": inner,
            "carol/deep/roofline.ipynb": notebook("carol"),
            "lovelaceada_1_2_reduction-3.ipynb": notebook("canvas"),
            "loose.ipynb": notebook(),
            "__MACOSX/carol/._roofline.ipynb": b"junk",
        },
    )

    intake = run(sub, work)

    found = learners(intake)
    assert set(found) == {"Ada Lovelace", "bob", "carol", "lovelaceada"}
    assert found["Ada Lovelace"].notebooks["roofline"].read_bytes() == notebook("ada")
    assert found["Ada Lovelace"].source == sub / "Ada Lovelace_12_assignsubmission_file_"
    assert found["bob"].notebooks["reduction"].read_bytes() == notebook("inner")
    assert found["carol"].source == sub / "carol"
    assert set(found["lovelaceada"].notebooks) == {"reduction"}
    assert intake.problems == (
        f"{sub}/loose.ipynb: not inside a learner's folder or zip; "
        "put it in a folder named for the learner",
    )


def test_loose_notebooks_are_a_problem(tmp_path: Path) -> None:
    sub, work = tmp_path / "sub", tmp_path / "work"
    put(sub / "roofline.ipynb")
    intake = run(sub, work)
    assert intake.learners == ()
    (problem,) = intake.problems
    assert problem.startswith(f"{sub / 'roofline.ipynb'}: not inside a learner's folder or zip")


def test_two_notebooks_for_one_exercise(tmp_path: Path) -> None:
    sub, work = tmp_path / "sub", tmp_path / "work"
    put(sub / "ada" / "roofline.ipynb")
    put(sub / "ada" / "old" / "roofline.ipynb")
    put(sub / "ada" / "reduction.ipynb")
    put(work / "ada" / "roofline.ipynb", b"a stale copy from an earlier run")

    (ada,) = collect(sub, EXERCISES, work).learners

    assert set(ada.notebooks) == {"reduction"}
    assert ada.problems["roofline"] == (
        f"2 notebooks for roofline: {sub}/ada/old/roofline.ipynb, {sub}/ada/roofline.ipynb; "
        "the learner should hand in one"
    )
    assert not (work / "ada" / "roofline.ipynb").exists()


def hashed(slug: str, *key: str) -> str:
    """The slug a learner gets in a clash: their own slug and 6 hex of sha256 of their key."""
    raw = "\0".join(key).encode("utf-8", "surrogateescape")
    return f"{slug}-{hashlib.sha256(raw).hexdigest()[:6]}"


def test_slugs(tmp_path: Path) -> None:
    sub, work = tmp_path / "sub", tmp_path / "work"
    names = [
        "José Núñez",
        "Ada Lovelace",
        "ada  lovelace",
        "Ada-Lovelace",
        "日本語",
        "---x",
        "O'Brien, Pat",
        "a" * 200,
    ]
    for name in names:
        (sub / name).mkdir(parents=True)

    intake = run(sub, work)

    slugs = {s.learner: s.slug for s in intake.learners}
    assert slugs["José Núñez"] == "jose-nunez"
    assert slugs["日本語"] == "learner"
    assert slugs["---x"] == "x"
    assert slugs["O'Brien, Pat"] == "obrien-pat"
    assert slugs["a" * 200] == "a" * 64
    adas = ["Ada Lovelace", "Ada-Lovelace", "ada  lovelace"]  # one slug: a clash
    assert [slugs[name] for name in adas] == [hashed("ada-lovelace", "plain", n) for n in adas]
    graded = "; ".join(f"{n} ({sub}/{n}) as {slugs[n]}" for n in adas)
    assert intake.problems == (
        f"3 learners whose names give the one slug ada-lovelace, graded apart: {graded}",
    )


def test_a_copy_that_cannot_be_written_is_a_problem(tmp_path: Path) -> None:
    sub, work = tmp_path / "sub", tmp_path / "work"
    put(sub / "ada" / "roofline.ipynb")
    put(work / "ada", b"a file where the learner's folder should go")
    (ada,) = collect(sub, EXERCISES, work).learners
    assert ada.notebooks == {}
    assert ada.problems["roofline"].startswith(f"{work}/ada/roofline.ipynb: cannot write it: ")
    assert (work / "ada").read_bytes() == b"a file where the learner's folder should go"


def test_learners_with_nothing_to_grade_still_appear(tmp_path: Path) -> None:
    sub, work = tmp_path / "sub", tmp_path / "work"
    put(sub / "ada" / "essay.docx", b"PK")
    (ada,) = run(sub, work).learners
    assert (ada.notebooks, ada.hashes, ada.problems) == ({}, {}, {})


# Hazards in folders


def test_links_in_a_folder_are_not_followed(tmp_path: Path) -> None:
    sub, work = tmp_path / "sub", tmp_path / "work"
    secret = put(tmp_path / "secret" / "roofline.ipynb", notebook("secret"))
    put(sub / "ada" / "reduction.ipynb")
    (sub / "ada" / "roofline.ipynb").symlink_to(secret)
    (sub / "ada" / "more").symlink_to(secret.parent, target_is_directory=True)
    (sub / "evil").symlink_to(secret.parent, target_is_directory=True)
    (sub / "evil.zip").symlink_to(secret)

    intake = run(sub, work)

    (ada,) = intake.learners
    assert set(ada.notebooks) == {"reduction"}
    assert ada.problems == {"roofline": f"{sub}/ada/roofline.ipynb: a symbolic link, not followed"}
    assert sorted(intake.problems) == sorted(
        [
            f"{sub}/ada/more: a symbolic link, not followed",
            f"{sub}/evil: a symbolic link, not followed",
            f"{sub}/evil.zip: a symbolic link, not followed",
        ]
    )
    assert notebook("secret") not in files(work).values()


def test_a_fifo_does_not_block(tmp_path: Path) -> None:
    sub, work = tmp_path / "sub", tmp_path / "work"
    (sub / "ada").mkdir(parents=True)
    os.mkfifo(sub / "ada" / "roofline.ipynb")
    (ada,) = run(sub, work).learners
    assert ada.problems == {"roofline": f"{sub}/ada/roofline.ipynb: not a regular file"}


def test_names_that_are_not_utf8_or_printable(tmp_path: Path) -> None:
    sub, work = tmp_path / "sub", tmp_path / "work"
    sub.mkdir()
    os.mkdir(os.fsencode(sub) + b"/caf\xe9")
    with open(os.fsencode(sub) + b"/caf\xe9/roofline.ipynb", "wb") as undecodable:
        undecodable.write(notebook())
    put(sub / "bad\x1b[31m\nname" / "roofline.ipynb")
    make_zip(sub / "zoe.zip", {"zo_/roofline.ipynb": notebook("zoe")})
    patch(sub / "zoe.zip", b"zo_/", b"zo\xe9/")  # cp437, as old zip tools write
    make_zip(sub / "yan.zip", {"y_n/roofline.ipynb": notebook()})
    patch(sub / "yan.zip", b"y_n/", b"y\xffn/")
    flag(sub / "yan.zip", 0x08 << 8)  # says UTF-8, is not

    intake = run(sub, work)

    found = {s.slug: s for s in intake.learners}
    assert found["caf"].learner == "caf\ufffd" and set(found["caf"].notebooks) == {"roofline"}
    assert found["bad31mname"].learner == "bad\ufffd[31m\ufffdname"
    assert set(found["zoe"].notebooks) == {"roofline"}
    assert found["yan"].notebooks == {}
    (problem,) = intake.problems
    assert problem.startswith(f"{sub}/yan.zip: not a readable zip file: ")


# Hazards in zips


def test_zip_members_that_are_links_are_refused(tmp_path: Path) -> None:
    sub, work = tmp_path / "sub", tmp_path / "work"
    with zipfile.ZipFile(put(sub / "ada.zip", b""), "w") as archive:
        for name in ("ada/roofline.ipynb", "ada/passwd"):
            link = zipfile.ZipInfo(name)
            link.external_attr = (stat.S_IFLNK | 0o777) << 16
            archive.writestr(link, "/etc/passwd")
        archive.writestr("ada/reduction.ipynb", notebook())

    intake = run(sub, work)

    (ada,) = intake.learners
    assert set(ada.notebooks) == {"reduction"}
    assert ada.problems == {
        "roofline": f"{sub}/ada.zip/ada/roofline.ipynb: a symbolic link, not read"
    }
    assert intake.problems == (f"{sub}/ada.zip/ada/passwd: a symbolic link, not read",)


@pytest.mark.parametrize(
    "name",
    [
        "/etc/roofline.ipynb",
        "../../roofline.ipynb",
        "ada/../../../roofline.ipynb",
        "..\\..\\roofline.ipynb",
        "C:/Users/roofline.ipynb",
    ],
)
def test_zip_members_outside_the_zip_are_refused(tmp_path: Path, name: str) -> None:
    sub, work = tmp_path / "sub", tmp_path / "work"
    make_zip(sub / "ada.zip", {name: notebook("escape"), "reduction.ipynb": notebook()})
    make_zip(tmp_path / "bulk.zip", {name: notebook("escape"), "bob/roofline.ipynb": notebook()})

    for n, where in enumerate((sub, tmp_path / "bulk.zip")):
        intake = run(where, work / str(n))
        assert [s.learner for s in intake.learners] in (["ada"], ["bob"])
        assert all(s.notebooks and not s.problems for s in intake.learners)
        (problem,) = intake.problems
        assert problem.endswith(
            "roofline.ipynb: a path outside the zip (absolute or with ..), not read"
        )
    assert notebook("escape") not in [p.read_bytes() for p in tmp_path.rglob("*.ipynb")]


def test_encrypted_members_are_refused(tmp_path: Path) -> None:
    sub, work = tmp_path / "sub", tmp_path / "work"
    flag(make_zip(sub / "ada.zip", {"roofline.ipynb": notebook()}), 0x1)
    (ada,) = run(sub, work).learners
    assert ada.problems == {
        "roofline": f"{sub}/ada.zip/roofline.ipynb: encrypted; submit it without a password"
    }


def test_too_many_members(tmp_path: Path) -> None:
    sub, work = tmp_path / "sub", tmp_path / "work"
    make_zip(
        sub / "ada.zip",
        {"roofline.ipynb": notebook(), **{f"junk/{n}.txt": b"" for n in range(2000)}},
    )
    intake = run(sub, work)
    assert learners(intake)["ada"].notebooks == {}
    assert intake.problems == (f"{sub}/ada.zip: 2001 entries, more than the 2000 a zip may hold",)
    with pytest.raises(IntakeError, match="2001 entries, more than the 2000"):
        collect(sub / "ada.zip", EXERCISES, work)


@pytest.fixture(scope="module")
def bomb(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """ada.zip holding roofline.ipynb: 300 MB of zeros packed into about 300 kB."""
    path = tmp_path_factory.mktemp("bomb") / "sub" / "ada.zip"
    path.parent.mkdir()
    zeros = bytes(2**20)
    with (
        zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive,
        archive.open("roofline.ipynb", "w") as member,
    ):
        for _ in range(300):
            member.write(zeros)
    return path


@pytest.mark.parametrize(
    ("limits", "reason"),
    [
        (ZipLimits(), f"larger than {MAX_BYTES // 2**20} MiB when unpacked"),
        # With no cap on size, the ratio stops it: at 200 times its ~300 kB, about 60 MB of 300.
        (
            ZipLimits(max_member_bytes=2**40),
            "unpacks to more than 200 times its packed size (a zip bomb?)",
        ),
    ],
)
def test_a_zip_bomb_is_stopped_early(
    tmp_path: Path, bomb: Path, limits: ZipLimits, reason: str
) -> None:
    work = tmp_path / "work"
    intake = collect(bomb.parent, EXERCISES, work, limits=limits)

    (ada,) = intake.learners
    assert ada.problems == {"roofline": f"{bomb}/roofline.ipynb: {reason}"}
    assert sum(p.stat().st_size for p in work.rglob("*") if p.is_file()) == 0


def test_the_total_of_a_zip_is_capped(tmp_path: Path) -> None:
    sub, work = tmp_path / "sub", tmp_path / "work"
    big = {name: notebook(name * 20_000) for name in ("a", "b", "c")}
    make_zip(sub / "ada.zip", {f"{name}.ipynb": data for name, data in big.items()})
    limits = ZipLimits(max_total_bytes=len(big["a"]) + len(big["b"]) + 10)

    (ada,) = run(sub, work, ("a", "b", "c"), limits).learners

    assert set(ada.notebooks) == {"a", "b"}
    assert ada.problems == {
        "c": f"{sub}/ada.zip/c.ipynb: {sub}/ada.zip unpacks to more than "
        f"{limits.max_total_bytes / 2**20:g} MiB in all"
    }


def test_the_total_of_a_bulk_zip_covers_the_zips_inside(tmp_path: Path) -> None:
    work = tmp_path / "work"
    inner = zip_bytes({"roofline.ipynb": notebook("x" * 50_000)}, tmp_path / "scratch.zip")
    make_zip(tmp_path / "bulk.zip", {"ada.zip": inner, "bob.zip": inner})
    limits = ZipLimits(max_total_bytes=len(inner) * 2 + len(notebook("x" * 50_000)) + 10)

    intake = run(tmp_path / "bulk.zip", work, limits=limits)

    assert set(learners(intake)["ada"].notebooks) == {"roofline"}
    assert learners(intake)["bob"].notebooks == {}
    (problem,) = learners(intake)["bob"].problems.values()
    assert "bulk.zip unpacks to more than" in problem


def test_zips_nested_too_deep(tmp_path: Path) -> None:
    sub, work = tmp_path / "sub", tmp_path / "work"
    third = zip_bytes({"roofline.ipynb": notebook()}, tmp_path / "z" / "3.zip")
    second = zip_bytes(
        {"reduction.ipynb": notebook("two deep"), "three.zip": third}, tmp_path / "z" / "2.zip"
    )
    make_zip(sub / "ada.zip", {"two.zip": second})

    intake = run(sub, work)
    (ada,) = intake.learners
    assert ada.notebooks["reduction"].read_bytes() == notebook("two deep")
    assert intake.problems == (
        f"{sub}/ada.zip/two.zip/three.zip: a zip nested 3 deep, past the limit of 2; not opened",
    )

    intake = run(sub, work, limits=ZipLimits(max_depth=1))
    assert intake.learners[0].notebooks == {}
    assert intake.problems == (
        f"{sub}/ada.zip/two.zip: a zip nested 2 deep, past the limit of 1; not opened",
    )


def test_unreadable_zips(tmp_path: Path) -> None:
    sub, work = tmp_path / "sub", tmp_path / "work"
    put(sub / "ada.zip", b"this is not a zip")
    stored = make_zip(tmp_path / "whole.zip", {"roofline.ipynb": notebook()}, zipfile.ZIP_STORED)
    whole = stored.read_bytes()
    put(sub / "bob.zip", whole[: len(whole) // 2])
    put(sub / "carol.zip", whole.replace(b"nbformat", b"NBFORMAT"))  # the CRC no longer fits

    intake = run(sub, work)

    assert [s.slug for s in intake.learners] == ["ada", "bob", "carol"]
    assert all(not s.notebooks for s in intake.learners)
    assert intake.problems[0].startswith(f"{sub}/ada.zip: not a readable zip file: ")
    assert intake.problems[1].startswith(f"{sub}/bob.zip: not a readable zip file: ")
    assert (
        intake.learners[2]
        .problems["roofline"]
        .startswith(f"{sub}/carol.zip/roofline.ipynb: cannot be read: ")
    )


# SUBMISSIONS that cannot be used at all


def test_unusable_submissions(tmp_path: Path) -> None:
    work = tmp_path / "work"
    with pytest.raises(IntakeError, match="no such folder or zip file"):
        collect(tmp_path / "missing", EXERCISES, work)
    with pytest.raises(IntakeError, match=r"not a folder or a \.zip file"):
        collect(put(tmp_path / "grades.csv", b"a,b"), EXERCISES, work)
    with pytest.raises(IntakeError, match=r"bulk\.zip: not a readable zip file: "):
        collect(put(tmp_path / "bulk.zip", b"PK\3\4 and then nothing"), EXERCISES, work)
    (tmp_path / "sub").mkdir()
    with pytest.raises(IntakeError, match="the work folder lies inside"):
        collect(tmp_path / "sub", EXERCISES, tmp_path / "sub" / "work")
    with pytest.raises(IntakeError, match="cannot make the work folder"):
        collect(tmp_path / "sub", EXERCISES, tmp_path / "grades.csv" / "work")
    with pytest.raises(ValueError, match="cannot name a file safely"):
        collect(tmp_path / "sub", ["../../escape"], work)


# The red team's second round: identities, phantoms, what is passed over, directory bombs


def test_bob_and_bob_never_take_each_others_slug(tmp_path: Path) -> None:
    """V11: the slug of each is the same whatever the order, and whoever else handed in."""
    alone: dict[str, str] = {}
    for name in ("Bob", "bob"):
        put(tmp_path / name / "sub" / name / "roofline.ipynb", notebook(name))
        (found,) = run(tmp_path / name / "sub", tmp_path / name / "work").learners
        alone[name] = found.slug
    assert alone == {"Bob": "bob", "bob": "bob"}  # alone, each is plain bob

    both = {
        "Bob": hashed("bob", "plain", "Bob"),
        "bob": hashed("bob", "plain", "bob"),
        "ｂｏｂ": hashed("bob", "plain", "ｂｏｂ"),
    }
    for order, names in enumerate((["Bob", "bob", "ｂｏｂ"], ["ｂｏｂ", "bob", "Bob"])):
        bulk = tmp_path / f"bulk{order}.zip"
        make_zip(bulk, {f"{name}/roofline.ipynb": notebook(name) for name in names})
        intake = run(bulk, tmp_path / f"work{order}")
        assert {s.learner: s.slug for s in intake.learners} == both
        for learner in intake.learners:  # each graded on their own notebook
            assert learner.notebooks["roofline"].read_bytes() == notebook(learner.learner)
        (clash,) = intake.problems
        assert clash.startswith("3 learners whose names give the one slug bob, graded apart: ")
        assert all(f"{name} ({bulk}/{name}) as {slug}" in clash for name, slug in both.items())


def test_a_hashed_slug_never_lands_on_another(tmp_path: Path) -> None:
    sub, work = tmp_path / "sub", tmp_path / "work"
    taken = hashed("bob", "plain", "Bob")
    for name in ("Bob", "bob", taken):
        put(sub / name / "roofline.ipynb", notebook(name))
    found = {s.learner: s.slug for s in run(sub, work).learners}
    assert found[taken] == taken and found["bob"] == hashed("bob", "plain", "bob")
    digest = hashlib.sha256(b"plain\0Bob").hexdigest()
    assert found["Bob"] == f"bob-{digest[:8]}"


def test_an_upload_named_like_anothers_file_makes_no_phantom(tmp_path: Path) -> None:
    """V12: Mallory uploads a file named as Moodle names Victim's; Canvas likewise."""
    sub, work = tmp_path / "sub", tmp_path / "work"
    put(
        sub / "Mallory Person_1_assignsubmission_file_Victim Person_2_assignsubmission_file_"
        "roofline.ipynb",
        notebook("mallory"),
    )
    put(sub / "Victim Person_2_assignsubmission_file_roofline.ipynb", notebook("victim"))
    put(sub / "mallory_11_5_victim_12_9_reduction.ipynb", notebook("mallory"))
    put(sub / "victim_12_9_reduction.ipynb", notebook("victim"))
    put(sub / "eve_13_5_x_12_assignsubmission_file_reduction.ipynb", notebook("eve"))

    intake = run(sub, work)

    found = {s.slug: s for s in intake.learners}
    assert set(found) == {
        "mallory-person-1",
        "victim-person-2",
        "mallory-11",
        "victim-12",
        "eve-13",
    }
    assert found["victim-person-2"].notebooks["roofline"].read_bytes() == notebook("victim")
    assert found["victim-12"].notebooks["reduction"].read_bytes() == notebook("victim")
    assert not any(found[s].notebooks for s in ("mallory-person-1", "mallory-11", "eve-13"))
    assert intake.problems == ()


def test_what_is_passed_over_is_reported(tmp_path: Path) -> None:
    import socket

    sub, work = tmp_path / "sub", tmp_path / "work"
    put(sub / "ada" / "Roofline.ipynb")  # nothing else for roofline
    put(sub / "ada" / "reduction.ipynb")
    put(sub / "ada" / "reduction (1).py")  # beside the real one
    os.mkfifo(sub / "ada" / "notes")
    with socket.socket(socket.AF_UNIX) as server:
        server.bind(os.fspath(sub / "ada" / "sock"))
    (sub / "ada" / "data").symlink_to(tmp_path)
    (sub / "bob" / "roofline.ipynb").mkdir(parents=True)  # a folder, not a notebook
    make_zip(
        sub / "carol.zip",
        {
            "a/b/c/d/roofline.ipynb": notebook(),
            "a/b/c/d/more.zip": b"PK",
            "a/b/c/d/notes.txt": b"",
            "reduction.ipynb": notebook(),
        },
    )
    put(sub / "dave" / "roofline.ipynb.txt", b"{}")

    intake = run(sub, work)

    found = learners(intake)
    assert found["ada"].problems == {
        "roofline": f"no roofline.ipynb: {sub}/ada/Roofline.ipynb: named like roofline.ipynb "
        "but not that; not read"
    }
    assert found["bob"].problems == {
        "roofline": f"no roofline.ipynb: {sub}/bob/roofline.ipynb: a folder, not a notebook"
    }
    assert found["carol"].problems == {
        "roofline": f"no roofline.ipynb: {sub}/carol.zip/a/b/c/d/roofline.ipynb: more than 3 "
        "folders deep in the learner's zip; not read"
    }
    assert "roofline.ipynb.txt: named like roofline.ipynb" in found["dave"].problems["roofline"]
    assert sorted(intake.problems) == sorted(
        [
            f"{sub}/ada/data: a symbolic link, not followed",
            f"{sub}/ada/notes: not a regular file",
            f"{sub}/ada/reduction (1).py: named like reduction.ipynb but not that; not read",
            f"{sub}/ada/sock: not a regular file",
            f"{sub}/carol.zip/a/b/c/d/more.zip: more than 3 folders deep in the learner's zip; "
            "not opened",
        ]
    )


def test_problem_lines_are_plain_text(tmp_path: Path) -> None:
    sub, work = tmp_path / "sub", tmp_path / "work"
    put(sub / "a\x1b[2J\x07b" / "x\ty" / "r\u202eoofline.ipynb" / "z" / "w" / "v" / "f")
    make_zip(sub / "c\u200bd.zip", {"e/../../g": b"", "h\x1b]8;;x\x07i/Roofline.py": b""})
    intake = run(sub, work)  # run() checks it all printable
    assert len(intake.problems) == 2
    assert (
        learners(intake)["c\ufffdd"]
        .problems["roofline"]
        .endswith(
            "/c\ufffdd.zip/h\ufffd]8;;x\ufffdi/Roofline.py: "
            "named like roofline.ipynb but not that; not read"
        )
    )


def test_the_copies_are_all_a_grading_job_gets(tmp_path: Path) -> None:
    """V3: from a bulk zip, every notebook path lies in the work folder; none leads into the zip."""
    bulk, work = tmp_path / "class.zip", tmp_path / "out" / "submissions"
    make_zip(
        bulk,
        {
            "Ada Lovelace_12_assignsubmission_file_/roofline.ipynb": notebook("ada"),
            "bob/reduction.ipynb": notebook("bob"),
        },
    )
    intake = run(bulk, work)
    bulk.unlink()  # the copies stand on their own
    for learner in intake.learners:
        assert learner.notebooks and set(learner.notebooks) == set(learner.hashes)
        for copy in learner.notebooks.values():
            assert copy.parent == work / learner.slug and copy.is_file()
            assert not copy.resolve().is_relative_to(bulk)
        assert not learner.source.exists()  # shown, never opened


# Zips whose central directory is the weapon (V6)


def bounded(submissions: Path, work: Path) -> tuple[Intake | str, int]:
    """`collect`, and the most memory Python held at once while it ran (tracemalloc)."""
    tracemalloc.start()
    try:
        try:
            found: Intake | str = collect(submissions, EXERCISES, work)
        except IntakeError as exc:
            found = str(exc)
        return found, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_a_directory_bomb_is_refused_before_it_is_parsed(tmp_path: Path) -> None:
    """100 000 entries (the red team's had 10.5 million): zipfile would build 100 000 objects."""
    sub, work = tmp_path / "sub", tmp_path / "work"
    put(sub / "mallory.zip", directory_bomb(100_000))
    put(sub / "ada" / "roofline.ipynb")
    intake, peak = bounded(sub, work)
    assert isinstance(intake, Intake) and set(learners(intake)["ada"].notebooks) == {"roofline"}
    assert intake.problems == (
        f"{sub}/mallory.zip: 100000 entries, more than the 2000 a zip may hold",
    )
    assert peak < 2 * MIB, f"{peak / MIB:.1f} MiB"


def test_a_directory_bomb_inside_a_zip_is_refused_too(tmp_path: Path) -> None:
    sub, work = tmp_path / "sub", tmp_path / "work"
    make_zip(
        sub / "mallory.zip",
        {"inner.zip": directory_bomb(100_000), "roofline.ipynb": notebook("mallory")},
        zipfile.ZIP_STORED,
    )
    intake, peak = bounded(sub, work)
    assert isinstance(intake, Intake)
    assert intake.problems == (
        f"{sub}/mallory.zip/inner.zip: 100000 entries, more than the 2000 a zip may hold",
    )
    assert set(learners(intake)["mallory"].notebooks) == {"roofline"}
    assert peak < 2 * MIB, f"{peak / MIB:.1f} MiB"


def test_a_bulk_zip_that_is_a_directory_bomb(tmp_path: Path) -> None:
    put(tmp_path / "class.zip", directory_bomb(100_000))
    found, peak = bounded(tmp_path / "class.zip", tmp_path / "work")
    assert found == f"{tmp_path}/class.zip: 100000 entries, more than the 2000 a zip may hold"
    assert peak < 2 * MIB, f"{peak / MIB:.1f} MiB"


def test_a_directory_that_lies_about_its_count(tmp_path: Path) -> None:
    sub, work = tmp_path / "sub", tmp_path / "work"
    put(sub / "big.zip", directory_bomb(60_000, declared=1))  # 2.8 MiB of directory
    put(sub / "many.zip", directory_bomb(3000, declared=1))  # small, parsed, then counted
    put(sub / "wide.zip", directory_bomb(3000, name=b"n" * 1000, declared=1, zip64=True))
    intake, peak = bounded(sub, work)
    assert isinstance(intake, Intake)
    assert intake.problems == (
        f"{sub}/big.zip: its central directory takes 2.7 MiB, more than the 2 MiB a zip's "
        "list of members may take",
        f"{sub}/many.zip: 3000 entries, more than the 2000 a zip may hold",
        f"{sub}/wide.zip: its central directory takes 3.0 MiB, more than the 2 MiB a zip's "
        "list of members may take",
    )
    assert peak < 4 * MIB, f"{peak / MIB:.1f} MiB"


@pytest.mark.parametrize(
    "build",
    [
        lambda tmp: make_zip(tmp / "a.zip", {"x": b"1", "y/z": b"2"}),
        lambda tmp: put(tmp / "a.zip", directory_bomb(70_000)),  # ZIP64 end records
        lambda tmp: put(tmp / "a.zip", directory_bomb(5, zip64=True, comment=b"hi")),
        lambda tmp: put(tmp / "a.zip", directory_bomb(3, comment=b"x" * 65_535)),
    ],
)
def test_the_end_records_are_read_as_zipfile_reads_them(
    tmp_path: Path, build: Callable[[Path], Path]
) -> None:
    path = build(tmp_path)
    with path.open("rb") as file:
        directory = read_directory(file)
        found = None if directory is None else count_headers(file, directory)
    with zipfile.ZipFile(path) as archive:
        assert directory is not None and directory.entries == len(archive.infolist())
        assert found == len(archive.infolist())  # the headers really there
        assert directory.size == sum(
            46 + len(i.orig_filename.encode("cp437")) + len(i.extra) + len(i.comment)
            for i in archive.infolist()
        )


def test_an_end_record_faked_in_the_comment(tmp_path: Path) -> None:
    """zipfile takes the last signature in the file; so does the intake, and both give up."""
    sub, work = tmp_path / "sub", tmp_path / "work"
    path = put(sub / "ada.zip", directory_bomb(5, comment=b"PK\5\6 hi"))
    with path.open("rb") as file:
        assert read_directory(file) is None
    with pytest.raises(zipfile.BadZipFile):
        zipfile.ZipFile(path)
    assert run(sub, work).problems == (
        f"{path}: not a readable zip file: it has no end of central directory",
    )
