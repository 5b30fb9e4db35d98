"""The learner's side: `gpulab check`'s result, its record, JupyterLab, doctor items."""
