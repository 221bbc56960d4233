"""Assemble one adapter's :class:`~auditor.results.AuditResult` from what the stages produced
(no stage logic here: records in, record out)."""

from __future__ import annotations

import datetime as _dt
import time
from collections.abc import Mapping
from dataclasses import dataclass, field

from ..backends import Backend
from ..backends.ray.cluster import RayBackend
from ..options import AuditOptions
from ..policy import Policy
from ..records import (
    AgreementWithBase,
    BaseModel,
    Budget,
    DriftResult,
    Generation,
    MetricComparison,
    NoiseFloor,
    Round,
    Score,
    Suite,
    Variant,
    Verdict,
)
from ..records.plain import to_plain
from ..results import (
    RESULTS_SCHEMA_VERSION,
    Answer,
    AuditResult,
    BaselineRecord,
    BaseRecord,
    ItemRecord,
    PolicyRecord,
    RunRecord,
    StatisticsRecord,
    SuiteRecord,
)
from ..util.hashing import canonical_sha256
from ..util.version import __version__
from ..util.versions import package_versions


@dataclass(frozen=True, kw_only=True)
class BaselineRun:
    """``--baseline``: the previously approved adapter's variant and its answers to the suite's items
    (each round's are added per adapter, in :class:`Evidence`)."""

    variant: Variant
    generations: tuple[Generation, ...]
    scores: tuple[Score, ...]


@dataclass(frozen=True, kw_only=True)
class Run:
    """What one multi-adapter run shares between its adapters' results (the base pass and the setup).

    Attributes:
        warnings: what the engine's setup found (every adapter's report carries them).
        weight_space_s: seconds of each adapter variant's weight-space pre-screen (``run.timings.weight_space_s``).
    """

    opts: AuditOptions
    t_start: float
    suite: Suite
    policy: Policy
    base: BaseModel
    base_digest: str
    backend: Backend
    backend_reason: str
    scorer_of: Mapping[str, str]
    base_gens: tuple[Generation, ...]
    base_scores: tuple[Score, ...]
    noise: NoiseFloor | None
    n_adapters: int
    baseline: BaselineRun | None = None
    warnings: tuple[str, ...] = ()
    weight_space_s: Mapping[str, float] = field(default_factory=dict)


@dataclass(frozen=True, kw_only=True)
class Evidence:
    """What one adapter's audit concluded on, after its last look.

    Attributes:
        suite: the suite with every item judged (the suite's own, then each round's).
        generations, scores: the base's and the adapter variant's answers to them (and the ``--baseline``
            adapter's in ``baseline_generations`` / ``baseline_scores``).
        comparisons, drift, baseline_comparisons, verdict: the last look's analysis and judgement.
        agreement: the adapter variant's generated answers compared with the base's, on every look's items.
        rounds: one record per look.
        item_round: item id → the look that added it (1 for the suite's own items).
        budget: the escalation budget and what was used of it.
        rounds_s: seconds from the first look to the last (``run.timings.rounds_s``).
    """

    suite: Suite
    generations: tuple[Generation, ...]
    scores: tuple[Score, ...]
    comparisons: tuple[MetricComparison, ...]
    drift: DriftResult
    verdict: Verdict
    agreement: AgreementWithBase
    baseline_comparisons: tuple[MetricComparison, ...] | None = None
    baseline_generations: tuple[Generation, ...] = ()
    baseline_scores: tuple[Score, ...] = ()
    rounds: tuple[Round, ...] = ()
    item_round: Mapping[str, int] = field(default_factory=dict)
    budget: Budget
    rounds_s: float = 0.0


def _for_variant(counts: Mapping[str, int], variant: str) -> dict[str, int]:
    """Per-variant counters of the base, of one adapter variant (named ``adapter`` in results.json) and of
    the ``--baseline`` adapter (``baseline``)."""
    return {("adapter" if v == variant else v): n for v, n in counts.items() if v in ("base", variant, "baseline")}


def result(run: Run, variant: Variant, ev: Evidence) -> AuditResult:
    """The typed record of one adapter's audit (results.json's content)."""
    suite, policy = ev.suite, run.policy
    prev = run.baseline
    return AuditResult(
        schema_version=RESULTS_SCHEMA_VERSION,
        verdict=ev.verdict,
        adapter=variant.info.with_warnings((*variant.warnings, *run.warnings)),
        base=BaseRecord(name=run.base.name, path=str(run.base.path), source=run.base.source,
                        content_hash=run.base.content_hash, hub=run.base.hub, folder_sha256=run.base_digest,
                        reason=run.base.reason or None),
        suite=SuiteRecord(name=suite.name, version=suite.version, path=suite.path,
                          item_ids=tuple(i.id for i in suite.items),
                          items_sha256=canonical_sha256([[i.id, list(i.messages), i.max_new_tokens, i.target]
                                                         + ([list(i.fewshot), i.fewshot_always, list(i.until)]
                                                            if i.fewshot else [])  # (unchanged without samples)
                                                         for i in suite.items]),
                          sources=tuple(dict(src) for src in suite.sources),
                          scorers={c.name: c.scorer for c in suite.capabilities}),
        policy=PolicyRecord(path=policy.path, content=policy.content, sha256=canonical_sha256(policy.content)),
        comparisons=ev.comparisons,
        agreement_with_base=ev.agreement,
        drift=ev.drift,
        items=_item_records(variant.name, ev),
        noise_floor=run.noise,
        baseline=None if prev is None else BaselineRecord(
            adapter=prev.variant.info.with_warnings((*prev.variant.warnings, *run.warnings)),
            comparisons=ev.baseline_comparisons or ()),
        statistics=_statistics_record(policy),
        run=_run_record(run, variant.name, ev),
    )


