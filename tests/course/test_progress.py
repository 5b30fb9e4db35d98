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
    [
        "{not json",
        "[]",
        "{}",
        '{"version": 99}',
        '{"version": 1, "lessons": {"a": {"visited": 3}}}',
        '{"version": 1, "last_lesson": 7}',
        '{"version": 1, "hints": {"a": "two"}}',
    ],
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
    progress.predictions.append(
        Prediction("h200_hbm_bandwidth", 3.0, "TB/s", "2026-12-02T15:00:00+00:00")
    )
    progress.predictions.append(
        Prediction(
            "warp_size",
            32,
            "threads",
            "2026-12-02T15:01:00+00:00",
            measured=32,
            verdict="agrees",
            device="NVIDIA H200",
        )
    )
    store.save(progress)
    again = ProgressStore(tmp_path / "progress.json").load()
    assert again.predictions == progress.predictions


def test_exercise_records_round_trip_and_old_files_load(tmp_path: Path) -> None:
    from gpulab.course import ExerciseRecord

    path = tmp_path / "progress.json"
    path.write_text('{"version": 1, "last_lesson": "numa", "hints": {"squares": 1}}')
    store = ProgressStore(path)
    progress = store.load()  # written before exercises were recorded
    assert store.warning is None and progress.workspaces == {}
    record = progress.record_check(
        "squares",
        workspace="/w/one",
        passed=False,
        earned=2,
        possible=3.0,
        at="2026-12-02T15:00:00+00:00",
    )
    assert record == ExerciseRecord("failing", 2.0, 3.0, "2026-12-02T15:00:00+00:00")
    assert not record.passed
    store.save(progress)
    saved = json.loads(path.read_text())
    assert saved["version"] == 1
    assert saved["workspaces"] == {
        "/w/one": {
            "squares": {
                "status": "failing",
                "earned": 2.0,
                "possible": 3.0,
                "at": "2026-12-02T15:00:00+00:00",
            }
        }
    }
    again = ProgressStore(path).load()
    assert again == progress and again.last_lesson == "numa"
    now = again.record_check("squares", workspace="/w/one", passed=True, earned=3, possible=3)
    assert now.passed and now.at.endswith("+00:00")


def test_each_workspace_has_its_own_exercise_records(tmp_path: Path) -> None:
    progress = Progress()
    progress.record_check("squares", workspace="/w/one", passed=True, earned=3, possible=3)
    progress.record_check("squares", workspace="/w/two", passed=False, earned=0, possible=3)
    assert progress.exercises("/w/one")["squares"].passed
    assert not progress.exercises("/w/two")["squares"].passed
    assert progress.exercises("/w/three") == {}
    progress.forget_check("squares", workspace="/w/two")
    assert progress.exercises("/w/two") == {} and progress.exercises("/w/one")["squares"].passed


def test_results_saved_before_workspaces_are_kept_apart(tmp_path: Path) -> None:
    path = tmp_path / "progress.json"
    path.write_text(
        '{"version": 1, "exercises": {"squares": {"status": "passed", "earned": 3, '
        '"possible": 3, "at": "2026-12-02T15:00:00+00:00"}}}'
    )
    progress = ProgressStore(path).load()
    # checks of the course's own exercises/ folder: no workspace of the learner's is named ""
    assert progress.exercises("")["squares"].passed
    assert set(progress.workspaces) == {""}


def test_a_bad_exercise_record_is_kept_aside(tmp_path: Path) -> None:
    path = tmp_path / "progress.json"
    path.write_text(
        '{"version": 1, "exercises": {"squares": {"status": "done", "earned": 1, '
        '"possible": 1, "at": "x"}}}'
    )
    store = ProgressStore(path)
    assert store.load() == Progress()
    assert store.warning is not None and str(path) in store.warning
    assert "'done'" in store.warning and "$.exercises[...].status" in store.warning


def test_newer_exercise_records_are_adopted(tmp_path: Path) -> None:
    def check(progress: Progress, name: str, passed: bool, earned: float, at: str) -> None:
        progress.record_check(name, workspace="/w", passed=passed, earned=earned, possible=3, at=at)

    mine, theirs = Progress(), Progress()
    check(mine, "a", False, 0, "2026-12-02T15:00:00+00:00")
    check(mine, "b", True, 3, "2026-12-02T15:00:00+00:00")
    check(theirs, "a", True, 3, "2026-12-02T16:00:00+01:00")
    check(theirs, "b", False, 0, "2026-12-02T14:00:00+00:00")
    check(theirs, "c", False, 1, "2026-12-02T14:00:00+00:00")
    # 16:00+01:00 is 15:00 UTC: the same instant as ours, so not newer
    assert mine.adopt_exercises(theirs) == ["c"]
    theirs.workspaces["/w"]["a"].at = "2026-12-02T15:00:01+00:00"
    assert mine.adopt_exercises(theirs) == ["a"]
    records = mine.exercises("/w")
    assert records["a"].passed and records["b"].passed
    assert records["c"].earned == 1


