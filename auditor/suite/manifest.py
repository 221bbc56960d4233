"""Stage 2 — the suite: a manifest (YAML, schema-checked) → capabilities and their items.

A suite preset is data: a YAML manifest (``auditor/data/suites/<name>.yaml``) naming, per capability,
its group (CAN / WILL / HOW / COND), its source (a builtin JSONL item file, or a standard benchmark
with seeded stratified sampling, see :mod:`auditor.suite.benchmarks`), the scorer (a name of the
scorer catalogue the caller hands in, :data:`~auditor.suite.specs.ScorerCatalogue`: the pipeline's is
:data:`auditor.scorers.SCORERS`), the user-turn template and the generation budget. This module reads
and validates the manifest into typed :class:`CapabilitySpec` records and loads their items
(:mod:`auditor.suite.rows`).
"""

from __future__ import annotations

import difflib
from pathlib import Path
from typing import Any

import jsonschema

from ..errors import AuditInputError
from ..records import Capability, Item, MetricSpec, Suite
from ..util.jsonio import read_jsonl
from ..util.safe_yaml import load_yaml_text
from .benchmarks import BENCHMARKS, UnknownBenchmarkError, load_benchmark
from .rows import at, check_prompt_template, check_unique_ids, item_from_row
from .sampling import first_rows, sample_rows
from .specs import CapabilitySpec, ScorerCatalogue

SUITES_DIR = Path(__file__).resolve().parent.parent / "data" / "suites"

#: A capability's ``source``: a builtin JSONL path (relative to the manifest), or a
#: mapping naming a JSONL ``path`` or a standard ``benchmark`` (auditor.suite.benchmarks) plus
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


def suite_schema(scorers: ScorerCatalogue | None) -> dict[str, Any]:
    """The manifest's JSON Schema; ``scorer`` is any name of ``scorers`` (None: any string, for a manifest
    whose names were checked when its suite loaded)."""
    return {
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
                    "required": ["name", "group", "source", "scorer"],
                    "additionalProperties": False,
                    "properties": {
                        "name": {"type": "string", "pattern": "^[a-z_]+$(?!\n)"},
                        "group": {"enum": ["CAN", "WILL", "HOW", "COND"]},
                        "source": SOURCE_SCHEMA,
                        "scorer": {"enum": sorted(scorers)} if scorers is not None else {"type": "string"},
                        "prompt_template": {"type": "string"},
                        # where an undecided rule's capability draws more items (auditor.suite.pools)
                        "pool": {"anyOf": [SOURCE_SCHEMA, {"type": "array", "minItems": 1, "items": SOURCE_SCHEMA}]},
                        # the generation budget (tokens) of a generated capability; none for a multiple-choice one
                        "max_new_tokens": {"type": "integer", "minimum": 1, "maximum": 4096},
                        # multiple choice by log-likelihood: put between the context and each choice
                        "target_delimiter": {"type": "string", "maxLength": 16},
                        # multiple choice: the continuations are the options' texts, or their letters
                        "choices_as": {"enum": ["text", "letter"]},
                        # worked examples before each generated item (lm-evaluation-harness's fewshot_config
                        # samples, as chat turns): each fills the prompt template and answers with its response
                        "fewshot": {
                            "type": "object",
                            "required": ["samples"],
                            "additionalProperties": False,
                            "properties": {
                                "when": {"enum": ["plain_prompts", "always"]},
                                "until": {"type": "array", "maxItems": 8,
                                          "items": {"type": "string", "minLength": 1, "maxLength": 32}},
                                "samples": {"type": "array", "minItems": 1, "maxItems": 16, "items": {
                                    "type": "object", "required": ["response"],
                                    "properties": {"response": {"type": "string", "minLength": 1}}}},
                            },
                        },
                    },
                },
            },
        },
    }


def _load_yaml(path: Path) -> Any:
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise AuditInputError(path, "not UTF-8 text") from None
    return load_yaml_text(path, text, "a suite manifest")[1]