def _item_records(variant: str, ev: Evidence) -> tuple[ItemRecord, ...]:
    """Every item with its rendered prompt (each variant's where its template rendered another) and each
    variant's answer, scores and scorer detail; the prompts are those the backend rendered for them."""
    gen_of = {(g.item_id, g.variant): g for g in (*ev.generations, *ev.baseline_generations)}
    score_of = {(s.item_id, s.variant): s for s in (*ev.scores, *ev.baseline_scores)}

    def answer(key: tuple[str, str]) -> Answer:
        g, s = gen_of[key], score_of[key]
        return Answer(text=g.text, n_tokens=g.n_tokens, scores=s.values, detail=s.detail)

    rows = []
    others = {"adapter": variant, **({"baseline": "baseline"} if ev.baseline_generations else {})}
    for it in ev.suite.items:
        prompt = gen_of[(it.id, "base")].prompt
        own = {name: p for name, v in others.items() if (p := gen_of[(it.id, v)].prompt) != prompt}
        rows.append(ItemRecord(
            id=it.id, capability=it.capability, group=it.group, prompt=it.prompt, rendered_prompts=own or None,
            rendered_prompt=prompt, messages=it.messages, max_new_tokens=it.max_new_tokens, output_type=it.output_type,
            target=it.target, meta=it.meta, base=answer((it.id, "base")), adapter=answer((it.id, variant)),
            baseline=answer((it.id, "baseline")) if (it.id, "baseline") in gen_of else None,
            round=ev.item_round.get(it.id, 1)))
    return tuple(rows)


def _statistics_record(policy: Policy) -> StatisticsRecord:
    sc = policy.statistics
    return StatisticsRecord(
        confidence=float(sc.confidence), n_resamples=int(sc.n_resamples), seed=int(sc.seed),
        multiplicity=sc.multiplicity, min_items=int(sc.min_items),
        interval="paired bootstrap, expanded percentile (Hesterberg 2015)",
        tests={"pass/fail": "exact McNemar (binomial test on discordant pairs)", "other": "Wilcoxon signed-rank",
               "max_gap": "paired permutation", "excess_gap": "paired permutation",
               "evidence": "one-sided: exact McNemar (pass/fail items), paired sign-flip permutation otherwise"},
        p_adjusted="Benjamini-Hochberg",
        alpha=float(sc.alpha), looks=int(sc.looks), beta=float(sc.beta), clear_harm=float(sc.clear_harm),
        spending=float(sc.spending))


def _run_record(run: Run, variant: str, ev: Evidence) -> RunRecord:
    backend, stats = run.backend, run.backend.stats
    cache = backend.cache.stats.as_dict()
    info = backend.run_info(variant)
    return RunRecord(
        backend=stats.backend, backend_reason=run.backend_reason, dtype=run.opts.dtype,
        dtype_reason=run.opts.dtype_reason or None,
        # vllm: "auto" (its scheduler batches the one generate call)
        batch_size=backend.batch_size, limit=run.opts.limit,
        batch_sizes_used={str(k): v for k, v in sorted(stats.batch_sizes_used.items())},
        capabilities=tuple(c.name for c in run.suite.capabilities),
        decoding="greedy",
        prompts=_prompts_record(run, variant),
        new_tokens=_for_variant(stats.new_tokens, variant),
        generated=_for_variant(stats.generated, variant),
        cache=cache | {k: _for_variant(cache[k], variant) for k in ("hits", "misses")},
        adapters_in_run=run.n_adapters,
        vllm=info if backend.name == "vllm" else None,
        hf=info if backend.name == "hf" else None,
        openai=info if backend.name == "openai" else None,
        model_loaded=backend.model_loaded,
        ray=backend.placement(variant) if isinstance(backend, RayBackend) else None,
        timings={"load_s": round(stats.load_s, 3), "generate_s": round(stats.generate_s, 3),
                 "rounds_s": ev.rounds_s, "total_s": round(time.perf_counter() - run.t_start, 3),
                 **({"weight_space_s": run.weight_space_s[variant]} if variant in run.weight_space_s else {})},
        versions=package_versions(__version__),
        auditor_version=__version__,
        created_at=_dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
        rounds=ev.rounds,
        budget=ev.budget,
    )


def _prompts_record(run: Run, variant: str) -> dict[str, dict[str, str]] | None:
    """``run.prompts``: per variant (``base``, ``adapter``, ``baseline``), the chat template and the tokenizer
    that rendered its prompts (None when the backend was given no templates)."""
    templates = run.backend.templates
    if not templates:
        return None
    names = {"base": "base", "adapter": variant, **({"baseline": "baseline"} if run.baseline else {})}
    return {name: to_plain(templates.get(v, templates["base"])) for name, v in names.items()}
