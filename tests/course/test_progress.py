"""The progress file: round trip, location, atomic writes, unreadable files kept."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gpulab.course import Progress, ProgressStore, state_dir


def test_round_trip(tmp_path: Path) -> None:
    store = ProgressStore(tmp_path / "p.json")
    progress = store.load()
    assert progress == Progress()
    progress.last_lesson = "gpu-architecture"
    progress.theme = "textual-light"
    progress.lesson("gpu-architecture").selected = "root/warps"
    progress.lesson("gpu-architecture").expanded = ["root", "root/warps"]
    progress.visit("gpu-architecture", "root")
    progress.visit("gpu-architecture", "root")
    progress.hints["vector-add"] = 2
    store.save(progress)
    again = ProgressStore(tmp_path / "p.json").load()
    assert again == progress
    assert again.lessons["gpu-architecture"].visited == ["root"]
    assert again.fraction("gpu-architecture", {"root", "root/warps"}) == 0.5
    assert again.fraction("other", {"x"}) == 0.0
    assert json.loads((tmp_path / "p.json").read_text())["version"] == 1


def test_state_dir_honours_the_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GPULAB_STATE_DIR", str(tmp_path / "here"))
    assert state_dir() == tmp_path / "here"
    store = ProgressStore()
    store.save(Progress(last_lesson="x"))
    assert (tmp_path / "here" / "progress.json").is_file()


def test_state_dir_defaults_to_xdg_state(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("GPULAB_STATE_DIR")
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "xdg"))
    assert state_dir() == tmp_path / "xdg" / "gpulab"


@pytest.mark.parametrize(
    "content",
    ["{not json", "[]", '{"version": 99}', '{"version": 1, "lessons": {"a": {"visited": 3}}}',
     '{"version": 1, "last_lesson": 7}'],
)
def test_unreadable_file_is_kept_aside(tmp_path: Path, content: str) -> None:
    path = tmp_path / "progress.json"
    path.write_text(content)
    store = ProgressStore(path)
    assert store.load() == Progress()
    assert store.warning is not None and "starts afresh" in store.warning
    (kept,) = tmp_path.glob("progress.json.broken-*")
    assert kept.read_text() == content
    assert not path.exists()


def test_failed_write_leaves_the_old_file(tmp_path: Path) -> None:
    store = ProgressStore(tmp_path / "p.json")
    store.save(Progress(last_lesson="old"))

    class Boom(Progress):
        pass

    bad = Boom(last_lesson=object())  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        store.save(bad)
    assert store.load().last_lesson == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["p.json"]


def test_predictions_survive_a_round_trip(tmp_path: Path) -> None:
    from gpulab.course.progress import Prediction

    store = ProgressStore(tmp_path / "progress.json")
    progress = store.load()
    progress.predictions.append(Prediction("h200_hbm_bandwidth", 3.0, "TB/s",
                                           "2026-12-02T15:00:00+00:00"))
    progress.predictions.append(Prediction("warp_size", 32, "threads", "2026-12-02T15:01:00+00:00",
                                           measured=32, verdict="agrees", device="NVIDIA H200"))
    store.save(progress)
    again = ProgressStore(tmp_path / "progress.json").load()
    assert again.predictions == progress.predictions
