"""Hidden checks for the env-report exercise: os-release files that are not tidy, the
fallbacks of os_name on changed copies of a recorded machine, a driver without GPUs, and this
machine itself (its os-release file, and NVML started by the checker).

The files vary per run. Each check that takes inputs draws them from a seed made for the run
(`gpulab.grading.checks.draws`; GPULAB_CHECK_SEED=<n> replays a run) and names it in its failure
messages:
beside the fixed files of before, parse_os_release reads random os-release files (random keys
in a random order; values in double, single or no quotes, holding '=', '#', spaces, the other
kind of quote, or a quoted word in quotes; empty values; comments, some holding '='; blank
lines, lines of blanks and lines without '='; a final newline or none), and os_name reads
random files on a random recorded machine: each of etc/os-release and usr/lib/os-release
present with PRETTY_NAME, present without it, a link (etc to usr/lib, as Ubuntu ships it), or
removed. Backslash escapes inside double quotes are never drawn: the notebook says the checks
leave them out. The expected answers come from the values drawn, never from a parser.
"""

from __future__ import annotations

import random
import re
from pathlib import Path

import pytest

from gpulab.grading.checks.draws import SEEN
from gpulab.grading.checks.draws import rng as _rng
from gpulab.grading.checks.draws import telling as _telling
from gpulab.grading.checks.learner import LearnerError
from gpulab.grading.checks.machines import load_machine
from gpulab.probes.system import parse_os_release

# ---- random os-release files ------------------------------------------------------------------

DISTROS = {"ubuntu": "Ubuntu", "debian": "Debian GNU/Linux", "fedora": "Fedora Linux",
           "rocky": "Rocky Linux", "almalinux": "AlmaLinux", "alpine": "Alpine Linux",
           "arch": "Arch Linux", "opensuse-leap": "openSUSE Leap", "amzn": "Amazon Linux",
           "nixos": "NixOS", "linuxmint": "Linux Mint", "rhel": "Red Hat Enterprise Linux",
           "wolfi": "Wolfi", "flatcar": "Flatcar Container Linux by Kinvolk"}
CODENAMES = ("Noble Numbat", "bookworm", "Blue Onyx", "Green Obsidian", "Jammy Jellyfish",
             "trixie", "Plow", "Coconut", "Vicuna", "Ootpa")
WORDS = ("lab", "gpu", "edge", "cloud", "hpc", "build", "nightly", "server", "minimal", "core",
         "beta", "cuda", "node", "rack")
OTHER_KEYS = ("NAME", "VERSION", "ID", "ID_LIKE", "VERSION_ID", "VERSION_CODENAME", "HOME_URL",
              "SUPPORT_URL", "BUG_REPORT_URL", "DOCUMENTATION_URL", "ANSI_COLOR", "CPE_NAME",
              "VARIANT", "VARIANT_ID", "BUILD_ID", "IMAGE_ID", "LOGO", "LAB_NOTE")


def _version(rng: random.Random) -> str:
    return f"{rng.randint(1, 42)}.{rng.choice(('04', '10', str(rng.randint(0, 12))))}"


def _url(rng: random.Random) -> str:
    host = f"{rng.choice(WORDS)}.{rng.choice(('org', 'com', 'io', 'example'))}"
    query = "&".join(f"{rng.choice(WORDS)}={rng.choice(WORDS)}{rng.randint(0, 99)}"
                     for _ in range(rng.randint(1, 3)))
    return f"https://{host}/{rng.choice(WORDS)}/?{query}"


def _pretty(rng: random.Random, tricky: bool) -> str:
    """A PRETTY_NAME; `tricky` puts '=', '#', a quote or a quoted word inside."""
    value = f"{rng.choice(list(DISTROS.values()))} {_version(rng)}"
    if rng.random() < 0.4:
        value += " LTS"
    if rng.random() < 0.5:
        value += f" ({rng.choice(CODENAMES)})"
    if tricky:
        word = rng.choice(WORDS)
        value = rng.choice((
            f"{value} {word}={rng.randint(1, 999)}",            # '=' inside
            f"{value} ({word}={rng.choice(WORDS)}, x=y)",
            f"{value} #{rng.randint(1, 99)}",                    # '#' inside, not a comment
            f"{word.title()}'s {value}",                         # needs double quotes
            f'{value} "{word}"',                                 # needs single quotes
            f"'{word}' {value}",
        ))
    return value


