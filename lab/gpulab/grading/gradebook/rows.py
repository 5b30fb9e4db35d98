"""Where the gradebook's rows and records meet, both ways, by name.

A query names its columns as a record names its fields (``name AS "check"``
where the table says otherwise), and `to_record` converts the row with
msgspec: the grading's own records (`gpulab.grading.gradebook.verdict.ExerciseGrade` with
its `CheckRow` checks, `LearnerGrades`) or the gradebook's below. A value not of
its field's type raises msgspec's ValidationError, naming the field
(``$.checks[2].outcome``). The other way, `to_row` turns a record's fields into
an INSERT's named parameters (``:exercise``), every text made `plain`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import fields
from typing import TYPE_CHECKING, Any, TypeVar

import msgspec

from gpulab.grading.gradebook.verdict import Kind, plain

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

__all__ = [
    "JSON_COLUMNS",
    "DeadRun",
    "KnownExercise",
    "StoredGrade",
    "json_list",
    "json_value",
    "to_record",
    "to_row",
]

R = TypeVar("R")

JSON_COLUMNS = frozenset({"guards"})
"""Columns that hold a JSON list of text: the isolation in force (of a run, of a grade)."""


class DeadRun(msgspec.Struct, frozen=True):
    """A run an earlier grader left `running`: it was killed; what it may have left behind."""

    id: int
    tag: str
    cgroups: str


class KnownExercise(msgspec.Struct, frozen=True):
    """An exercise as the gradebook knows it (a row of ``exercises``): the checks it is
    graded under (their hash), what it is worth, and whether it needs a GPU."""

    name: str
    checks_hash: str
    max_points: float
    gpu: bool


class StoredGrade(msgspec.Struct, frozen=True):
    """What a later run compares of a stored grade (`gpulab.grading.classrun.plan`): the notebook
    and the checks it was graded from, and its kind."""

    notebook_hash: str
    checks_hash: str
    kind: Kind


def to_record(kind: type[R], row: Mapping[str, Any]) -> R:
    """`row` as a `kind` record, column by field name; columns it has no field for are
    not read.

    Not strict, as SQLite is not: a boolean is stored as 0 or 1 (a number
    stored as text in a REAL column would be taken too, but SQLite turns such
    text into a number as it stores it). The JSON columns are read as lists
    first. msgspec's DecodeError, naming the field, for a value of another type.
    """
    values = {
        name: _from_json(name, value) if name in JSON_COLUMNS else value
        for name, value in row.items()
    }
    return msgspec.convert(values, kind, strict=False)


def to_row(record: DataclassInstance | msgspec.Struct, **columns: object) -> dict[str, object]:
    """`record`'s fields and `columns` as a row's values by name, for an INSERT's named
    parameters: every text made `plain`, the JSON columns as JSON lists. Nested records
    (a grade's checks) are stored as rows of their own; the INSERT does not name them."""
    if isinstance(record, msgspec.Struct):
        values = msgspec.structs.asdict(record)
    else:
        values = {field.name: getattr(record, field.name) for field in fields(record)}
    values.update(columns)
    return {
        name: json_list(value)
        if name in JSON_COLUMNS
        else plain(value)
        if isinstance(value, str)
        else value
        for name, value in values.items()
    }


def _from_json(column: str, value: object) -> object:
    """A JSON column's value as the list it holds; left as it is when it is not text (the
    conversion then names the column)."""
    if not isinstance(value, str):
        return value
    try:
        return msgspec.json.decode(value)
    except msgspec.DecodeError as exc:
        raise msgspec.ValidationError(f"{exc} - at `$.{column}`") from None


def json_list(lines: Sequence[str]) -> str:
    """Lines of text as the JSON list a JSON column holds, each made `plain`."""
    return json.dumps([plain(line) for line in lines])


def json_value(text: object) -> object:
    """A JSON column's value; left as it is when it is not JSON (the conversion then names
    the field)."""
    try:
        return json.loads(text) if isinstance(text, str) else text
    except ValueError:
        return text
