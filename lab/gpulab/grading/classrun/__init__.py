"""`gpulab grade`: a class's notebooks graded in one command, safely, in parallel, resumably.

- `grade`: `grade_class`, the run from start to end; `grade_model`: what it is
  given (`GradeOptions`, `Target`), what it gives back (`GradeSummary`), and
  `GradeError`;
- `plan`: the jobs to run and the grades that need none (pure);
- `run`: the jobs run in parallel, each grade handed to the one gradebook
  writer; `gpupool`: the GPUs GPU jobs take turns on, each checked after a job;
- `outdir`: the run's hold on its output folder; `fingerprint`: the checks'
  hash each grade is kept under;
- `feedback`: each learner's feedback page and the LMS's CSV, with
  `markdown_text` and `csv_cells` for the learner's text in them;
  `report`: the progress bar and the summary;
- `cluster/`: the same jobs on a Dask scheduler, and ``gpulab worker``.

The rule of this package: it is the only one that puts intake, checks, sandbox
and gradebook together; nothing below it imports it, and of it only `grade`
(and the command line) imports `cluster`.
"""
