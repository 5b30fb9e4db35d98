"""Visible checks for the namespaces exercise.

Each check calls one of your functions in the worker process on recorded
machines: the worker builds each machine's files (/proc/self/ns and
/proc/1/ns as links, /proc/1/comm, the marker files, /proc/self/cgroup) in a
folder of its own and your function gets that folder as `root`. What each
machine should give was taken when it was recorded (`gpulab.grading.checks.machines`):
a VM built from a Docker image, a Docker container, a Kubernetes pod that
shares the node's PIDs, and a host. The grader's hidden checks add this
machine itself, read from outside through /proc/<pid> of your worker.
"""

from __future__ import annotations

from typing import Any

import pytest

from gpulab.grading.checks.learner import LearnerError
from gpulab.grading.checks.machines import Machine, load_machine

MACHINES = ("firecracker-vm", "docker-container", "k8s-hostpid", "two-socket")
MARKER_FILES = ("/.dockerenv", "/run/.containerenv")
KINDS = ("differs from PID 1", "PID 1 command", "file exists", "file missing", "cgroup",
         "initial pid namespace")
LINK_TYPE = {"pid_for_children": "pid", "time_for_children": "time"}


def machines() -> list[tuple[Machine, dict[str, Any]]]:
    """Each recorded machine with what the exercise's functions should give on it."""
    return [(m, m.want("namespaces")) for m in map(load_machine, MACHINES)]


def show(differ: list[str] | None) -> str:
    """A differs_from_pid1 answer as the evidence string writes it."""
    return "unreadable" if differ is None else ", ".join(differ) or "none"


def judge_fact(fact: object, facts: dict[str, Any]) -> str | None:
    """Why one evidence string is not true of a machine whose `facts` are known; None when
    it is. `facts`: "differs" (a list, or None if unreadable), "pid1_comm" (None if
    unreadable), "markers" (path -> exists), "cgroup_paths", "initial_pid_ns"."""
    if not isinstance(fact, str):
        return f"{fact!r} is not a string"
    kind, colon, value = fact.partition(": ")
    if not colon or kind not in KINDS:
        return (f"{fact!r} is not in one of the table's forms (\"<kind>: <value>\", kind one "
                f"of {', '.join(KINDS)})")
    value = value.strip()
    if kind == "differs from PID 1":
        truth = facts["differs"]
        if value in ("unreadable", "none"):
            claimed: list[str] | None = None if value == "unreadable" else []
        else:
            claimed = sorted(name.strip() for name in value.split(","))
        if claimed != truth:
            return f"{fact!r}, but comparing the links gives \"differs from PID 1: {show(truth)}\""
    elif kind == "PID 1 command":
        comm = facts["pid1_comm"]
        if comm != value:
            return (f"{fact!r}, but /proc/1/comm holds {comm!r}" if comm is not None
                    else f"{fact!r}, but /proc/1/comm cannot be read there")
    elif kind in ("file exists", "file missing"):
        if value not in MARKER_FILES:
            return f"{fact!r}: only the marker files {', '.join(MARKER_FILES)} count here"
        if facts["markers"][value] != (kind == "file exists"):
            return f"{fact!r}, but {value} {'is missing' if kind == 'file exists' else 'exists'}"
    elif kind == "cgroup":
        if value not in facts["cgroup_paths"]:
            return (f"{fact!r}, but the paths in /proc/self/cgroup are "
                    f"{sorted(set(facts['cgroup_paths']))}")
    elif value not in ("yes", "no") or (value == "yes") != facts["initial_pid_ns"]:
        return (f"{fact!r}, but this process's pid namespace "
                f"{'is' if facts['initial_pid_ns'] else 'is not'} the initial one: "
                "say yes or no")
    return None


def judge_verdict(verdict: object, allowed: list[bool], facts: dict[str, Any]) -> str | None:
    """Why `verdict` breaks the notebook's two rules on a machine; None when it keeps them."""
    if verdict not in (True, False):
        return f"the verdict is {verdict!r}: say True or False"
    if verdict in allowed:
        return None
    if verdict is False:
        return ("it says False, but the pid namespace there is not the initial one, which "
                "rules out False" if not facts["initial_pid_ns"] else
                "it says False where the checks expect True")
    return ("it says True, but no deciding sign is present there (a pid namespace that is "
            "not the initial one, pid or mnt differing from PID 1's, /run/.containerenv, a "
            "runtime's cgroup path): /.dockerenv and PID 1's command do not decide")


def evidence_of(got: object, about: str) -> list[object]:
    evidence = got.get("evidence") if isinstance(got, dict) else None
    assert isinstance(evidence, list) and evidence, (
        f"in_container(root) gave no list of evidence on {about}: {got!r}")
    return evidence


# ---- part 1: ns_inode ------------------------------------------------------------------------

@pytest.mark.points(1)
def test_ns_inode_reads_recorded_links(learner):
    """ns_inode reads the number out of the recorded machines' namespace links."""
    for _, want in machines():
        for name, number in want["ids"].items():
            target = f"{LINK_TYPE.get(name, name)}:[{number}]"
            got = learner.call("ns_inode", target)
            assert got == number, (
                f"ns_inode({target!r}) returned {got!r}, but the number in the brackets is "
                f"{number}: return it as an int, without the type or the brackets")


