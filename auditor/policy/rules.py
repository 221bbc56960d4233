"""Stage 6 — judge: policy rules → verdict.

The policy (:mod:`auditor.policy.loading`) is applied to one adapter's comparisons. Each rule yields a
:class:`~auditor.records.RuleOutcome` with its reason; the verdict is ``fail`` if any rule fails,
else ``pass``.

Decision modes of a limit rule (``mode:``), on the *movement* m toward the limited direction (a
drop for ``max_drop_*``, a rise for ``max_rise_*``) and its paired-bootstrap interval
(:mod:`auditor.analysis.compare`):

* ``evidence`` — the default (issue 19): fail on evidence of harm beyond the limit, pass when the
  data exclude a clear regression, otherwise undecided, which buys more items
  (:mod:`auditor.policy.decisions` states the tests and their error rates);
* ``point`` — fail when the point estimate m̂ exceeds the limit;
* ``confident`` — fail only when the whole interval lies beyond the limit (the data show the
  movement is too large); otherwise pass;
* ``non_inferiority`` — the limit is a margin: pass only when the whole interval lies within it
  (the data show the adapter is not worse by more than the margin), fail when the whole interval
  lies beyond it, otherwise ``inconclusive``.

Any mode returns ``inconclusive`` (``evidence``: undecided) when the metric has fewer than
``statistics.min_items`` items, and ``not_measurable`` when the base leaves the metric no room to
move by the limit (:mod:`auditor.policy.measurability`) and the rule did not fail. The decision
becomes the rule's outcome; ``inconclusive`` is mapped by ``statistics.on_inconclusive``,
``not_measurable`` by ``on_not_measurable`` (pass / warn / fail) and a violated limit by the rule's
``action`` (fail, or warn).

Interval tests (``confident``, ``non_inferiority``) are done on one-sided bootstrap p-values (the
share of replicates on the other side of the limit), compared with half the interval's tail mass,
so "the interval lies beyond the limit" and "p < α/2" are the same statement. With
``statistics.multiplicity: bh`` the p-values of the rules of each mode are adjusted together with
Benjamini–Hochberg before they decide.
"""

from __future__ import annotations

import numpy as np

from ..analysis.stats import expanded_alpha
from ..records import AdapterInfo, DriftResult, MetricComparison, NoiseFloor, RuleOutcome, Verdict
from .decisions import Pending, decide, one_sided_bootstrap
from .loading import MetricLimit, Policy, StatisticsPolicy
from .measurability import room, why_not_measurable


def _too_few(n_items: int, n_clusters: int, stats_cfg: StatisticsPolicy) -> bool:
    """Too little to decide on: fewer items than ``min_items``, or fewer than two
    independent clusters (items that are variants of one question resample together,
    so one cluster gives a zero-width bootstrap interval that says nothing)."""
    return n_items < stats_cfg.min_items or (0 < n_clusters < 2)


def _ci_text(ci: list[float] | None, what: str, conf: float) -> str:
    if not ci or ci[0] is None or ci[1] is None:
        return ""
    return f", {100 * conf:.0f}% CI of {what} [{ci[0] + 0.0:+.1f}, {ci[1] + 0.0:+.1f}]"


def mismatch_kind(target_gain: float, off_target_gain: float) -> str:
    """Which way a DriftScore beyond its limit came about, in words (TargetGain and
    OffTargetGain in points, as in ``seeds/003``): the promised target fell, or something
    else moved more than it."""
    if target_gain < 0 and off_target_gain <= 0:
        return "the capability the label promises got worse"
    if target_gain <= 0:
        return "off-target capabilities improved, the one the label promises did not"
    return "off-target capabilities gained more than the one the label promises"


