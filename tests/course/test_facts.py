"""The number and link checks of the linter, on small lessons with exact lines."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.course.test_manifest import entry, write_course

from gpulab.course import load_course
from gpulab.course.quantities import numbers_in, sums_in

SPECS = """\
[sources.s]
title = "Datasheet"
url = "https://example.org/datasheet"

[gpus.g]
name = "G"
architecture = "A"
compute_capability = "9.0"
source = "s"
sms = { value = 132, unit = "SMs" }
bandwidth = { value = 4.8, unit = "TB/s" }
clock = { value = 1410, unit = "MHz" }
fp16 = { value = 989.4, unit = "TFLOPS" }
"""

CLAIMS = """\
[copy_bw]
statement = "A copy reaches 4.2 to 4.4 TB/s"
min = 4.2
max = 4.4
unit = "TB/s"
device = "G"
source = "https://example.org/measured"
probe = "hbm_bandwidth"
tolerance = 0.1
"""

HEAD = "---\ntitle: T\nday: 1\nobjectives: [x]\n---\n# T\n\n"


Found = list[tuple[int | None, str]]


def lint(tmp_path: Path, body: str, *, others: tuple[str, ...] = ()) -> Found:
    manifest = entry("t") + "".join(entry(o) for o in others)
    lessons = {"t": HEAD + body, **{o: HEAD + "- x\n" for o in others}}
    folder = write_course(tmp_path, manifest, lessons)
    (folder / "specs.toml").write_text(SPECS)
    (folder / "claims").mkdir()
    (folder / "claims" / "t.toml").write_text(CLAIMS)
    course = load_course(folder)
    return [(p.line, p.message) for p in course.lint() if p.path.name == "t.md"]


def test_sourced_numbers_pass(tmp_path: Path) -> None:
    body = (
        "- An H200 has 132 SMs and 4.8 TB/s\n"  # specs, unit kept
        "- A 1.41 GHz clock, 989 TFLOPS dense\n"  # converted, rounded
        "- A copy reaches 4.3 TB/s <!-- claim: copy_bw -->\n"
        "\n"
        "  Here it read 4.2 to 4.4 TB/s in a run.\n"  # the claim's range covers notes
        "- CUDA 12.4, driver 535.104.05, GPU 0, day 3, H100, FP16, sm_90, 2:4, 16×16×16, 2017\n"
        "- A tile of 64 by 64 <!-- example: 64 -->\n"
        "- Code is exempt: `nvidia-smi -i 7` and\n"
        "\n"
        "  ```bash\n  echo 12345\n  ```\n"
    )
    assert lint(tmp_path, body) == [(10, "the number '4.3 TB/s' has no source")]


def test_each_bare_number_is_reported_with_its_line(tmp_path: Path) -> None:
    body = (
        "- An H200 has 133 SMs\n"
        "- 4.8 GHz is not a bandwidth\n"
        "- A table\n"
        "\n"
        "  | GPU | SMs |\n  |---|---|\n  | G | 132 |\n  | X | 77 |\n"
        "\n"
        "  A paragraph over two lines,\n  the second says 15–25× slower.\n"
        "- An example that is not there <!-- example: 99 -->\n"
    )
    assert lint(tmp_path, body) == [
        (8, "the number '133' has no source"),
        (9, "the number '4.8 GHz' has no source"),
        (15, "the number '77' has no source"),
        (18, "the number '15' has no source"),
        (18, "the number '25×' has no source"),
        (19, "example 99 does not occur in this node's label or notes"),
    ]


def test_links(tmp_path: Path) -> None:
    body = (
        "- See [the other lesson](other.md) and [a page](https://docs.nvidia.com/cuda/)\n"
        "- Broken: [gone](gone.md), [bad](htp:/x), [file](../README.md), [top](#t)\n"
    )
    assert lint(tmp_path, body, others=("other",)) == [
        (9, "link 'gone.md' names a lesson that does not exist (gone)"),
        (9, "link 'htp:/x' is not an http(s) address"),
        (9, "link '../README.md' is neither a web address nor a lesson file"),
    ]


@pytest.mark.parametrize(
    ("text", "found"),
    [
        ("132 SMs and 4.8 TB/s", [("132", ""), ("4.8", "TB/s")]),
        ("1,979 TFLOPS at 77%", [("1,979", "TFLOPS"), ("77", "%")]),
        ("256KB and 64 bits", [("256", "KB"), ("64", "bits")]),
        ("64-bit indices for Llama 3 8B and 70B, 8 B per value", [("8", "B")]),
        ("32 × (registers) and two × 32 × 128 × two bytes", [("32", ""), ("32", ""), ("128", "")]),
        ("108 × 64 × 2 = 13,824", [("108", ""), ("64", ""), ("2", ""), ("13,824", "")]),
        ("4x faster, 3rd gen, 64K", [("4", "x")]),
        ("CUDA 12.4 on Ubuntu 22.04 with driver 580.159.04", []),
        ("x86-64, sm_90/sm_80, H100, E4M3, P0 to P12", []),
        ("in 2017, 0 or 1 of them", []),
        ("2000 MHz", [("2000", "MHz")]),
    ],
)
def test_numbers_in(text: str, found: list[tuple[str, str]]) -> None:
    assert [(n.written, n.unit) for n in numbers_in(text)] == found


def test_the_real_course_lints_clean() -> None:
    problems = load_course().lint()
    assert [str(p) for p in problems] == []


def test_a_claim_no_lesson_cites_is_reported(tmp_path: Path) -> None:
    folder = write_course(tmp_path, entry("t"), {"t": HEAD + "- 132 SMs\n"})
    (folder / "specs.toml").write_text(SPECS)
    (folder / "claims").mkdir()
    (folder / "claims" / "t.toml").write_text(CLAIMS)
    problems = load_course(folder).lint()
    assert [(p.path.name, p.line, p.message) for p in problems] == [
        ("t.toml", 1, "claim 'copy_bw' is not cited by any lesson"),
    ]
    (folder / "t.md").write_text(HEAD + "- 132 SMs\n- copy <!-- claim: copy_bw -->\n")
    assert load_course(folder).lint() == []


@pytest.mark.parametrize(
    ("text", "computed", "holds"),
    [
        ("108 SMs × 64 lanes × 2 FLOPs × 1.41 GHz = 19.5 TFLOPS", 19491.84, True),
        ("108 × 64 × 1.41 GHz = 19.5 TFLOPS", 9745.92, False),  # forgot FMA = 2 FLOPs
        ("989.4 TFLOPS / 3.35 TB/s ≈ 295 FLOP/B", 295.343, True),
        ("4.8 TB/s ÷ 132 SMs ≈ 36 GB/s per SM", 0.0364, True),
        ("1 + 2 × 3 = 7", 7.0, True),
        ("600 / 64 ≈ 12", 9.375, False),
    ],
)
def test_worked_sums(text: str, computed: float, holds: bool) -> None:
    (found,) = sums_in(text)
    assert found.computed == pytest.approx(computed, rel=1e-3)
    assert found.holds is holds


@pytest.mark.parametrize(
    "text", ["about ≈ 4.3 TB/s", "15 = 15", "stride 2 / 8 / 32 floats", "a 4/8 split = 2"]
)
def test_no_sum_where_nothing_is_computed(text: str) -> None:
    assert list(sums_in(text)) == []


def test_sum_results_are_sourced_and_wrong_sums_reported(tmp_path: Path) -> None:
    body = "- Peak: 132 × 4.8 = 633.6 per clock\n- Wrong: 132 × 4.8 = 600\n"
    assert lint(tmp_path, body) == [
        (9, "the arithmetic in '132 × 4.8 = 600' does not hold: it gives 633.6"),
        (9, "the number '600' has no source"),
    ]


def test_a_number_with_a_unit_matches_no_spec_counted_in_another(tmp_path: Path) -> None:
    """ "64 MiB" was once sourced by a spec of 64 lanes: a size is not a count of lanes."""
    from gpulab.course.facts import _matches
    from gpulab.course.quantities import Number

    size = Number("64", 64.0, 0, "MiB", 1)
    assert not _matches(size, 64, "lanes")
    assert _matches(size, 64, "MiB") and _matches(size, 67.108864, "MB")
    assert _matches(Number("64", 64.0, 0, "", 1), 64, "lanes")  # no unit written: any


def test_sizes_match_in_decimal_or_binary_units() -> None:
    from gpulab.course.units import conversions, convert

    assert conversions(228, "KB", "bytes") == [228_000, 233_472]
    assert conversions(1, "GB/s", "MB/s") == [1000]  # rates convert one way only
    assert conversions(1, "GHz", "bytes") == []
    assert convert(1410, "MHz", "GHz") == 1.41
    assert convert(3, "SMs", "SMs") == 3 and convert(3, "SMs", "lanes") is None
