"""One audit, stage by stage: the order in which the CLI calls the stages.

``inspection → plan → generate → score → compare → judge → report``
(DESIGN.md §2). Cheap checks (suite, policy, adapter header) run before any
model is loaded for generation.
"""

from __future__ import annotations

import datetime as _dt
import platform
import time
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

from rich.markup import escape

from . import __version__
from .cache import GenerationCache, adapter_digest, folder_digest
from .compare import StatsSettings, compare_metrics, drift_score
from .errors import AuditInputError
from .generate import HFBackend
from .inspection import inspect_adapter, preflight_adapter
from .judge import judge, load_policy
from .models import resolve_base
from .plan import load_suite, plan_requests, preset_metric_units
from .records import to_plain
from .report import RESULTS_SCHEMA_VERSION
from .score import score_all

_VERSIONED = ("torch", "transformers", "peft", "lm_eval", "nltk", "langdetect", "safetensors")


def package_versions() -> dict[str, str]:
    out = {"python": platform.python_version(), "adapter-auditor": __version__}
    for name in _VERSIONED:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            pass
    return out


@dataclass
class AuditOptions:
    """Settings of one audit (what the CLI passes in)."""

    adapter: str
    base: str | None = None
    policy: str | None = None
    suite: str = "smoke"
    label: str | None = None
    limit: int | None = None
    capabilities: tuple[str, ...] = ()
    batch_size: int = 24
    dtype: str = "float32"
    #: local folder with standard benchmark files (``--data-dir`` / ``$AUDITOR_DATA_DIR``)
    data_dir: str | None = None
    #: replay the base variant with another batch composition and count changed answers
    noise_floor: bool = False
    #: read and write the generation cache (``--no-cache`` turns it off)
    cache: bool = True


def _noise_floor(backend: HFBackend, suite: Any, generations: list, scores: list, items: dict,
                 scorer_of: dict[str, str], log: Any) -> dict[str, Any]:
    """Replay the base variant with another batch composition (half the batch
    size; a group that fits in one batch is cut in two) and count items whose
    answer, or score, changed. A batch-invariant
    backend gives zero (transformers is not always: transformers#25921)."""
    bs = backend.batch_size
    replay_bs = bs // 2 if bs > 1 else 2
    log(f"noise floor: replaying the base variant with batch size {replay_bs} (was {bs})")
    backend.batch_size = replay_bs
    try:
        replay = backend.generate(plan_requests(suite, ("base",)), split_small=True, use_cache=False)
    finally:
        backend.batch_size = bs
    first = {g.item_id: g for g in generations if g.variant == "base"}
    first_scores = {s.item_id: s.values for s in scores if s.variant == "base"}
    replay_scores = {s.item_id: s.values
                     for s in score_all(items, replay, scorer_of)}
    changed = sorted(g.item_id for g in replay if g.text != first[g.item_id].text)
    score_changed = sorted(i for i in changed if replay_scores[i] != first_scores[i])
    return {"n_items": len(replay), "batch_sizes": [bs, replay_bs], "n_differ": len(changed),
            "n_score_differ": len(score_changed), "items_differ": changed, "items_score_differ": score_changed}


