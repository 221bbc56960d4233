"""The shipped JSON Schemas (draft 2020-12) of results.json and run.json, generated from the records.

The shipped schema ``auditor/data/schemas/results.schema.json`` is this module's output for
:class:`auditor.results.AuditResult`, so a record change without regenerating fails its test
(``tests/test_results_schema.py``)::

    python -m auditor.records.schema_files            # print the schema
    python -m auditor.records.schema_files --write    # write auditor/data/schemas/{results,run}.schema.json
    python -m auditor.records.schema_files --check    # exit 1 when the shipped file differs

How the types map (what :func:`~auditor.records.plain.to_plain` writes):

* a record (dataclass) → ``object`` with ``properties`` in field order and ``required`` = the fields
  always written; a ``metadata={"plain": False}`` field is left out, a ``metadata={"omit_none": True}``
  field is a property but not required, and never ``null`` (it is absent instead). No object says
  ``additionalProperties: false``: a key the schema does not know is allowed (and dropped on reading).
  A record used by more than one field, or as an element of a tuple or mapping, is one ``$defs`` entry
  (snake case of its name less ``Record``, or :data:`~auditor.records.schema_extra.DEF_NAMES`); one used
  once is written in place;
* ``str`` / ``Path`` → ``string``, ``int`` → ``integer``, ``bool`` → ``boolean``, ``float`` →
  ``["number", "null"]`` (a float that is not finite, NaN for a metric no item scored, is written ``null``
  and read back as NaN), ``Any`` → ``{}``;
* ``Literal[...]`` (:mod:`auditor.records.vocab`) → ``enum`` of its words in declaration order;
* ``X | None`` → ``X`` or ``null``: ``"type": [..., "null"]`` for a plain type, ``null`` added to an
  ``enum``, else ``oneOf: [{"type": "null"}, X]``; other unions → a ``type`` list, else ``anyOf``;
* ``tuple[X, ...]`` / ``list[X]`` → ``array`` of ``X``; ``tuple[X, Y]`` → an array of exactly two
  (``items`` when they are alike, else ``prefixItems``); ``Mapping[str, X]`` → ``object`` with
  ``additionalProperties: X`` (none for ``Any``).

Where constraints live: what a type cannot say (``minimum: 1`` for ranks, sha256 patterns, p-values in
[0, 1], closed words of a field typed ``str``, the shape of a block a record types ``Mapping[str, Any]``
such as ``run.vllm``, descriptions) is the table :data:`~auditor.records.schema_extra.FIELDS`, keyed
``Class.field``, beside the named kinds :data:`~auditor.records.schema_extra.KINDS` (sha256, confidence,
per_variant, hub_ref) its entries ``$ref``: one module of data beside this one, so the records stay plain
dataclasses. An entry is merged into the derived schema key by key (nested objects merged, other values
replaced: ``"type": "number"`` marks a float that is never null); an entry holding ``$ref`` replaces it; a
record class in an entry stands for that record's schema (``run.prompts``' values are
:class:`~auditor.records.PromptTemplate`). A field of :data:`~auditor.records.schema_extra.NEVER_NULL` is
typed ``X | None`` for convenience but always written. An entry that names no field of the records is an
error, so a renamed field cannot leave its constraints behind.
"""

from __future__ import annotations

import argparse
import collections
import dataclasses
import json
import re
import sys
import types
import typing
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from .schema_extra import (
    COMMENT,
    DEF_NAMES,
    DESCRIPTION,
    FIELDS,
    KINDS,
    NEVER_NULL,
    RUN_COMMENT,
    RUN_DESCRIPTION,
    RUN_FIELDS,
)

#: the shipped schema, written by ``--write`` and compared by ``--check``
SCHEMA_PATH = Path(__file__).resolve().parent.parent / "data" / "schemas" / "results.schema.json"
#: run.json's shipped schema (a training run's checkpoints), written and checked with it
RUN_SCHEMA_PATH = SCHEMA_PATH.with_name("run.schema.json")

