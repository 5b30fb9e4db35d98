"""nbgrader's configuration for the benchmark's course (bench/grading.py copies it there).

The kernel is the project's own interpreter, described by the kernelspec the
benchmark writes (``gpulab-bench``); the cell timeout comes on the command
line, from the exercises' time limit in lessons/course.toml.
"""

c = get_config()  # noqa: F821  (nbgrader provides get_config)

c.CourseDirectory.course_id = "gpulab-bench"
c.Execute.kernel_name = "gpulab-bench"
c.Execute.interrupt_on_timeout = True  # a cell that overruns is stopped, the rest runs
c.OverwriteCells.add_missing_cells = True  # a deleted test cell is put back
