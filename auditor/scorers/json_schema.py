"""Structured output (HOW): does the answer hold a JSON object valid against the item's JSON Schema?"""

from __future__ import annotations

import json
import re

import jsonschema

from ..records import Generation, Item, MetricSpec, Score
from .scorer import Scorer, register

# --------------------------------------------------------------------------- format (HOW)
_FENCE_RE = re.compile(r"```[ \t]*(?:json)?[ \t]*\n(.*?)```", re.S | re.I)


def extract_json(text: str) -> tuple[dict | None, str, str | None]:
    """Extract the JSON object of an answer.

    Rule (the first that applies decides):
        ``bare``: the whole answer (stripped) is a JSON object;
        ``code_fence``: the content of the first fenced block marked ``json`` or unmarked
        (```` ```json ... ``` ````) — that content must be a JSON object;
        ``first_object``: the JSON value starting at the first ``{`` of the answer
        (``json.JSONDecoder.raw_decode``, so braces inside strings are handled and
        trailing prose is ignored);
        ``none``: the answer has no ``{``.

    Parsing is strict ``json`` (no single quotes, no trailing commas).
    Returns ``(object or None, rule, parse error or None)``.
    """
    def parse(s: str) -> tuple[object, str | None]:
        try:
            return json.loads(s), None
        except ValueError as e:
            return None, str(e)
        except RecursionError:
            return None, "JSON nested too deeply"

    obj, _ = parse(text.strip())
    if isinstance(obj, dict):
        return obj, "bare", None
    m = _FENCE_RE.search(text)
    if m:
        obj, err = parse(m.group(1).strip())
        if isinstance(obj, dict):
            return obj, "code_fence", None
        return None, "code_fence", err or f"fenced JSON is a {type(obj).__name__}, not an object"
    start = text.find("{")
    if start < 0:
        return None, "none", "no JSON object in the answer"
    try:
        obj, _end = json.JSONDecoder().raw_decode(text, start)
    except ValueError as e:
        return None, "first_object", str(e)
    except RecursionError:
        return None, "first_object", "JSON nested too deeply"
    return obj, "first_object", None  # raw_decode at "{" can only yield an object


def score_json_schema(item: Item, gen: Generation) -> Score:
    """Structured output: does the answer hold a JSON object valid against the item's schema?

    Values: ``json_parse_rate`` 1.0 if a JSON object was extracted and parsed
    (:func:`extract_json`), ``schema_valid_rate`` 1.0 if it also validates against the
    item's JSON Schema (draft 2020-12, ``jsonschema.Draft202012Validator`` with format
    checking). Detail: the extraction ``rule``, the ``parse_error`` and the first
    validation error (``error``: message, ``error_path``: JSON path) and ``n_errors``.
    """
    obj, rule, parse_error = extract_json(gen.text)
    detail: dict = {"rule": rule, "parse_error": parse_error, "error": None, "error_path": None, "n_errors": 0}
    valid = False
    if obj is not None:
        validator = jsonschema.Draft202012Validator(
            item.target["schema"], format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER)
        errors = list(validator.iter_errors(obj))
        valid = not errors
        if errors:
            detail.update(error=errors[0].message, error_path=errors[0].json_path, n_errors=len(errors))
    return Score(item_id=gen.item_id, variant=gen.variant,
                 values={"json_parse_rate": float(obj is not None), "schema_valid_rate": float(valid)}, detail=detail)


def _target_json_schema(row: dict) -> dict:
    """``schema`` is the JSON Schema as JSON *text* (so the prompt template embeds it verbatim)."""
    text = row.get("schema")
    if not isinstance(text, str):
        raise ValueError("format items need 'schema': a JSON Schema written as a JSON string")
    try:
        schema = json.loads(text)
    except ValueError as e:
        raise ValueError(f"'schema' is not valid JSON ({e})") from None
    if not isinstance(schema, (dict, bool)):
        raise ValueError("'schema' must be a JSON object")
    try:
        jsonschema.Draft202012Validator.check_schema(schema)
    except jsonschema.SchemaError as e:
        raise ValueError(f"'schema' is not a valid JSON Schema (2020-12): {e.message}") from None
    _check_refs(schema)
    return {"schema": schema}


def _check_refs(schema: dict | bool) -> None:
    """Every ``$ref`` must point inside the schema and resolve (``referencing``, the
    library jsonschema resolves with): a remote reference would be fetched at
    scoring time, a dangling one would fail after generation."""
    from referencing import Registry, Resource
    from referencing.exceptions import Unresolvable
    from referencing.jsonschema import DRAFT202012

    refs: list[str] = []
    stack: list = [schema]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            if isinstance(node.get("$ref"), str):
                refs.append(node["$ref"])
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    if not refs:
        return
    resolver = Registry().with_resource("urn:item-schema", Resource.from_contents(
        schema, default_specification=DRAFT202012)).resolver(base_uri="urn:item-schema")
    for ref in refs:
        if not ref.startswith("#"):
            raise ValueError(f"'schema' has a $ref outside itself ({ref[:80]!r}); only local references (#/...) are allowed")
        try:
            resolver.lookup(ref)
        except Unresolvable:
            raise ValueError(f"'schema' has a $ref that does not resolve: {ref[:80]!r}") from None


register(Scorer("json_schema", (MetricSpec(name="json_parse_rate"), MetricSpec(name="schema_valid_rate")), score_json_schema,
                   _target_json_schema))
