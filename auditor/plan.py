"""Stage 2 — plan: suite items × variants.

A suite preset is data: a YAML manifest (``auditor/suites/<name>.yaml``)
naming, per capability, its group (CAN / WILL / HOW / COND), its source (a
builtin JSONL item file, or a standard benchmark with seeded stratified
sampling, see :mod:`auditor.sources`), the scorer, the user-turn template
and the generation budget. This module
reads and validates the manifest, loads the items and expands them into
generation requests for each variant (``base``, ``adapter``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jsonschema

from .errors import AuditInputError
from .safe_yaml import load_yaml_text
from .records import Item, Request
from .score import SCORER_METRICS, TARGET_BUILDERS, MetricSpec
from .sources import BENCHMARKS, LETTERS, first_rows, load_benchmark, read_jsonl, sample_rows

SUITES_DIR = Path(__file__).parent / "suites"
VARIANTS = ("base", "adapter")

#: A capability's ``source``: a builtin JSONL path (relative to the manifest), or a
#: mapping naming a JSONL ``path`` or a standard ``benchmark`` (auditor.sources) plus
#: how to sample it: ``split``, ``sample`` (a count or ``all``), ``stratify`` (a row
#: field, looked up in ``meta`` first), ``seed`` (numpy default_rng), ``unit``
#: (``item`` or ``cluster``: rows sharing ``meta.cluster`` are drawn together) and
#: ``hub`` (the hub dataset to fetch when no data dir is given). Instead of
#: ``sample``/``stratify``/``seed``, ``first: N`` keeps the first N units in source
#: order (a fixed subset that survives rows appended to the file).
SOURCE_SCHEMA: dict[str, Any] = {
    "type": ["string", "object"],
    "minLength": 1,
    "additionalProperties": False,
    "properties": {
        "benchmark": {"enum": sorted(BENCHMARKS)},
        "path": {"type": "string", "minLength": 1},
        "split": {"type": "string"},
        # "$(?!\n)": Python's re.search (jsonschema's) lets "$" match before a trailing newline
        "hub": {"type": "string", "pattern": "^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$(?!\n)"},
        "sample": {"anyOf": [{"type": "integer", "minimum": 1}, {"const": "all"}]},
        "stratify": {"type": "string", "minLength": 1},
        "seed": {"type": "integer", "minimum": 0},
        "first": {"type": "integer", "minimum": 1},
        "unit": {"enum": ["item", "cluster"]},
    },
}

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
                    "name": {"type": "string", "pattern": "^[a-z_]+$(?!\n)"},
                    "group": {"enum": ["CAN", "WILL", "HOW", "COND"]},
                    "source": SOURCE_SCHEMA,
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
    #: per capability run: where its items came from and how they were sampled
    #: (benchmark or path, split, origin, n_records, excluded, sample, stratify,
    #: seed, unit, first, n_selected), for results.json
    sources: tuple[dict[str, Any], ...] = ()

    #: unit of every metric in ``all_metrics`` (``fraction``, ``words``, ``tokens``)
    metric_units: dict[str, str] = field(default_factory=dict)

    def metric_names(self) -> list[str]:
        """Fully qualified metric names, ``<capability>.<metric>``."""
        return [f"{c.name}.{m.name}" for c in self.capabilities for m in c.metrics]


def _load_yaml(path: Path) -> Any:
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise AuditInputError(path, "not UTF-8 text") from None
    return load_yaml_text(path, text, "a suite manifest")[1]


def format_options(choices: list[str]) -> str:
    """Option texts → the ``options`` block of a multiple-choice prompt: ``A. text`` lines."""
    return "\n".join(f"{LETTERS[k]}. {c}" for k, c in enumerate(choices))


def _check_prompt_template(manifest: Path, k: int, template: str) -> None:
    """A prompt template fills plain ``{field}`` names only: no attribute or index access
    (``{prompt.__class__}``), no conversion and no format spec (``{prompt:>999999999}`` would
    build a gigabyte string).

    Raises:
        AuditInputError: naming the capability and the offending field.
    """
    import string

    where = f"capabilities.{k}.prompt_template"
    try:
        parts = list(string.Formatter().parse(template))
    except ValueError as e:
        raise AuditInputError(manifest, f"{where}: {e} (write a literal brace as {{{{ or }}}})") from None
    for _, name, spec, conversion in parts:
        if name is None:
            continue
        if not name.isidentifier() or spec or conversion:
            shown = "{" + name + (f"!{conversion}" if conversion else "") + (f":{spec}" if spec else "") + "}"
            raise AuditInputError(manifest, f"{where}: {shown[:60]!r} is not a plain field name like {{prompt}} "
                                            "(no attributes, indexes, conversions or format specs)")


def _at(lineno: int | str) -> str:
    return f"line {lineno}" if isinstance(lineno, int) else str(lineno)


def _local_id(row: dict[str, Any]) -> str:
    """An item's id within its capability: the record's ``id``, else its ``key`` (IFEval)."""
    return str(row.get("id", row.get("key")))


def _check_unique_ids(src: Path | str, rows: list[tuple[int | str, Any]]) -> None:
    """Every record of a capability's source has its own id (``id``, else ``key``), checked
    on the whole source before any sampling, so a repeat fails whatever the seed or limit.

    Raises:
        AuditInputError: naming the source, the repeating record and the first one.
    """
    seen: dict[str, int | str] = {}
    for pos, row in rows:
        if not isinstance(row, dict):
            continue  # reported where the row is used
        local = _local_id(row)
        if local in seen:
            raise AuditInputError(src, f"{_at(pos)}: item id {local!r} repeats {_at(seen[local])}")
        seen[local] = pos


def _item_from_row(cap: dict[str, Any], row: Any, src: Path | str, lineno: int | str) -> Item:
    """One item row → Item.

    Row fields used here: ``id`` (or ``key``), the fields the prompt template
    names, optional ``history`` (earlier chat turns, a list of
    ``{"role": "user"|"assistant", "content": str}`` placed before the
    templated user turn) and optional ``meta`` (an object, e.g. the context
    of a conditional-trigger item). A row with a ``choices`` list and no
    ``options`` field gets ``options`` (:func:`format_options`) for the
    template. The scorer's ``build_target`` reads the rest.
    ``lineno`` is a line number or a position text (``record 12``).
    """
    template = cap.get("prompt_template", "{prompt}")
    if not isinstance(row, dict):
        raise AuditInputError(src, f"{_at(lineno)}: an item must be a JSON object")
    fields = dict(row)
    choices = row.get("choices")
    if "options" not in row and isinstance(choices, list) and all(isinstance(c, str) for c in choices) \
            and len(choices) <= len(LETTERS):
        fields["options"] = format_options(choices)
    try:
        local_id = _local_id(row)
        content = template.format(**fields)
    except KeyError as e:
        raise AuditInputError(src, f"{_at(lineno)}: field {e} needed by the prompt template is missing") from None
    except (IndexError, ValueError, AttributeError) as e:
        raise AuditInputError(src, f"{_at(lineno)}: prompt template {template!r} cannot be filled ({e})") from None
    history = row.get("history", [])
    if not isinstance(history, list) or not all(
            isinstance(m, dict) and set(m) == {"role", "content"} and m["role"] in ("user", "assistant")
            and isinstance(m["content"], str) for m in history):
        raise AuditInputError(src, f"{_at(lineno)}: 'history' must be a list of "
                                   "{\"role\": \"user\"|\"assistant\", \"content\": text} objects")
    meta = row.get("meta", {})
    if not isinstance(meta, dict):
        raise AuditInputError(src, f"{_at(lineno)}: 'meta' must be a JSON object")
    for key in ("cluster", "context", "perturbation", "language"):
        if key in meta and (isinstance(meta[key], bool) or not isinstance(meta[key], (str, int))):
            raise AuditInputError(src, f"{_at(lineno)}: meta.{key} must be a string")
    builder = TARGET_BUILDERS.get(cap["scorer"])
    try:
        target = builder(row) if builder else {}
    except ValueError as e:
        raise AuditInputError(src, f"{_at(lineno)}: {e}") from None
    return Item(
        id=f"{cap['name']}/{local_id}",
        capability=cap["name"],
        group=cap["group"],
        messages=(*({"role": m["role"], "content": m["content"]} for m in history), {"role": "user", "content": content}),
        max_new_tokens=int(cap["max_new_tokens"]),
        target=target,
        meta=meta,
    )


def _capability_rows(cap: dict[str, Any], k: int, manifest: Path, data_dir: str | Path | None
                     ) -> tuple[Path | str, list[tuple[int | str, Any]], dict[str, Any]]:
    """The rows of one capability after sampling: (where, [(position, row)], source record).

    The source record (for results.json) names the benchmark or file, the
    split, the records read, those excluded (per reason), the sampling
    settings and the number of rows selected.
    """
    spec = cap["source"]
    if isinstance(spec, str):
        spec = {"path": spec}
    if ("path" in spec) == ("benchmark" in spec):
        raise AuditInputError(manifest, f"capabilities.{k}.source: name exactly one of 'path' or 'benchmark'")
    record: dict[str, Any] = {"capability": cap["name"]}
    if "path" in spec:
        extra = sorted(set(spec) & {"split", "hub"})
        if extra:
            raise AuditInputError(manifest, f"capabilities.{k}.source: {extra} only go with 'benchmark'")
        if "\x00" in spec["path"]:
            raise AuditInputError(manifest, f"capabilities.{k}.source: a path cannot hold a NUL character")
        src: Path | str = (manifest.parent / spec["path"]).resolve()
        if src.is_dir():
            raise AuditInputError(src, f"item file of capability {cap['name']!r} is a folder, not a JSONL file")
        if not src.is_file():
            raise AuditInputError(src, f"item file of capability {cap['name']!r} not found")
        rows: list[tuple[int | str, Any]] = list(read_jsonl(src, objects_only=False))
        record.update(path=spec["path"], n_records=len(rows), excluded={})
    else:
        try:
            bench = load_benchmark(spec["benchmark"], spec.get("split"), data_dir, spec.get("hub"))
        except AuditInputError as e:
            if e.path != "suite source":  # a fault of the data (its file, the hub), named by load_benchmark
                raise
            # an unknown benchmark or split is the manifest's fault: name it and the field
            raise AuditInputError(manifest, f"capabilities.{k}.source: {e.fault}") from None
        src = bench.origin
        rows = [(f"record {n} ({r['id']})", r) for n, r in enumerate(bench.rows)]
        record.update(benchmark=bench.benchmark, split=bench.split, origin=bench.origin,
                      n_records=bench.n_records, excluded=bench.excluded)
    _check_unique_ids(src, rows)
    sample = spec.get("sample", "all")
    n = None if sample == "all" else int(sample)
    stratify, seed, unit = spec.get("stratify"), int(spec.get("seed", 0)), spec.get("unit", "item")
    first = None if spec.get("first") is None else int(spec["first"])  # JSON Schema's integer admits 2.0
    if first is not None and set(spec) & {"sample", "stratify", "seed"}:
        raise AuditInputError(manifest, f"capabilities.{k}.source: 'first' keeps the first rows in source order; "
                                        "it does not go with 'sample', 'stratify' or 'seed'")
    if n is not None or stratify is not None or first is not None:
        bad = next((pos for pos, r in rows if not isinstance(r, dict)), None)
        if bad is not None:
            raise AuditInputError(src, f"{_at(bad)}: an item must be a JSON object")
        position = {id(r): pos for pos, r in rows}
        try:
            dict_rows = [r for _, r in rows]
            kept = first_rows(dict_rows, first, unit) if first is not None \
                else sample_rows(dict_rows, n, stratify, seed, unit)
        except ValueError as e:
            raise AuditInputError(manifest, f"capabilities.{k}.source: {e}") from None
        rows = [(position[id(r)], r) for r in kept]
    record.update(sample=sample, stratify=stratify, seed=seed, unit=unit, first=first, n_selected=len(rows))
    return src, rows, record


def preset_metric_units() -> dict[str, str]:
    """Metric → unit for every capability of the built-in presets (smoke, fast, full).

    A policy may name these even when the suite of a run leaves them out (the
    rule is then reported as not run); names outside them are typos.
    """
    out: dict[str, str] = {}
    for path in sorted(SUITES_DIR.glob("*.yaml")):
        manifest = _load_yaml(path)
        for cap in manifest.get("capabilities", []):
            for m in SCORER_METRICS.get(cap.get("scorer"), ()):
                out[f"{cap['name']}.{m.name}"] = m.unit
    return out


def load_suite(name_or_path: str, limit: int | None = None, only: tuple[str, ...] = (),
               data_dir: str | Path | None = None) -> Suite:
    """Load a suite preset by name (``smoke``, ``fast``, ``full``) or from a manifest path.

    Args:
        name_or_path: preset name or path to a YAML manifest.
        limit: keep at most this many items per capability (the first of the
            selection, in source order).
        only: keep only these capabilities (all when empty).
        data_dir: local folder with standard benchmark files, for capabilities
            whose source is a ``benchmark`` (default ``$AUDITOR_DATA_DIR``; with
            neither, the hub through ``datasets``); see :mod:`auditor.sources`.

    Raises:
        AuditInputError: unknown preset, invalid manifest (names the key path),
            missing item file, a bad JSONL line (names the line), a bad
            benchmark file, or benchmark data that cannot be found.
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
        raise AuditInputError(path, f"{key}: {e.message[:300]}") from None

    for k, cap in enumerate(manifest["capabilities"]):
        _check_prompt_template(path, k, cap.get("prompt_template", "{prompt}"))
    names = [c["name"] for c in manifest["capabilities"]]
    if len(set(names)) != len(names):
        raise AuditInputError(path, "two capabilities have the same name")
    unknown = [o for o in only if o not in names]
    if unknown:
        raise AuditInputError("--capability", f"{unknown} not in suite {manifest['name']!r}; it has {names}")
    caps: list[Capability] = []
    items: list[Item] = []
    sources: list[dict[str, Any]] = []
    for k, cap in enumerate(manifest["capabilities"]):
        if only and cap["name"] not in only:
            continue
        src, rows, record = _capability_rows(cap, k, path, data_dir)
        if limit is not None and len(rows) > limit:
            rows = rows[:limit]
            record = {**record, "n_selected": len(rows), "limit": limit}
        if not rows:
            raise AuditInputError(src, f"capability {cap['name']!r} has no items")
        items.extend(_item_from_row(cap, row, src, pos) for pos, row in rows)
        caps.append(Capability(cap["name"], cap["group"], cap["scorer"], SCORER_METRICS[cap["scorer"]]))
        sources.append(record)
    all_metrics = tuple(f"{c['name']}.{m.name}" for c in manifest["capabilities"] for m in SCORER_METRICS[c["scorer"]])
    units = {f"{c['name']}.{m.name}": m.unit for c in manifest["capabilities"] for m in SCORER_METRICS[c["scorer"]]}
    return Suite(manifest["name"], manifest["version"], str(path), tuple(caps), tuple(items), all_metrics,
                 tuple(sources), units)


def plan_requests(suite: Suite, variants: tuple[str, ...] = VARIANTS) -> list[Request]:
    """Every item under every variant, item-major (base and adapter of an item adjacent)."""
    return [Request(item, v) for item in suite.items for v in variants]
