"""The stage order of one audit, and nothing else (DESIGN.md §2).

``inspect → suite/plan → generate → score → analysis → policy → results`` (the reports are written
by the caller from the returned :class:`~auditor.results.AuditResult`). Cheap checks (arguments,
adapter headers, suite, policy) run before any model is loaded for generation, in the order the
user meets them: backend options, each adapter's files, the suite, the policy, the base.
"""

from __future__ import annotations

import datetime as _dt
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Callable

from rich.markup import escape

from . import __version__
from .analysis import compare_metrics, drift_score
from .analysis.noise_floor import noise_floor
from .backends import BACKENDS, Backend, GenerationCache, choose_backend, fall_back_for
from .errors import AuditInputError
from .inspect import bin_adapter_file, convert_bin_adapter, inspect_adapter, preflight_adapter, resolve_base
from .inspect import hub
from .options import AuditOptions
from .policy import Policy, judge, load_policy
from .records import AdapterInfo, BaseModel, Generation, MetricComparison, NoiseFloor, Score, Suite
from .results import (RESULTS_SCHEMA_VERSION, AdapterRecord, Answer, AuditResult, BaselineRecord, BaseRecord,
                      ItemRecord, PolicyRecord, RunRecord, StatisticsRecord, SuiteRecord)
from .scorers import score_all
from .suite import load_suite, plan_requests, preset_metric_units
from .util.files import cache_dir
from .util.hashing import adapter_digest, canonical_sha256, folder_digest, sha256_file
from .util.versions import package_versions

Log = Callable[[str], Any]


def _for_variant(counts: dict[str, int], variant: str) -> dict[str, int]:
    """Per-variant counters of the base, of one adapter variant (renamed ``adapter``) and of the
    ``--baseline`` adapter (``baseline``)."""
    return {("adapter" if v == variant else v): n for v, n in counts.items() if v in ("base", variant, "baseline")}


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


@dataclass
class _Run:
    """What one multi-adapter run shares between its adapters' results (the base pass and the setup)."""

    opts: AuditOptions
    t_start: float
    suite: Suite
    policy: Policy
    base: BaseModel
    base_digest: str
    backend: Backend
    backend_reason: str
    scorer_of: dict[str, str]
    base_gens: list[Generation]
    base_scores: list[Score]
    noise: NoiseFloor | None
    n_adapters: int
    hub_of: dict[str, dict]
    baseline: tuple[AdapterInfo, str, list[Generation], list[Score]] | None = None


def _given_adapters(opts: AuditOptions, adapters: tuple[str, ...]) -> tuple[tuple[str, ...], dict, dict]:
    """The adapters (and ``--baseline``) as local folders: hub ids resolved to snapshots, ``--allow-bin``
    pickles converted in the cache. Returns (paths, hub record per path, user's .bin per converted path)."""
    given = (*adapters, opts.baseline) if opts.baseline else tuple(adapters)
    # hub ids (owner/name[@revision]) become local snapshots; the resolved commit goes into results.json
    hub_refs = {a: hub.resolve(a, "adapter") for a in given if hub.looks_like_hub_id(a)}
    given = tuple(str(hub_refs[a].path) if a in hub_refs else a for a in given)
    hub_of = {str(ref.path): ref.as_dict() for ref in hub_refs.values()}
    # --allow-bin: pickle adapters become safetensors ones in the cache (the user's folder is never written)
    converted: dict[str, Path] = {}  # converted folder -> the user's .bin file
    if opts.allow_bin:
        conv = {a: str(convert_bin_adapter(a, cache_dir(), opts.max_adapter_bytes))
                for a in given if bin_adapter_file(a) is not None}
        converted = {c: bin_adapter_file(a) for a, c in conv.items()}
        given = tuple(conv.get(a, a) for a in given)
    return given, hub_of, converted


