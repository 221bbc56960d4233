"""How one rule decides, per decision mode, once every rule of the look is known (the multiplicity
adjustment needs them all). See :mod:`auditor.policy.rules` for the modes; the default policy's is
``evidence``.

``evidence``, on the movement m toward the limited direction, its limit L and one look
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
not fail is **not_measurable**, in every mode. Where the base's room is short of the limit but at least
half of it, a few items may have understated it (2 of 24 math items right leaves 8.3 points of room
under a 10-point limit; the next 72 of the pool, 12.5): an ``evidence`` rule then stays **undecided**
before its last look, pass or not, so the audit draws more items and measures the room on them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..analysis.stats import bh_adjust, scipy_stats
from ..records import RuleOutcome
from ..records.vocab import Action, Decision, Mode, RuleKind
from .loading import StatisticsPolicy


@dataclass(frozen=True, kw_only=True)
class Case:
    """A limit rule as the judge states it, before its decision (which waits for the multiplicity
    adjustment over every rule of the look): what :func:`decide` turns into a whole
    :class:`~auditor.records.RuleOutcome`.

    Attributes:
        rule, rule_id, kind, metric: the rule's name, stable id, kind and metric (as in RuleOutcome).
        reason: what was measured, in words; the decision adds why it decided so.
        mode: its decision mode.
        moved: m̂, the movement toward the limited direction (the rule's units).
        limit: L.
        ci: the movement's interval (sorted), or None.
        n_items: the items the rule decides on.
        draws: bootstrap replicates of the movement (or None).
        p_beyond, p_within: one-sided bootstrap p-values relative to the limit (``confident`` and
            ``non_inferiority``).
        p_harm: one-sided p-value of "no movement" against a movement toward the limit (``evidence``).
        alpha_half: half the interval's tail mass (``confident`` / ``non_inferiority``).
        too_few: fewer items than ``min_items`` (or one cluster).
        action: what a violated limit is (``fail`` or ``warn``).
        room: how far the base leaves the metric to move toward the limit (None: unbounded).
        measurability: why the rule cannot show its movement ("" when it can).
        capabilities: whose items decide it (what a round buys for an undecided ``evidence`` rule).
        fail_note: added to the reason when the rule fails (DriftScore: which way the label mismatched).
    """

    rule: str
    rule_id: str
    kind: RuleKind
    metric: str | None
    reason: str
    mode: Mode
    moved: float
    limit: float
    ci: tuple[float, float] | None
    n_items: int
    draws: Any
    p_beyond: float | None
    p_within: float | None
    p_harm: float | None
    alpha_half: float
    too_few: bool
    action: Action
    room: float | None = None
    measurability: str = ""
    capabilities: tuple[str, ...] = ()
    fail_note: str = ""

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


def _items_to_decide(p: Case, stats: StatisticsPolicy, alpha_look: float, n_rules: int) -> int | None:
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
        z, gap = scipy_stats().norm.isf(alpha_look / max(1, n_rules)), p.moved
    else:
        z, gap = scipy_stats().norm.isf(stats.beta), clear - p.moved
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


def decide(cases: list[Case], stats: StatisticsPolicy, look: int = 1, last: bool = True,
           looks: int | None = None) -> list[RuleOutcome]:
    """Decide every limit rule of one look (BH within each interval mode) and state each whole.

    Args:
        cases: the look's limit rules.
        stats: the policy's statistics settings.
        look: this look's number (1 for the suite's own items, then one per round).
        last: no more items will be bought: an ``evidence`` rule still undecided is inconclusive.
        looks: the looks planned before any data (:func:`alpha_at_look`); None: ``stats.looks``.

    Returns:
        One :class:`~auditor.records.RuleOutcome` per case, in the same order.
    """
    alpha_look = alpha_at_look(stats, look, looks)
    p_of: dict[int, tuple[float, float]] = {}  # case index -> (p-value the mode decides on, its adjustment)
    for mode, field_ in (("confident", "p_beyond"), ("non_inferiority", "p_within"), ("evidence", "p_harm")):
        group = [k for k, c in enumerate(cases) if c.mode == mode and getattr(c, field_) is not None and not c.too_few]
        raw = [getattr(cases[k], field_) for k in group]
        adj = bh_adjust(raw) if stats.multiplicity == "bh" else raw
        p_of.update({k: (p, q) for k, p, q in zip(group, raw, adj)})
    n_evidence = sum(c.mode == "evidence" for c in cases)
    return [_outcome(c, p_of.get(k, (None, None)), stats, alpha_look, look, last, n_evidence)
            for k, c in enumerate(cases)]


def _decision(c: Case, p_adjusted: float | None, ub: float | None, stats: StatisticsPolicy, alpha_look: float,
              last: bool) -> Decision:
    """What the data say of one rule in its mode (before measurability)."""
    if c.mode == "evidence":
        real = p_adjusted is not None and p_adjusted < alpha_look and not c.too_few
        if c.point_beyond and real:
            return "fail"
        if not c.point_beyond and not c.too_few and (ub is None or ub < stats.clear_harm * c.limit):
            return "pass"
        return "inconclusive" if last else "undecided"
    if c.too_few:
        return "inconclusive"
    if c.mode == "point" or c.p_beyond is None:
        return "fail" if c.point_beyond else "pass"
    assert p_adjusted is not None  # an interval mode with replicates was adjusted with its group
    if c.mode == "confident":
        return "fail" if p_adjusted < c.alpha_half else "pass"
    if p_adjusted < c.alpha_half:  # non_inferiority
        return "pass"
    return "fail" if c.p_beyond < c.alpha_half else "inconclusive"


def _outcome(c: Case, p: tuple[float | None, float | None], stats: StatisticsPolicy, alpha_look: float, look: int,
             last: bool, n_evidence: int) -> RuleOutcome:
    """One rule's whole outcome: its decision, what the policy makes of it, and the reason in full."""
    p_value, p_adjusted = p
    ub = upper_bound(c.draws, stats.beta) if c.mode == "evidence" else None
    decision = _decision(c, p_adjusted, ub, stats, alpha_look, last)
    held = decision == "pass" and c.mode == "evidence" and not last and bool(c.measurability) \
        and c.room is not None and c.room >= c.limit / 2
    if held:
        decision = "undecided"  # (the room, near the limit on these items, is measured on more)
    if c.measurability and decision != "fail" and not c.too_few and not (
            decision == "undecided" and c.room is not None and c.room >= c.limit / 2):
        # (too few items say nothing of the base's room: the rule stays undecided or inconclusive;
        # an undecided rule whose room is at least half its limit may still show it on more items)
        decision = "not_measurable"
    outcome = {"pass": "pass", "fail": c.action, "inconclusive": stats.on_inconclusive,
               "undecided": stats.on_inconclusive, "not_measurable": stats.on_not_measurable}[decision]
    reason, items_to_decide = c.reason, None
    if decision == "not_measurable":
        reason += f"; not measurable on this base: {c.measurability}"
    elif held:
        assert c.room is not None
        reason += (f"; passing, but the base's room ({c.room:.1f}) is short of the limit on these items: more are "
                   "drawn to measure it")
    elif decision in ("inconclusive", "undecided") and c.mode == "evidence" and not c.too_few:
        items_to_decide = _items_to_decide(c, stats, alpha_look, n_evidence)
        more = f" (about {items_to_decide} items would likely decide it)" if items_to_decide else ""
        reason += (f"; {'undecided after look ' + str(look) if decision == 'undecided' else 'inconclusive'}"
                   f": the evidence neither shows harm beyond the limit nor excludes a clear regression{more}")
    elif decision == "inconclusive" and not c.too_few:
        reason += "; the interval crosses the margin: inconclusive"
    elif c.too_few and c.n_items >= stats.min_items:
        reason += f"; its items are variants of a single question (one cluster): no interval, {decision}"
    elif c.too_few:
        reason += f"; only {c.n_items} item{'s' if c.n_items != 1 else ''} (policy min_items {stats.min_items}): {decision}"
    if decision == "fail":
        reason += c.fail_note
    return RuleOutcome(
        rule=c.rule, rule_id=c.rule_id, kind=c.kind, metric=c.metric, outcome=outcome, reason=reason,
        value=round(c.moved, 6), limit=c.limit, mode=c.mode, decision=decision, ci=c.ci,
        p_value=p_value, p_adjusted=p_adjusted, n_items=c.n_items, look=look,
        room=None if c.room is None else round(c.room, 6), measurable=not c.measurability,
        upper_bound=None if ub is None else round(ub, 6), items_to_decide=items_to_decide,
        capabilities=c.capabilities if c.mode == "evidence" else ())
