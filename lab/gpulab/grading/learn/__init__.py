"""The learner's side of the checks: their result shown and kept, JupyterLab, doctor items.

- `panel`: `check(name)`, the notebook's one-line call, and the result as text
  (``gpulab check``) or as the notebook's panel;
- `record`: a check of the workspace's own notebook kept in the learner's
  progress, where the app's exercise list reads it;
- `jupyter`: one JupyterLab server per workspace, started or reused;
- `readiness`: ``gpulab doctor``'s items for the course's tools.

The rule of this package: it uses the checks (and asks the sandbox whether it
holds), and never imports the class run.
"""