def run_audits(adapters: tuple[str, ...], opts: AuditOptions, log: Log = print) -> list[AuditResult]:
    """Audit several adapters of one base against one base pass.

    The base variant of every item is generated once (or taken from the cache) and each adapter's
    answers are compared with it; one :class:`~auditor.results.AuditResult` per adapter, in the order
    given. Every adapter is checked (headers, tensors, base match) before any model is loaded.

    Raises:
        AuditInputError: any fault in the inputs, or the same adapter given twice.
    """
    t_start = time.perf_counter()
    given, hub_of, converted = _given_adapters(opts, adapters)
    backend_name, backend_reason = choose_backend(opts.backend)
    BACKENDS[backend_name].check_options(opts, len(given))
    if len(opts.served_adapters) > len(given):
        raise AuditInputError("--served-adapter", f"{len(opts.served_adapters)} names for {len(given)} adapters")
    seen: dict[str, str] = {}  # adapter digest -> the argument that named it, in the order given
    for a in given:
        folder, weights, cfg, tensors = preflight_adapter(a, opts.max_adapter_bytes)
        _check_given_once(opts, given, a, adapter_digest(sha256_file(weights), folder / "adapter_config.json"), seen)
        backend_name, backend_reason = fall_back_for(opts.backend, backend_name, backend_reason, cfg, tensors)
        BACKENDS[backend_name].check_adapter(weights, cfg, tensors)
    suite = load_suite(opts.suite, limit=opts.limit, only=opts.capabilities, data_dir=opts.data_dir)
    units = {**preset_metric_units(), **suite.metric_units}
    policy = load_policy(opts.policy, sorted(units), units)
    if any(c.scorer == "ifeval" for c in suite.capabilities):
        from .scorers.ifeval_checkers import PunktDataError, ensure_punkt

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
    backend = BACKENDS[backend_name].create(opts, base, by_variant, infos, cache, base_digest, variants)
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
    noise = noise_floor(backend, suite, base_gens, base_scores, scorer_of, log) if opts.noise_floor else None
    run = _Run(opts, t_start, suite, policy, base, base_digest, backend, backend_reason, scorer_of, base_gens,
               base_scores, noise, len(infos), hub_of)
    if opts.baseline:
        prev_gens = [replace(g, variant="base") for g in generations if g.variant == "baseline"]
        run.baseline = (infos[-1], digests[-1], prev_gens, score_all(items, prev_gens, scorer_of))
    out = []
    for variant, info, digest in zip(variants[:len(adapters)], infos, digests):
        mine = [replace(g, variant="adapter") for g in generations if g.variant == variant]
        out.append(_one_result(run, info, digest, variant, mine, log))
    return out


def _label(opts: AuditOptions, adapter: AdapterInfo) -> tuple[str | None, str]:
    """The nominal label and where it came from: ``--label``, the model card, or none."""
    if opts.label:
        return opts.label, "--label"
    if adapter.nominal_label:
        return adapter.nominal_label, "model card"
    return None, "none"


def _one_result(run: _Run, adapter: AdapterInfo, adapter_id: str, variant: str, adapter_gens: list[Generation],
                log: Log) -> AuditResult:
    """Score, compare, judge and assemble the result of one adapter of a (multi-)audit."""
    suite, policy, opts = run.suite, run.policy, run.opts
    items = {i.id: i for i in suite.items}
    label, label_source = _label(opts, adapter)
    mapping = policy.labels.get(label) if label else None
    if mapping and not {mapping.target, *mapping.off_target} <= set(suite.metric_names()):
        log(f"[yellow]note:[/] DriftScore for label {escape(repr(label))} needs capabilities left out of this run")
        mapping = None

    generations = [*run.base_gens, *adapter_gens]
    scores = [*run.base_scores, *score_all(items, adapter_gens, run.scorer_of)]
    settings = policy.statistics.settings
    comparisons = compare_metrics(suite, scores, settings)
    drift = drift_score(comparisons, label, label_source, mapping.target if mapping else None,
                        list(mapping.off_target) if mapping else [], float(policy.drift.max_drift_score_pts))
    prev_comparisons: list[MetricComparison] | None = None
    if run.baseline is not None:  # candidate vs previously approved adapter: the previous one on the "base" side
        cand = [replace(x, variant="adapter") for x in scores if x.variant == "adapter"]
        prev_comparisons = compare_metrics(suite, [*run.baseline[3], *cand], settings)
    verdict = judge(policy, comparisons, drift, adapter, run.noise, baseline_comparisons=prev_comparisons)
    return AuditResult(
        schema_version=RESULTS_SCHEMA_VERSION,
        verdict=verdict,
        adapter=AdapterRecord.of(adapter, adapter_id, run.hub_of.get(adapter.path)),
        base=BaseRecord(run.base.name, str(run.base.path), run.base.source, run.base.content_hash, run.base.hub,
                        run.base_digest),
        suite=SuiteRecord(suite.name, suite.version, suite.path, [i.id for i in suite.items],
                          canonical_sha256([[i.id, list(i.messages), i.max_new_tokens, i.target] for i in suite.items]),
                          [dict(src) for src in suite.sources]),
        policy=PolicyRecord(policy.path, policy.content, canonical_sha256(policy.content)),
        comparisons=comparisons,
        drift=drift,
        items=_item_records(run, generations, scores),
        noise_floor=run.noise,
        baseline=None if run.baseline is None else BaselineRecord(
            AdapterRecord.of(run.baseline[0], run.baseline[1], run.hub_of.get(run.baseline[0].path)),
            prev_comparisons or []),
        statistics=_statistics_record(policy),
        run=_run_record(run, variant),
    )