def _metrics(scorers: ScorerCatalogue, scorer: Any) -> tuple[MetricSpec, ...]:
    """The metrics ``scorer`` reports (empty for a name ``scorers`` does not have)."""
    s = scorers.get(scorer)
    return s.metrics if s is not None else ()


def capability_rows(cap: CapabilitySpec, manifest: Path, data_dir: str | Path | None
                     ) -> tuple[Path | str, list[tuple[int | str, Any]], dict[str, Any]]:
    """The rows of one capability after sampling: (where, [(position, row)], source record).

    The source record (for results.json) names the benchmark or file, the
    split, the records read, those excluded (per reason), the sampling
    settings and the number of rows selected.

    Raises:
        AuditInputError: a source naming both or neither of ``path`` / ``benchmark``, keys that do
            not go together, an item file that is missing or a folder, an unknown benchmark or
            split (naming the manifest's field), repeated item ids, or a sampling fault.
    """
    spec, k = cap.source, cap.k
    where = f"capabilities.{k}.source"
    if (spec.path is None) == (spec.benchmark is None):
        raise AuditInputError(manifest, f"{where}: name exactly one of 'path' or 'benchmark'")
    record: dict[str, Any] = {"capability": cap.name}
    if spec.path is not None:
        extra = sorted(spec.given & {"split", "hub"})
        if extra:
            raise AuditInputError(manifest, f"{where}: {extra} only go with 'benchmark'")
        if "\x00" in spec.path:
            raise AuditInputError(manifest, f"{where}: a path cannot hold a NUL character")
        file = (manifest.parent / spec.path).resolve()
        if file.is_dir():
            raise AuditInputError(file, f"item file of capability {cap.name!r} is a folder, not a JSONL file")
        if not file.is_file():
            raise AuditInputError(file, f"item file of capability {cap.name!r} not found")
        src: Path | str = file
        rows: list[tuple[int | str, Any]] = list(read_jsonl(file, objects_only=False))
        record.update(path=spec.path, n_records=len(rows), excluded={})
    else:
        assert spec.benchmark is not None  # one of path / benchmark, checked above
        try:
            bench = load_benchmark(spec.benchmark, spec.split, data_dir, spec.hub)
        except UnknownBenchmarkError as e:
            # an unknown benchmark or split is the manifest's fault: name it and the field
            raise AuditInputError(manifest, f"{where}: {e.fault}") from None
        src = bench.origin
        rows = [(f"record {n} ({r['id']})", r) for n, r in enumerate(bench.rows)]
        record.update(benchmark=bench.benchmark, split=bench.split, origin=bench.origin,
                      n_records=bench.n_records, excluded=bench.excluded)
    check_unique_ids(src, rows)
    n = None if spec.sample == "all" else int(spec.sample)
    if spec.first is not None and spec.given & {"sample", "stratify", "seed"}:
        raise AuditInputError(manifest, f"{where}: 'first' keeps the first rows in source order; "
                                        "it does not go with 'sample', 'stratify' or 'seed'")
    if n is not None or spec.stratify is not None or spec.first is not None:
        bad = next((pos for pos, r in rows if not isinstance(r, dict)), None)
        if bad is not None:
            raise AuditInputError(src, f"{at(bad)}: an item must be a JSON object")
        position = {id(r): pos for pos, r in rows}
        try:
            dict_rows = [r for _, r in rows]
            kept = first_rows(dict_rows, spec.first, spec.unit) if spec.first is not None \
                else sample_rows(dict_rows, n, spec.stratify, spec.seed, spec.unit)
        except ValueError as e:
            raise AuditInputError(manifest, f"{where}: {e}") from None
        rows = [(position[id(r)], r) for r in kept]
    record.update(sample=spec.sample, stratify=spec.stratify, seed=spec.seed, unit=spec.unit, first=spec.first,
                  n_selected=len(rows))
    return src, rows, record


