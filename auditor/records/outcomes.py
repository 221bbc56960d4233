"""Records of the analysis and the judgement: comparisons, agreement with the base, DriftScore, rule outcomes, the
verdict."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from .vocab import Decision, Mode, Outcome, RuleKind, VerdictValue


@dataclass(frozen=True, kw_only=True)
class NoiseFloor:
    """``--noise-floor``: the base variant replayed on another path of the same arithmetic, and what moved.

    A backend whose greedy answers depend on the batch (transformers#25921; the GPU engines) is replayed with
    another batch composition; one whose answers do not (the hf backend on a CPU, batch-invariant) is replayed on
    the other dtype (``bfloat16`` ↔ ``float32``), the choice ``--dtype auto`` makes by the CPU. Either way the
    replay is the base against itself: a delta of the size it shows is numeric noise.

    Attributes:
        n_items: base answers replayed (the first look's items).
        batch_sizes: [the audit's batch size, the replay's].
        n_differ, items_differ: answers whose text changed (count, item ids).
        n_score_differ, items_score_differ: answers whose scores changed too.
        varied: what the replay changed: ``batch_size`` or ``dtype``.
        dtypes: [the audit's dtype, the replay's].
        metric_shifts: metric id → the replay's mean minus the audit's base mean on the replayed items, in the
            metric's delta unit (points for a fraction metric, its unit otherwise); every metric of a replayed
            capability.
        metric_shifts_pct: the same shifts in % of the audit's base mean (metrics whose base mean is not 0).
    """

    n_items: int
    batch_sizes: tuple[Any, ...]
    n_differ: int
    n_score_differ: int
    items_differ: tuple[str, ...]
    items_score_differ: tuple[str, ...]
    varied: Literal["batch_size", "dtype"]
    dtypes: tuple[str, str]
    metric_shifts: Mapping[str, float] = field(default_factory=dict)
    metric_shifts_pct: Mapping[str, float] = field(default_factory=dict)

    @property
    def replay(self) -> str:
        """What the replay ran on, in words (``float32``, ``batch size 12``)."""
        return self.dtypes[1] if self.varied == "dtype" else f"batch size {self.batch_sizes[-1]}"


@dataclass(frozen=True, kw_only=True)
class MetricComparison:
    """Base vs adapter on one metric, with its paired statistics.

    Units: ``base`` and ``adapter`` are fractions in [0, 1] for
    ``unit="fraction"`` metrics, otherwise means in ``unit`` (words, tokens).
    ``delta`` = adapter − base in ``delta_unit``: **points** for fractions
    (×100), the count unit otherwise; ``ci_low``/``ci_high`` bound it (paired
    bootstrap percentile interval at ``confidence``). ``rel_delta_pct`` is in
    % of base (None when base is 0), ``rel_ci_pct`` its interval.
    ``p_value`` comes from ``test`` (``mcnemar_exact`` for pass/fail items,
    ``wilcoxon`` for other per-item values, ``permutation`` for the gap aggregates);
    ``p_adjusted`` is Benjamini–Hochberg over all metrics of the audit.
    ``discordant`` counts items where only the base (``base_only``) or only
    the adapter (``adapter_only``) passed — or scored higher, for non-binary values.
    ``p_decrease`` / ``p_increase`` are the one-sided p-values of "the adapter did not move it"
    against a decrease / an increase (:func:`auditor.analysis.stats.one_sided_p`: exact McNemar
    for pass/fail items, a paired sign-flip permutation test otherwise), not multiplicity-adjusted.
    ``floor`` / ``ceiling`` bound the metric (fractions): 0 and 1, the floor being chance for a
    multiple-choice accuracy (:mod:`auditor.policy.measurability`).
    """

    metric: str
    capability: str
    group: str
    n_items: int
    base: float
    adapter: float
    delta: float
    delta_unit: str
    rel_delta_pct: float | None
    higher_is_better: bool
    unit: str = "fraction"
    aggregate: str = "mean"
    n_clusters: int = 0
    confidence: float = 0.95
    ci_low: float | None = None
    ci_high: float | None = None
    rel_ci_pct: tuple[float, float] | None = None
    test: str | None = None
    p_value: float | None = None
    p_adjusted: float | None = None
    discordant: Mapping[str, int] = field(default_factory=dict)
    p_decrease: float | None = None
    p_increase: float | None = None
    floor: float = 0.0
    ceiling: float = 1.0
    #: bootstrap replicates of delta (in ``delta_unit``) and of the relative delta (%); not serialised
    draws: Any = field(default=None, repr=False, compare=False, metadata={"plain": False})
    rel_draws: Any = field(default=None, repr=False, compare=False, metadata={"plain": False})

    @property
    def is_fraction(self) -> bool:
        return self.unit == "fraction"


@dataclass(frozen=True, kw_only=True)
class Agreement:
    """How often the adapter answered exactly as the base did, over a set of generated items (paired by item).

    Only generated answers count (``Item.output_type`` ``generate_until``): a multiple-choice item scored by
    log-likelihood has no generated answer.

    Attributes:
        identical: share of the items (fraction in [0, 1]) whose adapter answer is the base's answer, character
            for character; None when no item was compared.
        n_items: items compared.
        first_difference_word: over the items whose answers differ, the mean 1-based position of the first
            whitespace-separated word that differs (``str.split()``); where one answer's words begin the other's,
            the position after the shorter one's last word (``len(shorter) + 1``, also for answers that differ in
            whitespace only). None when no answer differs.
    """

    identical: float | None = None
    n_items: int = 0
    first_difference_word: float | None = None


@dataclass(frozen=True, kw_only=True)
class AgreementWithBase:
    """The adapter's generated answers compared with the base's, item by item (:class:`Agreement`).

    Attributes:
        overall: over every generated item of the audit (every look's items).
        capabilities: capability → its generated items' agreement, in suite order; a capability whose items are
            all multiple choice scored by log-likelihood is absent.
    """

    overall: Agreement = field(default_factory=Agreement)
    capabilities: Mapping[str, Agreement] = field(default_factory=dict)


@dataclass(frozen=True, kw_only=True)
class DriftResult:
    """Nominal-label check (docs/concepts/drift.md).

    ``TargetGain = score(adapter) − score(base)`` on the target metric,
    ``OffTargetGain`` the mean of that gain over the off-target metrics (a
    metric where lower is better enters with its sign flipped, so a gain is
    always an improvement), ``DriftScore = OffTargetGain − TargetGain``.
    All three in **points**. ``mismatch`` is what the policy's DriftScore rule decided: true only when
    that rule fails (beyond the limit on evidence, in its mode), not a point estimate above the limit.
    """

    label: str | None
    label_source: str
    target_metric: str | None
    off_target_metrics: tuple[str, ...]
    target_gain_pts: float | None
    off_target_gain_pts: float | None
    drift_score_pts: float | None
    mismatch: bool
    #: paired-bootstrap percentile interval of DriftScore (points), from a joint
    #: resample of the target and off-target capabilities' items
    ci_low_pts: float | None = None
    ci_high_pts: float | None = None
    confidence: float = 0.95
    #: one-sided bootstrap p-value of "DriftScore ≤ 0": (1 + #{replicates ≤ 0}) / (1 + replicates)
    p_positive: float | None = None
    draws: Any = field(default=None, repr=False, compare=False, metadata={"plain": False})


@dataclass(frozen=True, kw_only=True)
class RuleOutcome:
    """One policy rule's result, made whole by the judge (:func:`auditor.policy.judge`).

    Attributes:
        rule: the rule's name as reports show it (``math.numeric_match: max drop``).
        rule_id: its stable id (``math.numeric_match/max-drop``, ``verbosity.words/max-rise-pct``,
            ``baseline/math.numeric_match/max-drop``, ``nominal-label/DriftScore``, ...): the SARIF
            ``ruleId`` and what scripts key on; unique within a verdict.
        kind: what the rule judges (:data:`~auditor.records.vocab.RuleKind`).
        metric: the metric it limits (``<capability>.<metric>``), or None for a rule on no one metric
            (DriftScore, the label, the noise floor, the adapter's effect, the declared base).
        outcome: ``pass``, ``warn``, ``fail`` or ``not_run`` (its capability was
            left out of the run) — what the gate acts on.
        reason: the whole explanation, in one line.
        decision: for limit rules, what the data say: ``pass``, ``fail``, ``inconclusive``,
            ``not_measurable`` (the base leaves no room to show the movement), or, while the audit
            may still buy items, ``undecided`` (mapped to ``outcome`` by the policy).
        mode: decision mode (``evidence``, ``point``, ``confident``, ``non_inferiority``).
        value, limit: the movement toward the limited direction and its limit
            (points, % of base, or the metric's unit).
        ci: interval of ``value`` (same units); p_value / p_adjusted: the
            one-sided p-value the mode decided on (``evidence``: of "no movement", exact or
            permutation; the interval modes: bootstrap, relative to the limit) and its
            Benjamini–Hochberg adjustment.
        n_items: the items it decided on (every round included); look: the look that decided it.
        room: how far the base leaves the metric to move toward the limit (same units as ``limit``;
            None: unbounded); measurable: ``room`` ≥ ``limit``.
        upper_bound: ``evidence``: the one-sided ``1 − β`` upper bound of ``value`` the pass test used.
        items_to_decide: for an undecided or inconclusive ``evidence`` rule, about how many items
            would likely decide it; capabilities: whose items decide it (``evidence`` rules).
        noise: with ``--noise-floor``, how far the base replayed on the other path (:class:`NoiseFloor`) moved
            this rule's statistic (same units as ``value``, absolute); within_noise: the rule was decided
            (pass or fail) and ``value`` lies within ``noise`` of ``limit``, so numeric noise of the measured
            size could have decided it the other way.
    """

    rule: str
    outcome: Outcome
    reason: str
    value: float | None = None
    limit: float | None = None
    mode: Mode | None = None
    decision: Decision | None = None
    ci: tuple[float, float] | None = None
    p_value: float | None = None
    p_adjusted: float | None = None
    n_items: int | None = None
    look: int | None = None
    room: float | None = None
    measurable: bool | None = None
    upper_bound: float | None = None
    items_to_decide: int | None = None
    capabilities: tuple[str, ...] = ()
    rule_id: str = ""
    kind: RuleKind = "limit"
    metric: str | None = None
    noise: float | None = None
    within_noise: bool | None = None

    @property
    def capability(self) -> str | None:
        """The capability whose metric the rule limits (a metric id is ``<capability>.<metric>``), or None."""
        return None if self.metric is None else self.metric.split(".", 1)[0]


@dataclass(frozen=True, kw_only=True)
class Verdict:
    """The gate's decision: ``pass`` unless some rule failed.

    Attributes:
        verdict: ``pass`` or ``fail``.
        rules: every rule's outcome, in the policy's order (limits, then release limits, the label, the
            run's findings).
        warnings: what the run found that is not a rule: the adapter's inspection, its chat template,
            the engine's setup.
    """

    verdict: VerdictValue
    rules: tuple[RuleOutcome, ...]
    warnings: tuple[str, ...]

    @property
    def failing(self) -> list[RuleOutcome]:
        return [r for r in self.rules if r.outcome == "fail"]

    @property
    def undecided(self) -> list[RuleOutcome]:
        """Rules a further round of items could decide."""
        return [r for r in self.rules if r.decision == "undecided"]
