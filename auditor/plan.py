"""Stage 2 — plan: suite items × variants.

A suite preset is data: a YAML manifest (``auditor/suites/<name>.yaml``)
naming, per capability, its group (CAN / WILL / HOW), the JSONL item file,
the scorer, the user-turn template and the generation budget. This module
reads and validates the manifest, loads the items and expands them into
generation requests for each variant (``base``, ``adapter``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jsonschema
import yaml

from .errors import AuditInputError
from .records import Item, Request
from .score import SCORER_METRICS, TARGET_BUILDERS, MetricSpec

SUITES_DIR = Path(__file__).parent / "suites"
VARIANTS = ("base", "adapter")

SUITE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["name", "version", "capabilities"],
    "additionalProperties": False,
    "properties": {
        "name": {"type": "string"},
        "version": {"type": "integer"},
        "capabilities": {
            "type": "array",
            "minItems": 1,
            "items": {
                "type": "object",
                "required": ["name", "group", "source", "scorer", "max_new_tokens"],
                "additionalProperties": False,
                "properties": {
                    "name": {"type": "string", "pattern": "^[a-z_]+$"},
                    "group": {"enum": ["CAN", "WILL", "HOW", "COND"]},
                    "source": {"type": "string"},
                    "scorer": {"enum": sorted(SCORER_METRICS)},
                    "prompt_template": {"type": "string"},
                    "max_new_tokens": {"type": "integer", "minimum": 1, "maximum": 4096},
                },
            },
        },
    },
}


@dataclass(frozen=True)
class Capability:
    """One capability of a suite and the metrics its scorer reports."""

    name: str
    group: str
    scorer: str
    metrics: tuple[MetricSpec, ...]


@dataclass(frozen=True)
class Suite:
    """A loaded suite: capabilities and their items (in file order)."""

    name: str
    version: int
    path: str
    capabilities: tuple[Capability, ...]
    items: tuple[Item, ...]
    #: metrics of every capability in the manifest, including ones left out by ``only``
    all_metrics: tuple[str, ...] = ()

    #: unit of every metric in ``all_metrics`` (``fraction``, ``words``, ``tokens``)
    metric_units: dict[str, str] = field(default_factory=dict)

    def metric_names(self) -> list[str]:
        """Fully qualified metric names, ``<capability>.<metric>``."""
        return [f"{c.name}.{m.name}" for c in self.capabilities for m in c.metrics]


def _load_yaml(path: Path) -> Any:
    try:
        return yaml.safe_load(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError:
        raise AuditInputError(path, "not UTF-8 text") from None
    except RecursionError:
        raise AuditInputError(path, "YAML nested too deeply") from None
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark else ""
        raise AuditInputError(path, f"invalid YAML{where}") from None


def _item_from_row(cap: dict[str, Any], row: Any, src: Path, lineno: int) -> Item:
    """One item row → Item.

    Row fields used here: ``id`` (or ``key``), the fields the prompt template
    names, optional ``history`` (earlier chat turns, a list of
    ``{"role": "user"|"assistant", "content": str}`` placed before the
    templated user turn) and optional ``meta`` (an object, e.g. the context
    of a conditional-trigger item). The scorer's ``build_target`` reads the rest.
    """
    template = cap.get("prompt_template", "{prompt}")
    if not isinstance(row, dict):
        raise AuditInputError(src, f"line {lineno}: an item must be a JSON object")
    try:
        local_id = str(row.get("id", row.get("key")))
        content = template.format(**row)
    except KeyError as e:
        raise AuditInputError(src, f"line {lineno}: field {e} needed by the prompt template is missing") from None
    except (IndexError, ValueError, AttributeError) as e:
        raise AuditInputError(src, f"line {lineno}: prompt template {template!r} cannot be filled ({e})") from None
    history = row.get("history", [])
    if not isinstance(history, list) or not all(
            isinstance(m, dict) and set(m) == {"role", "content"} and m["role"] in ("user", "assistant")
            and isinstance(m["content"], str) for m in history):
        raise AuditInputError(src, f"line {lineno}: 'history' must be a list of "
                                   "{\"role\": \"user\"|\"assistant\", \"content\": text} objects")
    meta = row.get("meta", {})
    if not isinstance(meta, dict):
        raise AuditInputError(src, f"line {lineno}: 'meta' must be a JSON object")
    builder = TARGET_BUILDERS.get(cap["scorer"])
    try:
        target = builder(row) if builder else {}
    except ValueError as e:
        raise AuditInputError(src, f"line {lineno}: {e}") from None
    return Item(
        id=f"{cap['name']}/{local_id}",
        capability=cap["name"],
        group=cap["group"],
        messages=(*({"role": m["role"], "content": m["content"]} for m in history), {"role": "user", "content": content}),
        max_new_tokens=int(cap["max_new_tokens"]),
        target=target,
        meta=meta,
    )


def load_suite(name_or_path: str, limit: int | None = None, only: tuple[str, ...] = ()) -> Suite:
    """Load a suite preset by name (``smoke``) or from a manifest path.

    Args:
        name_or_path: preset name or path to a YAML manifest.
        limit: keep at most this many items per capability (first in file order).
        only: keep only these capabilities (all when empty).

    Raises:
        AuditInputError: unknown preset, invalid manifest (names the key path),
            missing item file, or a bad JSONL line (names the line).
    """
    path = Path(name_or_path)
    if not path.suffix:
        path = SUITES_DIR / f"{name_or_path}.yaml"
        if not path.is_file():
            known = sorted(p.stem for p in SUITES_DIR.glob("*.yaml"))
            raise AuditInputError("--suite", f"unknown suite {name_or_path!r}; known presets: {known}")
    if not path.is_file():
        raise AuditInputError(path, "suite manifest not found")
    manifest = _load_yaml(path)
    try:
        jsonschema.validate(manifest, SUITE_SCHEMA)
    except jsonschema.ValidationError as e:
        key = ".".join(str(p) for p in e.absolute_path) or "(top level)"
        raise AuditInputError(path, f"{key}: {e.message}") from None

    names = [c["name"] for c in manifest["capabilities"]]
    unknown = [o for o in only if o not in names]
    if unknown:
        raise AuditInputError("--capability", f"{unknown} not in suite {manifest['name']!r}; it has {names}")
    caps: list[Capability] = []
    items: list[Item] = []
    for cap in manifest["capabilities"]:
        if only and cap["name"] not in only:
            continue
        src = (path.parent / cap["source"]).resolve()
        if not src.is_file():
            raise AuditInputError(src, f"item file of capability {cap['name']!r} not found")
        rows = 0
        try:
            lines = src.read_text(encoding="utf-8").splitlines()
        except UnicodeDecodeError:
            raise AuditInputError(src, "not UTF-8 text") from None
        for lineno, line in enumerate(lines, 1):
            if not line.strip():
                continue
            if limit is not None and rows >= limit:
                break
            try:
                row = json.loads(line)
            except json.JSONDecodeError as e:
                raise AuditInputError(src, f"line {lineno}: invalid JSON ({e.msg})") from None
            except RecursionError:
                raise AuditInputError(src, f"line {lineno}: JSON nested too deeply") from None
            items.append(_item_from_row(cap, row, src, lineno))
            rows += 1
        if rows == 0:
            raise AuditInputError(src, f"capability {cap['name']!r} has no items")
        caps.append(Capability(cap["name"], cap["group"], cap["scorer"], SCORER_METRICS[cap["scorer"]]))
    if len(set(names)) != len(names):
        raise AuditInputError(path, "two capabilities have the same name")
    ids = [i.id for i in items]
    if len(ids) != len(set(ids)):
        raise AuditInputError(path, "duplicate item ids in the suite")
    all_metrics = tuple(f"{c['name']}.{m.name}" for c in manifest["capabilities"] for m in SCORER_METRICS[c["scorer"]])
    units = {f"{c['name']}.{m.name}": m.unit for c in manifest["capabilities"] for m in SCORER_METRICS[c["scorer"]]}
    return Suite(manifest["name"], manifest["version"], str(path), tuple(caps), tuple(items), all_metrics, units)


def plan_requests(suite: Suite, variants: tuple[str, ...] = VARIANTS) -> list[Request]:
    """Every item under every variant, item-major (base and adapter of an item adjacent)."""
    return [Request(item, v) for item in suite.items for v in variants]
