"""The one Jinja2 environment of grading's HTML, over the templates in ``templates/``.

Two kinds of page are rendered with it: a learner's feedback page, written by a
grading run (`gpulab.grading.classrun.feedback`), and the result panel a
notebook shows after ``check(...)`` (`gpulab.grading.learn.panel`). It lives
beside the templates, so that the learner's side needs nothing of the class run.
"""

from __future__ import annotations

import functools

import jinja2

__all__ = ["environment"]


@functools.cache
def environment() -> jinja2.Environment:
    """The one Jinja2 environment of grading's HTML (the feedback page, the notebook's result
    panel): templates from the package, autoescape on, undefined names an error."""
    return jinja2.Environment(
        loader=jinja2.PackageLoader("gpulab.grading", "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )
