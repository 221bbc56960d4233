"""Typed records passed between the stages (DESIGN.md §2).

Every stage takes and returns these plain dataclasses, so each stage can be
tested alone and a run can be re-rendered from ``results.json``.

Units used throughout:
    * a *score* is a fraction in [0, 1] (e.g. numeric match 0.25);
    * a *delta* is in **points** (percentage points, adapter − base, ×100);
    * a *relative delta* is in **%** of the base score.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
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
        no_effect: every ``lora_B`` tensor is zero, so the adapter cannot change the model.
        warnings: non-fatal findings carried into the report.
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
    """Base vs adapter on one metric.

    ``base`` and ``adapter`` are fractions; ``delta_pts`` is in points;
    ``rel_delta_pct`` is in % of base (None when base is 0).
    """

    metric: str
    capability: str
    group: str
    n_items: int
    base: float
    adapter: float
    delta_pts: float
    rel_delta_pct: float | None
    higher_is_better: bool


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


@dataclass
class RuleOutcome:
    """One policy rule's result: ``pass``, ``warn``, ``fail`` or ``not_run`` (its capability was left out of the run)."""

    rule: str
    outcome: str
    reason: str
    value: float | None = None
    limit: float | None = None


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
    """Dataclasses (nested) → JSON-ready dicts/lists."""
    if hasattr(obj, "__dataclass_fields__"):
        return {k: to_plain(v) for k, v in asdict(obj).items()}
    if isinstance(obj, (list, tuple)):
        return [to_plain(v) for v in obj]
    if isinstance(obj, dict):
        return {k: to_plain(v) for k, v in obj.items()}
    return obj
