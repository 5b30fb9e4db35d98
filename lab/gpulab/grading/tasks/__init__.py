"""Trusted kernel tasks: what the kernel worker does with a learner's CUDA C.

One module per task (``vector_add``, ...), each with ``run(source, params) ->
dict``: compile the learner's kernel, make the secret inputs from
``params["seed"]``, launch it with the configurations in ``params``, compare
with a reference computed here, time it against a reference measured in the
same run, and return findings as plain data. The checks turn the findings into
verdicts and teaching messages; nothing here judges. Shared helpers are in
`gpulab.grading.tasks.common`.
"""