_SIMPLE = {str: "string", Path: "string", int: "integer", bool: "boolean"}
_MAPPINGS = (dict, Mapping)


def _is_record(tp: Any) -> bool:
    return dataclasses.is_dataclass(tp) and isinstance(tp, type)


def _without_none(tp: Any) -> tuple[list[Any], bool]:
    """The members of a union other than None, and whether None was one (``[tp], False`` for a non-union)."""
    if typing.get_origin(tp) in (typing.Union, types.UnionType):
        args = typing.get_args(tp)
        return [a for a in args if a is not type(None)], type(None) in args
    return [tp], False


def _or_null(schema: dict[str, Any]) -> dict[str, Any]:
    """``schema`` or ``null``."""
    if not schema:
        return schema
    if "enum" in schema and "type" not in schema:
        return {**schema, "enum": [*schema["enum"], *([] if None in schema["enum"] else [None])]}
    if "type" in schema and not {"$ref", "oneOf", "anyOf", "const"} & schema.keys():
        kinds = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]
        return {**schema, "type": kinds if "null" in kinds else [*kinds, "null"]}
    return {"oneOf": [{"type": "null"}, schema]}


def _merge(base: dict[str, Any], extra: dict[str, Any]) -> dict[str, Any]:
    """``extra`` over ``base`` (see the module doc): an entry with ``$ref`` replaces, objects merge."""
    if "$ref" in extra:
        return dict(extra)
    out = dict(base)
    for k, v in extra.items():
        out[k] = _merge(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) else v
    return out


def _def_name(cls: type) -> str:
    if cls.__name__ in DEF_NAMES:
        return DEF_NAMES[cls.__name__]
    return re.sub(r"(?<!^)(?=[A-Z])", "_", cls.__name__.removesuffix("Record")).lower()


def _plain_fields(cls: type) -> list[tuple[dataclasses.Field[Any], Any]]:
    """The fields :func:`~auditor.records.plain.to_plain` writes, with their resolved types."""
    hints = typing.get_type_hints(cls)
    return [(f, hints[f.name]) for f in dataclasses.fields(cls) if f.metadata.get("plain", True)]


