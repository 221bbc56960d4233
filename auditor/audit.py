"""One audit, stage by stage: the order in which the CLI calls the stages.

``inspection → plan → generate → score → compare → judge → report``
(DESIGN.md §2). Cheap checks (suite, policy, adapter header) run before any
model is loaded for generation.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import json
import platform
import time
from dataclasses import dataclass, field, replace
from importlib import metadata
from pathlib import Path
from typing import Any

from rich.markup import escape

from . import __version__, hub
from .cache import GenerationCache, adapter_digest, folder_digest
from .compare import StatsSettings, compare_metrics, drift_score
from .errors import AuditInputError
from .generate import HFBackend
from .generate_openai import OpenAIBackend
from .generate_vllm import VLLMBackend, check_engine_args, check_vllm_servable, choose_backend, vllm_unsupported
from .inspection import bin_adapter_file, convert_bin_adapter, inspect_adapter, preflight_adapter
from .judge import judge, load_policy
from .models import resolve_base, sha256_file
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
    #: items per generate call, or "auto" (chosen from free memory per generation budget)
    batch_size: int | str = 24
    dtype: str = "float32"
    #: local folder with standard benchmark files (``--data-dir`` / ``$AUDITOR_DATA_DIR``)
    data_dir: str | None = None
    #: replay the base variant with another batch composition and count changed answers
    noise_floor: bool = False
    #: read and write the generation cache (``--no-cache`` turns it off)
    cache: bool = True
    #: show rich progress bars on stderr (``--quiet`` turns them off)
    progress: bool = True
    #: a previously approved adapter to compare each candidate with as well (release-checklist mode)
    baseline: str | None = None
    #: ``auto`` (vllm when importable and a GPU is present, else hf), ``hf`` or ``vllm``
    backend: str = "auto"
    #: further ``vllm.LLM`` keyword arguments (``--vllm-arg KEY=VALUE``)
    vllm_args: dict[str, Any] = field(default_factory=dict)
    #: ``--backend openai``: the server's API root, the base's served name, the adapters' served
    #: names (in the order of the adapters, then --baseline), requests in flight at once
    endpoint: str | None = None
    served_base: str | None = None
    served_adapters: tuple[str, ...] = ()
    concurrency: int = 8
    #: ``--allow-bin``: convert a pickle ``adapter_model.bin`` (torch.load weights_only=True) and audit that
    allow_bin: bool = False
    #: ``--max-adapter-size``: the largest adapter weights file accepted (None: $AUDITOR_MAX_ADAPTER_SIZE or 4 GiB)
    max_adapter_bytes: int | None = None


def _noise_floor(backend: HFBackend, suite: Any, generations: list, scores: list, items: dict,
                 scorer_of: dict[str, str], log: Any) -> dict[str, Any]:
    """Replay the base variant with another batch composition (half the batch
    size; a group that fits in one batch is cut in two) and count items whose
    answer, or score, changed. A batch-invariant
    backend gives zero (transformers is not always: transformers#25921)."""
    bs = backend.batch_size
    used = bs if bs != "auto" else max(backend.stats.batch_sizes_used.values(), default=2)
    replay_bs = used // 2 if used > 1 else 2
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


def _canonical_sha256(obj: Any) -> str:
    """sha256 (hex) of ``obj`` as canonical JSON (sorted keys, no spaces): the same
    content gives the same hash whatever its file's layout or comments."""
    return hashlib.sha256(json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                                     default=str).encode("utf-8")).hexdigest()


def _for_variant(counts: dict[str, int], variant: str) -> dict[str, int]:
    """Per-variant counters of the base, of one adapter variant (renamed ``adapter``) and of the
    ``--baseline`` adapter (``baseline``)."""
    return {("adapter" if v == variant else v): n for v, n in counts.items() if v in ("base", variant, "baseline")}


def _cache_stats_for(stats: dict[str, Any], variant: str) -> dict[str, Any]:
    """The cache counters of the base and of one adapter variant (see :func:`_for_variant`)."""
    return stats | {k: _for_variant(stats[k], variant) for k in ("hits", "misses")}