def test_hints_revealed_elsewhere_are_adopted() -> None:
    mine, theirs = Progress(hints={"a": 2, "b": 1}), Progress(hints={"a": 1, "b": 3, "c": 1})
    assert mine.adopt_hints(theirs)
    assert mine.hints == {"a": 2, "b": 3, "c": 1}
    assert not mine.adopt_hints(theirs)


def test_peek_never_moves_a_file(tmp_path: Path) -> None:
    path = tmp_path / "progress.json"
    store = ProgressStore(path)
    assert store.peek() is None
    path.write_text("{not json")
    assert store.peek() is None
    assert [p.name for p in tmp_path.iterdir()] == ["progress.json"]
    store.save(Progress(last_lesson="x"))
    peeked = store.peek()
    assert peeked is not None and peeked.last_lesson == "x"


def test_a_mistyped_field_is_named_with_the_file(tmp_path: Path) -> None:
    path = tmp_path / "progress.json"
    path.write_text(
        '{"version": 1, "predictions": [{"claim": "warp_size", "predicted": "32", '
        '"unit": "threads", "at": "2026-12-02T15:00:00+00:00"}]}'
    )
    store = ProgressStore(path)
    assert store.load() == Progress()
    assert store.warning is not None
    assert store.warning.startswith(f"{path} was unreadable (")
    assert "Expected `float`, got `str` - at `$.predictions[0].predicted`" in store.warning


@pytest.mark.parametrize(
    ("content", "said"),
    [
        ('{"version": 2}', "not a gpulab progress file of version 1 (its version is 2)"),
        ('{"last_lesson": "numa"}', "missing required field `version`"),
    ],
)
def test_a_file_of_another_version_is_refused_in_words(
    tmp_path: Path, content: str, said: str
) -> None:
    path = tmp_path / "progress.json"
    path.write_text(content)
    store = ProgressStore(path)
    assert store.load() == Progress()
    assert store.warning is not None and said in store.warning


def test_bytes_that_are_not_text_are_kept_aside(tmp_path: Path) -> None:
    path = tmp_path / "progress.json"
    path.write_bytes(b'{"version": 1, "theme": "\xff"}')
    store = ProgressStore(path)
    assert store.load() == Progress() and store.warning is not None
    assert [p.name.startswith("progress.json.broken-") for p in tmp_path.iterdir()] == [True]


# A file as gpulab wrote it before its records were msgspec structs (json.dump, indent=1,
# sort_keys, ASCII escapes), with every field it could hold.
EARLIER_FILE = """{
 "hints": {
  "squares": 2
 },
 "last_lesson": "numa",
 "lessons": {
  "numa": {
   "expanded": null,
   "selected": "root/caf\\u00e9",
   "visited": [
    "root",
    "root/caf\\u00e9"
   ]
  }
 },
 "predictions": [
  {
   "at": "2026-12-02T15:00:00+00:00",
   "claim": "warp_size",
   "device": "NVIDIA H200",
   "measured": 32.0,
   "predicted": 32,
   "unit": "threads",
   "verdict": "agrees"
  },
  {
   "at": "2026-12-02T15:01:00+00:00",
   "claim": "h200_hbm_bandwidth",
   "device": "",
   "measured": null,
   "predicted": 3.0,
   "unit": "TB/s",
   "verdict": ""
  }
 ],
 "theme": null,
 "version": 1,
 "workspaces": {
  "/w/one": {
   "squares": {
    "at": "2026-12-02T15:00:00+00:00",
    "earned": 2.0,
    "possible": 3.0,
    "status": "failing"
   }
  }
 }
}
"""


def test_a_file_written_before_msgspec_loads_unchanged(tmp_path: Path) -> None:
    from gpulab.course import ExerciseRecord, LessonState
    from gpulab.course.progress import Prediction

    path = tmp_path / "progress.json"
    path.write_text(EARLIER_FILE)
    store = ProgressStore(path)
    progress = store.load()
    assert store.warning is None
    assert progress == Progress(
        last_lesson="numa",
        hints={"squares": 2},
        lessons={"numa": LessonState("root/caf\u00e9", None, ["root", "root/caf\u00e9"])},
        predictions=[
            Prediction(
                "warp_size",
                32.0,
                "threads",
                "2026-12-02T15:00:00+00:00",
                32.0,
                "agrees",
                "NVIDIA H200",
            ),
            Prediction("h200_hbm_bandwidth", 3.0, "TB/s", "2026-12-02T15:01:00+00:00"),
        ],
        workspaces={
            "/w/one": {"squares": ExerciseRecord("failing", 2.0, 3.0, "2026-12-02T15:00:00+00:00")}
        },
    )
    store.save(progress)  # the same keys and values: an older gpulab reads it too
    assert json.loads(path.read_text()) == json.loads(EARLIER_FILE)
    assert ProgressStore(path).load() == progress