def run_audit(opts: AuditOptions, log: Any = print) -> dict[str, Any]:
    """Run one audit and return the results dict (the content of results.json).

    Raises:
        AuditInputError: any fault in the inputs (before a verdict is formed).
    """
    t_start = time.perf_counter()
    preflight_adapter(opts.adapter)
    suite = load_suite(opts.suite, limit=opts.limit, only=opts.capabilities, data_dir=opts.data_dir)
    units = {**preset_metric_units(), **suite.metric_units}
    policy = load_policy(opts.policy, sorted(units), units)
    if any(c.scorer == "ifeval" for c in suite.capabilities):
        from .ifeval_support import PunktDataError, ensure_punkt

        try:
            ensure_punkt()
        except PunktDataError as e:
            raise AuditInputError("nltk punkt_tab", str(e)) from None
    base = resolve_base(opts.base)
    adapter = inspect_adapter(opts.adapter, base.path, base.name)
    log(f"base: {escape(base.name)} ({escape(base.source)}); adapter: {escape(adapter.path)} (LoRA r={adapter.r}, "
        f"{adapter.matched_modules} modules)")
    for w in adapter.warnings:
        log(f"[yellow]warning:[/] {escape(w)}")

    if opts.label:
        label, label_source = opts.label, "--label"
    elif adapter.nominal_label:
        label, label_source = adapter.nominal_label, "model card"
    else:
        label, label_source = None, "none"
    mapping = policy.labels.get(label) if label else None
    run_metrics = set(suite.metric_names())
    if mapping and not {mapping["target"], *mapping.get("off_target", [])} <= run_metrics:
        log(f"[yellow]note:[/] DriftScore for label {escape(repr(label))} needs capabilities left out of this run")
        mapping = None

    cache = GenerationCache.default(enabled=opts.cache)
    base_digest = folder_digest(base.path)
    adapter_id = adapter_digest(adapter.sha256, Path(adapter.path) / "adapter_config.json")
    backend = HFBackend(base.path, Path(adapter.path), batch_size=opts.batch_size, dtype=opts.dtype,
                        cache=cache, base_digest=base_digest, adapter_digest=adapter_id)
    requests = plan_requests(suite)
    generations = backend.generate(requests)
    cs = cache.stats
    if cs.enabled:
        log(f"generation cache: {sum(cs.hits.values())} hits ("
            + ", ".join(f"{v} {n}" for v, n in sorted(cs.hits.items())) + f"), {sum(cs.misses.values())} generated")
    items = {i.id: i for i in suite.items}
    scorer_of = {c.name: c.scorer for c in suite.capabilities}
    scores = score_all(items, generations, scorer_of)
    sc = policy.statistics
    comparisons = compare_metrics(suite, scores, StatsSettings(float(sc["confidence"]), int(sc["n_resamples"]),
                                                               int(sc["seed"])))
    drift = drift_score(
        comparisons, label, label_source,
        mapping["target"] if mapping else None, list(mapping.get("off_target", [])) if mapping else [],
        float(policy.drift["max_drift_score_pts"]),
    )
    noise = None
    if opts.noise_floor:
        noise = _noise_floor(backend, suite, generations, scores, items, scorer_of, log)
    verdict = judge(policy, comparisons, drift, adapter, noise)

    gen_of = {(g.item_id, g.variant): g for g in generations}
    score_of = {(s.item_id, s.variant): s for s in scores}
    item_rows = []
    for it in suite.items:
        row: dict[str, Any] = {"id": it.id, "capability": it.capability, "group": it.group,
                               "prompt": it.prompt, "rendered_prompt": backend.rendered[it.id],
                               "messages": list(it.messages), "max_new_tokens": it.max_new_tokens,
                               "target": it.target, "meta": it.meta}
        for v in ("base", "adapter"):
            g, s = gen_of[(it.id, v)], score_of[(it.id, v)]
            row[v] = {"text": g.text, "n_tokens": g.n_tokens, "scores": s.values, "detail": s.detail}
        item_rows.append(row)

    stats = backend.stats
    adapter_plain = to_plain(adapter)
    adapter_plain["max_rank"] = adapter.max_rank
    adapter_plain["content_sha256"] = adapter_id
    return {
        "schema_version": RESULTS_SCHEMA_VERSION,
        "verdict": to_plain(verdict),
        "adapter": adapter_plain,
        "base": to_plain(base) | {"path": str(base.path), "folder_sha256": base_digest},
        "suite": {"name": suite.name, "version": suite.version, "path": suite.path,
                  "item_ids": [i.id for i in suite.items],
                  "sources": [dict(src) for src in suite.sources]},
        "policy": {"path": policy.path, "content": policy.raw},
        "comparisons": to_plain(comparisons),
        "drift": to_plain(drift),
        "items": item_rows,
        "noise_floor": noise,
        "statistics": {"confidence": float(sc["confidence"]), "n_resamples": int(sc["n_resamples"]),
                       "seed": int(sc["seed"]), "multiplicity": sc["multiplicity"], "min_items": int(sc["min_items"]),
                       "interval": "paired bootstrap, expanded percentile (Hesterberg 2015)",
                       "tests": {"pass/fail": "exact McNemar (binomial test on discordant pairs)",
                                 "other": "Wilcoxon signed-rank", "max_gap": "paired permutation"},
                       "p_adjusted": "Benjamini-Hochberg"},
        "run": {
            "backend": stats.backend, "dtype": opts.dtype, "batch_size": opts.batch_size, "limit": opts.limit,
            "capabilities": [c.name for c in suite.capabilities],
            "decoding": "greedy",
            "new_tokens": stats.new_tokens,
            "generated": stats.generated,
            "cache": cache.stats.as_dict(),
            "model_loaded": backend.model_loaded,
            "timings": {"load_s": round(stats.load_s, 3), "generate_s": round(stats.generate_s, 3),
                        "total_s": round(time.perf_counter() - t_start, 3)},
            "versions": package_versions(),
            "auditor_version": __version__,
            "created_at": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        },
    }
