"""What the exercise screen reads without running anything: the task and its points from the
real course's notebooks and visible checks, and the watch on a saved notebook."""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path

from gpulab.course import ExerciseEntry, load_course
from gpulab.tui.task import Part, Task, read_task
from gpulab.tui.watch import NotebookWatch
from gpulab.tui.widgets.task_panel import HIDDEN_UNKNOWN, task_markdown

LESSONS = Path(__file__).resolve().parents[2] / "lessons"


def exercise(name: str) -> ExerciseEntry:
    return next(e for e in load_course(LESSONS).exercises() if e.name == name)


def test_parts_functions_and_points_of_a_cpu_exercise() -> None:
    task = read_task(exercise("namespaces"))
    assert task.problems == ()
    assert [(p.name, p.signatures, p.points) for p in task.parts] == [
        ("ns_inode", ("ns_inode(link)",), 1.0),
        ("namespace_ids", ("namespace_ids(pid, root)",), 2.0),
        ("differs_from_pid1", ("differs_from_pid1(root)",), 2.0),
        ("in_container", ("in_container(root)",), 8.0),
    ]
    assert task.visible_points == 13 and task.gpu_points == 0 and not task.shared
    assert task.parts[0].text.startswith("## Part 1: the number in a namespace link")


def test_checks_of_several_parts_and_gpu_points() -> None:
    task = read_task(exercise("vector-add"))
    assert [(p.name, p.points) for p in task.parts] == [("kernel", 0.0), ("launch", 2.0)]
    assert task.shared == ((("kernel", "launch"), 10.0, 9.0),)  # through the `run` fixture
    assert (task.visible_points, task.gpu_points) == (12, 9)
    shown = task_markdown(task)
    assert "- **launch**: write `launch_config(n, sm_count)` — 2 points" in shown
    assert (
        "- **kernel + launch** checked together — 10 points (9 of them need an NVIDIA GPU)"
    ) in shown
    assert "worth 12 points (9 of them need an NVIDIA GPU).**" in shown
    assert "adds hidden checks worth 3 points more" in shown  # course.toml's vector-add
    assert HIDDEN_UNKNOWN in task_markdown(replace(task, hidden_points=None))


def test_missing_files_say_why() -> None:
    entry = exercise("namespaces")
    task = read_task(entry, entry.notebook.with_name("gone.ipynb"))
    assert task.parts == () and task.problems == (
        "gone.ipynb: cannot be read (No such file or directory)",
    )


def test_hidden_points_from_the_manifest() -> None:
    entry = exercise("namespaces")
    assert entry.hidden_points == 9  # course.toml's, kept true by gpulab dev check
    assert read_task(entry, entry.notebook).hidden_points == 9
    task = Task((Part("a", ("f",), "", ("f()",), 2.0),), hidden_points=5)
    assert "hidden checks worth 5 points more" in task_markdown(task)
    assert "adds no hidden checks" in task_markdown(Task(hidden_points=0))


def test_the_watch_reports_a_settled_save_once(tmp_path: Path) -> None:
    notebook = tmp_path / "n.ipynb"
    notebook.write_text("{}")
    watch = NotebookWatch(notebook)
    assert not watch.poll()  # nothing changed
    notebook.write_text('{"cells": []}')
    os.utime(notebook, ns=(1, 10**18))
    assert not watch.poll()  # changing: wait a poll
    assert watch.poll()  # settled: run the checks
    assert not watch.poll()  # once
    notebook.unlink()
    assert not watch.poll() and not watch.poll()  # a missing notebook runs nothing
