"""Visible checks for the namespaces exercise.

Each check calls one of your functions in the worker process and compares
the result with what this file reads from /proc about that worker: its
/proc/<pid>/ns, the PID 1 it sees, its cgroup and its file system (through
/proc/<pid>/root). So "this process" means the same thing on both sides, also
when a grading run puts the worker in a sandbox with namespaces of its own.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

MARKER_FILES = ("/.dockerenv", "/run/.containerenv")
INITIAL_PID_NS = 0xEFFFFFFC
KINDS = ("differs from PID 1", "PID 1 command", "file exists", "file missing", "cgroup",
         "initial pid namespace")


def read_ns(pid: int | str) -> dict[str, int] | None:
    """The checker's own reading of /proc/<pid>/ns; None if the links cannot be read."""
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


def worker(learner) -> tuple[int, int]:
    """(the worker's pid, the pid of the process it sees as PID 1), as the checker numbers them."""
    pid, one = learner.pid, learner.pid_one
    assert pid is not None and one is not None, "the checker cannot find the worker process"
    return pid, one


def read_differs(pid: int, one: int) -> list[str] | None:
    """The names whose links differ between process `pid` and its PID 1, or None if unreadable."""
    mine, theirs = read_ns(pid), read_ns(one)
    assert mine is not None, f"the checker cannot read /proc/{pid}/ns"
    if theirs is None:
        return None
    return sorted(name for name in mine if name in theirs and mine[name] != theirs[name])


def read_pid1_comm(one: int) -> str | None:
    try:
        return Path(f"/proc/{one}/comm").read_text().strip()
    except OSError:
        return None


def read_cgroup_paths(pid: int) -> list[str]:
    return [line.split(":", 2)[2] for line in Path(f"/proc/{pid}/cgroup").read_text().splitlines()
            if line.count(":") >= 2]


def judge_fact(fact: object, pid: int, one: int) -> str | None:
    """Why one evidence string is not true for the worker `pid`; None when it is."""
    if not isinstance(fact, str):
        return f"{fact!r} is not a string"
    kind, colon, value = fact.partition(": ")
    if not colon or kind not in KINDS:
        return (f"{fact!r} is not in one of the table's forms (\"<kind>: <value>\", kind one "
                f"of {', '.join(KINDS)})")
    value = value.strip()
    if kind == "differs from PID 1":
        truth = read_differs(pid, one)
        shown = "unreadable" if truth is None else ", ".join(truth) or "none"
        if value in ("unreadable", "none"):
            claimed: list[str] | None = None if value == "unreadable" else []
        else:
            claimed = sorted(name.strip() for name in value.split(","))
        if claimed != truth:
            return f"{fact!r}, but the checker finds \"differs from PID 1: {shown}\""
    elif kind == "PID 1 command":
        comm = read_pid1_comm(one)
        if comm != value:
            return (f"{fact!r}, but /proc/1/comm holds {comm!r}" if comm is not None
                    else f"{fact!r}, but /proc/1/comm cannot be read here")
    elif kind in ("file exists", "file missing"):
        if value not in MARKER_FILES:
            return f"{fact!r}: only the marker files {', '.join(MARKER_FILES)} count here"
        if os.path.exists(f"/proc/{pid}/root{value}") != (kind == "file exists"):
            return f"{fact!r}, but {value} {'is missing' if kind == 'file exists' else 'exists'}"
    elif kind == "cgroup":
        paths = read_cgroup_paths(pid)
        if value not in paths:
            return f"{fact!r}, but the paths in /proc/self/cgroup are {sorted(set(paths))}"
    else:
        initial = read_ns(pid)["pid"] == INITIAL_PID_NS  # type: ignore[index]
        if value not in ("yes", "no") or (value == "yes") != initial:
            return (f"{fact!r}, but this process's pid namespace "
                    f"{'is' if initial else 'is not'} the initial one (inode {INITIAL_PID_NS}): "
                    "say yes or no")
    return None


# ---- part 1: ns_inode ------------------------------------------------------------------------

@pytest.mark.points(1)
def test_ns_inode_reads_this_machine(learner):
    """ns_inode reads the number out of this machine's own namespace links."""
    pid, _ = worker(learner)
    for entry in sorted(Path(f"/proc/{pid}/ns").iterdir()):
        target = os.readlink(entry)
        want = int(target.split("[")[1].rstrip("]"))
        got = learner.call("ns_inode", target)
        assert got == want, (
            f"ns_inode({target!r}) returned {got!r}, but the number in the brackets is "
            f"{want}: return it as an int, without the type or the brackets")


