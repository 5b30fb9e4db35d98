"""Hidden checks for the namespaces exercise: inputs and machines the visible checks do not show.

Link targets of every type and odd ones that must raise ValueError (judged by the
exception's type, never its text); recorded machines changed into an `unshare --pid`
without and with `--fork`, and a container whose PID 1 is hidden; and this machine
itself, read from outside through /proc/<pid> of the worker, so "this process" means the
same on both sides also when a grading run gives the worker namespaces of its own.

The inputs vary per run. Each check that takes inputs draws them from a seed made for the
run (`gpulab.grading.checks.draws`; GPULAB_CHECK_SEED=<n> replays a run) and names it in its
failure messages.
Beside the fixed cases of before: link targets of every type with numbers of 1 to 20 digits,
and malformed ones made from random targets (no number, hex, a fraction, a bracket missing, a
path, an fd link); on the changed machines, random inode numbers for the namespaces made
after boot (and for the host's mount and network namespaces), a random set of other
namespaces unshared beside pid (never mnt without --fork, where it would decide the
verdict), so that a random set of links differs from PID 1's, a random command as PID 1,
and a container whose PID 1 is hidden entirely or only its ns folder. The expected answers
come from the numbers drawn.
"""

from __future__ import annotations

import os
import random
import re
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from gpulab.grading.checks.draws import SEEN
from gpulab.grading.checks.draws import rng as _rng
from gpulab.grading.checks.draws import telling as _telling
from gpulab.grading.checks.learner import LearnerError
from gpulab.grading.checks.machines import load_machine
from gpulab.grading.checks.pytest_plugin import visible_checks

INITIAL_PID_NS = 0xEFFFFFFC
RUNTIME_WORDS = ("docker", "kubepods", "libpod", "containerd", "crio", "lxc")
HOST = {"cgroup": 4026531835, "ipc": 4026531839, "mnt": 4026531832, "net": 4026531833,
        "pid": 4026531836, "pid_for_children": 4026531836, "time": 4026531834,
        "time_for_children": 4026531834, "user": 4026531837, "uts": 4026531838}
SCOPE = "/user.slice/user-1000.slice/session-3.scope"
TYPES = ("cgroup", "ipc", "mnt", "net", "pid", "time", "user", "uts")
CHILDREN = {"pid": "pid_for_children", "time": "time_for_children"}
MOVES_THE_CALLER = ("cgroup", "ipc", "net", "user", "uts")   # unshare flags besides pid, mnt, time




def _visible() -> ModuleType:
    return visible_checks(__file__)


# ---- ns_inode -----------------------------------------------------------------------------------

def _number(rng: random.Random) -> int:
    """An inode number: mostly as the kernel gives them, else of any length up to 64 bits."""
    if rng.random() < 0.4:
        return rng.randint(4026531830, 4026539999)
    digits = rng.randint(1, 20)
    return rng.randint(10 ** (digits - 1) if digits > 1 else 0, min(10**digits - 1, 2**64 - 1))


def _malformed(rng: random.Random) -> tuple[str, str]:
    """A link target that holds no namespace number, and what is wrong with it."""
    kind, n = rng.choice(TYPES), _number(rng)
    return rng.choice((
        (f"anon_inode:[{rng.choice(('eventpoll', 'signalfd', 'timerfd', 'pidfd', 'io_uring'))}]",
         "an fd link whose brackets hold a name"),
        (f"{kind}:[0x{n:x}]", "a hexadecimal number"),
        (f"{kind}:[{n}.{rng.randint(1, 9)}]", "a fraction"),
        (f"{kind}:[]", "empty brackets"),
        (f"{kind}:[{n}", "no closing bracket"),
        (f"{kind}:{n}]", "no opening bracket"),
        (f"{kind}:{n}", "no brackets"),
        (f"/proc/self/ns/{kind}", "a path, not a link target"),
        ("anon_inode:bpf-map", "an fd link without brackets"),
    ))


