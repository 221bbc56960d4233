"""Stage 5 — compare: how the adapter moved each capability, with its uncertainty.

Per metric: base and adapter scores, delta (adapter − base; points for
fraction metrics) and relative delta in % of the base (CapTrack (*CapTrack: Multifaceted Evaluation of
Forgetting in LLM Post-Training*) reports drift both ways), each with a paired-bootstrap 95% interval, a
p-value (exact McNemar for pass/fail items) and the discordant counts
(:mod:`auditor.analysis.stats`). The bootstrap replicates are kept for the
nominal-label check (:mod:`auditor.analysis.drift`) and the judge.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..records import Item, MetricComparison, Score, Suite
from ..util.seeding import rng_for
from . import stats


@dataclass(frozen=True)
class StatsSettings:
    """How intervals and tests are computed (policy ``statistics:`` section).

    Attributes:
        confidence: two-sided interval level (0.95 → 95% intervals).
        n_resamples: bootstrap resamples per capability.
        seed: base seed; each capability derives its own stream from it.
    """

    confidence: float = 0.95
    n_resamples: int = stats.N_RESAMPLES
    seed: int = 0


def _value(v: float | None) -> float:
    return np.nan if v is None else float(v)


def _clusters(items: list[Item]) -> np.ndarray:
    """Cluster index per item (``meta.cluster``, else the item alone), numbered 0..n-1."""
    ids: dict[str, int] = {}
    return np.array([ids.setdefault(str(it.meta.get("cluster", it.id)), len(ids)) for it in items], dtype=int)


def _paired(items: list[Item], clusters: np.ndarray, base: list[Score], adap: list[Score], metric: str,
            weight_key: str | None, group_key: str | None) -> stats.PairedData:
    b = np.array([_value(s.values.get(metric)) for s in base], dtype=float)
    a = np.array([_value(s.values.get(metric)) for s in adap], dtype=float)
    if weight_key is None:
        w = np.ones(len(items))
    else:
        w = np.array([float(s.detail[weight_key]) for s in base], dtype=float)
    groups = None
    if group_key is not None:
        names: dict[str, int] = {}
        groups = np.array([names.setdefault(str(it.meta.get(group_key)), len(names)) for it in items], dtype=int)
    return stats.PairedData(b, a, w, clusters, groups)


def compare_metrics(suite: Suite, scores: list[Score], settings: StatsSettings | None = None, *,
                    reference: str = "base", candidate: str = "adapter") -> list[MetricComparison]:
    """Compare base and adapter per metric of every capability in the suite.

    Args:
        suite: the suite (capabilities, their groups and metric specs).
        scores: scores of both variants for the suite's items (other variants' are ignored).
        settings: interval level, resamples and seed (defaults: 95%, 4000, 0).
        reference, candidate: the variants compared (``Score.variant``): the comparison's "base" side
            and its "adapter" side (e.g. ``baseline`` and ``adapter0`` for a release comparison).

    Returns:
        One MetricComparison per ``<capability>.<metric>``, in suite order, with
        interval, p-value, Benjamini–Hochberg adjusted p-value (over all the
        metrics returned) and discordant counts. The bootstrap replicates are
        kept in ``.draws`` (not serialised) for :func:`drift_score`.

    Raises:
        ValueError: a capability lacks paired reference/candidate scores.
    """
    st = settings or StatsSettings()
    by: dict[tuple[str, str], list[Score]] = defaultdict(list)
    item_of = {i.id: i for i in suite.items}
    for s in scores:
        by[(item_of[s.item_id].capability, s.variant)].append(s)
    fields: list[dict[str, Any]] = []  # each comparison's fields; p_adjusted needs all their p-values
    for cap in suite.capabilities:
        base = sorted(by[(cap.name, reference)], key=lambda s: s.item_id)
        adap = sorted(by[(cap.name, candidate)], key=lambda s: s.item_id)
        if not base or [s.item_id for s in base] != [s.item_id for s in adap]:
            raise ValueError(f"capability {cap.name}: base and adapter scores are not paired")
        items = [item_of[s.item_id] for s in base]
        clusters = _clusters(items)
        rng = rng_for(st.seed, cap.name)
        # one resample of the capability's clusters, shared by all its metrics (joint replicates)
        counts = stats.resample_counts(int(clusters.max()) + 1, st.n_resamples, rng)
        for m in cap.metrics:
            d = _paired(items, clusters, base, adap, m.name, m.weight_key,
                        m.group_key if m.aggregate in stats.GAP_AGGREGATES else None)
            b_obs, a_obs = (float(x) for x in stats.statistic(d, None, m.aggregate))
            boot = stats.paired_bootstrap(d, counts, m.aggregate)
            scale = 100.0 if m.unit == "fraction" else 1.0
            # a % of the base needs a base on a ratio scale: the excess gap is a signed difference (a negative
            # base is common), where a ratio flips sign and explodes
            relative = bool(b_obs) and m.aggregate != "excess_gap"
            nu = d.n_clusters if m.aggregate == "mean" else None
            lo, hi = stats.percentile_interval(scale * boot.delta, st.confidence, nu)
            rel_lo, rel_hi = stats.percentile_interval(boot.rel_delta_pct, st.confidence, nu)
            if m.aggregate in stats.GAP_AGGREGATES:
                test, p = "permutation", stats.permutation_p_gap(d, st.n_resamples, rng, m.aggregate)
                disc = {}
            else:
                bo, ao = stats.discordant(d)
                disc = {"base_only": bo, "adapter_only": ao}
                if d.is_binary:
                    test, p = "mcnemar_exact", stats.mcnemar_exact(bo, ao)
                else:
                    test, p = "wilcoxon", stats.wilcoxon_p(d)
            # one-sided tests of "no movement" (the evidence mode's harm test), on a stream of their own
            # so that adding them changed no interval or two-sided p-value
            p_dec, p_inc = stats.one_sided_p(d, st.n_resamples, rng_for(st.seed, f"{cap.name}.{m.name}/one-sided"),
                                             m.aggregate)
            floor = stats.chance_level(np.array([len(it.target.get("choices") or [0] * 4) for it in items])) \
                if m.chance_floor else 0.0
            fields.append(dict(
                metric=f"{cap.name}.{m.name}", capability=cap.name, group=cap.group, n_items=d.n_items,
                base=b_obs, adapter=a_obs, delta=scale * (a_obs - b_obs),
                delta_unit="points" if m.unit == "fraction" else m.unit,
                rel_delta_pct=(100.0 * (a_obs - b_obs) / b_obs) if relative else None,
                higher_is_better=m.higher_is_better, unit=m.unit, aggregate=m.aggregate,
                n_clusters=d.n_clusters, confidence=st.confidence,
                ci_low=stats.finite_or_none(lo), ci_high=stats.finite_or_none(hi),
                rel_ci_pct=(rel_lo, rel_hi) if relative and np.isfinite(rel_lo) else None,
                test=test, p_value=p, discordant=disc, p_decrease=p_dec, p_increase=p_inc, floor=floor,
                draws=scale * boot.delta, rel_draws=boot.rel_delta_pct,
            ))
    adjusted = stats.bh_adjust([f["p_value"] for f in fields])
    return [MetricComparison(**f, p_adjusted=q) for f, q in zip(fields, adjusted)]