def _other_value(rng: random.Random, key: str, tricky: bool) -> str:
    distro = rng.choice(list(DISTROS))
    value = {
        "NAME": DISTROS[distro], "ID": distro, "VERSION_ID": _version(rng),
        "VERSION": f"{_version(rng)} ({rng.choice(CODENAMES)})",
        "ID_LIKE": " ".join(rng.sample(list(DISTROS), rng.randint(1, 3))),
        "VERSION_CODENAME": rng.choice(CODENAMES).split()[0].lower(),
        "ANSI_COLOR": ";".join(str(rng.randint(0, 255)) for _ in range(rng.randint(2, 5))),
        "CPE_NAME": f"cpe:/o:{distro}:{distro}:{_version(rng)}",
        "VARIANT": rng.choice(("", f"{rng.choice(WORDS).title()} Edition")),
        "VARIANT_ID": rng.choice(("", rng.choice(WORDS))),
        "BUILD_ID": f"{rng.randint(2019, 2026)}-{rng.randint(1, 12):02}-{rng.randint(1, 28):02}",
        "IMAGE_ID": f"{rng.choice(WORDS)}-{rng.choice(WORDS)}",
        "LOGO": f"distributor-logo-{distro}",
        "LAB_NOTE": f"{rng.choice(WORDS)}={rng.choice(WORDS)} # {rng.choice(WORDS)}",
    }.get(key) if not key.endswith("_URL") else _url(rng)
    assert value is not None, key
    if tricky and rng.random() < 0.3:
        value = rng.choice((f"'{value}'", f'"{value}"', "")) if value else value
    return value


def _written(rng: random.Random, value: str) -> str:
    """`value` as a shell-style assignment writes it: in double, single or no quotes."""
    ways = []
    if '"' not in value:
        ways.append(f'"{value}"')
    if "'" not in value:
        ways.append(f"'{value}'")
    if re.fullmatch(r"[A-Za-z0-9._-]+", value):       # os-release(5): others need quotes
        ways.append(value)
    if not value:
        ways.append("")
    return rng.choice(ways)


def _noise(rng: random.Random) -> str:
    """A line that assigns nothing."""
    return rng.choice((
        f"# {' '.join(rng.sample(WORDS, 3))}",
        f"#{rng.choice(OTHER_KEYS)}={rng.choice(WORDS)}",               # a commented assignment
        f'# PRETTY_NAME="{rng.choice(list(DISTROS.values()))} {_version(rng)}"',
        "", "", " " * rng.randint(1, 4), "\t",
        f"{rng.choice(WORDS)} {rng.choice(WORDS)}",                     # no '=' at all
        rng.choice(list(DISTROS.values())),
    ))


def os_release(rng: random.Random, *, pretty: str | None, tricky: bool,
               noise: int) -> tuple[str, dict[str, str], dict[str, str]]:
    """A random os-release file: (its text, the dict it means, each key's line).

    PRETTY_NAME is `pretty` (left out where None); other keys at random, in a random order,
    `noise` lines that assign nothing among them.
    """
    keys = rng.sample(OTHER_KEYS, rng.randint(2, 7))
    if pretty is None:
        keys = [k for k in keys if k != "NAME"] + ["NAME"]
    values = {key: _other_value(rng, key, tricky) for key in keys}
    if pretty is not None:
        values["PRETTY_NAME"] = pretty
    lines = {key: f"{key}={_written(rng, value)}" for key, value in values.items()}
    order = list(lines.values()) + [_noise(rng) for _ in range(noise)]
    rng.shuffle(order)
    text = "\n".join(order) + ("\n" if rng.random() < 0.8 else "")
    return text, values, lines


