"""nbgrader's test cells for the env-report exercise.

Ported from exercises/landscape/test_env_report.py (visible) and
solutions/landscape/test_env_report_hidden.py (hidden), one test cell per
check, worth the same points; they call the learner's functions directly.

As in gpulab, `os_name` is given recorded machines' files (the checker builds
each machine's tree in a temporary folder with
`gpulab.grading.checks.machines.materialize` and passes it as `root`), and
`gpu_report` runs while `pynvml` answers from recorded NVML sessions (the
checker swaps `pynvml` in sys.modules, and the notebook's globals bound to it,
for `gpulab.grading.checks.machines.pynvml_from(session)` during the call). The
hidden checks draw random os-release files per run from a seed of their own
(GPULAB_CHECK_SEED=<n> replays one, as in gpulab).
"""
# ruff: noqa: F821, RUF100  (the notebook's answer cells define the learner's functions)

# %% checker
# ruff: noqa: F811  (in the notebook: the checker imports what it uses, whatever came before)
import atexit
import contextlib
import os
import random
import re
import secrets
import shutil
import sys
import tempfile
from pathlib import Path

from gpulab.grading.checks.machines import load_machine as check_load_machine
from gpulab.grading.checks.machines import materialize as check_materialize
from gpulab.grading.checks.machines import nvml_expected as check_nvml_expected
from gpulab.grading.checks.machines import nvml_recording as check_nvml_recording
from gpulab.grading.checks.machines import pynvml_from as check_pynvml_from
from gpulab.probes.system import parse_os_release as check_parse_os_release

CHECK_FOLDER = Path(tempfile.mkdtemp(prefix="nbgrader-machines-"))
atexit.register(shutil.rmtree, CHECK_FOLDER, True)


def check_machine(name, *, files=None, links=None):
    """Recorded machine `name` built in a folder of its own (changed by `files` and `links`);
    its root, as gpulab's worker names it."""
    root = check_materialize(
        name, Path(tempfile.mkdtemp(prefix="machine-", dir=CHECK_FOLDER)), files=files, links=links
    )
    return str(root) + "/"


def check_with_nvml(session, function, *args, answers=()):
    """`function(*args)` while ``pynvml`` answers from the recorded NVML session `session`
    (with `answers` in place of its own): pynvml in sys.modules, and the notebook's globals
    bound to it or to its nvml* functions."""
    import importlib

    real = importlib.import_module("pynvml")
    fake = check_pynvml_from(session, answers)
    namespace = globals()
    names = {
        id(value): key
        for key, value in vars(real).items()
        if key.startswith("nvml") and callable(value)
    }
    saved = {
        key: value
        for key, value in namespace.items()
        if value is real
        or (
            callable(value)
            and id(value) in names
            and getattr(real, names[id(value)], None) is value
        )
    }
    swapped = {
        key: fake if value is real else getattr(fake, names[id(value)], value)
        for key, value in saved.items()
    }
    sys.modules["pynvml"] = fake
    namespace.update(swapped)
    try:
        return function(*args)
    finally:
        sys.modules["pynvml"] = real
        for key, value in saved.items():
            if namespace.get(key) is swapped[key]:
                namespace[key] = value


def check_new_seed():
    given = os.environ.get("GPULAB_CHECK_SEED", "").strip()
    return int(given) if given.isdigit() else secrets.randbits(32)


CHECK_SEED = check_new_seed()
CHECK_SEEN = f"(seed {CHECK_SEED})"


def check_rng(check):
    """The random inputs of one check: the run's seed and the check's name decide them."""
    return random.Random(f"{CHECK_SEED}:{check}")


@contextlib.contextmanager
def check_telling(about):
    """Where the learner's code fails on drawn inputs, say which inputs, and the seed."""
    try:
        yield
    except NotImplementedError:
        raise
    except Exception as exc:
        raise AssertionError(f"{type(exc).__name__}: {exc}\n({about} {CHECK_SEEN})") from exc