@pytest.mark.points(2)
def test_ns_inode_other_links(learner):
    """ns_inode reads link targets of every type, with numbers of any size."""
    fixed = [
        ("pid:[4026531836]", 4026531836),
        ("net:[4026532291]", 4026532291),
        ("time:[4026531834]", 4026531834),
        ("cgroup:[4026531835]", 4026531835),
        ("user:[4026532856]", 4026532856),
        ("mnt:[1]", 1),
        ("ipc:[18446744073709551615]", 2**64 - 1),
    ]
    rng = _rng("ns_inode_other_links")
    drawn = [(f"{kind}:[{number}]", number)
             for kind, number in ((rng.choice(TYPES), _number(rng)) for _ in range(24))]
    for n, (target, want) in enumerate(fixed + drawn):
        if n < len(fixed):
            got = learner.call("ns_inode", target)
        else:
            with _telling(f"ns_inode was given {target!r}"):
                got = learner.call("ns_inode", target)
        assert got == want, (
            f"ns_inode({target!r}) returned {got!r}, not {want}: read whatever number "
            "stands in the brackets, for any namespace type and any number of digits"
            + (f" {SEEN}" if n >= len(fixed) else ""))


@pytest.mark.points(1)
def test_ns_inode_rejects_other_links(learner):
    """ns_inode raises ValueError for a link target that holds no namespace number."""
    rng = _rng("ns_inode_rejects_other_links")
    kind, number = rng.choice(TYPES), rng.randint(4026531830, 4026539999)
    valid = f"{kind}:[{number}]"
    with _telling(f"ns_inode was given {valid!r}"):
        got = learner.call("ns_inode", valid)
    assert got == number, (
        f"ns_inode({valid!r}) must return {number} before its refusals can count {SEEN}")
    fixed = [("anon_inode:[eventpoll]", "an fd link whose brackets hold a name"),
             ("socket:[12345", "no closing bracket"), ("/dev/null", "a path")]
    drawn = [_malformed(rng) for _ in range(8)]
    for target, what in fixed + drawn:
        try:
            got = learner.call("ns_inode", target)
        except LearnerError as exc:
            assert exc.raised_as(ValueError), (
                f"ns_inode({target!r}) ({what}) failed, but not with ValueError (its type is "
                f"what counts, not its message): {exc} {SEEN}")
            continue
        raise AssertionError(
            f"ns_inode({target!r}) returned {got!r}, but that is not a namespace link "
            f"target (TYPE:[NUMBER]; this is {what}): raise ValueError, as the docstring says "
            f"{SEEN}")


# ---- recorded machines, changed ----------------------------------------------------------------

def _links(pid: str, inodes: dict[str, int]) -> dict[str, str | None]:
    kinds = {"pid_for_children": "pid", "time_for_children": "time"}
    return {f"proc/{pid}/ns/{name}": f"{kinds.get(name, name)}:[{number}]"
            for name, number in inodes.items()}


def _case(learner: Any, machine: str, *, links: dict[str, str | None] | None = None,
          files: dict[str, str | None] | None = None, ids: dict[str, int],
          differ: list[str] | None, facts: dict[str, Any], verdicts: list[bool],
          what: str) -> list[str]:
    """The problems of the learner's answers on one changed machine."""
    visible = _visible()
    root = learner.machine(machine, links=links, files=files)
    problems = []
    got = learner.call("namespace_ids", "self", root)
    if got != ids:
        problems.append(f"namespace_ids() returned {got!r}, but the links say {ids!r}")
    got = learner.call("differs_from_pid1", root)
    if got != differ:
        problems.append(f"differs_from_pid1() returned {got!r}, not {differ!r}")
    answer = learner.call("in_container", root)
    evidence = answer.get("evidence") if isinstance(answer, dict) else None
    for fact in evidence if isinstance(evidence, list) else [f"no evidence in {answer!r}"]:
        why = visible.judge_fact(fact, {**facts, "differs": differ})
        if why:
            problems.append(why)
    verdict = answer.get("in_container") if isinstance(answer, dict) else answer
    why = visible.judge_verdict(verdict, verdicts, facts)
    if why:
        problems.append(why)
    return [f"in {what}: {p}" for p in problems]


