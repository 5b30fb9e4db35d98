"""Specs: the datasheet and standard values the lessons cite, each with its source.

`lessons/specs.toml` has three kinds of table (format: lessons/README.md)::

    [sources.hopper-blog]            # where figures come from
    title = "NVIDIA Hopper Architecture In-Depth"
    url = "https://developer.nvidia.com/blog/nvidia-hopper-architecture-in-depth/"

    [gpus.h200]                      # one GPU: metadata, then its values
    name = "NVIDIA H200 SXM"
    architecture = "Hopper"
    compute_capability = "9.0"
    source = "h200-page"             # default source of the values
    sms = { value = 132, unit = "SMs", source = "hopper-blog" }

    [topics.pcie]                    # values that belong to no one GPU
    title = "PCI Express link rates"
    gen4_x16 = { value = 31.5, unit = "GB/s", note = "per direction" }

A value is a number (`value`), a range (`min`, `max`) or `text`; numbers carry
a `unit`. `source` names a `[sources.*]` entry or is a URL itself. A value
measured by gpulab names where its recording holds it (`recorded`), and
`gpulab dev lint-lessons` checks that they agree (`gpulab.course.recordings`).

This module reads and checks the file; what it builds, `Specs` and the
`Source`, `SpecTable` and `SpecValue` it holds, is defined in
`gpulab.course.specs_model` and re-exported here.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from gpulab.course.positions import line_at, toml_error, toml_lines
from gpulab.course.problems import CourseError, Problem
from gpulab.course.source import read_text
from gpulab.course.specs_model import Source, Specs, SpecTable, SpecValue

__all__ = ["load_specs", "url_problem"]

_ID = re.compile(r"^[a-z0-9][a-z0-9_-]*$")
_VALUE_FIELDS = {"value", "min", "max", "text", "unit", "source", "note", "recorded"}
_GPU_META = {"name", "architecture", "compute_capability", "source", "note"}
_TOPIC_META = {"title", "source", "note"}


def url_problem(url: str) -> str:
    """What is wrong with an outside link, or "" when it is a well-formed web address."""
    if any(ch.isspace() for ch in url):
        return "contains white space"
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https"):
        return "is not an http(s) address"
    if "." not in (parts.hostname or ""):
        return "has no host name"
    return ""


def load_specs(path: Path) -> Specs:
    """Load and check specs.toml; raises `CourseError` listing every problem.

    A missing file means no specs. Sources given as a `path` are resolved
    against the folder that holds specs.toml and must exist.
    """
    if not path.exists():
        return Specs(path)
    text = read_text(path)
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise toml_error(path, exc) from None
    loader = _Loader(path, text)
    specs = loader.load(data)
    if loader.problems:
        raise CourseError(loader.problems)
    return specs


class _Loader:
    def __init__(self, path: Path, text: str) -> None:
        self.path = path
        self.problems: list[Problem] = []
        self.lines = toml_lines(text)

    def bad(self, where: tuple[str, ...], message: str, hint: str = "") -> None:
        line = line_at(self.lines, where) or next(
            (n for key, n in self.lines.items() if key[:1] == where[:1]), None
        )
        self.problems.append(Problem(self.path, line, message, hint))

    def load(self, data: Mapping[str, Any]) -> Specs:
        for name in sorted(set(data) - {"sources", "gpus", "topics"}):
            self.bad(
                (name,),
                f"unknown table [{name}]",
                "specs.toml has [sources.*], [gpus.*] and [topics.*] tables",
            )
        sources = self._sources(data.get("sources", {}))
        gpus = self._tables("gpus", data.get("gpus", {}), sources)
        topics = self._tables("topics", data.get("topics", {}), sources)
        for both in sorted(set(gpus) & set(topics)):
            self.bad(
                ("topics", both),
                f"topic {both!r} has the id of a GPU",
                "values are named table.key, so give the topic another id",
            )
        return Specs(self.path, sources, gpus, topics)

    def _sources(self, raw: Any) -> dict[str, Source]:
        sources: dict[str, Source] = {}
        if not isinstance(raw, Mapping):
            self.bad(("sources",), "[sources] must hold tables")
            return sources
        for source_id, entry in raw.items():
            where = ("sources", source_id)
            label = f"source {source_id!r}"
            if not _ID.match(source_id):
                self.bad(where, f"{label}: ids are lowercase letters, digits, - and _")
                continue
            if not isinstance(entry, Mapping):
                self.bad(where, f"{label} must be a table with title and url")
                continue
            unknown = sorted(set(entry) - {"title", "url", "path"})
            if unknown:
                self.bad(
                    where,
                    f"{label}: unknown field {', '.join(unknown)}",
                    "a source has title and either url or path",
                )
            title, url, rel = entry.get("title"), entry.get("url", ""), entry.get("path", "")
            if not isinstance(title, str) or not title.strip():
                self.bad(where, f"{label} needs a title")
                continue
            if not isinstance(url, str) or not isinstance(rel, str) or bool(url) == bool(rel):
                self.bad(
                    where,
                    f"{label} needs either url or path",
                    "url for a page on the web; path for a file beside specs.toml",
                )
                continue
            if url and (why := url_problem(url)):
                self.bad((*where, "url"), f"{label}: url {url!r} {why}")
                continue
            if rel and not (self.path.parent / rel).is_file():
                self.bad(
                    (*where, "path"),
                    f"{label}: {rel} does not exist",
                    f"paths are relative to {self.path.parent.name}/",
                )
                continue
            sources[source_id] = Source(source_id, title.strip(), url, rel)
        return sources

    def _tables(self, kind: str, raw: Any, sources: dict[str, Source]) -> dict[str, SpecTable]:
        tables: dict[str, SpecTable] = {}
        if not isinstance(raw, Mapping):
            self.bad((kind,), f"[{kind}] must hold tables")
            return tables
        meta_keys = _GPU_META if kind == "gpus" else _TOPIC_META
        singular = "gpu" if kind == "gpus" else "topic"
        for table_id, entry in raw.items():
            where = (kind, table_id)
            label = f"{singular} {table_id!r}"
            if not _ID.match(table_id):
                self.bad(where, f"{label}: ids are lowercase letters, digits, - and _")
                continue
            if not isinstance(entry, Mapping):
                self.bad(where, f"{label} must be a table")
                continue
            meta = {k: v for k, v in entry.items() if k in meta_keys}
            for key, value in meta.items():
                if not isinstance(value, str) or not value.strip():
                    self.bad((*where, key), f"{label}: {key} must be non-empty text")
            required = (
                ("name", "architecture", "compute_capability") if kind == "gpus" else ("title",)
            )
            missing = [k for k in required if k not in meta]
            if missing:
                self.bad(where, f"{label}: missing {', '.join(missing)}")
            default = self._source(
                (*where, "source"), label, meta.get("source"), sources, required=False
            )
            values: dict[str, SpecValue] = {}
            for key, item in entry.items():
                if key in meta_keys:
                    continue
                spec = self._value(kind, table_id, key, item, default, sources)
                if spec is not None:
                    values[key] = spec
            tables[table_id] = SpecTable(
                kind=singular,
                id=table_id,
                title=str(meta.get("name") or meta.get("title") or table_id),
                values=values,
                architecture=str(meta.get("architecture", "")),
                compute_capability=str(meta.get("compute_capability", "")),
                note=str(meta.get("note", "")),
            )
        return tables

    def _source(
        self,
        where: tuple[str, ...],
        label: str,
        ref: Any,
        sources: dict[str, Source],
        *,
        required: bool,
    ) -> Source | None:
        if ref is None:
            if required:
                self.bad(
                    where,
                    f"{label} has no source",
                    'give it source = "<id of a [sources.*] table>" or a default '
                    "source on its table",
                )
            return None
        if not isinstance(ref, str):
            self.bad(where, f"{label}: source must be text")
            return None
        if ref.startswith(("http://", "https://")):
            if why := url_problem(ref):
                self.bad(where, f"{label}: source {ref!r} {why}")
                return None
            return Source(ref, ref, ref)
        if ref not in sources:
            self.bad(
                where,
                f"{label}: unknown source {ref!r}",
                "add a [sources." + ref + "] table with title and url, or fix the name",
            )
            return None
        return sources[ref]

    def _value(
        self,
        kind: str,
        table_id: str,
        key: str,
        item: Any,
        default: Source | None,
        sources: dict[str, Source],
    ) -> SpecValue | None:
        where = (kind, table_id, key)
        label = f"{table_id}.{key}"
        if not isinstance(item, Mapping):
            self.bad(
                where, f'{label} must be an inline table, e.g. {{ value = 132, unit = "SMs" }}'
            )
            return None
        before = len(self.problems)
        unknown = sorted(set(item) - _VALUE_FIELDS)
        if unknown:
            self.bad(
                where,
                f"{label}: unknown field {', '.join(unknown)}",
                f"known fields: {', '.join(sorted(_VALUE_FIELDS))}",
            )
        has_value, has_text = "value" in item, "text" in item
        has_range = "min" in item or "max" in item
        if has_value + has_text + has_range != 1:
            self.bad(where, f"{label}: give exactly one of value, min and max, or text")
        elif has_range and not ("min" in item and "max" in item):
            self.bad(where, f"{label}: a range needs both min and max")
        for number_key in ("value", "min", "max"):
            number = item.get(number_key)
            if number_key in item and (
                isinstance(number, bool) or not isinstance(number, int | float)
            ):
                self.bad(where, f"{label}: {number_key} must be a number, not {number!r}")
        if (
            has_range
            and all(isinstance(item.get(k), int | float) for k in ("min", "max"))
            and item["min"] > item["max"]
        ):
            self.bad(where, f"{label}: min is larger than max")
        for text_key in ("text", "unit", "note"):
            if text_key in item and not isinstance(item[text_key], str):
                self.bad(where, f"{label}: {text_key} must be text")
        recorded = item.get("recorded", ())
        recorded = (recorded,) if isinstance(recorded, str) else recorded
        if not (
            isinstance(recorded, list | tuple)
            and all(isinstance(r, str) and "#" in r for r in recorded)
        ):
            self.bad(
                where,
                f'{label}: recorded must be "FILE#PATH" or a list of them',
                'e.g. recorded = "reference/h200-baseline.json#matmul.cupy_float16_TFLOPs"',
            )
            recorded = ()
        if (has_value or has_range) and not str(item.get("unit", "")).strip():
            self.bad(
                where,
                f"{label}: a number needs its unit",
                'e.g. unit = "GB/s"; use unit = "count" for a plain count',
            )
        source = (
            self._source(where, label, item.get("source"), sources, required=False)
            if "source" in item
            else default
        )
        if source is None and "source" not in item:
            self.bad(
                where,
                f"{label} has no source",
                'give it source = "..." or give its table a default source',
            )
        if len(self.problems) > before or source is None:
            return None

        def num(name: str) -> float | None:
            return float(item[name]) if name in item else None

        return SpecValue(
            table=table_id,
            key=key,
            source=source,
            line=self.lines.get(where),
            value=num("value"),
            min=num("min"),
            max=num("max"),
            text=str(item.get("text", "")),
            unit=str(item.get("unit", "")),
            note=str(item.get("note", "")),
            recorded=tuple(recorded),
        )
