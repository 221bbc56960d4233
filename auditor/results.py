"""The whole audit of one adapter as one typed record: what results.json holds.

:class:`AuditResult` is what the pipeline returns (:func:`auditor.audit`), what every
report format reads, and what ``audit report`` loads back from results.json (checked
against the shipped JSON Schema ``auditor/data/schemas/results.schema.json`` first, then typed
with :func:`auditor.records.plain.from_plain`). Its fields, in order, are results.json's
top-level keys; each part's fields are that block's keys.

Units are those of :mod:`auditor.records`: scores are fractions, deltas points.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from .records import (
    AdapterRecord,
    AgreementWithBase,
    Budget,
    DriftResult,
    MetricComparison,
    NoiseFloor,
    Round,
    Verdict,
)
from .records.plain import from_plain, to_plain
from .records.vocab import OutputType

#: results.json's ``schema_version`` (the shipped schema's version); 6: rules carry ``rule_id``, ``kind``, ``metric``;
#: 7: items carry ``output_type`` (a multiple-choice item scored by log-likelihood has ``max_new_tokens`` 0);
#: 8: ``agreement_with_base``, the adapter's generated answers compared with the base's, per capability and overall;
#: 9: ``noise_floor`` says what the replay varied and each metric's shift, rules carry ``noise`` and ``within_noise``
RESULTS_SCHEMA_VERSION = 9

_OMIT = {"omit_none": True}


@dataclass(frozen=True, kw_only=True)
class BaseRecord:
    """``base``: the audited base model (:class:`~auditor.records.BaseModel`) and ``folder_sha256``,
    the content digest of the folder that was loaded (it keys every cached answer), and ``reason``, why
    this base was audited (absent in results written before it was recorded)."""

    name: str
    path: str
    source: str
    content_hash: str
    hub: Mapping[str, Any] | None = None
    folder_sha256: str | None = None
    reason: str | None = field(default=None, metadata=_OMIT)


@dataclass(frozen=True, kw_only=True)
class SuiteRecord:
    """``suite``: the manifest, the item ids run, the hash of the items' content (id, messages,
    budget, target) and where each capability's items came from."""

    name: str
    version: int | str
    path: str
    item_ids: tuple[str, ...]
    items_sha256: str
    sources: tuple[Mapping[str, Any], ...] = ()
    #: capability → its scorer's name (the report asks the scorer how to explain an item's detail)
    scorers: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True, kw_only=True)
class PolicyRecord:
    """``policy``: the file, its content as validated and the content's canonical sha256."""

    path: str
    content: Mapping[str, Any]
    sha256: str


@dataclass(frozen=True, kw_only=True)
class Answer:
    """One variant's answer to an item: the text (untrusted), tokens generated, scores, scorer detail."""

    text: str
    n_tokens: int
    scores: Mapping[str, float | None]
    detail: Mapping[str, Any]


@dataclass(frozen=True, kw_only=True)
class ItemRecord:
    """``items[]``: one item, its rendered prompt (the base variant's) and each variant's answer;
    ``rendered_prompts`` holds the prompt of each other variant (``adapter``, ``baseline``) whose chat
    template rendered it differently (absent when every variant saw ``rendered_prompt``)."""

    id: str
    capability: str
    group: str
    prompt: str
    rendered_prompt: str
    messages: tuple[Mapping[str, str], ...] = ()
    max_new_tokens: int = 1
    #: how the item was answered: ``generate_until`` (decoded) or ``multiple_choice`` (each choice's
    #: log-likelihood, in the answers' ``detail.loglikelihoods``; no token generated)
    output_type: OutputType = "generate_until"
    target: Any = field(default_factory=dict)
    meta: Mapping[str, Any] = field(default_factory=dict)
    base: Answer | None = None
    adapter: Answer | None = None
    baseline: Answer | None = field(default=None, metadata=_OMIT)
    #: the look that added the item: 1 for the suite's own items, then one per round of items
    round: int = 1
    rendered_prompts: Mapping[str, str] | None = field(default=None, metadata=_OMIT)