def _shown_links(links: dict[str, str | None]) -> str:
    """Namespace links in words, for messages."""
    return ", ".join(f"/{path} -> {target}" for path, target in links.items())


class _Inodes:
    """Inode numbers for namespaces made after boot, each drawn once."""

    def __init__(self, rng: random.Random, taken: set[int]) -> None:
        self.rng, self.taken = rng, set(taken)

    def new(self, low: int = 4026532000, high: int = 4026539999) -> int:
        while (number := self.rng.randint(low, high)) in self.taken:
            pass
        self.taken.add(number)
        return number


def _random_unshares(rng: random.Random) -> list[dict[str, Any]]:
    """`unshare --pid` without and with `--fork --mount-proc` on a host, each with a random
    set of other namespaces unshared beside it, random inode numbers, a random PID 1 command
    after --fork: the changes to two-socket and what they mean."""
    inodes = _Inodes(rng, set(HOST.values()))
    host = {**HOST, "mnt": inodes.new(4026531840, 4026531999),
            "net": inodes.new(4026531840, 4026531999)}
    facts = {"pid1_comm": "systemd", "markers": {"/.dockerenv": False,
                                                  "/run/.containerenv": False},
             "cgroup_paths": ["/", "/user.slice", SCOPE], "initial_pid_ns": True}
    cases = []
    # Without --fork the shell stays in its pid namespace; pid_for_children (and
    # time_for_children after --time) name its children's; the other flags move it at once.
    extra = sorted(rng.sample(MOVES_THE_CALLER, rng.randint(0, 3)))
    timed = rng.random() < 0.3
    shell = {**host, "pid_for_children": inodes.new(),
             **{name: inodes.new() for name in extra}}
    if timed:
        shell["time_for_children"] = inodes.new()
    flags = " ".join(f"--{name}" for name in ["pid", *extra, *(["time"] if timed else [])])
    cases.append({
        "links": {**_links("self", shell), **_links("1", host)}, "files": None, "ids": shell,
        "differ": sorted(name for name in shell if shell[name] != host[name]),
        "facts": facts, "verdicts": [False],
        "what": f"a shell on a host after unshare {flags} (without --fork: its children get "
                "the new pid namespace)"})
    # With --fork the new process is PID 1 of the new pid namespace, and --mount-proc makes a
    # mount namespace whose /proc shows it: this process and PID 1 share every namespace.
    extra = sorted(rng.sample(MOVES_THE_CALLER, rng.randint(0, 3)))
    timed = rng.random() < 0.3
    pid, own = inodes.new(), dict(host)
    own.update({"pid": pid, "pid_for_children": pid, "mnt": inodes.new(),
                **{name: inodes.new() for name in extra}})
    if timed:
        own["time"] = own["time_for_children"] = inodes.new()
    comm = rng.choice(("bash", "sh", "zsh", "dash", "python3", "sleep"))
    flags = " ".join(f"--{name}" for name in ["pid", "fork", "mount-proc", *extra,
                                              *(["time"] if timed else [])])
    cases.append({
        "links": {**_links("self", own), **_links("1", own)},
        "files": {"proc/1/comm": comm + "\n"}, "ids": own, "differ": [],
        "facts": {**facts, "pid1_comm": comm, "initial_pid_ns": False}, "verdicts": [True],
        "what": f"a process under unshare {flags} {comm} (PID 1 is {comm})"})
    return cases