# ---- the visible checks' inputs -------------------------------------------------------------
CHECK_MACHINES = ("firecracker-vm", "h200-vm", "two-socket", "docker-container", "k8s-hostpid")
CHECK_RECORDINGS = ("h200", "two-h100", "no-library")
CHECK_UBUNTU_FILE = """PRETTY_NAME="Ubuntu 24.04.2 LTS"
NAME="Ubuntu"
VERSION_ID="24.04"
VERSION="24.04.2 LTS (Noble Numbat)"
VERSION_CODENAME=noble
ID=ubuntu
ID_LIKE=debian
"""
CHECK_HINTS = {
    "driver_version": "nvmlSystemGetDriverVersion() gives it as a string",
    "cuda_version": "turn the integer into 'major.minor': 13000 is '13.0', 12040 '12.4'",
    "gpus": "one name per GPU, every GPU, in index order",
}


def check_nvml_source(recording):
    """What a recorded NVML session is, in words, for messages."""
    data = check_nvml_recording(recording)
    if not any(c.get("call") == "nvmlInit" and "error" not in c for c in data["calls"]):
        return f"the recorded session {recording!r}, where nvmlInit() fails (no driver)"
    return f"the recorded session {recording!r} ({data.get('machine', '')})"


def check_judge_report(got, want, source):
    """Why `got` is not the report `want` of the NVML session `source`; None when it is."""
    if not isinstance(got, dict) or set(got) != set(want):
        return (
            f"gpu_report() returned {got!r} with {source}: return a dict with exactly "
            f"the keys {sorted(want)!r}"
        )
    if got == dict.fromkeys(want) and want["driver_version"] is not None:
        return (
            f"gpu_report() returned None for every field with {source}, where NVML "
            f"starts and lists {len(want['gpus'])} GPU(s)"
        )
    if want["driver_version"] is None:
        if got != want:
            return (
                f"gpu_report() returned {got!r} with {source}: a machine without a GPU "
                "is a valid answer, so catch pynvml.NVMLError around nvmlInit() and "
                "return None for every field"
            )
        return None
    for key, hint in CHECK_HINTS.items():
        if got[key] != want[key]:
            return (
                f"with {source}, your {key} is {got[key]!r}, but NVML answers {want[key]!r}: {hint}"
            )
    return None


# ---- the hidden checks' random os-release files ----------------------------------------------
CHECK_DISTROS = {
    "ubuntu": "Ubuntu",
    "debian": "Debian GNU/Linux",
    "fedora": "Fedora Linux",
    "rocky": "Rocky Linux",
    "almalinux": "AlmaLinux",
    "alpine": "Alpine Linux",
    "arch": "Arch Linux",
    "opensuse-leap": "openSUSE Leap",
    "amzn": "Amazon Linux",
    "nixos": "NixOS",
    "linuxmint": "Linux Mint",
    "rhel": "Red Hat Enterprise Linux",
    "wolfi": "Wolfi",
    "flatcar": "Flatcar Container Linux by Kinvolk",
}
CHECK_CODENAMES = (
    "Noble Numbat",
    "bookworm",
    "Blue Onyx",
    "Green Obsidian",
    "Jammy Jellyfish",
    "trixie",
    "Plow",
    "Coconut",
    "Vicuna",
    "Ootpa",
)
CHECK_WORDS = (
    "lab",
    "gpu",
    "edge",
    "cloud",
    "hpc",
    "build",
    "nightly",
    "server",
    "minimal",
    "core",
    "beta",
    "cuda",
    "node",
    "rack",
)
CHECK_OTHER_KEYS = (
    "NAME",
    "VERSION",
    "ID",
    "ID_LIKE",
    "VERSION_ID",
    "VERSION_CODENAME",
    "HOME_URL",
    "SUPPORT_URL",
    "BUG_REPORT_URL",
    "DOCUMENTATION_URL",
    "ANSI_COLOR",
    "CPE_NAME",
    "VARIANT",
    "VARIANT_ID",
    "BUILD_ID",
    "IMAGE_ID",
    "LOGO",
    "LAB_NOTE",
)


def check_version(rng):
    return f"{rng.randint(1, 42)}.{rng.choice(('04', '10', str(rng.randint(0, 12))))}"


def check_url(rng):
    host = f"{rng.choice(CHECK_WORDS)}.{rng.choice(('org', 'com', 'io', 'example'))}"
    query = "&".join(
        f"{rng.choice(CHECK_WORDS)}={rng.choice(CHECK_WORDS)}{rng.randint(0, 99)}"
        for _ in range(rng.randint(1, 3))
    )
    return f"https://{host}/{rng.choice(CHECK_WORDS)}/?{query}"