# ---- part 2: namespace_ids -------------------------------------------------------------------

@pytest.mark.points(2)
def test_namespace_ids(learner):
    """namespace_ids("self", root) lists every link of /proc/self/ns with its inode number."""
    for machine, want in machines():
        ids = want["ids"]
        got = learner.call("namespace_ids", "self", learner.machine(machine.name))
        assert isinstance(got, dict), (
            f"namespace_ids() returned {type(got).__name__}, not a dict of name -> inode number")
        missing = sorted(set(ids) - set(got))
        extra = sorted(set(got) - set(ids))
        assert not missing and not extra, (
            f"on {machine.about}: namespace_ids() has the names {sorted(got)}, but "
            f"/proc/self/ns lists {sorted(ids)}"
            + (f"; missing: {', '.join(missing)}" if missing else "")
            + (f"; not in /proc/self/ns: {', '.join(extra)}" if extra else "")
            + ": use the link names themselves, *_for_children included, read under root")
        wrong = {name: got[name] for name in ids if got[name] != ids[name]}
        assert not wrong, f"on {machine.about}: " + "; ".join(
            f"namespace_ids()[{name!r}] is {value!r}, but /proc/self/ns/{name} points to "
            f"{ids[name]}" for name, value in wrong.items()) + " (read the links under root)"


# ---- part 3: differs_from_pid1 ---------------------------------------------------------------

@pytest.mark.points(2)
def test_differs_from_pid1(learner):
    """differs_from_pid1(root) names the links that differ from PID 1's, or None if unreadable."""
    for machine, want in machines():
        truth = want["differs_from_pid1"]
        try:
            got = learner.call("differs_from_pid1", learner.machine(machine.name))
        except LearnerError as exc:
            if truth is not None or not exc.raised_as(OSError):
                raise
            raise LearnerError(f"{exc}\non {machine.about}, PID 1's links cannot be read: "
                               "that is an answer (None), not a crash") from None
        if truth is None:
            assert got is None, (
                f"on {machine.about}, differs_from_pid1() returned {got!r}, but PID 1's links "
                "cannot be read there, so the honest answer is None: you cannot compare with "
                "what you cannot see (catch the OSError, not only PermissionError)")
        else:
            assert got == truth, (
                f"on {machine.about}, differs_from_pid1() returned {got!r}, but comparing "
                f"/proc/self/ns with /proc/1/ns gives {truth!r}: compare each name both have, "
                "and return the names sorted ([] if none differs)")


# ---- part 4: in_container --------------------------------------------------------------------

@pytest.mark.points(1)
def test_in_container_shape(learner):
    """in_container(root) returns a verdict and a list of evidence strings."""
    got = learner.call("in_container", learner.machine("docker-container"))
    assert isinstance(got, dict) and set(got) == {"in_container", "evidence"}, (
        f"in_container() returned {got!r}: return a dict with exactly the keys "
        "'in_container' and 'evidence'")
    assert got["in_container"] in (True, False), (
        f"the verdict is {got['in_container']!r}: use True or False")
    assert isinstance(got["evidence"], list) and got["evidence"], (
        f"the evidence is {got['evidence']!r}: give a non-empty list of strings, one fact each")


@pytest.mark.points(3)
def test_in_container_evidence_is_true(learner):
    """Every evidence string of in_container(root) is true of the machine it reads."""
    for machine, want in machines():
        got = learner.call("in_container", learner.machine(machine.name))
        evidence = evidence_of(got, machine.about)
        problems = [why for why in (judge_fact(f, want["facts"]) for f in evidence) if why]
        assert not problems, (f"on {machine.about}, evidence that is not true there: "
                              + "; ".join(problems) + " (read every file under root)")


@pytest.mark.points(2)
def test_in_container_weighs_several_signs(learner):
    """The evidence compares with PID 1 and cites at least two other kinds of sign."""
    for machine, _ in machines():
        got = learner.call("in_container", learner.machine(machine.name))
        evidence = evidence_of(got, machine.about)
        kinds = {fact.partition(": ")[0] for fact in evidence if isinstance(fact, str)}
        kinds = {"marker file" if kind in ("file exists", "file missing") else kind
                 for kind in kinds if kind in KINDS}
        assert "differs from PID 1" in kinds, (
            f"on {machine.about}, the evidence does not say how this process compares with "
            "PID 1: add \"differs from PID 1: ...\" (the names, none, or unreadable)")
        others = sorted(kinds - {"differs from PID 1"})
        assert len(others) >= 2, (
            f"on {machine.about}, besides PID 1 the evidence cites only {others or 'nothing'}: "
            "the PID 1 comparison alone cannot tell a container from a host, so add at least "
            "two other kinds of sign (PID 1's command, a marker file, the cgroup path, the "
            "initial pid namespace)")


@pytest.mark.points(2)
def test_in_container_verdict(learner):
    """The verdict keeps the two rules on every recorded machine, containers and VM alike."""
    problems = []
    for machine, want in machines():
        got = learner.call("in_container", learner.machine(machine.name))
        verdict = got.get("in_container") if isinstance(got, dict) else got
        why = judge_verdict(verdict, want["verdicts"], want["facts"])
        if why:
            problems.append(f"on {machine.about}: {why}")
    assert not problems, "; ".join(problems)
