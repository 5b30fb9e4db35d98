"""specs.toml: what loads, and what each mistake is told, with its line."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from gpulab.course import CourseError, load_course
from gpulab.course.specs import load_specs, url_problem

SPECS = """\
[sources.blog]
title = "A blog post"
url = "https://example.org/post"

[sources.local]
title = "Our own measurements"
path = "reference/baseline.md"

[gpus.h200]
name = "NVIDIA H200 SXM"
architecture = "Hopper"
compute_capability = "9.0"
source = "blog"
sms = { value = 132, unit = "SMs" }
tdp = { min = 600, max = 700, unit = "W", source = "local" }
pcie = { text = "Gen5 x16" }

[topics.pcie]
title = "PCI Express"
gen4_x16 = { value = 31.5, unit = "GB/s", source = "https://pcisig.com/faq", note = "one way" }
"""


def write(tmp_path: Path, text: str) -> Path:
    (tmp_path / "reference").mkdir(exist_ok=True)
    (tmp_path / "reference" / "baseline.md").write_text("# baseline\n")
    path = tmp_path / "specs.toml"
    path.write_text(text)
    return path


def test_specs_load(tmp_path: Path) -> None:
    specs = load_specs(write(tmp_path, SPECS))
    sms = specs.get("h200.sms")
    assert sms is not None
    assert (sms.value, sms.unit, sms.line) == (132, "SMs", 14)
    assert sms.source.url == "https://example.org/post"
    tdp = specs.get("h200.tdp")
    assert tdp is not None and tdp.numbers == (600, 700)
    assert tdp.source.path == "reference/baseline.md"
    assert tdp.shown == "600–700 W"
    pcie = specs.get("h200.pcie")
    assert pcie is not None and pcie.shown == "Gen5 x16" and pcie.numbers == ()
    gen4 = specs.get("pcie.gen4_x16")
    assert gen4 is not None and gen4.source.url == "https://pcisig.com/faq" and gen4.note
    assert specs.gpus["h200"].title == "NVIDIA H200 SXM"
    assert specs.topics["pcie"].title == "PCI Express"
    assert len(list(specs.values())) == 4
    assert specs.get("h200.nothing") is None and specs.get("nothing.sms") is None
    assert load_specs(tmp_path / "absent.toml").gpus == {}


Edit = Callable[[str], str]


@pytest.mark.parametrize(
    ("edit", "line", "message"),
    [
        (lambda t: t.replace('source = "blog"\n', ""), 13, "h200.sms has no source"),
        (lambda t: t.replace('"blog"', '"blgo"'), 13, "gpu 'h200': unknown source 'blgo'"),
        (lambda t: t.replace(', unit = "SMs"', ""), 14, "h200.sms: a number needs its unit"),
        (
            lambda t: t.replace("value = 132", 'value = "132"'),
            14,
            "h200.sms: value must be a number",
        ),
        (lambda t: t.replace("min = 600", "min = 800"), 15, "h200.tdp: min is larger than max"),
        (
            lambda t: t.replace('text = "Gen5 x16"', 'text = "x", value = 3, unit = "W"'),
            16,
            "h200.pcie: give exactly one of",
        ),
        (
            lambda t: t.replace("sms = { value", "sms = { colour = 1, value"),
            14,
            "h200.sms: unknown field colour",
        ),
        (
            lambda t: t.replace('architecture = "Hopper"\n', ""),
            9,
            "gpu 'h200': missing architecture",
        ),
        (
            lambda t: t.replace("https://example.org/post", "example.org/post"),
            3,
            "source 'blog': url 'example.org/post' is not an http(s) address",
        ),
        (
            lambda t: t.replace("reference/baseline.md", "reference/gone.md"),
            7,
            "source 'local': reference/gone.md does not exist",
        ),
        (lambda t: t + "\n[gadgets.x]\ny = 1\n", 22, "unknown table [gadgets]"),
        (
            lambda t: t.replace("[topics.pcie]", "[topics.h200]"),
            18,
            "topic 'h200' has the id of a GPU",
        ),
        (
            lambda t: t.replace('sms = { value = 132, unit = "SMs" }', "sms = 132"),
            14,
            "h200.sms must be an inline table",
        ),
    ],
)
def test_bad_specs_say_what_and_where(tmp_path: Path, edit: Edit, line: int, message: str) -> None:
    path = write(tmp_path, edit(SPECS))
    with pytest.raises(CourseError) as caught:
        load_specs(path)
    problem = caught.value.problems[0]
    assert problem.message.startswith(message), problem.message
    assert (problem.path, problem.line) == (path, line)


def test_toml_syntax_error_has_its_line(tmp_path: Path) -> None:
    path = write(tmp_path, SPECS.replace('name = "NVIDIA H200 SXM"', "name = "))
    with pytest.raises(CourseError) as caught:
        load_specs(path)
    assert caught.value.problems[0].line == 10


@pytest.mark.parametrize(
    ("url", "why"),
    [
        ("https://docs.nvidia.com/cuda/", ""),
        ("http://man7.org/x", ""),
        ("ftp://x.org", "is not an http(s) address"),
        ("https://localhost/x", "has no host name"),
        ("https://x.org/a b", "contains white space"),
    ],
)
def test_url_problem(url: str, why: str) -> None:
    assert url_problem(url) == why


def test_real_specs_cover_the_gpus_of_facts() -> None:
    specs = load_course().specs
    for gpu in ("a100-40gb", "a100-80gb", "h100-sxm", "h100-pcie", "h200", "h20", "rtx-4090"):
        assert gpu in specs.gpus, gpu
        for value in specs.gpus[gpu].values.values():
            assert value.source.location, value.ref
    h100 = specs.get("h100-sxm.fp16_tensor")
    assert h100 is not None and h100.value == 989.4 and "dense" in h100.note