def check_pretty(rng, tricky):
    """A PRETTY_NAME; `tricky` puts '=', '#', a quote or a quoted word inside."""
    value = f"{rng.choice(list(CHECK_DISTROS.values()))} {check_version(rng)}"
    if rng.random() < 0.4:
        value += " LTS"
    if rng.random() < 0.5:
        value += f" ({rng.choice(CHECK_CODENAMES)})"
    if tricky:
        word = rng.choice(CHECK_WORDS)
        value = rng.choice(
            (
                f"{value} {word}={rng.randint(1, 999)}",
                f"{value} ({word}={rng.choice(CHECK_WORDS)}, x=y)",
                f"{value} #{rng.randint(1, 99)}",
                f"{word.title()}'s {value}",
                f'{value} "{word}"',
                f"'{word}' {value}",
            )
        )
    return value


def check_other_value(rng, key, tricky):
    distro = rng.choice(list(CHECK_DISTROS))
    value = (
        {
            "NAME": CHECK_DISTROS[distro],
            "ID": distro,
            "VERSION_ID": check_version(rng),
            "VERSION": f"{check_version(rng)} ({rng.choice(CHECK_CODENAMES)})",
            "ID_LIKE": " ".join(rng.sample(list(CHECK_DISTROS), rng.randint(1, 3))),
            "VERSION_CODENAME": rng.choice(CHECK_CODENAMES).split()[0].lower(),
            "ANSI_COLOR": ";".join(str(rng.randint(0, 255)) for _ in range(rng.randint(2, 5))),
            "CPE_NAME": f"cpe:/o:{distro}:{distro}:{check_version(rng)}",
            "VARIANT": rng.choice(("", f"{rng.choice(CHECK_WORDS).title()} Edition")),
            "VARIANT_ID": rng.choice(("", rng.choice(CHECK_WORDS))),
            "BUILD_ID": f"{rng.randint(2019, 2026)}-{rng.randint(1, 12):02}-"
            f"{rng.randint(1, 28):02}",
            "IMAGE_ID": f"{rng.choice(CHECK_WORDS)}-{rng.choice(CHECK_WORDS)}",
            "LOGO": f"distributor-logo-{distro}",
            "LAB_NOTE": f"{rng.choice(CHECK_WORDS)}={rng.choice(CHECK_WORDS)} "
            f"# {rng.choice(CHECK_WORDS)}",
        }.get(key)
        if not key.endswith("_URL")
        else check_url(rng)
    )
    assert value is not None, key
    if tricky and rng.random() < 0.3:
        value = rng.choice((f"'{value}'", f'"{value}"', "")) if value else value
    return value


def check_written(rng, value):
    """`value` as a shell-style assignment writes it: in double, single or no quotes."""
    ways = []
    if '"' not in value:
        ways.append(f'"{value}"')
    if "'" not in value:
        ways.append(f"'{value}'")
    if re.fullmatch(r"[A-Za-z0-9._-]+", value):
        ways.append(value)
    if not value:
        ways.append("")
    return rng.choice(ways)


def check_noise(rng):
    """A line that assigns nothing."""
    return rng.choice(
        (
            f"# {' '.join(rng.sample(CHECK_WORDS, 3))}",
            f"#{rng.choice(CHECK_OTHER_KEYS)}={rng.choice(CHECK_WORDS)}",
            f'# PRETTY_NAME="{rng.choice(list(CHECK_DISTROS.values()))} {check_version(rng)}"',
            "",
            "",
            " " * rng.randint(1, 4),
            "\t",
            f"{rng.choice(CHECK_WORDS)} {rng.choice(CHECK_WORDS)}",
            rng.choice(list(CHECK_DISTROS.values())),
        )
    )


def check_os_release(rng, *, pretty, tricky, noise):
    """A random os-release file: (its text, the dict it means, each key's line)."""
    keys = rng.sample(CHECK_OTHER_KEYS, rng.randint(2, 7))
    if pretty is None:
        keys = [k for k in keys if k != "NAME"] + ["NAME"]
    values = {key: check_other_value(rng, key, tricky) for key in keys}
    if pretty is not None:
        values["PRETTY_NAME"] = pretty
    lines = {key: f"{key}={check_written(rng, value)}" for key, value in values.items()}
    order = list(lines.values()) + [check_noise(rng) for _ in range(noise)]
    rng.shuffle(order)
    text = "\n".join(order) + ("\n" if rng.random() < 0.8 else "")
    return text, values, lines


