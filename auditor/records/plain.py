"""Dataclass records ↔ plain JSON data (results.json).

:func:`to_plain` writes a record as JSON-ready dicts and lists, field by field in
declaration order (so the order of a record's fields is the order of results.json's
keys). Fields marked ``metadata={"plain": False}`` are left out (bootstrap replicates,
parsed configs); fields marked ``metadata={"omit_none": True}`` are left out when None
(keys results.json only has for some runs, e.g. ``run.vllm``).

:func:`from_plain` is the way back, driven by the field types: nested records, lists,
tuples and dicts of records are rebuilt; a key the data lacks takes the field's default;
a key the record does not know is dropped. A float that is not finite (NaN: a metric no item scored)
is written as ``null`` — results.json stays strict JSON — and read back as NaN where the field is a
plain ``float``. It trusts its input to be valid (results.json is
checked against the shipped JSON Schema first, :mod:`auditor.reports.results_file`).
"""

from __future__ import annotations

import collections.abc
import dataclasses
import functools
import math
import types
import typing
from collections.abc import Mapping
from typing import Any


def to_plain(obj: Any) -> Any:
    """Dataclasses (nested) → JSON-ready dicts/lists (see the module doc for the field metadata)."""
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        out = {}
        for f in dataclasses.fields(obj):
            if not f.metadata.get("plain", True):
                continue
            value = getattr(obj, f.name)
            if value is None and f.metadata.get("omit_none"):
                continue
            out[f.name] = to_plain(value)
        return out
    if isinstance(obj, (list, tuple)):
        return [to_plain(v) for v in obj]
    if isinstance(obj, dict):
        return {k: to_plain(v) for k, v in obj.items()}
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    return obj


#: the type origins read back as a dict (records declare their mappings read-only, as ``Mapping``)
_MAPPINGS = (dict, collections.abc.Mapping)


@functools.cache
def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def _convert(tp: Any, value: Any) -> Any:
    if value is None:
        return math.nan if tp is float else None
    origin = typing.get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        for arg in typing.get_args(tp):
            if arg is type(None):
                continue
            if dataclasses.is_dataclass(arg) and isinstance(value, dict):
                return from_plain(arg, value)
            if typing.get_origin(arg) in (list, tuple, *_MAPPINGS) and isinstance(value, (list, dict)):
                return _convert(arg, value)
        return value
    if dataclasses.is_dataclass(tp) and isinstance(value, dict):
        return from_plain(tp, value)
    if origin is list and isinstance(value, list):
        (arg,) = typing.get_args(tp) or (Any,)
        return [_convert(arg, v) for v in value]
    if origin is tuple and isinstance(value, list):
        args = typing.get_args(tp)
        return tuple(_convert(args[0] if args else Any, v) for v in value)
    if origin in _MAPPINGS and isinstance(value, dict):
        args = typing.get_args(tp)
        return {k: _convert(args[1] if len(args) == 2 else Any, v) for k, v in value.items()}
    return value


def from_plain(cls: Any, data: Mapping[str, Any]) -> Any:
    """Rebuild record ``cls`` from its :func:`to_plain` form (see the module doc).

    Raises:
        TypeError: a field without a default is missing from ``data``.
    """
    hints = _hints(cls)
    kwargs = {}
    for f in dataclasses.fields(cls):
        if f.name in data and f.init:
            kwargs[f.name] = _convert(hints[f.name], data[f.name])
    return cls(**kwargs)
