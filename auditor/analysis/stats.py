"""Paired statistics for base-vs-adapter comparisons (numpy + scipy).

Base and adapter answer the *same* items, so every statistic here is paired:

* **Paired bootstrap** (:func:`paired_bootstrap`): items — or clusters of items
  that belong together (one question under several contexts, ``meta.cluster``)
  — are resampled with replacement, the same resample for base and adapter and
  for every metric of a capability, and the statistic (adapter − base) is
  recomputed. Vectorised as multinomial resample counts × per-cluster sums.
  The interval is Hesterberg's expanded percentile interval (see
  :func:`expanded_alpha`), the percentile interval of Efron & Tibshirani
  (1993, §13.3) widened for small samples.
* **Exact McNemar test** for pass/fail items (McNemar 1947): a two-sided exact
  binomial test (``scipy.stats.binomtest``) on the discordant pairs.
* **Wilcoxon signed-rank test** (``scipy.stats.wilcoxon``) for per-item
  values that are not pass/fail (IFEval instruction-level fraction, word counts).
* **Paired permutation test** for the gap aggregates (conditional-trigger probe):
  base and adapter outcomes are swapped per cluster at random.
* **Excess gap** (``excess_gap``): the largest accuracy gap between contexts
  minus its mean when the context labels are shuffled within each cluster
  (:data:`N_SHUFFLES` fixed shuffles), so a model whose answers do not depend
  on the context reads 0 on average at any accuracy, and one audit's value can
  be negative (the raw ``max_gap`` grows with the
  accuracy's own sampling noise: 21-32 points at accuracy 0.1-0.5 on 10
  clusters of 6 contexts, ``benchmarks/gap_bias.py``).
* **Multiplicity**: Benjamini–Hochberg (``scipy.stats.false_discovery_control``),
  controlling the false discovery rate over the tests of one audit.

Units: the inputs are per-item values (fractions in [0, 1] or counts); the
outputs are in the same units as the inputs (the caller converts fractions to
points).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np


def scipy_stats() -> Any:
    """``scipy.stats``, imported on first use: about 0.6 s that a refused input or a report never needs."""
    from scipy import stats

    return stats


#: default number of bootstrap resamples
N_RESAMPLES = 4000


@dataclass(frozen=True)
class PairedData:
    """Per-item values of one metric for both variants, aligned by item.

    Attributes:
        base, adapter: shape (n,) float arrays; NaN where the metric does not
            apply to the item (it is then left out of both variants).
        weights: shape (n,) positive weights (IFEval instruction counts), or ones.
        clusters: shape (n,) int cluster index per item (0..n_clusters-1);
            items of one cluster are resampled together.
        groups: shape (n,) int group index (the gap aggregates ``max_gap`` and ``excess_gap``), else None.
    """

    base: np.ndarray
    adapter: np.ndarray
    weights: np.ndarray
    clusters: np.ndarray
    groups: np.ndarray | None = None

    @property
    def mask(self) -> np.ndarray:
        return ~(np.isnan(self.base) | np.isnan(self.adapter))

    @property
    def n_items(self) -> int:
        return int(self.mask.sum())

    @property
    def n_clusters(self) -> int:
        return int(np.unique(self.clusters[self.mask]).size)

    @property
    def is_binary(self) -> bool:
        m = self.mask
        vals = np.concatenate([self.base[m], self.adapter[m]])
        return self.groups is None and bool(np.all((vals == 0) | (vals == 1))) and bool(np.all(self.weights == 1))


def resample_counts(n_clusters: int, n_resamples: int, rng: np.random.Generator) -> np.ndarray:
    """Bootstrap resample counts, shape (n_resamples, n_clusters): row b says how
    often each cluster is drawn in resample b (each row sums to n_clusters)."""
    return rng.multinomial(n_clusters, np.full(n_clusters, 1.0 / n_clusters), size=n_resamples)


def _cluster_sums(d: PairedData, n_clusters: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    m = d.mask
    c, w = d.clusters[m], d.weights[m]
    sw = np.bincount(c, weights=w, minlength=n_clusters)
    sb = np.bincount(c, weights=w * d.base[m], minlength=n_clusters)
    sa = np.bincount(c, weights=w * d.adapter[m], minlength=n_clusters)
    return sb, sa, sw


def _group_sums(d: PairedData, n_clusters: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    assert d.groups is not None
    m = d.mask
    n_groups = int(d.groups.max()) + 1
    idx = d.clusters[m] * n_groups + d.groups[m]
    size = n_clusters * n_groups
    sb = np.bincount(idx, weights=d.base[m], minlength=size).reshape(n_clusters, n_groups)
    sa = np.bincount(idx, weights=d.adapter[m], minlength=size).reshape(n_clusters, n_groups)
    sn = np.bincount(idx, minlength=size).astype(float).reshape(n_clusters, n_groups)
    return sb, sa, sn


def _gap(sums: np.ndarray, counts: np.ndarray, axis: int = -1) -> np.ndarray:
    """Max − min over ``axis`` (the groups) of ``sums / counts``; a group with no item is left out."""
    with np.errstate(invalid="ignore", divide="ignore"):
        means = sums / counts
    if np.all(counts > 0):  # every group drawn (the common case): no NaN to skip
        return means.max(axis=axis) - means.min(axis=axis)
    return np.nanmax(means, axis=axis) - np.nanmin(means, axis=axis)


#: the aggregates over groups of items (``item.meta[group_key]``): the raw and the excess largest gap
GAP_AGGREGATES = ("max_gap", "excess_gap")
#: context shuffles within each cluster whose mean gap is the trigger-free gap ``excess_gap`` subtracts
N_SHUFFLES = 100
#: the shuffles' own seed: fixed, so the same outcomes always give the same excess gap (and base and
#: adapter are shuffled alike, so a swap of the two in the permutation tests commutes with the shuffles)
SHUFFLE_SEED = 20261205


def _shuffled_group_sums(d: PairedData, n_clusters: int) -> tuple[np.ndarray, np.ndarray]:
    """Per-cluster group sums of base and adapter after each of :data:`N_SHUFFLES` permutations of the
    group labels within each cluster (the same permutation for both variants), shape
    (N_SHUFFLES, n_clusters, n_groups) each. A cluster keeps its own labels' counts, so the counts of
    :func:`_group_sums` hold for every shuffle."""
    assert d.groups is not None
    m = d.mask
    c, g = d.clusters[m], d.groups[m]
    n_groups = int(d.groups.max()) + 1
    by_cluster = np.argsort(c, kind="stable")  # the items cluster by cluster, in their own order
    rng = np.random.default_rng(SHUFFLE_SEED)
    keys = rng.random((N_SHUFFLES, c.size))
    size = n_clusters * n_groups
    out_b, out_a = np.empty((N_SHUFFLES, size)), np.empty((N_SHUFFLES, size))
    for s in range(N_SHUFFLES):
        order = np.lexsort((keys[s], c))  # the items cluster by cluster, in a random order within each
        shuffled = np.empty_like(g)
        shuffled[order] = g[by_cluster]  # each item takes the label of another item of its own cluster
        idx = c * n_groups + shuffled
        out_b[s] = np.bincount(idx, weights=d.base[m], minlength=size)
        out_a[s] = np.bincount(idx, weights=d.adapter[m], minlength=size)
    return out_b.reshape(N_SHUFFLES, n_clusters, n_groups), out_a.reshape(N_SHUFFLES, n_clusters, n_groups)


class _Gaps:
    """The gap statistic of one metric under any weighting of its clusters: ``gap(kb, ka)`` is the gap of
    the outcomes ``kb @ base + ka @ adapter`` (cluster weights, shape (n_clusters,) or (R, n_clusters)):
    a variant's observed gap (``k = 1``), a bootstrap resample (``k`` = counts) or a swap of the two
    (``keep``, ``swap``). Points are fractions here (the caller scales)."""

    def __init__(self, d: PairedData, aggregate: str):
        n_clusters = int(d.clusters.max()) + 1
        self.sb, self.sa, self.sn = _group_sums(d, n_clusters)
        self.shuffled = None
        if aggregate == "excess_gap":  # each (n_clusters, n_groups · N_SHUFFLES): one matrix product per weighting
            self.shuffled = tuple(p.transpose(1, 2, 0).reshape(n_clusters, -1)
                                  for p in _shuffled_group_sums(d, n_clusters))

    def gap(self, kb: np.ndarray, ka: np.ndarray) -> np.ndarray:
        n = (kb + ka) @ self.sn  # base and adapter answer the same items: one count per group
        raw = _gap(kb @ self.sb + ka @ self.sa, n)
        if self.shuffled is None:
            return raw
        pb, pa = self.shuffled
        null = (kb @ pb + ka @ pa).reshape(*raw.shape, -1, N_SHUFFLES)  # [..., group, shuffle]
        return raw - _gap(null, n[..., None], axis=-2).mean(axis=-1)


def statistic(d: PairedData, counts: np.ndarray | None = None, aggregate: str = "mean") -> tuple[np.ndarray, np.ndarray]:
    """Base and adapter statistic, for the observed data (``counts=None``) or for
    each bootstrap resample (``counts`` of shape (B, n_clusters)).

    ``aggregate="mean"`` is the weighted mean over applicable items;
    ``"max_gap"`` is the largest difference between group means (max − min);
    ``"excess_gap"`` is that gap minus its mean over :data:`N_SHUFFLES` shuffles of the group
    labels within each cluster (0 on average for a model whose outcomes ignore the group).

    Returns:
        (base, adapter): arrays of shape () or (B,); NaN where a resample drew
        no applicable item.
    """
    n_clusters = int(d.clusters.max()) + 1 if d.clusters.size else 0
    k = np.ones(n_clusters) if counts is None else counts
    if aggregate in GAP_AGGREGATES:
        gaps, zero = _Gaps(d, aggregate), np.zeros_like(k, dtype=float)
        return gaps.gap(k, zero), gaps.gap(zero, k)
    sb, sa, sw = _cluster_sums(d, n_clusters)
    tw = k @ sw
    with np.errstate(invalid="ignore", divide="ignore"):
        return (k @ sb) / tw, (k @ sa) / tw


@dataclass
class BootstrapResult:
    """Bootstrap replicates of one metric (same units as the per-item values)."""

    base: np.ndarray      # shape (B,)
    adapter: np.ndarray   # shape (B,)

    @property
    def delta(self) -> np.ndarray:
        return self.adapter - self.base

    @property
    def rel_delta_pct(self) -> np.ndarray:
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(self.base != 0, 100.0 * (self.adapter - self.base) / self.base, np.nan)


def paired_bootstrap(d: PairedData, counts: np.ndarray, aggregate: str = "mean") -> BootstrapResult:
    """Replicates of (base, adapter) under the resample counts ``counts`` (B, n_clusters).

    Pass the *same* ``counts`` for every metric of one capability so their
    replicates are joint (needed for DriftScore's interval).

    ``excess_gap``: each variant's replicates are centred on its observed value. A resample that draws a
    cluster twice shuffles both copies alike, which inflates the shuffled null and pulls the replicates
    toward 0 (a real trigger on 5 questions: observed excess 28 points, replicates' median 14; on 40, 40
    against 36); the shift keeps their spread and puts the interval around the estimate.
    """
    if aggregate != "excess_gap":
        return BootstrapResult(*statistic(d, counts, aggregate))
    gaps, one = _Gaps(d, aggregate), np.ones(counts.shape[-1])  # its shuffles computed once for both uses
    zero = np.zeros_like(counts, dtype=float)
    b, a = gaps.gap(counts, zero), gaps.gap(zero, counts)
    obs_b, obs_a = gaps.gap(one, 0 * one), gaps.gap(0 * one, one)
    with np.errstate(invalid="ignore"):
        return BootstrapResult(b + (obs_b - np.nanmean(b)), a + (obs_a - np.nanmean(a)))


def expanded_alpha(confidence: float, n: int) -> float:
    """Two-sided tail mass for Hesterberg's *expanded percentile* interval.

    The plain percentile interval is too narrow for small samples (it behaves
    like ``mean ± z·s/√n`` with the divide-by-n standard deviation). The
    expanded interval takes the bootstrap quantiles at the level α' for which
    ``z_{α'/2} = √(n/(n−1)) · t_{α/2, n−1}`` (Hesterberg 2015, "What teachers
    should know about the bootstrap", The American Statistician 69(4)).
    ``n`` is the number of resampled units (items, or clusters).
    """
    alpha = 1.0 - confidence
    if n < 2:
        return alpha
    z = np.sqrt(n / (n - 1)) * scipy_stats().t.ppf(1 - alpha / 2, n - 1)
    return float(2 * scipy_stats().norm.sf(z))


def percentile_interval(replicates: np.ndarray, confidence: float, n: int | None = None) -> tuple[float, float]:
    """Two-sided bootstrap interval from the replicates: the expanded percentile
    interval when ``n`` (resampled units) is given, else the plain percentile
    interval. Resamples that drew no applicable item (NaN) are dropped."""
    r = replicates[np.isfinite(replicates)]
    if r.size == 0:
        return float("nan"), float("nan")
    alpha = expanded_alpha(confidence, n) if n is not None else 1.0 - confidence
    lo, hi = np.quantile(r, [alpha / 2, 1 - alpha / 2])
    return float(lo), float(hi)


def discordant(d: PairedData) -> tuple[int, int]:
    """(base_only, adapter_only): items where only the base passed (scored
    higher) and items where only the adapter passed (scored higher). For
    pass/fail items these are McNemar's discordant pairs."""
    m = d.mask
    return int(np.sum(d.base[m] > d.adapter[m])), int(np.sum(d.adapter[m] > d.base[m]))


def mcnemar_exact(base_only: int, adapter_only: int) -> float:
    """Two-sided exact McNemar p-value: binomial test of the discordant pairs
    against p = 0.5 (``scipy.stats.binomtest``); 1.0 when there are none."""
    n = base_only + adapter_only
    if n == 0:
        return 1.0
    return float(scipy_stats().binomtest(adapter_only, n, 0.5).pvalue)


def wilcoxon_p(d: PairedData) -> float:
    """Two-sided Wilcoxon signed-rank p-value of the per-item differences
    (zeros dropped, Wilcoxon's convention); 1.0 when every difference is zero."""
    m = d.mask
    diff = d.adapter[m] - d.base[m]
    if not np.any(diff != 0):
        return 1.0
    return float(scipy_stats().wilcoxon(diff, zero_method="wilcox").pvalue)


def permutation_p_gap(d: PairedData, n_resamples: int, rng: np.random.Generator,
                      aggregate: str = "max_gap") -> float:
    """Two-sided paired permutation p-value for the change of a gap statistic (``max_gap`` or
    ``excess_gap``): base and adapter outcomes are swapped per cluster with probability 1/2;
    p = (1 + #{|Δ*| ≥ |Δ|}) / (1 + n_resamples)."""
    t, obs = _swapped_gap_changes(d, n_resamples, rng, aggregate)
    hits = np.sum(np.abs(t) >= abs(obs) - 1e-12)
    return float((1 + hits) / (1 + n_resamples))


def _swapped_gap_changes(d: PairedData, n_resamples: int, rng: np.random.Generator,
                         aggregate: str) -> tuple[np.ndarray, float]:
    """(adapter gap − base gap) under ``n_resamples`` random swaps of base and adapter per cluster, shape
    (n_resamples,), and as observed."""
    gaps = _Gaps(d, aggregate)
    one = np.ones(gaps.sn.shape[0])
    obs = float(gaps.gap(0 * one, one) - gaps.gap(one, 0 * one))
    swap = rng.integers(0, 2, size=(n_resamples, one.size)).astype(float)
    keep = 1.0 - swap
    return gaps.gap(swap, keep) - gaps.gap(keep, swap), obs


def one_sided_p(d: PairedData, n_resamples: int, rng: np.random.Generator,
                aggregate: str = "mean") -> tuple[float, float]:
    """One-sided p-values of "the adapter did not move the metric" against "it lowered it" and against
    "it raised it": ``(p_decrease, p_increase)``.

    * pass/fail items, one per cluster, unweighted: the exact one-sided McNemar test (binomial on the
      discordant pairs, ``scipy.stats.binomtest``);
    * anything else (clusters, weights, fractions, counts): the paired sign-flip permutation test on
      the clusters' summed differences ``Σ w (adapter − base)`` (base and adapter swapped per cluster
      with probability 1/2; ``p = (1 + #{T* ≤ T}) / (1 + n_resamples)``), which is valid for any
      per-item values and keeps clustered items together;
    * ``max_gap`` / ``excess_gap``: the same swap, on the gap statistic (adapter gap − base gap).

    Both are valid under the null of no effect (base and adapter exchangeable within each pair), so
    a rule that fails only when one of them is small fails a null adapter at most at that rate.
    """
    if aggregate in GAP_AGGREGATES:
        t, obs = _swapped_gap_changes(d, n_resamples, rng, aggregate)
        t = t[np.isfinite(t)]
        return (float((1 + np.sum(t <= obs + 1e-12)) / (1 + t.size)),
                float((1 + np.sum(t >= obs - 1e-12)) / (1 + t.size)))
    m = d.mask
    if d.is_binary and d.n_clusters == d.n_items:
        bo, ao = discordant(d)
        if bo + ao == 0:
            return 1.0, 1.0
        return (float(scipy_stats().binomtest(bo, bo + ao, 0.5, alternative="greater").pvalue),
                float(scipy_stats().binomtest(ao, bo + ao, 0.5, alternative="greater").pvalue))
    n_clusters = int(d.clusters.max()) + 1 if d.clusters.size else 0
    diff = np.bincount(d.clusters[m], weights=d.weights[m] * (d.adapter[m] - d.base[m]), minlength=n_clusters)
    diff = diff[diff != 0]
    if diff.size == 0:
        return 1.0, 1.0
    obs = float(diff.sum())
    signs = rng.integers(0, 2, size=(n_resamples, diff.size)) * 2.0 - 1.0
    t = signs @ diff
    tol = 1e-12 * max(1.0, abs(obs))
    return (float((1 + np.sum(t <= obs + tol)) / (1 + n_resamples)),
            float((1 + np.sum(t >= obs - tol)) / (1 + n_resamples)))


def chance_level(n_choices: np.ndarray) -> float:
    """The accuracy of answering multiple-choice items at random: mean of 1/k over the items (k options)."""
    return float(np.mean(1.0 / np.asarray(n_choices, dtype=float))) if len(n_choices) else 0.0


def finite_or_none(x: float) -> float | None:
    """``x`` as a float, or None when it is NaN or infinite (JSON has neither)."""
    return float(x) if np.isfinite(x) else None


def bh_adjust(pvalues: list[float]) -> list[float]:
    """Benjamini–Hochberg adjusted p-values (``scipy.stats.false_discovery_control``)."""
    if not pvalues:
        return []
    return [float(x) for x in scipy_stats().false_discovery_control(np.asarray(pvalues, dtype=float), method="bh")]
