"""How one rule decides, per decision mode, once every rule of the look is known (the multiplicity
adjustment needs them all). See :mod:`auditor.policy.rules` for the modes; the default policy's is
``evidence``.

``evidence`` (issue 19), on the movement m toward the limited direction, its limit L and one look
``k`` of at most ``K`` (``statistics.looks``):

* **fail** when m̂ > L and the movement is statistically real: its one-sided p-value of "no
  movement" (exact McNemar for pass/fail items, a paired sign-flip permutation test otherwise,
  :func:`auditor.analysis.stats.one_sided_p`), Benjamini–Hochberg adjusted over the look's
  ``evidence`` rules, is below the share of ``α`` (``statistics.alpha``) this look may spend
  (:func:`alpha_at_look`: an alpha-spending plan over the looks, so looking after every round
  cannot raise the false-fail rate above α);
* **pass** when m̂ ≤ L and the data exclude a clear regression: the one-sided ``1 − β`` upper
  bound of m (paired bootstrap, ``statistics.beta``) is below ``clear_harm × L``
  (``statistics.clear_harm``, default 2: a regression twice the limit passes at most at rate β);
* **undecided** otherwise: the audit buys items for the rule's capability (a round) and decides
  again; undecided after the last look (or with no items left) is **inconclusive**.

A rule whose metric the base leaves no room to move (:mod:`auditor.policy.measurability`) that does
not fail is **not_measurable**, in every mode.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy import stats as _st

from ..analysis.stats import bh_adjust
from ..records import RuleOutcome
from .loading import StatisticsPolicy


@dataclass
class Pending:
    """A rule whose decision waits for the multiplicity adjustment.

    Attributes:
        outcome: the rule's record, filled in by :func:`decide`.
        mode: its decision mode.
        moved: m̂, the movement toward the limited direction (the rule's units).
        limit: L.
        draws: bootstrap replicates of the movement (or None).
        p_beyond, p_within: one-sided bootstrap p-values relative to the limit (``confident`` and
            ``non_inferiority``).
        p_harm: one-sided p-value of "no movement" against a movement toward the limit (``evidence``).
        alpha_half: half the interval's tail mass (``confident`` / ``non_inferiority``).
        too_few: fewer items than ``min_items`` (or one cluster).
        action: what a violated limit is (``fail`` or ``warn``).
        room: how far the base leaves the metric to move toward the limit (None: unbounded).
        measurability: why the rule cannot show its movement ("" when it can).
        n_items: the items the rule decided on.
    """

    outcome: RuleOutcome
    mode: str
    moved: float
    limit: float
    draws: Any
    p_beyond: float | None
    p_within: float | None
    p_harm: float | None
    alpha_half: float
    too_few: bool
    action: str
    room: float | None = None
    measurability: str = ""
    n_items: int = 0
    capabilities: list[str] = field(default_factory=list)

    @property
    def point_beyond(self) -> bool:
        return self.moved > self.limit + 1e-9


def one_sided_bootstrap(draws: Any, limit: float) -> tuple[float | None, float | None]:
    """``(p_beyond, p_within)`` from the movement's bootstrap replicates: the share
    of replicates within the limit (small → confidently beyond it) and the share
    beyond it (small → confidently within); (None, None) without replicates."""
    r = _finite(draws)
    if r is None:
        return None, None
    return float(np.mean(r <= limit)), float(np.mean(r >= limit))


def _finite(draws: Any) -> np.ndarray | None:
    if draws is None:
        return None
    r = np.asarray(draws, dtype=float)
    r = r[np.isfinite(r)]
    return r if r.size else None


def upper_bound(draws: Any, beta: float) -> float | None:
    """The one-sided ``1 − beta`` upper bound of the movement from its bootstrap replicates."""
    r = _finite(draws)
    return None if r is None else float(np.quantile(r, 1.0 - beta))


def _items_to_decide(p: Pending, stats: StatisticsPolicy, alpha_look: float, n_rules: int) -> int | None:
    """About how many items (in total) would likely decide an undecided rule: the normal approximation
    of the movement's spread, scaled by 1/√n, toward the nearer of its two decision thresholds
    (significance beyond the limit, or an upper bound under ``clear_harm × L``)."""
    r = _finite(p.draws)
    if r is None or p.n_items <= 0:
        return None
    se = float(np.std(r))
    if se <= 0:
        return None
    clear = stats.clear_harm * p.limit
    if p.point_beyond:
        z, gap = _st.norm.isf(alpha_look / max(1, n_rules)), p.moved
    else:
        z, gap = _st.norm.isf(stats.beta), clear - p.moved
    if gap <= 0:
        return None
    need = p.n_items * (z * se / gap) ** 2
    return int(min(100_000, math.ceil(max(need, p.n_items + 1, stats.min_items))))


def alpha_at_look(stats: StatisticsPolicy, look: int, looks: int | None = None) -> float:
    """The false-fail rate the ``evidence`` rules may spend at look ``look`` of ``looks`` planned
    (default ``stats.looks``; the pipeline plans one look when the budget buys no rounds, e.g.
    ``--budget 0`` or ``--limit``: that look spends all of α).

    A power-family alpha-spending plan (Lan & DeMets 1983; Jennison & Turnbull 2000, §7.3):
    ``α(t) = α · t^ρ`` (``statistics.spending``, ρ; 1 spends evenly) on the planned information
    fractions of the doubling rounds, ``t_k = 2^(k − K)`` (the last look has every planned item);
    look ``k`` spends ``α(t_k) − α(t_{k−1})``. The shares sum to α, so by the union bound the
    chance of any false fail over all looks is at most α, however the looks are correlated. Early
    looks get little: a regression strong enough to show on the suite's own items still fails there,
    and most of α is kept for the look with the most items.
    """
    total = max(1, stats.looks if looks is None else looks)
    k = max(1, min(look, total))
    frac = lambda j: 0.0 if j <= 0 else 2.0 ** (j - total)  # noqa: E731
    return stats.alpha * (frac(k) ** stats.spending - frac(k - 1) ** stats.spending)


def decide(pend: list[Pending], stats: StatisticsPolicy, look: int = 1, last: bool = True,
           looks: int | None = None) -> None:
    """Fill in ``decision`` and ``outcome`` of every pending rule (BH within each interval mode).

    Args:
        pend: the look's pending rules.
        stats: the policy's statistics settings.
        look: this look's number (1 for the suite's own items, then one per round).
        last: no more items will be bought: an ``evidence`` rule still undecided is inconclusive.
        looks: the looks planned before any data (:func:`alpha_at_look`); None: ``stats.looks``.
    """
    alpha_look = alpha_at_look(stats, look, looks)
    for mode, field_ in (("confident", "p_beyond"), ("non_inferiority", "p_within"), ("evidence", "p_harm")):
        group = [r for r in pend if r.mode == mode and getattr(r, field_) is not None and not r.too_few]
        raw = [getattr(r, field_) for r in group]
        adj = bh_adjust(raw) if stats.multiplicity == "bh" else raw
        for r, q in zip(group, adj):
            r.outcome.p_value, r.outcome.p_adjusted = getattr(r, field_), q
    n_evidence = sum(r.mode == "evidence" for r in pend)
    for r in pend:
        o = r.outcome
        o.look = look
        o.room = None if r.room is None else round(r.room, 6)
        o.measurable = not r.measurability
        if r.mode == "evidence":
            _decide_evidence(r, stats, alpha_look, last, n_evidence)
        elif r.too_few:
            o.decision = "inconclusive"
        elif r.mode == "point" or (r.p_beyond is None):
            o.decision = "fail" if r.point_beyond else "pass"
        elif r.mode == "confident":
            o.decision = "fail" if o.p_adjusted < r.alpha_half else "pass"
        else:  # non_inferiority
            if o.p_adjusted < r.alpha_half:
                o.decision = "pass"
            elif r.p_beyond < r.alpha_half:
                o.decision = "fail"
            else:
                o.decision = "inconclusive"
        if r.measurability and o.decision != "fail" and not r.too_few and not (
                o.decision == "undecided" and r.room is not None and r.room >= r.limit / 2):
            # (too few items say nothing of the base's room: the rule stays undecided or inconclusive;
            # an undecided rule whose room is at least half its limit may still show it on more items)
            o.decision = "not_measurable"
        o.outcome = {"pass": "pass", "fail": r.action, "inconclusive": stats.on_inconclusive,
                     "undecided": stats.on_inconclusive, "not_measurable": stats.on_not_measurable}[o.decision]
        if o.decision == "not_measurable":
            o.reason += f"; not measurable on this base: {r.measurability}"
        elif o.decision in ("inconclusive", "undecided") and r.mode == "evidence" and not r.too_few:
            o.items_to_decide = _items_to_decide(r, stats, alpha_look, n_evidence)
            more = f" (about {o.items_to_decide} items would likely decide it)" if o.items_to_decide else ""
            o.reason += (f"; {'undecided after look ' + str(look) if o.decision == 'undecided' else 'inconclusive'}"
                         f": the evidence neither shows harm beyond the limit nor excludes a clear regression"
                         f"{more}")
        elif o.decision == "inconclusive" and not r.too_few:
            o.reason += "; the interval crosses the margin: inconclusive"
        elif r.too_few and o.n_items is not None and o.n_items >= stats.min_items:
            o.reason += ("; its items are variants of a single question (one cluster): no interval, "
                         f"{o.decision}")
        elif r.too_few:
            o.reason += (f"; only {o.n_items} item{'s' if o.n_items != 1 else ''} "
                         f"(policy min_items {stats.min_items}): {o.decision}")


def _decide_evidence(r: Pending, stats: StatisticsPolicy, alpha_look: float, last: bool, n_rules: int) -> None:
    o = r.outcome
    ub = upper_bound(r.draws, stats.beta)
    o.upper_bound = None if ub is None else round(ub, 6)
    real = o.p_adjusted is not None and o.p_adjusted < alpha_look and not r.too_few
    clear = stats.clear_harm * r.limit
    if r.point_beyond and real:
        o.decision = "fail"
    elif not r.point_beyond and not r.too_few and (ub is None or ub < clear):
        o.decision = "pass"
    else:
        o.decision = "inconclusive" if last else "undecided"
    o.capabilities = list(r.capabilities)