class _Builder:
    """One schema's making: which records are shared ``$defs``, the ``$defs`` made, the table entries used."""

    def __init__(self, root: type, fields: Mapping[str, dict[str, Any]]) -> None:
        self.fields = fields
        self.used: set[str] = set()
        self.defs: dict[str, Any] = dict(KINDS)
        uses: collections.Counter[type] = collections.Counter()
        self._count(root, uses, set(), many=False)
        self.shared = {cls for cls, n in uses.items() if n > 1}

    def _count(self, tp: Any, uses: collections.Counter[type], seen: set[type], many: bool) -> None:
        """Count each record's uses below ``tp`` (an element of a tuple or mapping counts as two)."""
        if isinstance(tp, dict):
            for v in tp.values():
                self._count(v, uses, seen, many=True)
            return
        if _is_record(tp):
            uses[tp] += 2 if many else 1
            if tp not in seen:
                seen.add(tp)
                for f, hint in _plain_fields(tp):
                    self._count(hint, uses, seen, many=False)
                    self._count(self.fields.get(f"{tp.__name__}.{f.name}", {}), uses, seen, many=True)
            return
        origin = typing.get_origin(tp)
        nested = origin in (tuple, list, *_MAPPINGS)
        for arg in typing.get_args(tp) if origin is not Literal else ():
            self._count(arg, uses, seen, many=many or nested)

    def of(self, tp: Any) -> dict[str, Any]:
        """The schema of type ``tp`` (see the module doc).

        Raises:
            TypeError: ``tp`` is a type this generator has no mapping for.
        """
        if tp is Any:
            return {}
        if tp is float:
            return {"type": ["number", "null"]}
        if tp in _SIMPLE:
            return {"type": _SIMPLE[tp]}
        if tp is type(None):
            return {"type": "null"}
        if _is_record(tp):
            if tp not in self.shared:
                return self.record(tp)
            name = _def_name(tp)
            if name not in self.defs:
                self.defs[name] = {}  # keeps the order of first use
                self.defs[name] = self.record(tp)
            return {"$ref": f"#/$defs/{name}"}
        origin, args = typing.get_origin(tp), typing.get_args(tp)
        if origin is Literal:
            return {"enum": list(args)}
        if origin in (typing.Union, types.UnionType):
            members, nullable = _without_none(tp)
            schema = self._union([self.of(a) for a in members])
            return _or_null(schema) if nullable else schema
        if origin is tuple and len(args) >= 1 and args[-1] is not Ellipsis:
            items = [self.of(a) for a in args]
            alike = all(i == items[0] for i in items)
            return {"type": "array", **({"items": items[0]} if alike else {"prefixItems": items, "items": False}),
                    "minItems": len(items), "maxItems": len(items)}
        if origin in (tuple, list) or tp in (tuple, list):
            item = self.of(args[0]) if args else {}
            return {"type": "array", **({"items": item} if item else {})}
        if origin in _MAPPINGS or tp in _MAPPINGS:
            value = self.of(args[1]) if len(args) == 2 else {}
            return {"type": "object", **({"additionalProperties": value} if value else {})}
        raise TypeError(f"no JSON Schema mapping for the type {tp!r}")

    def _union(self, schemas: list[dict[str, Any]]) -> dict[str, Any]:
        if len(schemas) == 1:
            return schemas[0]
        if all(s.keys() == {"type"} for s in schemas):
            kinds = [k for s in schemas for k in (s["type"] if isinstance(s["type"], list) else [s["type"]])]
            return {"type": list(dict.fromkeys(kinds))}
        return {"anyOf": schemas}

    def _resolve(self, extra: Any) -> Any:
        """A table entry with each record class in it replaced by that record's schema."""
        if isinstance(extra, type):
            return self.of(extra)
        if isinstance(extra, dict):
            return {k: self._resolve(v) for k, v in extra.items()}
        return extra

    def field(self, cls: type, f: dataclasses.Field[Any], hint: Any) -> dict[str, Any]:
        key = f"{cls.__name__}.{f.name}"
        extra = dict(self._resolve(self.fields.get(key, {})))
        if key in self.fields:
            self.used.add(key)
        description = extra.pop("description", None)
        members, nullable = _without_none(hint)
        schema = _merge(self._union([self.of(a) for a in members]), extra)
        if nullable and not f.metadata.get("omit_none") and key not in NEVER_NULL:
            schema = _or_null(schema)
        return schema | ({"description": description} if description else {})

    def record(self, cls: type) -> dict[str, Any]:
        fields = _plain_fields(cls)
        return {"type": "object",
                "required": [f.name for f, _ in fields if not f.metadata.get("omit_none")],
                "properties": {f.name: self.field(cls, f, hint) for f, hint in fields}}


def schema_of(root: type, version: int, fields: Mapping[str, dict[str, Any]] = FIELDS, *, name: str = "results",
              description: str = DESCRIPTION, comment: str = COMMENT) -> dict[str, Any]:
    """The JSON Schema of record ``root``'s :func:`~auditor.records.plain.to_plain` form, titled as
    ``<name>.json``'s ``schema_version`` ``version`` (``fields``: a table of the form of
    :data:`~auditor.records.schema_extra.FIELDS`).

    Raises:
        TypeError: a field's type has no mapping (see the module doc).
        ValueError: an entry of ``fields`` names no field of the records below ``root``.
    """
    b = _Builder(root, fields)
    body = b.record(root)
    unused = sorted(set(b.fields) - b.used)
    if unused:
        raise ValueError(f"schema entries name no field of the records: {', '.join(unused)}")
    return {"$schema": "https://json-schema.org/draft/2020-12/schema",
            "$id": f"https://adapter-auditor.invalid/schemas/{name}-{version}.schema.json",
            "$comment": comment, "title": f"adapter-auditor {name}.json, schema_version {version}",
            "description": description, **body, "$defs": b.defs}


