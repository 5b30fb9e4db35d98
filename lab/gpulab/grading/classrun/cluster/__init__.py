"""`gpulab grade --cluster` and `gpulab worker`: the run's jobs on Dask and Slurm."""