@pytest.mark.points(2)
def test_unshare_without_and_with_fork(learner):
    """unshare --pid (children only) and unshare --pid --fork --mount-proc, on a host."""
    facts = {"pid1_comm": "systemd", "markers": {"/.dockerenv": False,
                                                  "/run/.containerenv": False},
             "cgroup_paths": ["/", "/user.slice", SCOPE], "initial_pid_ns": True}
    children = {**HOST, "pid_for_children": 4026532770}
    problems = _case(learner, "two-socket", links=_links("self", children), ids=children,
                     differ=["pid_for_children"], facts=facts, verdicts=[False],
                     what="a shell after unshare --pid (its children get the new pid namespace)")
    own = {**HOST, "pid": 4026532771, "pid_for_children": 4026532771, "mnt": 4026532769}
    problems += _case(learner, "two-socket",
                      links={**_links("self", own), **_links("1", own)},
                      files={"proc/1/comm": "bash\n"}, ids=own, differ=[],
                      facts={**facts, "pid1_comm": "bash", "initial_pid_ns": False},
                      verdicts=[True],
                      what="a shell started by unshare --pid --fork --mount-proc (PID 1 is bash)")
    assert not problems, "; ".join(problems)
    shown = []
    for case in _random_unshares(_rng("unshare_without_and_with_fork")):
        links = _shown_links(case["links"])
        with _telling(f"on a copy of two-socket changed into {case['what']}, with the links "
                      f"{links}"):
            found = _case(learner, "two-socket", **case)
        if found:
            problems += found
            shown.append(links)
    assert not problems, "; ".join(problems) + f" (the links: {'; '.join(shown)}) {SEEN}"


@pytest.mark.points(1)
def test_pid1_hidden(learner):
    """A container whose /proc hides PID 1 (hidepid): no comparison, no command, still True."""
    want = load_machine("docker-container").want("namespaces")
    problems = _case(learner, "docker-container", files={"proc/1": None},
                     ids=want["ids"], differ=None,
                     facts={**want["facts"], "pid1_comm": None}, verdicts=[True],
                     what="a container whose /proc shows no PID 1 (hidepid=2)")
    assert not problems, "; ".join(problems)
    # Random numbers for the container's own namespaces; PID 1 hidden, or only its links.
    rng = _rng("pid1_hidden")
    inodes = _Inodes(rng, set(HOST.values()))
    ids = {name: number if number in HOST.values() else inodes.new()
           for name, number in want["ids"].items()}
    ids["pid_for_children"] = ids["pid"]
    whole = rng.random() < 0.5
    what = ("a container whose /proc shows no PID 1 (hidepid=2)" if whole else
            "a container where PID 1's command can be read but not its namespace links "
            "(/proc/1/ns is not there)")
    links = _shown_links(_links("self", ids))
    with _telling(f"in {what}, with the links {links}"):
        problems = _case(
            learner, "docker-container", links=_links("self", ids),
            files={"proc/1": None} if whole else {"proc/1/ns": None}, ids=ids, differ=None,
            facts={**want["facts"],
                   "pid1_comm": None if whole else want["facts"]["pid1_comm"]},
            verdicts=[True], what=what)
    assert not problems, "; ".join(problems) + f" (the links: {links}) {SEEN}"


# ---- this machine, seen from outside -------------------------------------------------------------

def _read_ns(pid: int | str) -> dict[str, int] | None:
    folder = Path(f"/proc/{pid}/ns")
    try:
        targets = {entry.name: os.readlink(entry) for entry in folder.iterdir()}
    except OSError:
        return None
    found = {}
    for name, target in targets.items():
        match = re.fullmatch(r"[a-z_]+:\[(\d+)\]", target)
        assert match, f"the checker cannot read {folder / name} -> {target!r}"
        found[name] = int(match.group(1))
    return found


