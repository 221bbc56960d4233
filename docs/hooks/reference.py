"""MkDocs hook: the reference pages' generated parts, rendered from the code at build time so they cannot drift.

* ``<!-- results-schema -->``: auditor/data/schemas/results.schema.json as tables (the schema is itself generated from
  the result records, ``python -m auditor.records.schema_files --write``, and is what ``audit report`` validates);
* ``<!-- metric-ids -->``: the metric ids a policy may name, from the scorer registry
  (:func:`auditor.policy.metric_ids.metric_ids_markdown`, the same table the README carries).
"""

import json
from pathlib import Path

MARKER = "<!-- results-schema -->"
METRIC_IDS = "<!-- metric-ids -->"
SCHEMA = Path(__file__).resolve().parents[2] / "auditor" / "data" / "schemas" / "results.schema.json"


def _type(node: dict) -> str:
    if "$ref" in node:
        name = node["$ref"].rsplit("/", 1)[-1]
        return f"[{name}](#def-{name})"
    for key in ("anyOf", "oneOf"):
        if key in node:
            return " or ".join(_type(n) for n in node[key])
    if "enum" in node:
        return "one of " + ", ".join("`null`" if v is None else f"`{v}`" for v in node["enum"])
    types = node.get("type", "any")
    types = types if isinstance(types, list) else [types]
    out = []
    for t in types:
        if t == "array":
            inner = node.get("items", {})
            out.append(f"array of {_type(inner)}" if inner else "array")
        elif t == "object" and "additionalProperties" in node and isinstance(node["additionalProperties"], dict):
            out.append(f"map to {_type(node['additionalProperties'])}")
        else:
            out.append(t)
    return " or ".join(out)


def _cell(text: str) -> str:
    return " ".join(str(text).split()).replace("|", "\\|")


def _rows(node: dict, prefix: str, rows: list, depth: int) -> None:
    required = set(node.get("required", ()))
    for name, prop in node.get("properties", {}).items():
        path = f"{prefix}{name}"
        rows.append(f"| `{path}` | {_cell(_type(prop))} | {'yes' if name in required else ''} | "
                    f"{_cell(prop.get('description', ''))} |")
        if depth < 3:
            if "properties" in prop:
                _rows(prop, path + ".", rows, depth + 1)
            elif isinstance(prop.get("items"), dict) and "properties" in prop["items"]:
                _rows(prop["items"], path + "[].", rows, depth + 1)


def _table(node: dict, prefix: str = "") -> str:
    rows = ["| field | type | required | description |", "|---|---|---|---|"]
    _rows(node, prefix, rows, 0)
    return "\n".join(rows)


def render(schema: dict) -> str:
    parts = [f"**{schema.get('title', '')}**", "", _cell(schema.get("description", "")), "", "## Top level", "",
             _table(schema)]
    for name, node in schema.get("$defs", {}).items():
        parts += ["", f"## `{name}` {{ #def-{name} }}", ""]
        if node.get("description"):
            parts += [_cell(node["description"]), ""]
        parts.append(_table(node) if "properties" in node else f"{_cell(_type(node))}")
    return "\n".join(parts)


def on_page_markdown(markdown: str, page, config, files) -> str:  # noqa: ARG001 - MkDocs's hook signature
    if MARKER in markdown:
        markdown = markdown.replace(MARKER, render(json.loads(SCHEMA.read_text(encoding="utf-8"))))
    if METRIC_IDS in markdown:
        from auditor.policy.metric_ids import metric_ids_markdown  # the checkout's, as the CLI reference's

        markdown = markdown.replace(METRIC_IDS, metric_ids_markdown())
    return markdown