def preset_metric_specs(scorers: ScorerCatalogue) -> dict[str, MetricSpec]:
    """Metric id (``<capability>.<metric>``) → its :class:`MetricSpec` for every capability of the
    built-in presets (smoke, fast, full), in the presets' capability order and each scorer's metric
    order (a capability's first metric first), their metrics read from ``scorers`` (the pipeline's:
    :data:`auditor.scorers.SCORERS`). These are the metric ids a policy may name.

    Raises:
        AuditInputError: a preset that is not valid YAML (a broken install).
    """
    out: dict[str, MetricSpec] = {}
    for path in sorted(SUITES_DIR.glob("*.yaml")):
        manifest = _load_yaml(path)
        for cap in manifest.get("capabilities", []):
            for m in _metrics(scorers, cap.get("scorer")):
                out.setdefault(f"{cap['name']}.{m.name}", m)
    return out


def preset_metric_units(scorers: ScorerCatalogue) -> dict[str, str]:
    """Metric → unit for every capability of the built-in presets (:func:`preset_metric_specs`).

    A policy may name these even when the suite of a run leaves them out (the
    rule is then reported as not run); names outside them are typos.

    Raises:
        AuditInputError: a preset that is not valid YAML (a broken install).
    """
    return {k: m.unit for k, m in preset_metric_specs(scorers).items()}


def _specs(path: Path, manifest: Any, scorers: ScorerCatalogue | None) -> list[CapabilitySpec]:
    """The capability entries of a manifest, validated (schema, prompt templates, unique names).

    Raises:
        AuditInputError: naming the key path.
    """
    try:
        jsonschema.validate(manifest, suite_schema(scorers))
    except jsonschema.ValidationError as e:
        key = ".".join(str(p) for p in e.absolute_path) or "(top level)"
        raise AuditInputError(path, f"{key}: {e.message[:300]}") from None
    for k, cap in enumerate(manifest["capabilities"]):
        check_prompt_template(path, k, cap.get("prompt_template", "{prompt}"))
    specs = [CapabilitySpec.from_manifest(k, cap, path) for k, cap in enumerate(manifest["capabilities"])]
    for spec in specs:
        scorer = scorers.get(spec.scorer) if scorers is not None else None
        if scorer is None:
            continue
        if scorer.output_type == "generate_until" and not spec.max_new_tokens:
            raise AuditInputError(path, f"capabilities.{spec.k}: 'max_new_tokens' is required (scorer "
                                        f"{spec.scorer!r} reads a generated answer)")
        if scorer.output_type == "multiple_choice" and spec.fewshot:
            raise AuditInputError(path, f"capabilities.{spec.k}.fewshot: scorer {spec.scorer!r} scores each choice by "
                                        "log-likelihood after a plain context: worked examples go into its prompt "
                                        "template")
        if scorer.output_type == "multiple_choice" and spec.max_new_tokens:
            raise AuditInputError(path, f"capabilities.{spec.k}.max_new_tokens: scorer {spec.scorer!r} scores each "
                                        "choice by log-likelihood and generates nothing: leave it out")
    names = [c.name for c in specs]
    if len(set(names)) != len(names):
        raise AuditInputError(path, "two capabilities have the same name")
    return specs


def manifest_specs(path: Path, scorers: ScorerCatalogue | None = None) -> list[CapabilitySpec]:
    """The validated capability entries of the manifest at ``path`` (pools included); ``scorer:`` names
    are checked against ``scorers`` (None: not checked, for the manifest of a loaded suite).

    Raises:
        AuditInputError: as :func:`load_suite` for the manifest itself.
    """
    return _specs(path, _load_yaml(path), scorers)