def run_audit(opts: AuditOptions, log: Any = print) -> dict[str, Any]:
    """Run one audit of ``opts.adapter`` and return the results dict (the content of results.json).

    Raises:
        AuditInputError: any fault in the inputs (before a verdict is formed).
    """
    return run_audits(opts, (opts.adapter,), log)[0]


def _check_given_once(opts: AuditOptions, given: tuple[str, ...], arg: str, digest: str, seen: dict[str, str]) -> None:
    """Refuse an adapter given twice (same weights and config), named as the user gave it (folder or
    weights file); checked before the suite, the base or any model loads.

    Raises:
        AuditInputError: the second occurrence, naming the first (or the --baseline clash).
    """
    if digest in seen:
        what = "--baseline is the" if opts.baseline and arg is given[-1] else "same adapter (weights and config) as"
        raise AuditInputError(arg, f"{what} {seen[digest]}{' adapter' if what.startswith('--') else ''}; "
                                   "give each adapter once")
    seen[digest] = arg


def run_audits(opts: AuditOptions, adapters: tuple[str, ...], log: Any = print) -> list[dict[str, Any]]:
    """Audit several adapters of one base against one base pass.

    The base variant of every item is generated once (or taken from the
    cache) and each adapter's answers are compared with it; one results dict
    per adapter, in the order given. Every adapter is checked (headers,
    tensors, base match) before any model is loaded.

    Raises:
        AuditInputError: any fault in the inputs, or the same adapter given twice.
    """
    t_start = time.perf_counter()
    given = (*adapters, opts.baseline) if opts.baseline else tuple(adapters)
    # hub ids (owner/name[@revision]) become local snapshots; the resolved commit goes into results.json
    hub_refs = {a: hub.resolve(a, "adapter") for a in given if hub.looks_like_hub_id(a)}
    given = tuple(str(hub_refs[a].path) if a in hub_refs else a for a in given)
    hub_of = {str(ref.path): ref.as_dict() for ref in hub_refs.values()}
    # --allow-bin: pickle adapters become safetensors ones in the cache (the user's folder is never written)
    converted: dict[str, Path] = {}  # converted folder -> the user's .bin file
    if opts.allow_bin:
        from .cachedir import cache_dir

        conv = {a: str(convert_bin_adapter(a, cache_dir(), opts.max_adapter_bytes))
                for a in given if bin_adapter_file(a) is not None}
        converted = {c: bin_adapter_file(a) for a, c in conv.items()}
        given = tuple(conv.get(a, a) for a in given)
    backend_name, backend_reason = choose_backend(opts.backend)
    if backend_name == "openai" and not opts.endpoint:
        raise AuditInputError("--backend openai", "needs --endpoint URL (the server's API root, e.g. "
                                                  "http://127.0.0.1:8000/v1)")
    if len(opts.served_adapters) > len(given):
        raise AuditInputError("--served-adapter", f"{len(opts.served_adapters)} names for {len(given)} adapters")
    seen: dict[str, str] = {}  # adapter digest -> the argument that named it, in the order given
    if backend_name == "vllm":
        check_engine_args(opts.vllm_args)  # a misspelt --vllm-arg fails now, not after the model loaded
    for a in given:
        folder, weights, cfg, tensors = preflight_adapter(a, opts.max_adapter_bytes)
        _check_given_once(opts, given, a, adapter_digest(sha256_file(weights), folder / "adapter_config.json"), seen)
        if backend_name == "vllm" and opts.backend == "auto" and (what := vllm_unsupported(cfg, tensors)):
            backend_name, backend_reason = "hf", f"auto: vLLM cannot serve {what}, hf"
        if backend_name == "vllm":
            check_vllm_servable(weights, cfg, tensors)
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
    infos = [inspect_adapter(a, base.path, base.name, opts.max_adapter_bytes) for a in given]
    for a, info in zip(given, infos):
        if a in converted:
            info.warnings.append(f"pickle adapter {converted[a]} loaded with torch.load(weights_only=True) "
                                 f"(--allow-bin) and audited from its safetensors conversion in {a}")
    digests = list(seen)
    # variant names: "adapter" for a single audit (what results.json has always said), adapter0.. for several,
    # "baseline" for the previously approved adapter
    variants = ["adapter"] if len(adapters) == 1 else [f"adapter{k}" for k in range(len(adapters))]
    if opts.baseline:
        variants.append("baseline")
    for info in infos:
        log(f"base: {escape(base.name)} ({escape(base.source)}); adapter: {escape(info.path)} ({'DoRA' if info.dora else 'LoRA'} "
            f"rank {info.max_rank}{f' (config r={info.r})' if info.max_rank != info.r else ''}, "
            f"{info.matched_modules} modules)")
        for w in info.warnings:
            log(f"[yellow]warning:[/] {escape(w)}")

    cache = GenerationCache.default(enabled=opts.cache)
    base_digest = folder_digest(base.path)
    by_variant = {v: (Path(i.path), d) for v, i, d in zip(variants, infos, digests)}
    log(f"backend: {backend_name} ({backend_reason})")
    backend: HFBackend | VLLMBackend | OpenAIBackend
    if backend_name == "openai":
        backend = OpenAIBackend(base.path, by_variant, endpoint=opts.endpoint, served_base=opts.served_base,
                                served_names=dict(zip(variants, opts.served_adapters)),
                                concurrency=opts.concurrency, cache=cache, base_digest=base_digest,
                                base_name=base.name)
    elif backend_name == "vllm":
        backend = VLLMBackend(base.path, by_variant, max_rank=max(i.max_rank for i in infos), dtype=opts.dtype,
                              cache=cache, base_digest=base_digest, engine_args=opts.vllm_args)
    else:
        backend = HFBackend(base.path, by_variant, batch_size=opts.batch_size, dtype=opts.dtype, cache=cache,
                            base_digest=base_digest)
    backend.show_progress = opts.progress
    generations = backend.generate(plan_requests(suite, ("base", *variants)))
    cs = cache.stats
    if cs.enabled:
        log(f"generation cache: {sum(cs.hits.values())} hits ("
            + ", ".join(f"{v} {n}" for v, n in sorted(cs.hits.items())) + f"), {sum(cs.misses.values())} generated")
    items = {i.id: i for i in suite.items}
    scorer_of = {c.name: c.scorer for c in suite.capabilities}
    base_gens = [g for g in generations if g.variant == "base"]
    base_scores = score_all(items, base_gens, scorer_of)
    noise = None
    if opts.noise_floor:
        noise = _noise_floor(backend, suite, base_gens, base_scores, items, scorer_of, log)
    shared = {"t_start": t_start, "suite": suite, "policy": policy, "base": base, "base_digest": base_digest,
              "backend": backend, "items": items, "scorer_of": scorer_of, "base_gens": base_gens,
              "base_scores": base_scores, "noise": noise, "n_adapters": len(infos), "baseline": None,
              "hub_of": hub_of, "backend_reason": backend_reason}
    if opts.baseline:
        prev_gens = [replace(g, variant="base") for g in generations if g.variant == "baseline"]
        shared["baseline"] = {"info": infos[-1], "digest": digests[-1], "gens": prev_gens,
                              "scores": score_all(items, prev_gens, scorer_of)}
    out = []
    for variant, info, digest in zip(variants[:len(adapters)], infos, digests):
        mine = [replace(g, variant="adapter") for g in generations if g.variant == variant]
        out.append(_one_result(opts, shared, info, digest, variant, mine, log))
    return out