def _item_records(run: _Run, generations: list[Generation], scores: list[Score]) -> list[ItemRecord]:
    """Every item with its rendered prompt and each variant's answer, scores and scorer detail."""
    gen_of = {(g.item_id, g.variant): g for g in generations}
    score_of = {(s.item_id, s.variant): s for s in scores}
    prev_of: dict[str, tuple[Generation, Score]] = {}
    if run.baseline is not None:
        prev_score = {x.item_id: x for x in run.baseline[3]}
        prev_of = {g.item_id: (g, prev_score[g.item_id]) for g in run.baseline[2]}

    def answer(g: Generation, s: Score) -> Answer:
        return Answer(g.text, g.n_tokens, s.values, s.detail)

    rows = []
    for it in run.suite.items:
        rows.append(ItemRecord(
            id=it.id, capability=it.capability, group=it.group, prompt=it.prompt,
            rendered_prompt=run.backend.render(it), messages=list(it.messages), max_new_tokens=it.max_new_tokens,
            target=it.target, meta=it.meta,
            base=answer(gen_of[(it.id, "base")], score_of[(it.id, "base")]),
            adapter=answer(gen_of[(it.id, "adapter")], score_of[(it.id, "adapter")]),
            baseline=answer(*prev_of[it.id]) if it.id in prev_of else None))
    return rows


def _statistics_record(policy: Policy) -> StatisticsRecord:
    sc = policy.statistics
    return StatisticsRecord(
        confidence=float(sc.confidence), n_resamples=int(sc.n_resamples), seed=int(sc.seed),
        multiplicity=sc.multiplicity, min_items=int(sc.min_items),
        interval="paired bootstrap, expanded percentile (Hesterberg 2015)",
        tests={"pass/fail": "exact McNemar (binomial test on discordant pairs)", "other": "Wilcoxon signed-rank",
               "max_gap": "paired permutation"},
        p_adjusted="Benjamini-Hochberg")


def _run_record(run: _Run, variant: str) -> RunRecord:
    backend, stats = run.backend, run.backend.stats
    cache = backend.cache.stats.as_dict()
    info = backend.run_info(variant)
    return RunRecord(
        backend=stats.backend, backend_reason=run.backend_reason, dtype=run.opts.dtype,
        # vllm: "auto" (its scheduler batches the one generate call)
        batch_size=backend.batch_size, limit=run.opts.limit,
        batch_sizes_used={str(k): v for k, v in sorted(stats.batch_sizes_used.items())},
        capabilities=[c.name for c in run.suite.capabilities],
        decoding="greedy",
        new_tokens=_for_variant(stats.new_tokens, variant),
        generated=_for_variant(stats.generated, variant),
        cache=cache | {k: _for_variant(cache[k], variant) for k in ("hits", "misses")},
        adapters_in_run=run.n_adapters,
        vllm=info if backend.name == "vllm" else None,
        openai=info if backend.name == "openai" else None,
        model_loaded=backend.model_loaded,
        timings={"load_s": round(stats.load_s, 3), "generate_s": round(stats.generate_s, 3),
                 "total_s": round(time.perf_counter() - run.t_start, 3)},
        versions=package_versions(__version__),
        auditor_version=__version__,
        created_at=_dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
    )
