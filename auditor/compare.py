"""Stage 5 — compare: how the adapter moved each capability.

Per metric: base and adapter scores (fractions), delta in points and
relative delta in % of the base (CapTrack reports drift both ways,
``seeds/000``). Then the nominal-label check of ``seeds/003``:

* ``TargetGain``    = score(adapter) − score(base) on the label's target metric;
* ``OffTargetGain`` = the same gain on the off-target metric(s), averaged when
  there are several (a lower-is-better metric enters with its sign flipped);
* ``DriftScore``    = ``OffTargetGain − TargetGain``.

All gains are in points. Large and positive DriftScore means the adapter
changed something other than what its label says.
"""

from __future__ import annotations

from collections import defaultdict

import numpy as np

from .plan import Suite
from .records import DriftResult, MetricComparison, Score


def _aggregate(scores: list[Score], metric: str, weight_key: str | None) -> float:
    vals = np.array([s.values[metric] for s in scores], dtype=float)
    if weight_key is None:
        return float(vals.mean())
    w = np.array([s.detail[weight_key] for s in scores], dtype=float)
    return float((vals * w).sum() / w.sum())


def compare_metrics(suite: Suite, scores: list[Score]) -> list[MetricComparison]:
    """Compare base and adapter per metric of every capability in the suite.

    Args:
        suite: the suite (capabilities, their groups and metric specs).
        scores: scores of both variants for the suite's items.

    Returns:
        One MetricComparison per ``<capability>.<metric>``, in suite order.

    Raises:
        ValueError: a capability lacks paired base/adapter scores.
    """
    by: dict[tuple[str, str], list[Score]] = defaultdict(list)
    cap_of = {i.id: i.capability for i in suite.items}
    for s in scores:
        by[(cap_of[s.item_id], s.variant)].append(s)
    out: list[MetricComparison] = []
    for cap in suite.capabilities:
        base = sorted(by[(cap.name, "base")], key=lambda s: s.item_id)
        adap = sorted(by[(cap.name, "adapter")], key=lambda s: s.item_id)
        if not base or [s.item_id for s in base] != [s.item_id for s in adap]:
            raise ValueError(f"capability {cap.name}: base and adapter scores are not paired")
        for m in cap.metrics:
            b = _aggregate(base, m.name, m.weight_key)
            a = _aggregate(adap, m.name, m.weight_key)
            out.append(MetricComparison(
                metric=f"{cap.name}.{m.name}", capability=cap.name, group=cap.group, n_items=len(base),
                base=b, adapter=a, delta_pts=100.0 * (a - b),
                rel_delta_pct=(100.0 * (a - b) / b) if b else None,
                higher_is_better=m.higher_is_better,
            ))
    return out


def _gain_pts(c: MetricComparison) -> float:
    return c.delta_pts if c.higher_is_better else -c.delta_pts


def drift_score(comparisons: list[MetricComparison], label: str | None, label_source: str,
                target: str | None, off_target: list[str], max_drift_pts: float) -> DriftResult:
    """Compute TargetGain, OffTargetGain and DriftScore (points) for a nominal label.

    Args:
        comparisons: output of :func:`compare_metrics`.
        label: the nominal label, or None when unknown.
        label_source: where the label came from (``--label``, ``model card``, ``none``).
        target: the metric the label promises (from the policy), or None.
        off_target: the off-target metrics (from the policy).
        max_drift_pts: DriftScore above this is a label mismatch.

    Raises:
        KeyError: a target/off-target metric is not among the comparisons.
    """
    by = {c.metric: c for c in comparisons}
    if label is None or target is None:
        return DriftResult(label, label_source, target, list(off_target), None, None, None, False)
    tg = _gain_pts(by[target])
    og = float(np.mean([_gain_pts(by[m]) for m in off_target])) if off_target else 0.0
    ds = og - tg
    return DriftResult(label, label_source, target, list(off_target), tg, og, ds, ds > max_drift_pts)
