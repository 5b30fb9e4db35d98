"""The "squares" exercise that the grading and TUI tests build their small courses with.

Part of the tests' helpers (`tests/helpers`, imported as `helpers.squares_course`).
"""

from __future__ import annotations

from typing import Any

SETUP = "SCALE = 1\n"
ANSWER = '''def square(x):
    """x times x."""
    ### BEGIN SOLUTION
    return x * x * SCALE
    ### END SOLUTION
'''
CHECKS = '''import pytest


@pytest.mark.points(2)
def test_square(learner):
    """squares small numbers"""
    for x in (0, 3, -4):
        got = learner.call("square", x)
        assert got == x * x, f"square({x}) gave {got!r}, not {x * x}: multiply x by itself"


def test_square_float(learner):
    """squares a float"""
    assert learner.call("square", 1.5) == 2.25, "1.5 squared is 2.25"
'''


def code(source: str, role: str, part: str | None = None) -> Any:
    """A code cell with its gpulab role (and part, for an answer)."""
    import nbformat

    meta: dict[str, object] = {"role": role}
    if part:
        meta["part"] = part
    return nbformat.v4.new_code_cell(source, metadata={"gpulab": meta})


def solution_notebook(*, setup: str = SETUP, answer: str = ANSWER, explore: bool = False) -> Any:
    """The solution: a title, setup, the answer, optionally an explore cell, the check cell."""
    import nbformat

    notebook = nbformat.v4.new_notebook()
    notebook.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    cells = [
        nbformat.v4.new_markdown_cell("# Squares"),
        code(setup, "setup"),
        code(answer, "answer", "square"),
    ]
    if explore:
        cells.append(code("print(square(3))", "explore"))
    cells.append(code('from gpulab.grading import check\ncheck("squares")', "check"))
    notebook.cells = cells
    return notebook