def _one_result(opts: AuditOptions, shared: dict[str, Any], adapter: Any, adapter_id: str, variant: str,
                adapter_gens: list, log: Any) -> dict[str, Any]:
    """Score, compare, judge and assemble results.json for one adapter of a (multi-)audit."""
    suite, policy, base, backend = shared["suite"], shared["policy"], shared["base"], shared["backend"]
    items, scorer_of, noise = shared["items"], shared["scorer_of"], shared["noise"]
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

    generations = [*shared["base_gens"], *adapter_gens]
    scores = [*shared["base_scores"], *score_all(items, adapter_gens, scorer_of)]
    sc = policy.statistics
    stats_settings = StatsSettings(float(sc["confidence"]), int(sc["n_resamples"]), int(sc["seed"]))
    comparisons = compare_metrics(suite, scores, stats_settings)
    drift = drift_score(
        comparisons, label, label_source,
        mapping["target"] if mapping else None, list(mapping.get("off_target", [])) if mapping else [],
        float(policy.drift["max_drift_score_pts"]),
    )
    prev = shared["baseline"]
    prev_comparisons = None
    if prev is not None:  # candidate vs previously approved adapter: the previous one on the "base" side
        cand = [replace(x, variant="adapter") for x in scores if x.variant == "adapter"]
        prev_comparisons = compare_metrics(suite, [*prev["scores"], *cand], stats_settings)
    verdict = judge(policy, comparisons, drift, adapter, noise, baseline_comparisons=prev_comparisons)

    gen_of = {(g.item_id, g.variant): g for g in generations}
    if prev is not None:
        prev_score = {x.item_id: x for x in prev["scores"]}
        prev_of = {g.item_id: (g, prev_score[g.item_id]) for g in prev["gens"]}
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
        if prev is not None:
            g, s = prev_of[it.id]
            row["baseline"] = {"text": g.text, "n_tokens": g.n_tokens, "scores": s.values, "detail": s.detail}
        item_rows.append(row)

    stats = backend.stats
    adapter_plain = to_plain(adapter)
    adapter_plain["max_rank"] = adapter.max_rank
    adapter_plain["content_sha256"] = adapter_id
    adapter_plain["hub"] = shared["hub_of"].get(adapter.path)
    return {
        "schema_version": RESULTS_SCHEMA_VERSION,
        "verdict": to_plain(verdict),
        "adapter": adapter_plain,
        "base": to_plain(base) | {"path": str(base.path), "folder_sha256": shared["base_digest"]},
        "suite": {"name": suite.name, "version": suite.version, "path": suite.path,
                  "item_ids": [i.id for i in suite.items],
                  "items_sha256": _canonical_sha256([[i.id, list(i.messages), i.max_new_tokens, i.target]
                                                     for i in suite.items]),
                  "sources": [dict(src) for src in suite.sources]},
        "policy": {"path": policy.path, "content": policy.raw, "sha256": _canonical_sha256(policy.raw)},
        "comparisons": to_plain(comparisons),
        "drift": to_plain(drift),
        "items": item_rows,
        "noise_floor": noise,
        "baseline": None if prev is None else {
            "adapter": to_plain(prev["info"]) | {"max_rank": prev["info"].max_rank, "content_sha256": prev["digest"],
                                                 "hub": shared["hub_of"].get(prev["info"].path)},
            "comparisons": to_plain(prev_comparisons),
        },
        "statistics": {"confidence": float(sc["confidence"]), "n_resamples": int(sc["n_resamples"]),
                       "seed": int(sc["seed"]), "multiplicity": sc["multiplicity"], "min_items": int(sc["min_items"]),
                       "interval": "paired bootstrap, expanded percentile (Hesterberg 2015)",
                       "tests": {"pass/fail": "exact McNemar (binomial test on discordant pairs)",
                                 "other": "Wilcoxon signed-rank", "max_gap": "paired permutation"},
                       "p_adjusted": "Benjamini-Hochberg"},
        "run": {
            "backend": stats.backend, "backend_reason": shared["backend_reason"], "dtype": opts.dtype,
            # vllm: "auto" (its scheduler batches the one generate call)
            "batch_size": backend.batch_size, "limit": opts.limit,
            "batch_sizes_used": {str(k): v for k, v in sorted(stats.batch_sizes_used.items())},
            "capabilities": [c.name for c in suite.capabilities],
            "decoding": "greedy",
            "new_tokens": _for_variant(stats.new_tokens, variant),
            "generated": _for_variant(stats.generated, variant),
            "cache": _cache_stats_for(backend.cache.stats.as_dict(), variant),
            "adapters_in_run": shared["n_adapters"],
            **({"vllm": backend.run_info(variant)} if isinstance(backend, VLLMBackend) else {}),
            **({"openai": backend.run_info()} if isinstance(backend, OpenAIBackend) else {}),
            "model_loaded": backend.model_loaded,
            "timings": {"load_s": round(stats.load_s, 3), "generate_s": round(stats.generate_s, 3),
                        "total_s": round(time.perf_counter() - shared["t_start"], 3)},
            "versions": package_versions(),
            "auditor_version": __version__,
            "created_at": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        },
    }
