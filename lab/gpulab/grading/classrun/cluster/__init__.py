"""The class run's jobs on a cluster: ``gpulab grade --cluster`` and ``gpulab worker``.

- `client`: `run_on_cluster`, the grader's side: a Dask client, the run's jobs
  handed to a `coordinator.Coordinator`, each grade back as it arrives;
- `coordinator`: which workers may grade, which job goes where, each answer
  (or each worker lost) turned into a grade;
- `bundle`: the course, packed by the grader into one tar named by its sha256,
  and unpacked once by each node (its `Shelf`), which grades with it;
- `node` and `serve`: ``gpulab worker``, one node's GPUs and CPU slots served to
  the scheduler, each job checked as it is locally (`gpulab.grading.classrun.run`);
- `slurm`: pilot jobs on Slurm through dask-jobqueue, and knowing when one
  never comes.

The rule of this package: it runs the class run's jobs with the run's own
`Job`, `GpuPool` and `checks_hash`, and never imports the run that hands them
over (`grade`, `report`), which alone imports it. Dask is imported inside
functions, so that gpulab runs without the ``cluster`` extra.
"""