def check_parse_problem(got, want, lines):
    """What is wrong with parse_os_release's answer `got`; None when it is right."""
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


CHECK_UBUNTU = 'PRETTY_NAME="Ubuntu 24.04.3 LTS"\nNAME="Ubuntu"\nID=ubuntu\n'
CHECK_ETC, CHECK_USR = "etc/os-release", "usr/lib/os-release"


def check_shown(files, links):
    said = [f"{path} a link to {target}" for path, target in links.items()]
    said += [
        f"{path} removed" if text is None else f"{path} holding {text!r}"
        for path, text in files.items()
        if path not in links
    ]
    return "; ".join(said)


def check_random_fallbacks(rng):
    """Random os-release files, one case of each rule: (files, links, the answer, the rule)."""
    first, second = check_pretty(rng, rng.random() < 0.5), check_pretty(rng, rng.random() < 0.5)
    while second == first:
        second = check_pretty(rng, True)

    def text(pretty):
        return check_os_release(rng, pretty=pretty, tricky=False, noise=rng.randint(0, 2))[0]

    return [
        (
            {CHECK_ETC: text(first), CHECK_USR: text(second)},
            {},
            first,
            "etc/os-release comes first where both exist",
        ),
        (
            {CHECK_ETC: None, CHECK_USR: text(first)},
            {},
            first,
            "without etc/os-release, the standard's fallback is usr/lib/os-release",
        ),
        (
            {CHECK_ETC: None, CHECK_USR: text(None)},
            {},
            "Linux",
            'a file without PRETTY_NAME means "Linux" (os-release(5))',
        ),
        (
            {CHECK_ETC: text(None), CHECK_USR: text(second)},
            {},
            "Linux",
            "etc/os-release is the file wherever it exists, and without PRETTY_NAME it means "
            '"Linux"; usr/lib/os-release is only the fallback for a missing one',
        ),
        (
            {CHECK_ETC: None, CHECK_USR: None},
            {},
            None,
            "with neither file, the answer is None, not an exception",
        ),
        (
            {CHECK_USR: text(first)},
            {CHECK_ETC: "../usr/lib/os-release"},
            first,
            "etc/os-release is a link to usr/lib/os-release, as Ubuntu ships it",
        ),
    ]