@dataclass(frozen=True, kw_only=True)
class BaselineRecord:
    """``baseline`` (release-checklist mode): the previously approved adapter and the candidate's
    comparisons with it (their "base" side is the previous adapter)."""

    adapter: AdapterRecord
    comparisons: tuple[MetricComparison, ...]


@dataclass(frozen=True, kw_only=True)
class StatisticsRecord:
    """``statistics``: how intervals and tests were computed (the policy's ``statistics:`` section)."""

    confidence: float
    n_resamples: int
    seed: int
    multiplicity: str
    min_items: int
    interval: str | None = field(default=None, metadata=_OMIT)
    tests: Mapping[str, str] | None = field(default=None, metadata=_OMIT)
    p_adjusted: str | None = field(default=None, metadata=_OMIT)
    #: the evidence mode's settings (auditor.policy.decisions): false-fail rate over all rules and
    #: looks, at most this many looks, miss rate of a clear regression, what clear means (× the limit)
    alpha: float | None = field(default=None, metadata=_OMIT)
    looks: int | None = field(default=None, metadata=_OMIT)
    beta: float | None = field(default=None, metadata=_OMIT)
    clear_harm: float | None = field(default=None, metadata=_OMIT)
    spending: float | None = field(default=None, metadata=_OMIT)


@dataclass(frozen=True, kw_only=True)
class RunRecord:
    """``run``: backend and settings, token and cache counters, timings (seconds), versions; fields in
    results.json's key order.

    ``vllm`` / ``openai`` hold the backend's own record (:meth:`auditor.backends.Backend.run_info`)
    and are present only for that backend. ``prompts`` names, per variant (``base``, ``adapter``,
    ``baseline``), the chat template and tokenizer that rendered its prompts
    (:class:`~auditor.records.PromptTemplate`)."""

    backend: str
    backend_reason: str | None = field(default=None, metadata=_OMIT)
    dtype: str
    #: why: ``--dtype X``, or ``auto: ...`` (the hardware's native bf16, or its absence)
    dtype_reason: str | None = field(default=None, metadata=_OMIT)
    batch_size: int | str
    limit: int | None
    batch_sizes_used: Mapping[str, int] | None = field(default=None, metadata=_OMIT)
    capabilities: tuple[str, ...]
    decoding: str
    prompts: Mapping[str, Mapping[str, str]] | None = field(default=None, metadata=_OMIT)
    new_tokens: Mapping[str, int] | None = field(default=None, metadata=_OMIT)
    generated: Mapping[str, int] | None = field(default=None, metadata=_OMIT)
    cache: Mapping[str, Any] | None = field(default=None, metadata=_OMIT)
    adapters_in_run: int | None = field(default=None, metadata=_OMIT)
    vllm: Mapping[str, Any] | None = field(default=None, metadata=_OMIT)
    #: the hf backend's engine: ``batching`` (continuous / static), each continuous stream (variant, requests,
    #: slots, new tokens, seconds) and how ``--batch-size auto`` chose the slots
    hf: Mapping[str, Any] | None = field(default=None, metadata=_OMIT)
    openai: Mapping[str, Any] | None = field(default=None, metadata=_OMIT)
    model_loaded: bool | None = field(default=None, metadata=_OMIT)
    #: ``--ray``: the cluster's address, each worker (node, CPUs, GPUs, torch threads, the adapters it served),
    #: the base pass worker and the worker that served this adapter; absent for a single-process run
    ray: Mapping[str, Any] | None = field(default=None, metadata=_OMIT)
    #: one record per look: the items judged per capability, the items its round added, the rules
    #: undecided after it (which bought the next round)
    rounds: tuple[Round, ...] = ()
    #: the escalation budget (items, seconds, the looks planned) and the items used of it (the rounds'
    #: seconds are ``timings.rounds_s``)
    budget: Budget | None = None
    timings: Mapping[str, float]
    versions: Mapping[str, str]
    auditor_version: str
    created_at: str