def _limit_rules(limits: dict[str, MetricLimit], comparisons: list[MetricComparison], stats_cfg: StatisticsPolicy,
                 prefix: str, sides: tuple[str, str], rules: list[RuleOutcome], pend: list[Pending]) -> None:
    """One rule per limit key of each limited metric, appended to ``rules`` (and
    to ``pend``, to be decided after the multiplicity adjustment). ``prefix``
    names the comparison in the rule name ("" for adapter vs base); ``sides``
    names its two variants in the reason."""
    by = {c.metric: c for c in comparisons}
    for metric, lim in limits.items():
        if metric not in by:
            rules.append(RuleOutcome(f"{prefix}{metric}: limits", "not_run",
                                     f"capability {metric.split('.')[0]} was not part of this run"))
            continue
        c = by[metric]
        mode = lim.mode
        for key, limit in lim.limits:
            kind = "drop" if "drop" in key else "rise"
            sign = -1.0 if kind == "drop" else 1.0
            pct = key.endswith("_pct")
            if pct:
                if c.rel_delta_pct is None:
                    rules.append(RuleOutcome(f"{prefix}{metric}: max {kind} (%)", "not_run",
                                             f"{metric} is 0 for the {sides[0]}: a relative change is undefined"))
                    continue
                est, draws, unit = c.rel_delta_pct, c.rel_draws, f"% of {sides[0]}"
                ci = c.rel_ci_pct
                name = f"{prefix}{metric}: max {kind} (%)"
            else:
                est, draws, unit, ci = c.delta, c.draws, c.delta_unit, [c.ci_low, c.ci_high]
                name = f"{prefix}{metric}: max {kind}"
            moved = sign * est
            moved_draws = None if draws is None else sign * np.asarray(draws, dtype=float)
            moved_ci = None if ci is None or ci[0] is None else sorted([sign * ci[0] + 0.0, sign * ci[1] + 0.0])
            p_beyond, p_within = one_sided_bootstrap(moved_draws, limit)
            shown = (f"{100 * c.base:.1f} → {100 * c.adapter:.1f}" if c.is_fraction
                     else f"{c.base:.1f} → {c.adapter:.1f} {c.unit}")
            if prefix:
                shown += f", {sides[0]} → {sides[1]}"
            shown += f"; {c.n_items} item{'s' if c.n_items != 1 else ''}"
            if c.n_clusters and c.n_clusters != c.n_items:
                shown += f" in {c.n_clusters} clusters"
            verb = "rose" if est > 0 else "dropped" if est < 0 else "changed"
            reason = (f"{metric} {verb} by {abs(est):.1f} {unit} ({shown}){_ci_text(ci, 'Δ', c.confidence)}; "
                      f"limit: {kind} ≤ {limit:g} {unit}; mode {mode}")
            o = RuleOutcome(name, "pass", reason, value=round(moved, 6), limit=limit, mode=mode,
                            ci=moved_ci, n_items=c.n_items)
            rules.append(o)
            p_harm = c.p_decrease if kind == "drop" else c.p_increase
            pend.append(Pending(o, mode, moved, limit, moved_draws, p_beyond, p_within, p_harm,
                                expanded_alpha(c.confidence, c.n_clusters) / 2,
                                _too_few(c.n_items, c.n_clusters, stats_cfg), lim.action,
                                room=room(c, kind, pct),
                                measurability=why_not_measurable(c, kind, pct, limit, unit) if not prefix else "",
                                n_items=c.n_items, capabilities=[c.capability]))


#: rule-name prefix of the limits judged against the previously approved adapter (``--baseline``)
BASELINE_PREFIX = "vs previous release: "
#: the nominal-label rule's name
DRIFT_RULE = "nominal label: DriftScore"


def _drift_rule(policy: Policy, drift: DriftResult, by: dict[str, MetricComparison], rules: list[RuleOutcome],
                pend: list[Pending]) -> None:
    d, stats_cfg = policy.drift, policy.statistics
    if drift.label is None:
        rules.append(RuleOutcome("nominal label: present", d.on_missing_label,
                                 "no nominal label given (--label) or found in the adapter's model card; "
                                 "DriftScore not computed"))
    elif drift.label in policy.labels and drift.target_metric is None:
        rules.append(RuleOutcome(DRIFT_RULE, "not_run",
                                 f"label {drift.label!r}: its target/off-target capabilities were not part of this run"))
    elif drift.target_metric is None:
        rules.append(RuleOutcome("nominal label: known to policy", d.on_unknown_label,
                                 f"label {drift.label!r} has no target metric in the policy; DriftScore not computed"))
    else:
        assert drift.drift_score_pts is not None
        mode = d.mode
        limit = float(d.max_drift_score_pts)
        ci = [drift.ci_low_pts, drift.ci_high_pts] if drift.ci_low_pts is not None else None
        metrics = (drift.target_metric, *drift.off_target_metrics)
        o = RuleOutcome(
            DRIFT_RULE, "pass",
            f"label {drift.label!r} promises {drift.target_metric}: TargetGain {drift.target_gain_pts:+.1f}, "
            f"OffTargetGain {drift.off_target_gain_pts:+.1f}, DriftScore {drift.drift_score_pts:+.1f} points"
            f"{_ci_text(ci, 'DriftScore', drift.confidence)} (limit {limit:g}; mode {mode})",
            value=round(drift.drift_score_pts, 6), limit=limit, mode=mode, ci=ci,
            n_items=min(by[m].n_items for m in metrics))
        rules.append(o)
        p_beyond, p_within = one_sided_bootstrap(drift.draws, limit)
        n_units = min(by[m].n_clusters for m in metrics)
        pend.append(Pending(o, mode, drift.drift_score_pts, limit, drift.draws, p_beyond, p_within,
                            drift.p_positive, expanded_alpha(drift.confidence, n_units) / 2,
                            _too_few(o.n_items, n_units, stats_cfg), d.on_label_mismatch, n_items=o.n_items,
                            capabilities=list(dict.fromkeys(m.split(".")[0] for m in metrics))))