def _facts(pid: int, one: int) -> dict[str, Any]:
    """This machine's facts as the visible judge takes them, for the worker `pid`."""
    mine, theirs = _read_ns(pid), _read_ns(one)
    assert mine is not None, f"the checker cannot read /proc/{pid}/ns"
    differ = None if theirs is None else sorted(
        name for name in mine if name in theirs and mine[name] != theirs[name])
    try:
        comm: str | None = Path(f"/proc/{one}/comm").read_text().strip()
    except OSError:
        comm = None
    paths = [line.split(":", 2)[2] for line in
             Path(f"/proc/{pid}/cgroup").read_text().splitlines() if line.count(":") >= 2]
    return {"ids": mine, "differs": differ, "pid1_comm": comm,
            "markers": {m: os.path.exists(f"/proc/{pid}/root{m}")
                        for m in ("/.dockerenv", "/run/.containerenv")},
            "cgroup_paths": paths, "initial_pid_ns": mine["pid"] == INITIAL_PID_NS}


def _verdicts(facts: dict[str, Any]) -> list[bool]:
    """The verdicts the notebook's two rules allow, from the facts."""
    if not facts["initial_pid_ns"]:
        return [True]
    runtime = any(part.startswith(RUNTIME_WORDS) and not part.endswith(".service")
                  for path in facts["cgroup_paths"] for part in path.split("/"))
    deciding = (bool(set(facts["differs"] or []) & {"pid", "mnt"}) or runtime
                or facts["markers"]["/run/.containerenv"])
    return [False, True] if deciding else [False]


@pytest.mark.points(2)
def test_this_machine(learner):
    """On the machine the checks run on: the links, the comparison, the evidence, the verdict."""
    visible = _visible()
    pid, one = learner.pid, learner.pid_one
    assert pid is not None and one is not None, "the checker cannot find the worker process"
    facts = _facts(pid, one)
    problems = []
    got = learner.call("namespace_ids")
    if got != facts["ids"]:
        problems.append(f"namespace_ids() returned {got!r}, but /proc/self/ns says "
                        f"{facts['ids']!r}")
    got = learner.call("differs_from_pid1")
    if got != facts["differs"]:
        problems.append(f"differs_from_pid1() returned {got!r}, but the checker finds "
                        f"{facts['differs']!r}" + (" (PID 1's links cannot be read here)"
                                                   if facts["differs"] is None else ""))
    answer = learner.call("in_container")
    evidence = answer.get("evidence") if isinstance(answer, dict) else None
    for fact in evidence if isinstance(evidence, list) else [f"no evidence in {answer!r}"]:
        why = visible.judge_fact(fact, facts)
        if why:
            problems.append(why)
    verdict = answer.get("in_container") if isinstance(answer, dict) else answer
    why = visible.judge_verdict(verdict, _verdicts(facts), facts)
    if why:
        problems.append(why)
    assert not problems, "on the machine the checks run on: " + "; ".join(problems)


@pytest.mark.points(1)
def test_in_container_cites_the_pid_comparison_it_makes(learner):
    """in_container()'s PID 1 evidence agrees with the learner's own differs_from_pid1()."""
    differ = learner.call("differs_from_pid1")
    got = learner.call("in_container")
    shown = "unreadable" if differ is None else ", ".join(differ) or "none"
    facts = [f for f in got.get("evidence", []) if isinstance(f, str)
             and f.startswith("differs from PID 1: ")]
    assert facts == [f"differs from PID 1: {shown}"], (
        f"differs_from_pid1() returned {differ!r}, so in_container() should cite it once as "
        f"\"differs from PID 1: {shown}\", but its evidence has {facts!r}")
    # The checker's own view, so that a consistent pair of wrong answers does not pass.
    try:
        one = learner.pid_one
        readable = all(os.readlink(e) for e in Path(f"/proc/{one}/ns").iterdir())
    except OSError:
        readable = False
    assert (differ is None) == (not readable), (
        f"differs_from_pid1() returned {differ!r}, but PID 1's links are "
        f"{'readable' if readable else 'not readable'} here")