@dataclass(frozen=True, kw_only=True)
class AuditResult:
    """One adapter's audit: verdict, adapter, base, suite, policy, comparisons, agreement with the base,
    DriftScore, every item with both answers, noise floor, release comparison, statistics, run.

    ``to_dict()`` is results.json's content; :meth:`from_dict` reads it back (after the schema
    check). ``passed`` is what the exit code says."""

    schema_version: int
    verdict: Verdict
    adapter: AdapterRecord
    base: BaseRecord
    suite: SuiteRecord
    policy: PolicyRecord
    comparisons: tuple[MetricComparison, ...]
    #: how many of the adapter's generated answers are the base's, and where the others differ (per capability and
    #: overall; descriptive, no rule acts on it)
    agreement_with_base: AgreementWithBase = field(default_factory=AgreementWithBase)
    drift: DriftResult
    items: tuple[ItemRecord, ...]
    noise_floor: NoiseFloor | None
    baseline: BaselineRecord | None
    statistics: StatisticsRecord
    run: RunRecord

    @property
    def passed(self) -> bool:
        return self.verdict.verdict == "pass"

    def to_dict(self) -> dict[str, Any]:
        """results.json's content (JSON-ready), keys in results.json's order."""
        return to_plain(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> AuditResult:
        """The typed record of a results.json mapping that passed the schema check."""
        return from_plain(cls, dict(data))

    def flat_metrics(self, prefix: str = "audit/") -> dict[str, float]:
        """The audit's figures as one flat ``str → float`` mapping, for ``trainer.log(...)`` or ``wandb.log(...)``;
        the unit is the end of each key and a figure that is None (no interval, no DriftScore) is left out.

        Keys (``<metric>`` is a metric id such as ``math.numeric_match``):

        - ``{prefix}verdict_pass``: 1.0 pass, 0.0 fail; ``{prefix}rules_fail_n`` / ``rules_warn_n``: rules failing /
          warning (counts);
        - ``{prefix}<metric>/base_frac``, ``adapter_frac`` (fractions in [0, 1]; a metric in another unit ends in
          it: ``verbosity.words/base_words``), ``delta_pts`` (adapter − base in points; other units:
          ``delta_words``), ``ci_low_pts`` / ``ci_high_pts`` (its interval, same unit), ``rel_delta_pct`` (% of
          base), ``p_value`` (unadjusted), ``n_items`` (count);
        - ``{prefix}drift_score_pts``, ``target_gain_pts``, ``off_target_gain_pts`` and ``drift_ci_low_pts`` /
          ``drift_ci_high_pts`` (points: :class:`~auditor.records.DriftResult`);
        - with a baseline (release-checklist mode), the same per-metric keys under ``{prefix}vs_baseline/<metric>/``.
        """
        out: dict[str, float] = {
            f"{prefix}verdict_pass": 1.0 if self.passed else 0.0,
            f"{prefix}rules_fail_n": float(sum(r.outcome == "fail" for r in self.verdict.rules)),
            f"{prefix}rules_warn_n": float(sum(r.outcome == "warn" for r in self.verdict.rules)),
        }
        groups = [("", self.comparisons)] + ([("vs_baseline/", self.baseline.comparisons)] if self.baseline else [])
        for under, comparisons in groups:
            for c in comparisons:
                unit = "frac" if c.is_fraction else c.unit
                delta_unit = "pts" if c.delta_unit == "points" else c.delta_unit
                out.update(_flat(f"{prefix}{under}{c.metric}/", {
                    f"base_{unit}": c.base, f"adapter_{unit}": c.adapter, f"delta_{delta_unit}": c.delta,
                    f"ci_low_{delta_unit}": c.ci_low, f"ci_high_{delta_unit}": c.ci_high,
                    "rel_delta_pct": c.rel_delta_pct, "p_value": c.p_value, "n_items": c.n_items}))
        d = self.drift
        out.update(_flat(prefix, {"drift_score_pts": d.drift_score_pts, "target_gain_pts": d.target_gain_pts,
                                  "off_target_gain_pts": d.off_target_gain_pts, "drift_ci_low_pts": d.ci_low_pts,
                                  "drift_ci_high_pts": d.ci_high_pts}))
        return out


def _flat(prefix: str, figures: Mapping[str, float | int | None]) -> dict[str, float]:
    """``figures`` under ``prefix`` as floats, those that are None left out."""
    return {prefix + k: float(v) for k, v in figures.items() if v is not None}
