"""nbgrader's test cells for the namespaces exercise.

Ported from exercises/containers/test_namespaces.py (visible) and
solutions/containers/test_namespaces_hidden.py (hidden), one test cell per
check, worth the same points; they call the learner's functions directly, so
"this process" is the kernel on both sides.
"""
# ruff: noqa: F821, RUF100  (the notebook's answer cells define the learner's functions)

# %% checker
# ruff: noqa: F811  (in the notebook: the checker imports what it uses, whatever came before)
import os
import re
from pathlib import Path

CHECK_MARKER_FILES = ("/.dockerenv", "/run/.containerenv")
CHECK_INITIAL_PID_NS = 0xEFFFFFFC
CHECK_KINDS = ("differs from PID 1", "PID 1 command", "file exists", "file missing", "cgroup",
               "initial pid namespace")


def check_read_ns(pid):
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


def check_read_differs():
    mine, theirs = check_read_ns("self"), check_read_ns(1)
    assert mine is not None, "the checker cannot read its own /proc/self/ns"
    if theirs is None:
        return None
    return sorted(name for name in mine if name in theirs and mine[name] != theirs[name])


def check_pid1_comm():
    try:
        return Path("/proc/1/comm").read_text().strip()
    except OSError:
        return None


def check_cgroup_paths():
    return [line.split(":", 2)[2] for line in Path("/proc/self/cgroup").read_text().splitlines()
            if line.count(":") >= 2]


def check_judge_fact(fact):
    """Why one evidence string is not true on this machine; None when it is."""
    if not isinstance(fact, str):
        return f"{fact!r} is not a string"
    kind, colon, value = fact.partition(": ")
    if not colon or kind not in CHECK_KINDS:
        return f"{fact!r} is not in one of the table's forms"
    value = value.strip()
    if kind == "differs from PID 1":
        truth = check_read_differs()
        if value in ("unreadable", "none"):
            claimed = None if value == "unreadable" else []
        else:
            claimed = sorted(name.strip() for name in value.split(","))
        if claimed != truth:
            return f"{fact!r}, but the checker finds {truth!r}"
    elif kind == "PID 1 command":
        if check_pid1_comm() != value:
            return f"{fact!r}, but /proc/1/comm holds {check_pid1_comm()!r}"
    elif kind in ("file exists", "file missing"):
        if value not in CHECK_MARKER_FILES:
            return f"{fact!r}: only the marker files count here"
        if os.path.exists(value) != (kind == "file exists"):
            return f"{fact!r} is not true here"
    elif kind == "cgroup":
        if value not in check_cgroup_paths():
            return f"{fact!r}, but the paths in /proc/self/cgroup are {check_cgroup_paths()}"
    else:
        initial = check_read_ns("self")["pid"] == CHECK_INITIAL_PID_NS
        if value not in ("yes", "no") or (value == "yes") != initial:
            return f"{fact!r}, but the pid namespace {'is' if initial else 'is not'} the first"
    return None


# %% test test_ns_inode_reads_this_machine points=1 needs=ns_inode
for entry in sorted(Path("/proc/self/ns").iterdir()):
    target = os.readlink(entry)
    want = int(target.split("[")[1].rstrip("]"))
    got = ns_inode(target)
    assert got == want, f"ns_inode({target!r}) returned {got!r}, want {want}"

# %% test test_namespace_ids points=2 needs=namespace_ids,ns_inode
got = namespace_ids()
want = check_read_ns("self")
assert isinstance(got, dict), f"namespace_ids() returned {type(got).__name__}, not a dict"
assert set(got) == set(want), f"namespace_ids() has {sorted(got)}, /proc/self/ns {sorted(want)}"
wrong = {name: got[name] for name in want if got[name] != want[name]}
assert not wrong, f"namespace_ids() is wrong for {wrong!r}"

# %% test test_differs_from_pid1 points=2 needs=differs_from_pid1,namespace_ids,ns_inode
got = differs_from_pid1()
want = check_read_differs()
if want is None:
    assert got is None, f"differs_from_pid1() returned {got!r}, but /proc/1/ns is unreadable"
else:
    assert got == want, f"differs_from_pid1() returned {got!r}, want {want!r}"

# %% test test_in_container_shape points=1 needs=all
got = in_container()
assert isinstance(got, dict) and set(got) == {"in_container", "evidence"}, (
    f"in_container() returned {got!r}: want the keys 'in_container' and 'evidence'")
assert got["in_container"] in (True, False, None), f"the verdict is {got['in_container']!r}"
assert isinstance(got["evidence"], list) and got["evidence"], (
    f"the evidence is {got['evidence']!r}: give a non-empty list of strings")

# %% test test_in_container_evidence_is_true points=3 needs=all
got = in_container()
evidence = got.get("evidence") if isinstance(got, dict) else None
assert isinstance(evidence, list) and evidence, f"in_container() gave no evidence: {got!r}"
problems = [why for why in map(check_judge_fact, evidence) if why]
assert not problems, "evidence that is not true here: " + "; ".join(problems)

# %% test test_in_container_weighs_several_signs points=2 needs=all
got = in_container()
evidence = got.get("evidence") if isinstance(got, dict) else None
assert isinstance(evidence, list), f"in_container() gave no list of evidence: {got!r}"
kinds = {fact.partition(": ")[0] for fact in evidence if isinstance(fact, str)}
kinds = {"marker file" if kind in ("file exists", "file missing") else kind
         for kind in kinds if kind in CHECK_KINDS}
assert "differs from PID 1" in kinds, "the evidence does not compare with PID 1"
assert len(kinds - {"differs from PID 1"}) >= 2, "cite at least two other kinds of sign"

# %% hidden test_ns_inode_other_links points=2 needs=ns_inode
for target, want in [
    ("pid:[4026531836]", 4026531836), ("net:[4026532291]", 4026532291),
    ("time:[4026531834]", 4026531834), ("cgroup:[4026531835]", 4026531835),
    ("user:[4026532856]", 4026532856), ("mnt:[1]", 1),
    ("ipc:[18446744073709551615]", 2**64 - 1),
]:
    got = ns_inode(target)
    assert got == want, f"ns_inode({target!r}) returned {got!r}, not {want}"

# %% hidden test_ns_inode_rejects_other_links points=1 needs=ns_inode
for target in ["anon_inode:[eventpoll]", "socket:[12345", "/dev/null"]:
    try:
        got = ns_inode(target)
    except Exception as exc:
        assert type(exc).__name__ == "ValueError", f"ns_inode({target!r}) raised {exc!r}"
        continue
    raise AssertionError(f"ns_inode({target!r}) returned {got!r}: raise ValueError")

# %% hidden test_in_container_cites_the_pid_comparison_it_makes points=1 needs=all
differ = differs_from_pid1()
got = in_container()
shown = "unreadable" if differ is None else ", ".join(differ) or "none"
facts = [f for f in got.get("evidence", []) if isinstance(f, str)
         and f.startswith("differs from PID 1: ")]
assert facts == [f"differs from PID 1: {shown}"], (
    f"in_container() should cite 'differs from PID 1: {shown}' once, not {facts!r}")
try:
    readable = all(os.readlink(e) for e in Path("/proc/1/ns").iterdir())
except OSError:
    readable = False
assert (differ is None) == (not readable), f"differs_from_pid1() returned {differ!r}"