def manifest_path(name_or_path: str) -> Path:
    """The manifest file of a suite preset name (``smoke``: ``auditor/data/suites/smoke.yaml``) or path.

    Raises:
        AuditInputError: an unknown preset, or no file at the path.
    """
    path = Path(name_or_path)
    if not path.suffix:
        path = SUITES_DIR / f"{name_or_path}.yaml"
        if not path.is_file():
            known = sorted(p.stem for p in SUITES_DIR.glob("*.yaml"))
            raise AuditInputError("--suite", f"unknown suite {name_or_path!r}; known presets: {known}")
    if not path.is_file():
        raise AuditInputError(path, "suite manifest not found")
    return path


def manifest_metric_ids(name_or_path: str, only: tuple[str, ...] = (), *, scorers: ScorerCatalogue) -> list[str]:
    """The metric ids (``<capability>.<metric>``) a suite's capabilities report (``only``: these capabilities),
    read from its manifest alone: no item is loaded, no benchmark fetched.

    Raises:
        AuditInputError: as :func:`load_suite` for the manifest itself.
    """
    path = manifest_path(name_or_path)
    return [f"{c.name}.{m.name}" for c in manifest_specs(path, scorers) if not only or c.name in only
            for m in _metrics(scorers, c.scorer)]


def load_suite(name_or_path: str, limit: int | None = None, only: tuple[str, ...] = (),
               data_dir: str | Path | None = None, *, scorers: ScorerCatalogue) -> Suite:
    """Load a suite preset by name (``smoke``, ``fast``, ``full``) or from a manifest path.

    Args:
        name_or_path: preset name or path to a YAML manifest.
        limit: keep at most this many items per capability (the first of the
            selection, in source order).
        only: keep only these capabilities (all when empty).
        data_dir: local folder with standard benchmark files, for capabilities
            whose source is a ``benchmark`` (default ``$AUDITOR_DATA_DIR``; with
            neither, the hub through ``datasets``); see :mod:`auditor.suite.benchmarks`.
        scorers: the scorer catalogue: the names ``scorer:`` may give, their metrics and their checks
            of an item row (the pipeline passes :data:`auditor.scorers.SCORERS`).

    Raises:
        AuditInputError: unknown preset, invalid manifest (names the key path),
            missing item file, a bad JSONL line (names the line), a bad
            benchmark file, or benchmark data that cannot be found.
    """
    path = manifest_path(name_or_path)
    manifest = _load_yaml(path)
    specs = _specs(path, manifest, scorers)
    names = [c.name for c in specs]
    unknown = [o for o in only if o not in names]
    if unknown:
        close = difflib.get_close_matches(unknown[0], names, n=1)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        raise AuditInputError("--capability", f"{', '.join(map(repr, unknown))} not in suite {manifest['name']!r} "
                                              f"(its capabilities: {', '.join(names)}){hint}")
    caps: list[Capability] = []
    items: list[Item] = []
    sources: list[dict[str, Any]] = []
    for cap in specs:
        if only and cap.name not in only:
            continue
        src, rows, record = capability_rows(cap, path, data_dir)
        if limit is not None and len(rows) > limit:
            rows = rows[:limit]
            record = {**record, "n_selected": len(rows), "limit": limit}
        if not rows:
            raise AuditInputError(src, f"capability {cap.name!r} has no items")
        scorer = scorers[cap.scorer]  # a name the schema accepted
        items.extend(item_from_row(cap, row, src, pos, build_target=scorer.build_target,
                                   output_type=scorer.output_type) for pos, row in rows)
        caps.append(Capability(name=cap.name, group=cap.group, scorer=cap.scorer, metrics=scorer.metrics,
                               build_target=scorer.build_target,
                               output_type="multiple_choice" if scorer.output_type == "multiple_choice" else "generate_until"))
        sources.append(record)
    all_metrics = tuple(f"{c.name}.{m.name}" for c in specs for m in _metrics(scorers, c.scorer))
    units = {f"{c.name}.{m.name}": m.unit for c in specs for m in _metrics(scorers, c.scorer)}
    return Suite(name=manifest["name"], version=manifest["version"], path=str(path), capabilities=tuple(caps),
                 items=tuple(items), all_metrics=all_metrics, sources=tuple(sources), metric_units=units)
