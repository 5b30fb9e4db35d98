"""The book: a static, offline HTML book of the course, for `gpulab book`.

Built from the sources the app reads (course.toml, the lessons, specs.toml,
the claims and the student notebooks) with the templates and assets in the
project's ``book/`` folder. Every page works from ``file://`` and loads nothing
from outside the book; outside links are citations only.

Errors::

    GpulabError
    ├── CourseError     a broken lesson, spec or missing notebook (file:line each)
    └── BookError       the output folder or the book's own templates
"""

from __future__ import annotations

from gpulab.book.build import (
    BookResult,
    Progress,
    build_book,
    check_course,
    default_out,
    find_book_dir,
)
from gpulab.book.output import MARKER, BookError

__all__ = [
    "MARKER",
    "BookError",
    "BookResult",
    "Progress",
    "build_book",
    "check_course",
    "default_out",
    "find_book_dir",
]