def parse_problem(got: object, want: dict[str, str], lines: dict[str, str]) -> str | None:
    """What is wrong with parse_os_release's answer `got`, in terms of the file's lines; None
    when it is right."""
    if not isinstance(got, dict):
        return f"returned {got!r:.200}, not a dict"
    for key, line in lines.items():
        if key not in got:
            return f"has no key {key!r}, though the line {line!r} assigns it"
        if got[key] != want[key]:
            return f"gives {got[key]!r} for the line {line!r}"
    extra = sorted(map(str, set(got) - set(want)))
    if extra:
        return f"has the key(s) {extra!r}, which no line of the file assigns"
    return None


# ---- parse_os_release ---------------------------------------------------------------------------

@pytest.mark.points(2)
def test_parse_os_release_quoting(learner):
    """parse_os_release handles single quotes, empty values and '=' inside a value"""
    text = ("NAME='Fedora Linux'\n"
            "VARIANT=\n"
            'VARIANT_ID=""\n'
            'HOME_URL="https://example.org/?a=b&c=d"\n'
            "ID=fedora")                                   # no newline at the end
    want = {"NAME": "Fedora Linux", "VARIANT": "", "VARIANT_ID": "",
            "HOME_URL": "https://example.org/?a=b&c=d", "ID": "fedora"}
    got = learner.call("parse_os_release", text)
    assert got == want, (
        f"for a file with single quotes, empty values, '=' inside a URL and no final newline, "
        f"parse_os_release returned {got!r}, but the file means {want!r}: split each line at "
        "its first '=' only, and remove one pair of surrounding quotes, single or double")
    rng = _rng("parse_os_release_quoting")
    for _ in range(12):
        text, want, lines = os_release(rng, pretty=_pretty(rng, tricky=True), tricky=True,
                                       noise=0)
        with _telling(f"parse_os_release was given the file {text!r}"):
            got = learner.call("parse_os_release", text)
        why = parse_problem(got, want, lines)
        assert why is None, (
            f"for the file {text!r}, parse_os_release {why}: split each line at its first '=' "
            "only, and remove one pair of surrounding quotes, single or double (the value "
            f"inside them is kept as it is, quotes, '=' and '#' included) {SEEN}")


@pytest.mark.points(1)
def test_parse_os_release_skips_non_assignments(learner):
    """parse_os_release skips blank lines, comments and lines without '='"""
    text = ("# written by the image builder\n"
            "\n"
            'PRETTY_NAME="Alpine Linux v3.21"\n'
            "   \n"
            "not an assignment\n"
            "ID=alpine\n")
    want = {"PRETTY_NAME": "Alpine Linux v3.21", "ID": "alpine"}
    got = learner.call("parse_os_release", text)
    assert got == want, (
        f"parse_os_release returned {got!r} for a file with a comment, blank lines and a "
        f"line without '=', but only {want!r} are assignments: skip everything else")
    rng = _rng("parse_os_release_skips_non_assignments")
    for _ in range(8):
        text, want, lines = os_release(rng, pretty=_pretty(rng, tricky=False), tricky=False,
                                       noise=rng.randint(3, 8))
        with _telling(f"parse_os_release was given the file {text!r}"):
            got = learner.call("parse_os_release", text)
        why = parse_problem(got, want, lines)
        assert why is None, (
            f"for the file {text!r}, parse_os_release {why}: only KEY=value lines are "
            "assignments; skip blank lines (blanks only, too), lines starting with '#' "
            f"(whatever they hold) and lines without '=' {SEEN}")


# ---- os_name on files the visible checks do not show -----------------------------------------

UBUNTU = 'PRETTY_NAME="Ubuntu 24.04.3 LTS"\nNAME="Ubuntu"\nID=ubuntu\n'
MACHINES = ("firecracker-vm", "h200-vm", "two-socket", "docker-container", "k8s-hostpid")
ETC, USR = "etc/os-release", "usr/lib/os-release"


def _shown(files: dict[str, str | None], links: dict[str, str]) -> str:
    """The changes made to a machine, in words, for messages."""
    said = [f"{path} a link to {target}" for path, target in links.items()]
    said += [f"{path} removed" if text is None else f"{path} holding {text!r}"
             for path, text in files.items() if path not in links]
    return "; ".join(said)


