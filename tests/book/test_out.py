"""`gpulab book --out` on paths where no book can go: a clear message, status 2, nothing lost.

Each case runs the real command line in a subprocess (`python -m gpulab book`),
as a user would, and reads what it prints: ``gpulab: <what is wrong, where>``
on stderr, never a traceback. Replacing a book that cannot be moved out of the
way keeps the old book.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from gpulab.book import BookError
from gpulab.book.output import MARKER, put_in_place

ROOT = Path(__file__).resolve().parents[2]
BAD_INPUT = 2


def _book(out: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "gpulab", "book", "--out", out],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def _refused(result: subprocess.CompletedProcess[str], *words: str) -> str:
    """The one-line message of a refused build; fails on a traceback or another status."""
    output = result.stdout + result.stderr
    assert "Traceback" not in output, output
    assert result.returncode == BAD_INPUT, output
    message = result.stderr.strip().splitlines()[-1]
    assert message.startswith("gpulab: "), output
    for word in words:
        assert word in message, f"{word!r} is not in {message!r}"
    return message


def test_out_below_a_file(tmp_path: Path) -> None:
    afile = tmp_path / "afile"
    afile.write_text("mine\n", encoding="utf-8")
    message = _refused(
        _book("afile/x", tmp_path), str(afile), "is a file, not a folder", "choose another --out"
    )
    assert "afile/x" in message
    assert afile.read_text(encoding="utf-8") == "mine\n"
    _refused(_book("afile/x/y/z", tmp_path), str(afile), "is a file, not a folder")
    assert afile.read_text(encoding="utf-8") == "mine\n"


@pytest.mark.parametrize("folder", ["/proc", "/sys"])
def test_out_in_a_folder_no_one_can_write(folder: str, tmp_path: Path) -> None:
    """/proc refuses new files to everyone (ENOENT), /sys too (EPERM as root): the message
    says that a new folder in it was refused, not that it is missing."""
    _refused(
        _book(f"{folder}/gpulab-book", tmp_path),
        f"cannot make a folder in {folder} for the book {folder}/gpulab-book (",
        "choose another --out",
    )
    assert not Path(folder, "gpulab-book").exists()


def test_out_below_a_folder_that_cannot_be_made_names_that_folder(tmp_path: Path) -> None:
    """`--out /proc/x/y`: the folder that failed is /proc/x, and the reason is its own."""
    _refused(
        _book("/proc/gpulab-x/book", tmp_path),
        "cannot make the folder /proc/gpulab-x for the book /proc/gpulab-x/book "
        "(No such file or directory)",
    )


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into a read-only folder anyway")
def test_out_in_a_read_only_folder(tmp_path: Path) -> None:
    locked = tmp_path / "locked"
    locked.mkdir()
    (locked / "keep.txt").write_text("mine\n", encoding="utf-8")
    locked.chmod(0o555)
    try:
        _refused(
            _book(str(locked / "book"), tmp_path),
            f"cannot make a folder in {locked} for the book {locked / 'book'}",
            "Permission denied",
        )
    finally:
        locked.chmod(0o755)
    assert [p.name for p in locked.iterdir()] == ["keep.txt"]


def test_out_paths_that_name_nothing(tmp_path: Path) -> None:
    _refused(
        _book("~no-such-user-gpulab/book", tmp_path), "~no-such-user-gpulab/book", "home directory"
    )
    _refused(_book("a" * 300 + "/book", tmp_path), "File name too long")
    (tmp_path / "loop1").symlink_to("loop2")
    (tmp_path / "loop2").symlink_to("loop1")
    _refused(_book("loop1/book", tmp_path), "loop1", "choose another --out")


def test_a_file_and_a_folder_of_other_files_are_still_refused(tmp_path: Path) -> None:
    afile = tmp_path / "afile"
    afile.write_text("mine\n", encoding="utf-8")
    _refused(_book("afile", tmp_path), f"{afile} is a file, not a folder")
    _refused(_book(".", tmp_path), "holds files that are not a gpulab book")
    assert afile.read_text(encoding="utf-8") == "mine\n"


def test_an_old_book_that_cannot_be_replaced_is_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "html"
    out.mkdir()
    (out / MARKER).write_text("", encoding="utf-8")
    (out / "index.html").write_text("old", encoding="utf-8")
    work = tmp_path / ".html-new"
    work.mkdir()
    (work / "index.html").write_text("new", encoding="utf-8")
    real_replace = os.replace

    def refuse_the_new_book(source: Path, target: Path) -> None:
        if Path(source) == work:
            raise OSError(28, "No space left on device")
        real_replace(source, target)

    monkeypatch.setattr("gpulab.book.output.os.replace", refuse_the_new_book)
    with pytest.raises(
        BookError,
        match=rf"cannot move the new book to {out} "
        r"\(No space left on device\)",
    ):
        put_in_place(work, out)
    assert (out / "index.html").read_text(encoding="utf-8") == "old"
    assert sorted(p.name for p in tmp_path.iterdir()) == [".html-new", "html"]

    monkeypatch.setattr("gpulab.book.output.os.replace", real_replace)
    put_in_place(work, out)
    assert (out / "index.html").read_text(encoding="utf-8") == "new"
    assert [p.name for p in tmp_path.iterdir()] == ["html"], "the old book was left behind"
