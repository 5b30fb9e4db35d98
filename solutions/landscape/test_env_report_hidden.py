"""Hidden checks for the env-report exercise: os-release files that are not tidy."""

from __future__ import annotations

import pytest


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