def _random_fallbacks(rng: random.Random) -> list[tuple[dict, dict, str | None, str]]:
    """Random os-release files, one case of each rule: (files, links, the answer, the rule)."""
    first, second = _pretty(rng, rng.random() < 0.5), _pretty(rng, rng.random() < 0.5)
    while second == first:
        second = _pretty(rng, True)

    def text(pretty: str | None) -> str:
        return os_release(rng, pretty=pretty, tricky=False, noise=rng.randint(0, 2))[0]

    return [
        ({ETC: text(first), USR: text(second)}, {}, first,
         "etc/os-release comes first where both exist"),
        ({ETC: None, USR: text(first)}, {}, first,
         "without etc/os-release, the standard's fallback is usr/lib/os-release"),
        ({ETC: None, USR: text(None)}, {}, "Linux",
         "a file without PRETTY_NAME means \"Linux\" (os-release(5))"),
        ({ETC: text(None), USR: text(second)}, {}, "Linux",
         "etc/os-release is the file wherever it exists, and without PRETTY_NAME it means "
         "\"Linux\" (os-release(5)); usr/lib/os-release is only the fallback for a missing one"),
        ({ETC: None, USR: None}, {}, None,
         "with neither file, the answer is None, not an exception"),
        ({USR: text(first)}, {ETC: "../usr/lib/os-release"}, first,
         "etc/os-release is a link to usr/lib/os-release, as Ubuntu ships it: read it "
         "through the link"),
    ]


@pytest.mark.points(1)
def test_os_name_fallbacks(learner):
    """os_name(root) falls back to usr/lib/os-release, to "Linux", and to None"""
    cases = [
        ({"etc/os-release": None}, "Ubuntu 24.04.3 LTS",
         "without etc/os-release, the standard's fallback is usr/lib/os-release"),
        ({"etc/os-release": None, "usr/lib/os-release": 'NAME="Wolfi"\nID=wolfi\n'}, "Linux",
         "a file without PRETTY_NAME means \"Linux\" (os-release(5))"),
        ({"etc/os-release": None, "usr/lib/os-release": None}, None,
         "with neither file, the answer is None, not an exception"),
        ({"etc/os-release": 'PRETTY_NAME="Ubuntu 24.10"\nID=ubuntu\n',
          "usr/lib/os-release": UBUNTU},
         "Ubuntu 24.10", "etc/os-release comes first where both exist"),
    ]
    for files, want, why in cases:
        root = learner.machine("h200-vm", files=files)
        got = learner.call("os_name", root)
        assert got == want, f"os_name(root) returned {got!r}, not {want!r}: {why}"
    rng = _rng("os_name_fallbacks")
    cases = _random_fallbacks(rng)
    rng.shuffle(cases)
    for files, links, want, why in cases:
        name = rng.choice(MACHINES)
        about = (f"on a copy of a recorded machine ({load_machine(name).about}) with "
                 f"{_shown(files, links)}")
        with _telling(f"os_name(root) was called {about}"):
            got = learner.call("os_name", learner.machine(name, files=files, links=links))
        assert got == want, f"os_name(root) returned {got!r} {about}: {why} {SEEN}"


# ---- this machine, and a driver without GPUs --------------------------------------------------

