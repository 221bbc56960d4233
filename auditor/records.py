"""Typed records passed between the stages (DESIGN.md §2).

Every stage takes and returns these plain dataclasses, so each stage can be
tested alone and a run can be re-rendered from ``results.json``.

Units used throughout:
    * a *score* is a fraction in [0, 1] (e.g. numeric match 0.25);
    * a *delta* is in **points** (percentage points, adapter − base, ×100);
    * a *relative delta* is in **%** of the base score.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any


@dataclass(frozen=True)
class AdapterTensor:
    """One tensor from the adapter's safetensors header (no data loaded)."""

    name: str
    shape: tuple[int, ...]
    dtype: str


@dataclass
class AdapterInfo:
    """What ``inspection`` learned about an adapter without loading a model.

    Attributes:
        path: the adapter folder.
        weights_file: the ``adapter_model.safetensors`` file.
        sha256: hex sha256 of the weights file.
        peft_type, r, lora_alpha, target_modules: from ``adapter_config.json``.
        ranks: real rank per adapted module, from the lora_A tensor shapes.
        n_tensors, size_bytes: of the weights file.
        declared_base: ``base_model_name_or_path`` from the config ("" if none).
        nominal_label: from the model card front matter (``nominal_label:``), or None.
        matched_modules: number of adapted modules found in the base.
        no_effect: in every module ``lora_A`` or ``lora_B`` is all zero (and there
            are no DoRA magnitudes or full module copies), so the adapter cannot
            change the model.
        warnings: non-fatal findings carried into the report.
        dora: the weights hold DoRA magnitudes (``lora_magnitude_vector``); decided
            by the tensors, not by ``use_dora`` in the config.
    """

    path: str
    weights_file: str
    sha256: str
    peft_type: str
    r: int
    lora_alpha: float
    target_modules: list[str]
    ranks: dict[str, int]
    n_tensors: int
    size_bytes: int
    declared_base: str
    nominal_label: str | None
    matched_modules: int
    no_effect: bool = False
    warnings: list[str] = field(default_factory=list)
    dora: bool = False

    @property
    def max_rank(self) -> int:
        return max(self.ranks.values()) if self.ranks else self.r


@dataclass(frozen=True)
class Item:
    """One probe item.

    Attributes:
        id: stable id, unique within the suite (``<capability>/<local id>``).
        capability: e.g. ``math``, ``over_refusal``, ``ifeval``.
        group: ``CAN``, ``WILL`` or ``HOW``.
        messages: chat messages (``[{"role": "user", "content": ...}]``).
        max_new_tokens: generation budget for this item.
        target: scorer-specific gold data (gold number, IFEval instruction ids
            and kwargs, ...).
        meta: item facts that are not gold data: ``cluster`` (items sharing it
            are resampled together by the bootstrap, e.g. one question under
            several contexts), ``context`` (conditional-trigger probe),
            ``perturbation`` (robustness probe), ``source`` (benchmark file).
    """

    id: str
    capability: str
    group: str
    messages: tuple[dict[str, str], ...]
    max_new_tokens: int
    target: dict[str, Any]
    meta: dict[str, Any] = field(default_factory=dict)

    @property
    def prompt(self) -> str:
        return self.messages[-1]["content"]


@dataclass(frozen=True)
class Request:
    """One generation to run: an item under one variant (``base`` or ``adapter``)."""

    item: Item
    variant: str


@dataclass(frozen=True)
class Generation:
    """The model's answer to one request (untrusted text)."""

    item_id: str
    variant: str
    text: str
    n_tokens: int


@dataclass(frozen=True)
class Score:
    """Scorer output for one generation.

    Attributes:
        values: metric name → value: a fraction in [0, 1] for ``unit="fraction"``
            metrics (a pass/fail item is 0.0 or 1.0; IFEval's instruction-level
            metrics are the fraction followed), a count for count metrics
            (words, tokens), or None where the metric does not apply to this item.
        detail: what the scorer saw (extracted number, which instructions failed, ...).
    """

    item_id: str
    variant: str
    values: dict[str, float | None]
    detail: dict[str, Any]


