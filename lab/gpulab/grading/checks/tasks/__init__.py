"""Trusted kernel tasks: what the kernel worker does with a learner's CUDA C.

One module per task (``vector_add``, ...), each with ``run(source, params) ->
dict``: refuse a source that breaks the rules of kernel answers (`rules`,
before anything compiles it), compile the learner's kernel, make the secret
inputs from ``params["seed"]``, launch it with the configurations in
``params``, compare every launch with a reference computed here from the
inputs as they were before it, time it launch by launch against a reference
measured in the same run (`judge`), or run it under compute-sanitizer
(`sanitize`), and return findings as plain data. The checks turn the findings
into verdicts and teaching messages; nothing here judges. That run is written
once (`task.run_task`); a task module gives its own parts as a `task.Task`: its
kernel's name and rules, its cases' sizes, its inputs, its launch, its check
and its timed run. Shared helpers are in `gpulab.grading.checks.tasks.common`.
"""