# ---- part 2: namespace_ids -------------------------------------------------------------------

@pytest.mark.points(2)
def test_namespace_ids(learner):
    """namespace_ids() lists every link of /proc/self/ns with its inode number."""
    got = learner.call("namespace_ids")
    want = read_ns(worker(learner)[0])
    assert isinstance(got, dict), (
        f"namespace_ids() returned {type(got).__name__}, not a dict of name -> inode number")
    missing = sorted(set(want) - set(got))
    extra = sorted(set(got) - set(want))
    assert not missing and not extra, (
        f"namespace_ids() has the names {sorted(got)}, but /proc/self/ns lists {sorted(want)}"
        + (f"; missing: {', '.join(missing)}" if missing else "")
        + (f"; not in /proc/self/ns: {', '.join(extra)}" if extra else "")
        + ": use the link names themselves, *_for_children included")
    wrong = {name: got[name] for name in want if got[name] != want[name]}
    assert not wrong, "; ".join(
        f"namespace_ids()[{name!r}] is {value!r}, but /proc/self/ns/{name} points to "
        f"{want[name]}" for name, value in wrong.items())


# ---- part 3: differs_from_pid1 ---------------------------------------------------------------

@pytest.mark.points(2)
def test_differs_from_pid1(learner):
    """differs_from_pid1() names the links that differ from PID 1's, or None if unreadable."""
    got = learner.call("differs_from_pid1")
    want = read_differs(*worker(learner))
    if want is None:
        assert got is None, (
            f"differs_from_pid1() returned {got!r}, but PID 1's links in /proc/1/ns cannot "
            "be read here (PermissionError), so the honest answer is None: you cannot "
            "compare with what you cannot see")
    else:
        assert got == want, (
            f"differs_from_pid1() returned {got!r}, but comparing /proc/self/ns with "
            f"/proc/1/ns, the checker finds {want!r} differing: compare each name both "
            "have, and return the names sorted ([] if none differs)")


# ---- part 4: in_container --------------------------------------------------------------------

@pytest.mark.points(1)
def test_in_container_shape(learner):
    """in_container() returns a verdict and a list of evidence strings."""
    got = learner.call("in_container")
    assert isinstance(got, dict) and set(got) == {"in_container", "evidence"}, (
        f"in_container() returned {got!r}: return a dict with exactly the keys "
        "'in_container' and 'evidence'")
    assert got["in_container"] in (True, False, None), (
        f"the verdict is {got['in_container']!r}: use True, False, or None for cannot tell")
    assert isinstance(got["evidence"], list) and got["evidence"], (
        f"the evidence is {got['evidence']!r}: give a non-empty list of strings, one fact each")


@pytest.mark.points(3)
def test_in_container_evidence_is_true(learner):
    """Every evidence string of in_container() is true on this machine."""
    got = learner.call("in_container")
    evidence = got.get("evidence") if isinstance(got, dict) else None
    assert isinstance(evidence, list) and evidence, (
        f"in_container() gave no list of evidence: {got!r}")
    pid, one = worker(learner)
    problems = [why for why in (judge_fact(fact, pid, one) for fact in evidence) if why]
    assert not problems, "evidence that is not true here: " + "; ".join(problems)


@pytest.mark.points(2)
def test_in_container_weighs_several_signs(learner):
    """The evidence compares with PID 1 and cites at least two other kinds of sign."""
    got = learner.call("in_container")
    evidence = got.get("evidence") if isinstance(got, dict) else None
    assert isinstance(evidence, list), f"in_container() gave no list of evidence: {got!r}"
    kinds = {fact.partition(": ")[0] for fact in evidence if isinstance(fact, str)}
    kinds = {"marker file" if kind in ("file exists", "file missing") else kind
             for kind in kinds if kind in KINDS}
    assert "differs from PID 1" in kinds, (
        "the evidence does not say how this process compares with PID 1: add "
        "\"differs from PID 1: ...\" (the names, none, or unreadable)")
    others = sorted(kinds - {"differs from PID 1"})
    assert len(others) >= 2, (
        f"besides PID 1, the evidence cites only {others or 'nothing'}: the PID 1 comparison "
        "alone cannot tell a container from a host, so add at least two other kinds of sign "
        "(PID 1's command, a marker file, the cgroup path, the initial pid namespace)")
