"""Spec values that quote gpulab's recordings agree with them (`gpulab.course.recordings`)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from gpulab.course import load_course
from gpulab.course.recordings import RecordingError, check_recorded, numbers_at
from gpulab.course.specs import load_specs

ROOT = Path(__file__).resolve().parents[2]

DATA = {
    "bw": {"copy": 4261.8, "float4": [3966.4, 3971.0, 3975.9]},
    "results": [
        {"probe": "a", "readings": [{"key": "x", "value": 1.5}]},
        {
            "probe": "chase",
            "readings": [{"key": "l2", "value": 287.5}, {"key": "name", "value": "H200"}],
        },
    ],
}


@pytest.mark.parametrize(
    ("path", "numbers"),
    [
        ("bw.copy", [4261.8]),
        ("bw.float4", None),
        ("bw.float4[*]", [3966.4, 3971.0, 3975.9]),
        ("bw.float4[-1]", [3975.9]),
        ("results[probe=chase].readings[key=l2].value", [287.5]),
        ("results[*].readings[0].value", [1.5, 287.5]),
    ],
)
def test_paths_walk_the_json(path: str, numbers: list[float] | None) -> None:
    if numbers is None:
        with pytest.raises(RecordingError, match="not a number"):
            numbers_at(DATA, path)
    else:
        assert numbers_at(DATA, path) == numbers


@pytest.mark.parametrize(
    ("path", "words"),
    [
        ("bw.copies", "bw has no 'copies' (it has: copy, float4)"),
        ("bw.float4[3]", "bw.float4 has 3 items, so no [3]"),
        ("results[probe=none].readings", "results has 0 items with probe = 'none', not one"),
        ("results[probe=chase].readings[key=name].value", "is 'H200', not a number"),
        ("bw[0]", "bw is not a list"),
        ("results[probe]", "neither an index, * nor key=value"),
    ],
)
def test_a_path_that_leads_nowhere_says_where_it_stopped(path: str, words: str) -> None:
    with pytest.raises(RecordingError) as caught:
        numbers_at(DATA, path)
    assert words in str(caught.value)


def _specs(tmp_path: Path, values: str):
    (tmp_path / "reference").mkdir(exist_ok=True)
    (tmp_path / "reference" / "run.json").write_text(json.dumps(DATA))
    path = tmp_path / "specs.toml"
    path.write_text('[topics.ours]\ntitle = "Our GPU"\nsource = "https://example.org/x"\n' + values)
    return load_specs(path)


def test_values_that_agree_pass(tmp_path: Path) -> None:
    specs = _specs(
        tmp_path,
        """\
copy = { value = 4262, unit = "GB/s", recorded = "reference/run.json#bw.copy" }
copy_fine = { value = 4261.8, unit = "GB/s", recorded = "reference/run.json#bw.copy" }
float4 = { min = 3966, max = 3976, unit = "GB/s", recorded = "reference/run.json#bw.float4[*]" }
l2 = { value = 288, unit = "cycles", recorded = ["reference/run.json#results[probe=chase]\
.readings[key=l2].value"] }
""",
    )
    assert check_recorded(specs) == []


def test_values_that_drifted_are_told_with_their_line(tmp_path: Path) -> None:
    specs = _specs(
        tmp_path,
        """\
copy = { value = 4300, unit = "GB/s", recorded = "reference/run.json#bw.copy" }
copy_fine = { value = 4261.9, unit = "GB/s", recorded = "reference/run.json#bw.copy" }
float4 = { min = 3870, max = 3976, unit = "GB/s", recorded = "reference/run.json#bw.float4[*]" }
gone = { value = 1, unit = "GB/s", recorded = "reference/none.json#bw.copy" }
typo = { value = 1, unit = "GB/s", recorded = "reference/run.json#bw.cpy" }
word = { text = "fast", recorded = "reference/run.json#bw.copy" }
""",
    )
    problems = [(p.line, p.message) for p in check_recorded(specs)]
    assert problems == [
        (4, "ours.copy: 4300 GB/s differs from the recording's 4261.8"),
        (5, "ours.copy_fine: 4261.9 GB/s differs from the recording's 4261.8"),
        (
            6,
            "ours.float4: 3870–3976 GB/s differs from the recording's 3966.4–3975.9 "
            "(3966.4, 3971, 3975.9)",
        ),
        (7, "ours.gone: recorded: reference/none.json: cannot read it (No such file or directory)"),
        (
            8,
            "ours.typo: recorded: reference/run.json#bw.cpy: bw has no 'cpy' (it has: copy, "
            "float4)",
        ),
        (9, "ours.word: recorded is for numbers, not text"),
    ]


def test_recorded_must_name_a_file_and_a_path(tmp_path: Path) -> None:
    from gpulab.course import CourseError

    with pytest.raises(CourseError, match='recorded must be "FILE#PATH"'):
        _specs(tmp_path, 'x = { value = 1, unit = "GB/s", recorded = "reference/run.json" }\n')


def test_the_course_quotes_its_recordings_as_they_are(tmp_path: Path) -> None:
    """Our H200's numbers in specs.toml name their recordings, and a changed number is
    caught: the lessons that quote it cannot drift from the measurement again."""
    specs = load_course().specs
    recorded = [v for v in specs.values() if v.recorded]
    assert len(recorded) >= 20
    assert check_recorded(specs) == []
    copy = tmp_path / "lessons"
    shutil.copytree(ROOT / "lessons", copy)
    text = (copy / "specs.toml").read_text()
    assert "fp16_matmul = { value = 828.5," in text
    (copy / "specs.toml").write_text(
        text.replace("fp16_matmul = { value = 828.5,", "fp16_matmul = { value = 838.5,")
    )
    problems = check_recorded(load_specs(copy / "specs.toml"))
    assert [p.message.split(" differs")[0] for p in problems] == [
        "h200-baseline.fp16_matmul: 838.5 TFLOPS"
    ]
