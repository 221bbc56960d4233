"""The nominal-label check: TargetGain, OffTargetGain and DriftScore.

After *Instruction-Tuned, but Not More Verifiable Instruction-Following: A Cross-Task Diagnosis for
LoRA Adapters*.

* ``TargetGain``    = score(adapter) − score(base) on the label's target metric;
* ``OffTargetGain`` = the same gain on the off-target metric(s), averaged when
  there are several (a lower-is-better metric enters with its sign flipped);
* ``DriftScore``    = ``OffTargetGain − TargetGain``.

All gains are in points. Large and positive DriftScore means the adapter
changed something other than what its label says. Its interval comes from a
joint bootstrap: each capability's items are resampled (the same resample for
all metrics of that capability, :func:`auditor.analysis.compare.compare_metrics`)
and DriftScore is recomputed per resample.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from ..records import DriftResult, MetricComparison
from . import stats


def _gain(c: MetricComparison, values: np.ndarray | float) -> np.ndarray | float:
    return values if c.higher_is_better else -values


def drift_of(deltas: Mapping[str, float], higher_is_better: Mapping[str, bool], target: str,
             off_target: Sequence[str]) -> float:
    """DriftScore (points) from each metric's delta (points): the off-target gains' mean minus the target's gain,
    a lower-is-better metric's gain with its sign flipped (the definition above, without the interval)."""
    gain = {m: deltas[m] if higher_is_better[m] else -deltas[m] for m in (target, *off_target)}
    off = float(np.mean([gain[m] for m in off_target])) if off_target else 0.0
    return off - gain[target]


def drift_score(comparisons: list[MetricComparison], label: str | None, label_source: str,
                target: str | None, off_target: Sequence[str], max_drift_pts: float) -> DriftResult:
    """Compute TargetGain, OffTargetGain and DriftScore (points) for a nominal label.

    DriftScore's interval comes from the metrics' joint bootstrap replicates
    (same resamples within a capability, independent across capabilities).

    Args:
        comparisons: output of :func:`compare_metrics`.
        label: the nominal label, or None when unknown.
        label_source: where the label came from (``--label``, ``model card``, ``none``).
        target: the metric the label promises (from the policy), or None.
        off_target: the off-target metrics (from the policy).
        max_drift_pts: DriftScore above this is a label mismatch.

    Raises:
        KeyError: a target/off-target metric is not among the comparisons.
        ValueError: a target/off-target metric is not a fraction metric (points).
    """
    by = {c.metric: c for c in comparisons}
    if label is None or target is None:
        return DriftResult(label=label, label_source=label_source, target_metric=target,
                           off_target_metrics=tuple(off_target), target_gain_pts=None, off_target_gain_pts=None,
                           drift_score_pts=None, mismatch=False)
    for m in (target, *off_target):
        if not by[m].is_fraction:
            raise ValueError(f"{m} is measured in {by[m].unit}, not points: it cannot enter DriftScore")
    t = by[target]
    tg = float(_gain(t, t.delta))
    og = float(np.mean([_gain(by[m], by[m].delta) for m in off_target])) if off_target else 0.0
    ds = og - tg
    lo = hi = None
    draws = None
    if t.draws is not None and all(by[m].draws is not None for m in off_target):
        og_draws = np.mean(np.array([_gain(by[m], by[m].draws) for m in off_target], dtype=float), axis=0) \
            if off_target else 0.0
        draws = np.asarray(og_draws - _gain(t, t.draws), dtype=float)
        n_units = min(by[m].n_clusters for m in (target, *off_target))
        lo, hi = (stats.finite_or_none(x) for x in stats.percentile_interval(draws, t.confidence, n_units))
    p_positive = None
    if draws is not None:
        finite = np.asarray(draws, dtype=float)
        finite = finite[np.isfinite(finite)]
        if finite.size:
            p_positive = float((1 + np.sum(finite <= 0)) / (1 + finite.size))
    return DriftResult(label=label, label_source=label_source, target_metric=target,
                       off_target_metrics=tuple(off_target), target_gain_pts=tg, off_target_gain_pts=og,
                       drift_score_pts=ds, mismatch=ds > max_drift_pts, ci_low_pts=lo, ci_high_pts=hi,
                       confidence=t.confidence, p_positive=p_positive, draws=draws)