def judge(policy: Policy, comparisons: list[MetricComparison], drift: DriftResult, adapter: AdapterInfo,
          noise_floor: NoiseFloor | None = None,
          baseline_comparisons: list[MetricComparison] | None = None, look: int = 1, last: bool = True,
          looks: int | None = None) -> Verdict:
    """Apply the policy to one adapter's comparisons.

    Args:
        policy: the validated policy.
        comparisons: from :func:`auditor.analysis.compare_metrics` (with intervals and replicates).
        drift: from :func:`auditor.analysis.drift_score`.
        adapter: inspection result (no-effect and declared-base findings).
        noise_floor: the base replay result, when one was run.
        baseline_comparisons: candidate vs the previously approved adapter
            (``--baseline``; its "base" side is the previous adapter), judged
            against ``policy.baseline_metrics`` as rules named
            ``vs previous release: <metric>: ...`` (release-checklist mode;
            seed 002: behaviour one fine-tune installed can wash out in the next).
        look: the look this judgement is (1: the suite's items; then one per round of items).
        last: no more items will be drawn, so an ``evidence`` rule still undecided is inconclusive.
        looks: the looks planned before any data, for the alpha-spending plan (None: the policy's
            ``statistics.looks``; 1 when no rounds can be bought: the one look spends all of alpha).

    Returns:
        Verdict with one RuleOutcome per rule evaluated (each names its decision mode, interval and
        p-value); ``fail`` if any fails. :attr:`~auditor.records.Verdict.undecided` lists the rules a
        further round could decide.
    """
    stats_cfg = policy.statistics
    rules: list[RuleOutcome] = []
    pend: list[Pending] = []
    _limit_rules(policy.metrics, comparisons, stats_cfg, "", ("base", "adapter"), rules, pend)
    if baseline_comparisons is not None:
        _limit_rules(policy.baseline_metrics, baseline_comparisons, stats_cfg, BASELINE_PREFIX,
                     ("previous", "candidate"), rules, pend)
    _drift_rule(policy, drift, {c.metric: c for c in comparisons}, rules, pend)
    decide(pend, stats_cfg, look, last, looks)
    for r in pend:
        if r.outcome.rule == DRIFT_RULE and r.outcome.decision == "fail":
            r.outcome.reason += " — label mismatch: " + mismatch_kind(drift.target_gain_pts, drift.off_target_gain_pts)

    if noise_floor is not None and noise_floor.n_differ > 0:
        rules.append(RuleOutcome(
            "noise floor: base replay identical", policy.on_noise_floor,
            f"{noise_floor.n_differ} of {noise_floor.n_items} base answers changed when the base was replayed "
            f"with another batch composition: this backend is not batch-invariant, deltas of that size are noise",
            value=float(noise_floor.n_differ)))
    if adapter.no_effect:
        rules.append(RuleOutcome("adapter has an effect", policy.on_no_effect,
                                 "every lora_B tensor is zero: the adapter cannot change the base model"))
    if adapter.declared_base_status == "mismatch":
        rules.append(RuleOutcome("declared base matches", policy.on_base_mismatch, adapter.declared_base_note))
    warnings = list(adapter.warnings)
    verdict = "fail" if any(r.outcome == "fail" for r in rules) else "pass"
    return Verdict(verdict, rules, warnings)