def _this_os_name() -> str | None:
    for path in (Path("/etc/os-release"), Path("/usr/lib/os-release")):
        try:
            fields = parse_os_release(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            continue
        return fields.get("PRETTY_NAME", "Linux")
    return None


def _this_nvml() -> dict:
    import pynvml

    try:
        pynvml.nvmlInit()
    except pynvml.NVMLError:
        return {"driver_version": None, "cuda_version": None, "gpus": None}
    try:
        driver = pynvml.nvmlSystemGetDriverVersion()
        cuda = pynvml.nvmlSystemGetCudaDriverVersion()
        names = [pynvml.nvmlDeviceGetName(pynvml.nvmlDeviceGetHandleByIndex(i))
                 for i in range(pynvml.nvmlDeviceGetCount())]
    finally:
        pynvml.nvmlShutdown()
    return {"driver_version": driver, "cuda_version": f"{cuda // 1000}.{cuda % 1000 // 10}",
            "gpus": names}


@pytest.mark.points(1)
def test_this_machine(learner):
    """os_name() and gpu_report() describe the machine the checks run on"""
    got = learner.call("os_name")
    want = _this_os_name()
    assert got == want, (f"os_name() returned {got!r} on this machine, whose os-release file "
                         f"says {want!r}: with no root given, read this machine's files")
    got = learner.call("gpu_report")
    want = _this_nvml()
    assert got == want, (f"gpu_report() returned {got!r} on this machine, but NVML here "
                         f"answers {want!r}")


GPU_NAMES = ("NVIDIA H100 80GB HBM3", "NVIDIA H100 NVL", "NVIDIA A100-SXM4-80GB",
             "NVIDIA L40S", "NVIDIA GeForce RTX 4090", "Tesla T4", "NVIDIA B200",
             "NVIDIA RTX 6000 Ada Generation", "NVIDIA H200")


def _drawn_driver(rng: random.Random) -> tuple[list[dict], str, str]:
    """Fresh driver and CUDA versions as NVML answers: the answers, and the report's values."""
    driver = f"{rng.randint(470, 999)}.{rng.randint(10, 199)}.{rng.randint(1, 99):02d}"
    major, minor = rng.randint(11, 13), rng.randint(0, 9)
    return ([{"call": "nvmlSystemGetDriverVersion", "args": [], "result": driver},
             {"call": "nvmlSystemGetCudaDriverVersion", "args": [],
              "result": 1000 * major + 10 * minor}], driver, f"{major}.{minor}")


def _report(learner, session: str, answers: list[dict], what: str):
    try:
        return learner.call_with_nvml(session, "gpu_report", nvml_answers=answers)
    except LearnerError as exc:
        raise AssertionError(f"with {what}, gpu_report() failed: {exc} {SEEN}") from None


@pytest.mark.points(1)
def test_gpu_report_driver_without_gpus(learner):
    """gpu_report() on a driver that starts but lists no GPU: the driver, and no GPUs"""
    want = {"driver_version": "580.159.04", "cuda_version": "13.0", "gpus": []}
    try:
        got = learner.call_with_nvml("no-devices", "gpu_report")
    except LearnerError as exc:
        raise AssertionError(f"with a driver that starts but lists no GPU, gpu_report() "
                             f"failed: {exc}\nNVML starts there, so report the driver; "
                             "nvmlDeviceGetCount() is 0, so ask for no GPU") from None
    assert got == want, (
        f"with a driver that starts but lists no GPU, gpu_report() returned {got!r}, but "
        f"NVML answers {want!r}: the driver is there, and the list of GPUs is empty")
    answers, driver, cuda = _drawn_driver(_rng("test_gpu_report_driver_without_gpus"))
    want = {"driver_version": driver, "cuda_version": cuda, "gpus": []}
    got = _report(learner, "no-devices", answers, f"driver {driver} and no GPU")
    assert got == want, (f"with driver {driver} (CUDA {cuda}) and no GPU, gpu_report() "
                         f"returned {got!r}, but NVML answers {want!r} {SEEN}")


@pytest.mark.points(1)
def test_gpu_report_drawn_drivers_and_gpus(learner):
    """gpu_report() on a two-GPU board with a driver, CUDA version and GPUs drawn per run"""
    rng = _rng("test_gpu_report_drawn_drivers_and_gpus")
    for _ in range(3):
        answers, driver, cuda = _drawn_driver(rng)
        names = [rng.choice(GPU_NAMES) for _ in range(2)]
        answers += [{"call": "nvmlDeviceGetName", "args": [{"__handle__": i}], "result": name}
                    for i, name in enumerate(names)]
        want = {"driver_version": driver, "cuda_version": cuda, "gpus": names}
        what = f"driver {driver}, CUDA {cuda} and the GPUs {names}"
        got = _report(learner, "two-h100", answers, what)
        assert got == want, (f"with {what}, gpu_report() returned {got!r}, but NVML answers "
                             f"{want!r} {SEEN}")