# ---- this machine ---------------------------------------------------------------------------
def check_this_os_name():
    for path in (Path("/etc/os-release"), Path("/usr/lib/os-release")):
        try:
            fields = check_parse_os_release(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            continue
        return fields.get("PRETTY_NAME", "Linux")
    return None


CHECK_GPU_NAMES = (
    "NVIDIA H100 80GB HBM3",
    "NVIDIA H100 NVL",
    "NVIDIA A100-SXM4-80GB",
    "NVIDIA L40S",
    "NVIDIA GeForce RTX 4090",
    "Tesla T4",
    "NVIDIA B200",
    "NVIDIA RTX 6000 Ada Generation",
    "NVIDIA H200",
)


def check_drawn_driver(rng):
    """Fresh driver and CUDA versions as NVML answers: the answers, and the report's values."""
    driver = f"{rng.randint(470, 999)}.{rng.randint(10, 199)}.{rng.randint(1, 99):02d}"
    major, minor = rng.randint(11, 13), rng.randint(0, 9)
    return (
        [
            {"call": "nvmlSystemGetDriverVersion", "args": [], "result": driver},
            {
                "call": "nvmlSystemGetCudaDriverVersion",
                "args": [],
                "result": 1000 * major + 10 * minor,
            },
        ],
        driver,
        f"{major}.{minor}",
    )


def check_this_nvml():
    import importlib

    nvml = importlib.import_module("pynvml")
    try:
        nvml.nvmlInit()
    except nvml.NVMLError:
        return {"driver_version": None, "cuda_version": None, "gpus": None}
    try:
        driver = nvml.nvmlSystemGetDriverVersion()
        cuda = nvml.nvmlSystemGetCudaDriverVersion()
        names = [
            nvml.nvmlDeviceGetName(nvml.nvmlDeviceGetHandleByIndex(i))
            for i in range(nvml.nvmlDeviceGetCount())
        ]
    finally:
        nvml.nvmlShutdown()
    return {
        "driver_version": driver,
        "cuda_version": f"{cuda // 1000}.{cuda % 1000 // 10}",
        "gpus": names,
    }


# %% test test_parse_os_release points=2 needs=parse_os_release
want = {
    "PRETTY_NAME": "Ubuntu 24.04.2 LTS",
    "NAME": "Ubuntu",
    "VERSION_ID": "24.04",
    "VERSION": "24.04.2 LTS (Noble Numbat)",
    "VERSION_CODENAME": "noble",
    "ID": "ubuntu",
    "ID_LIKE": "debian",
}
got = parse_os_release(CHECK_UBUNTU_FILE)
assert isinstance(got, dict), f"parse_os_release returned {got!r}: return a dict"
for key, value in want.items():
    assert got.get(key) == value, (
        f"for the line {key}=... you give {got.get(key)!r}, but the value is {value!r}: split "
        "at the first '=' and remove the surrounding quotes"
    )
extra = sorted(set(got) - set(want))
assert not extra, f"parse_os_release found keys that are not in the file: {extra!r}"

# %% test test_os_name points=1 needs=os_name,parse_os_release
for machine in CHECK_MACHINES:
    want = check_load_machine(machine).want("env-report")["os_name"]
    got = os_name(check_machine(machine))
    assert got == want, (
        f"os_name(root) returned {got!r} on a recorded machine "
        f"({check_load_machine(machine).about}), but PRETTY_NAME in its os-release file is "
        f"{want!r}: read Path(root, 'etc/os-release'), not this machine's"
    )

# %% test test_kernel_release points=1 needs=kernel_release
want = Path("/proc/sys/kernel/osrelease").read_text().strip()
got = kernel_release()
assert got == want, f"kernel_release() returned {got!r}, but the running kernel is {want!r}"

# %% test test_python_version points=1 needs=python_version
want = "{}.{}.{}".format(*sys.version_info[:3])
got = python_version()
assert got == want, f"python_version() returned {got!r}, but the Python running it is {want!r}"

# %% test test_gpu_report points=3 needs=gpu_report
problems = []
for recording in CHECK_RECORDINGS:
    source = check_nvml_source(recording)
    try:
        got = check_with_nvml(recording, gpu_report)
    except NotImplementedError:
        raise
    except Exception as exc:
        problems.append(f"with {source}: {type(exc).__name__}: {exc}")
        continue
    why = check_judge_report(got, check_nvml_expected(recording), source)
    if why:
        problems.append(why)
assert not problems, "\n".join(problems)

# %% hidden test_parse_os_release_quoting points=2 needs=parse_os_release
text = (
    "NAME='Fedora Linux'\n"
    "VARIANT=\n"
    'VARIANT_ID=""\n'
    'HOME_URL="https://example.org/?a=b&c=d"\n'
    "ID=fedora"
)
want = {
    "NAME": "Fedora Linux",
    "VARIANT": "",
    "VARIANT_ID": "",
    "HOME_URL": "https://example.org/?a=b&c=d",
    "ID": "fedora",
}
got = parse_os_release(text)
assert got == want, f"parse_os_release returned {got!r}, but the file means {want!r}"
rng = check_rng("parse_os_release_quoting")
for _ in range(12):
    text, want, lines = check_os_release(
        rng, pretty=check_pretty(rng, tricky=True), tricky=True, noise=0
    )
    with check_telling(f"parse_os_release was given the file {text!r}"):
        got = parse_os_release(text)
    why = check_parse_problem(got, want, lines)
    assert why is None, f"for the file {text!r}, parse_os_release {why} {CHECK_SEEN}"

# %% hidden test_parse_os_release_skips_non_assignments points=1 needs=parse_os_release
text = (
    "# written by the image builder\n"
    "\n"
    'PRETTY_NAME="Alpine Linux v3.21"\n'
    "   \n"
    "not an assignment\n"
    "ID=alpine\n"
)
want = {"PRETTY_NAME": "Alpine Linux v3.21", "ID": "alpine"}
got = parse_os_release(text)
assert got == want, f"parse_os_release returned {got!r}, but only {want!r} are assignments"
rng = check_rng("parse_os_release_skips_non_assignments")
for _ in range(8):
    text, want, lines = check_os_release(
        rng, pretty=check_pretty(rng, tricky=False), tricky=False, noise=rng.randint(3, 8)
    )
    with check_telling(f"parse_os_release was given the file {text!r}"):
        got = parse_os_release(text)
    why = check_parse_problem(got, want, lines)
    assert why is None, f"for the file {text!r}, parse_os_release {why} {CHECK_SEEN}"

# %% hidden test_os_name_fallbacks points=1 needs=os_name,parse_os_release
for files, want, why in [
    (
        {"etc/os-release": None},
        "Ubuntu 24.04.3 LTS",
        "without etc/os-release, the standard's fallback is usr/lib/os-release",
    ),
    (
        {"etc/os-release": None, "usr/lib/os-release": 'NAME="Wolfi"\nID=wolfi\n'},
        "Linux",
        'a file without PRETTY_NAME means "Linux" (os-release(5))',
    ),
    (
        {"etc/os-release": None, "usr/lib/os-release": None},
        None,
        "with neither file, the answer is None, not an exception",
    ),
    (
        {
            "etc/os-release": 'PRETTY_NAME="Ubuntu 24.10"\nID=ubuntu\n',
            "usr/lib/os-release": CHECK_UBUNTU,
        },
        "Ubuntu 24.10",
        "etc/os-release comes first where both exist",
    ),
]:
    got = os_name(check_machine("h200-vm", files=files))
    assert got == want, f"os_name(root) returned {got!r}, not {want!r}: {why}"
rng = check_rng("os_name_fallbacks")
cases = check_random_fallbacks(rng)
rng.shuffle(cases)
for files, links, want, why in cases:
    machine = rng.choice(CHECK_MACHINES)
    about = (
        f"on a copy of a recorded machine ({check_load_machine(machine).about}) with "
        f"{check_shown(files, links)}"
    )
    with check_telling(f"os_name(root) was called {about}"):
        got = os_name(check_machine(machine, files=files, links=links))
    assert got == want, f"os_name(root) returned {got!r} {about}: {why} {CHECK_SEEN}"

# %% hidden test_this_machine points=1 needs=os_name,parse_os_release,gpu_report
got = os_name()
want = check_this_os_name()
assert got == want, (
    f"os_name() returned {got!r} on this machine, whose os-release file says "
    f"{want!r}: with no root given, read this machine's files"
)
got = gpu_report()
want = check_this_nvml()
assert got == want, f"gpu_report() returned {got!r} on this machine, but NVML answers {want!r}"

# %% hidden test_gpu_report_driver_without_gpus points=1 needs=gpu_report
want = {"driver_version": "580.159.04", "cuda_version": "13.0", "gpus": []}
try:
    got = check_with_nvml("no-devices", gpu_report)
except Exception as exc:
    raise AssertionError(
        f"with a driver that starts but lists no GPU, gpu_report() failed: "
        f"{type(exc).__name__}: {exc}"
    ) from None
assert got == want, (
    f"with a driver that starts but lists no GPU, gpu_report() returned "
    f"{got!r}, but NVML answers {want!r}"
)
answers, driver, cuda = check_drawn_driver(check_rng("test_gpu_report_driver_without_gpus"))
want = {"driver_version": driver, "cuda_version": cuda, "gpus": []}
got = check_with_nvml("no-devices", gpu_report, answers=answers)
assert got == want, (
    f"with driver {driver} (CUDA {cuda}) and no GPU, gpu_report() returned "
    f"{got!r}, but NVML answers {want!r} {CHECK_SEEN}"
)

# %% hidden test_gpu_report_drawn_drivers_and_gpus points=1 needs=gpu_report
check_random = check_rng("test_gpu_report_drawn_drivers_and_gpus")
for _ in range(3):
    answers, driver, cuda = check_drawn_driver(check_random)
    names = [check_random.choice(CHECK_GPU_NAMES) for _ in range(2)]
    answers += [
        {"call": "nvmlDeviceGetName", "args": [{"__handle__": i}], "result": name}
        for i, name in enumerate(names)
    ]
    want = {"driver_version": driver, "cuda_version": cuda, "gpus": names}
    got = check_with_nvml("two-h100", gpu_report, answers=answers)
    assert got == want, (
        f"with driver {driver}, CUDA {cuda} and the GPUs {names}, "
        f"gpu_report() returned {got!r}, but NVML answers {want!r} "
        f"{CHECK_SEEN}"
    )