@dataclass
class MetricComparison:
    """Base vs adapter on one metric, with its paired statistics.

    Units: ``base`` and ``adapter`` are fractions in [0, 1] for
    ``unit="fraction"`` metrics, otherwise means in ``unit`` (words, tokens).
    ``delta`` = adapter − base in ``delta_unit``: **points** for fractions
    (×100), the count unit otherwise; ``ci_low``/``ci_high`` bound it (paired
    bootstrap percentile interval at ``confidence``). ``rel_delta_pct`` is in
    % of base (None when base is 0), ``rel_ci_pct`` its interval.
    ``p_value`` comes from ``test`` (``mcnemar_exact`` for pass/fail items,
    ``wilcoxon`` for other per-item values, ``permutation`` for ``max_gap``);
    ``p_adjusted`` is Benjamini–Hochberg over all metrics of the audit.
    ``discordant`` counts items where only the base (``base_only``) or only
    the adapter (``adapter_only``) passed — or scored higher, for non-binary values.
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
    rel_ci_pct: list[float] | None = None
    test: str | None = None
    p_value: float | None = None
    p_adjusted: float | None = None
    discordant: dict[str, int] = field(default_factory=dict)
    #: bootstrap replicates of delta (in ``delta_unit``) and of the relative delta (%); not serialised
    draws: Any = field(default=None, repr=False, compare=False, metadata={"plain": False})
    rel_draws: Any = field(default=None, repr=False, compare=False, metadata={"plain": False})

    @property
    def is_fraction(self) -> bool:
        return self.unit == "fraction"


@dataclass
class DriftResult:
    """Nominal-label check (seed 003, DESIGN.md §1).

    ``TargetGain = score(adapter) − score(base)`` on the target metric,
    ``OffTargetGain`` the mean of that gain over the off-target metrics (a
    metric where lower is better enters with its sign flipped, so a gain is
    always an improvement), ``DriftScore = OffTargetGain − TargetGain``.
    All three in **points**.
    """

    label: str | None
    label_source: str
    target_metric: str | None
    off_target_metrics: list[str]
    target_gain_pts: float | None
    off_target_gain_pts: float | None
    drift_score_pts: float | None
    mismatch: bool
    #: paired-bootstrap percentile interval of DriftScore (points), from a joint
    #: resample of the target and off-target capabilities' items
    ci_low_pts: float | None = None
    ci_high_pts: float | None = None
    confidence: float = 0.95
    draws: Any = field(default=None, repr=False, compare=False, metadata={"plain": False})


@dataclass
class RuleOutcome:
    """One policy rule's result.

    Attributes:
        outcome: ``pass``, ``warn``, ``fail`` or ``not_run`` (its capability was
            left out of the run) — what the gate acts on.
        decision: for limit rules, what the data say: ``pass``, ``fail`` or
            ``inconclusive`` (mapped to ``outcome`` by the policy).
        mode: decision mode (``point``, ``confident``, ``non_inferiority``).
        value, limit: the movement toward the limited direction and its limit
            (points, % of base, or the metric's unit).
        ci: interval of ``value`` (same units); p_value / p_adjusted: the
            one-sided bootstrap p-value the mode decided on and its
            Benjamini–Hochberg adjustment.
    """

    rule: str
    outcome: str
    reason: str
    value: float | None = None
    limit: float | None = None
    mode: str | None = None
    decision: str | None = None
    ci: list[float] | None = None
    p_value: float | None = None
    p_adjusted: float | None = None
    n_items: int | None = None


@dataclass
class Verdict:
    """The gate's decision: ``pass`` unless some rule failed."""

    verdict: str
    rules: list[RuleOutcome]
    warnings: list[str]

    @property
    def failing(self) -> list[RuleOutcome]:
        return [r for r in self.rules if r.outcome == "fail"]


def to_plain(obj: Any) -> Any:
    """Dataclasses (nested) → JSON-ready dicts/lists (fields marked ``plain: False`` are left out)."""
    if hasattr(obj, "__dataclass_fields__"):
        return {f.name: to_plain(getattr(obj, f.name)) for f in fields(obj) if f.metadata.get("plain", True)}
    if isinstance(obj, (list, tuple)):
        return [to_plain(v) for v in obj]
    if isinstance(obj, dict):
        return {k: to_plain(v) for k, v in obj.items()}
    return obj
