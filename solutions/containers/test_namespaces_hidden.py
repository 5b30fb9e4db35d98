"""Hidden checks for the namespaces exercise: inputs this machine does not show."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from gpulab.grading.learner import LearnerError


@pytest.mark.points(2)
def test_ns_inode_other_links(learner):
    """ns_inode reads link targets of every type, with numbers of any size."""
    for target, want in [
        ("pid:[4026531836]", 4026531836),
        ("net:[4026532291]", 4026532291),
        ("time:[4026531834]", 4026531834),
        ("cgroup:[4026531835]", 4026531835),
        ("user:[4026532856]", 4026532856),
        ("mnt:[1]", 1),
        ("ipc:[18446744073709551615]", 2**64 - 1),
    ]:
        got = learner.call("ns_inode", target)
        assert got == want, (
            f"ns_inode({target!r}) returned {got!r}, not {want}: read whatever number "
            "stands in the brackets, for any namespace type and any number of digits")


@pytest.mark.points(1)
def test_ns_inode_rejects_other_links(learner):
    """ns_inode raises ValueError for a link target that holds no namespace number."""
    for target in ["anon_inode:[eventpoll]", "socket:[12345", "/dev/null"]:
        try:
            got = learner.call("ns_inode", target)
        except LearnerError as exc:
            assert "ValueError" in str(exc), (
                f"ns_inode({target!r}) failed, but not with ValueError: {exc}")
            continue
        raise AssertionError(
            f"ns_inode({target!r}) returned {got!r}, but that is not a namespace link "
            "target (TYPE:[NUMBER]): raise ValueError, as the docstring says")


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