def results_schema() -> dict[str, Any]:
    """The schema of results.json (:class:`auditor.results.AuditResult`), as shipped.

    Raises:
        TypeError, ValueError: as :func:`schema_of` (a record field the mapping or the table does not fit).
    """
    from ..results import RESULTS_SCHEMA_VERSION, AuditResult

    return schema_of(AuditResult, RESULTS_SCHEMA_VERSION,
                     {**FIELDS, "AuditResult.schema_version": {"const": RESULTS_SCHEMA_VERSION}})


def run_schema() -> dict[str, Any]:
    """The schema of run.json (:class:`auditor.records.training_run.RunSummary`), as shipped.

    Raises:
        TypeError, ValueError: as :func:`schema_of`.
    """
    from .training_run import RUN_SCHEMA_VERSION, RunSummary

    return schema_of(RunSummary, RUN_SCHEMA_VERSION, {**RUN_FIELDS, "RunSummary.schema_version": {"const": RUN_SCHEMA_VERSION}},
                     name="run", description=RUN_DESCRIPTION, comment=RUN_COMMENT)


def dumps(value: Any, indent: str = "") -> str:
    """``value`` as JSON text: an object or array that fits on one line of 110 characters is one line."""
    flat = json.dumps(value, ensure_ascii=False)
    if not isinstance(value, (dict, list)) or len(indent) + len(flat) <= 110 or not value:
        return flat
    inner = indent + "  "
    if isinstance(value, list) and not any(isinstance(v, (dict, list)) for v in value):
        lines = [inner]  # a list of words: as many to a line as fit
        for word in (json.dumps(v, ensure_ascii=False) for v in value):
            if len(lines[-1]) > len(inner) and len(lines[-1]) + len(word) + 2 > 110:
                lines.append(inner)
            lines[-1] += ("" if lines[-1] == inner else " ") + word + ","
        return "[\n" + "\n".join(lines)[:-1] + "\n" + indent + "]"
    if isinstance(value, list):
        parts = [inner + dumps(v, inner) for v in value]
        return "[\n" + ",\n".join(parts) + "\n" + indent + "]"
    parts = [f"{inner}{json.dumps(k, ensure_ascii=False)}: {dumps(v, inner)}" for k, v in value.items()]
    return "{\n" + ",\n".join(parts) + "\n" + indent + "}"


def results_schema_text() -> str:
    """The shipped file's text: :func:`results_schema`, laid out by :func:`dumps`."""
    return dumps(results_schema()) + "\n"


def run_schema_text() -> str:
    """The shipped run.schema.json's text: :func:`run_schema`, laid out by :func:`dumps`."""
    return dumps(run_schema()) + "\n"


def main(argv: list[str] | None = None) -> int:
    """Print, write (``--write``) or check (``--check``: 1 when the shipped file differs) the schema.

    Raises:
        SystemExit: an argument it does not know (argparse's usage error, exit 2).
        OSError: ``--write`` cannot write the shipped file.
    """
    ap = argparse.ArgumentParser(prog="python -m auditor.records.schema_files", description=__doc__.split("\n\n")[0])
    group = ap.add_mutually_exclusive_group()
    group.add_argument("--write", action="store_true", help=f"write {SCHEMA_PATH.name} and {RUN_SCHEMA_PATH.name}")
    group.add_argument("--check", action="store_true", help="compare with the shipped file, write nothing")
    args = ap.parse_args(argv)
    shipped = {SCHEMA_PATH: results_schema_text(), RUN_SCHEMA_PATH: run_schema_text()}
    if args.check:
        stale = [p for p, text in shipped.items() if not p.is_file() or p.read_text(encoding="utf-8") != text]
        for p in stale:
            print(f"{p}: differs from the records; run python -m auditor.records.schema_files --write", file=sys.stderr)
        return 1 if stale else 0
    if args.write:
        for p, text in shipped.items():
            p.write_text(text, encoding="utf-8")
        return 0
    sys.stdout.write(shipped[SCHEMA_PATH])
    return 0


if __name__ == "__main__":
    sys.exit(main())
