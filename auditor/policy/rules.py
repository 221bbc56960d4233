"""Stage 6 — judge: policy rules → verdict.

The policy (:mod:`auditor.policy.loading`) is applied to one adapter's comparisons. Each rule yields a
:class:`~auditor.records.RuleOutcome` with its reason; the verdict is ``fail`` if any rule fails,
else ``pass``.

Decision modes of a limit rule (``mode:``), on the *movement* m toward the limited direction (a
drop for ``max_drop_*``, a rise for ``max_rise_*``) and its paired-bootstrap interval
(:mod:`auditor.analysis.compare`):

* ``evidence`` — the default: fail on evidence of harm beyond the limit, pass when the
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
move by the limit (:mod:`auditor.policy.measurability`) and the rule did not fail (an ``evidence`` rule
whose room is at least half its limit is held undecided before the last look, so that more items measure the
room: :mod:`auditor.policy.decisions`). The decision
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

from collections.abc import Mapping, Sequence
from dataclasses import replace

import numpy as np

from ..analysis.drift import drift_of
from ..analysis.stats import expanded_alpha
from ..records import AdapterRecord, DriftResult, MetricComparison, NoiseFloor, RuleOutcome, Verdict
from ..records.vocab import LimitDirection, RuleKind, VerdictValue
from .decisions import Case, decide, one_sided_bootstrap
from .loading import MetricLimit, Policy, StatisticsPolicy
from .measurability import room, why_not_measurable

#: rule-name prefix of the limits judged against the previously approved adapter (``--baseline``)
BASELINE_PREFIX = "vs previous release: "
#: the end of a ``not_run`` rule's reason when its capability was left out of the run (``--capability``)
NOT_IN_RUN = "not part of this run"
#: the nominal-label rule's name and id
DRIFT_RULE = "nominal label: DriftScore"
DRIFT_RULE_ID = "nominal-label/DriftScore"


def limit_rule_id(metric: str, direction: LimitDirection | None, pct: bool = False, baseline: bool = False) -> str:
    """The stable id of a limit rule: ``<metric>/max-<drop|rise>[-pct]`` (``<metric>/limits`` when its
    capability did not run), under ``baseline/`` when judged against the previously approved adapter."""
    tail = "limits" if direction is None else f"max-{direction}{'-pct' if pct else ''}"
    return f"{'baseline/' if baseline else ''}{metric}/{tail}"


def _too_few(n_items: int, n_clusters: int, stats_cfg: StatisticsPolicy) -> bool:
    """Too little to decide on: fewer items than ``min_items``, or fewer than two
    independent clusters (items that are variants of one question resample together,
    so one cluster gives a zero-width bootstrap interval that says nothing)."""
    return n_items < stats_cfg.min_items or (0 < n_clusters < 2)


def _ci_text(ci: Sequence[float | None] | None, what: str, conf: float) -> str:
    if not ci or ci[0] is None or ci[1] is None:
        return ""
    return f", {100 * conf:.0f}% CI of {what} [{ci[0] + 0.0:+.1f}, {ci[1] + 0.0:+.1f}]"


def mismatch_kind(target_gain: float, off_target_gain: float) -> str:
    """Which way a DriftScore beyond its limit came about, in words (TargetGain and
    OffTargetGain in points, as in :mod:`auditor.analysis.drift`): the promised target fell, or something
    else moved more than it."""
    if target_gain < 0 and off_target_gain <= 0:
        return "the capability the label promises got worse"
    if target_gain <= 0:
        return "off-target capabilities improved, the one the label promises did not"
    return "off-target capabilities gained more than the one the label promises"


#: a rule stated by the judge: whole already (a rule that needs no decision), or a case to decide
Stated = RuleOutcome | Case


def _limit_rules(limits: Mapping[str, MetricLimit], comparisons: Sequence[MetricComparison], stats_cfg: StatisticsPolicy,
                 baseline: bool) -> list[Stated]:
    """One rule per limit key of each limited metric, in the policy's order: a case to decide (after the
    multiplicity adjustment), or a ``not_run`` outcome when it cannot be computed. ``baseline``: the
    candidate against the previously approved adapter (rules named ``vs previous release: ...``)."""
    prefix, sides = (BASELINE_PREFIX, ("previous", "candidate")) if baseline else ("", ("base", "adapter"))
    kind: RuleKind = "baseline_limit" if baseline else "limit"
    by = {c.metric: c for c in comparisons}
    out: list[Stated] = []
    for metric, lim in limits.items():
        if metric not in by:
            out.append(RuleOutcome(rule=f"{prefix}{metric}: limits", rule_id=limit_rule_id(metric, None, baseline=baseline),
                                   kind=kind, metric=metric, outcome="not_run",
                                   reason=f"capability {metric.split('.')[0]} was {NOT_IN_RUN}"))
            continue
        c = by[metric]
        mode = lim.mode
        for key, limit in lim.limits:
            direction: LimitDirection = "drop" if "drop" in key else "rise"
            sign = -1.0 if direction == "drop" else 1.0
            pct = key.endswith("_pct")
            rule_id = limit_rule_id(metric, direction, pct, baseline)
            if pct:
                name = f"{prefix}{metric}: max {direction} (%)"
                if c.rel_delta_pct is None:
                    out.append(RuleOutcome(rule=name, rule_id=rule_id, kind=kind, metric=metric, outcome="not_run",
                                           reason=f"{metric} has no relative change: it is 0 for the {sides[0]}, "
                                                  "or a signed difference (the excess context gap)"))
                    continue
                est, draws, unit = c.rel_delta_pct, c.rel_draws, f"% of {sides[0]}"
                ci: tuple[float | None, float | None] | None = c.rel_ci_pct
            else:
                name = f"{prefix}{metric}: max {direction}"
                est, draws, unit, ci = c.delta, c.draws, c.delta_unit, (c.ci_low, c.ci_high)
            moved = sign * est
            moved_draws = None if draws is None else sign * np.asarray(draws, dtype=float)
            moved_ci = None if ci is None or ci[0] is None or ci[1] is None else \
                _sorted_pair(sign * ci[0] + 0.0, sign * ci[1] + 0.0)
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
                      f"limit: {direction} ≤ {limit:g} {unit}; mode {mode}")
            out.append(Case(
                rule=name, rule_id=rule_id, kind=kind, metric=metric, reason=reason, mode=mode, moved=moved,
                limit=limit, ci=moved_ci, n_items=c.n_items, draws=moved_draws, p_beyond=p_beyond,
                p_within=p_within, p_harm=c.p_decrease if direction == "drop" else c.p_increase,
                alpha_half=expanded_alpha(c.confidence, c.n_clusters) / 2,
                too_few=_too_few(c.n_items, c.n_clusters, stats_cfg), action=lim.action,
                room=room(c, direction, pct),
                measurability=why_not_measurable(c, direction, pct, limit, unit) if not baseline else "",
                capabilities=(c.capability,)))
    return out


def _sorted_pair(a: float, b: float) -> tuple[float, float]:
    return (a, b) if a <= b else (b, a)


def _drift_rule(policy: Policy, drift: DriftResult, by: dict[str, MetricComparison]) -> Stated:
    """The nominal-label rule: DriftScore against its limit (a case to decide), or why it was not computed."""
    d, stats_cfg = policy.drift, policy.statistics
    if drift.label is None:
        return RuleOutcome(rule="nominal label: present", rule_id="nominal-label/present", kind="label",
                           outcome=d.on_missing_label,
                           reason="no nominal label given (--label) or found in the adapter's model card; "
                                  "DriftScore not computed")
    if drift.label in policy.labels and drift.target_metric is None:
        missing = policy.missing_for(drift.label, by)
        named = f" ({', '.join(missing)})" if missing else ""
        return RuleOutcome(rule=DRIFT_RULE, rule_id=DRIFT_RULE_ID, kind="drift", outcome="not_run",
                           reason=f"label {drift.label!r}: its target/off-target capabilities{named} were {NOT_IN_RUN}")
    if drift.target_metric is None:
        key = drift.label if drift.label.isidentifier() else repr(drift.label)  # untrusted text: quoted
        return RuleOutcome(rule="nominal label: known to policy", rule_id="nominal-label/known-to-policy",
                           kind="label", outcome=d.on_unknown_label,
                           reason=f"label {drift.label!r} has no entry under the policy's labels "
                                  f"({', '.join(policy.labels) or 'none'}), so no DriftScore is computed; map it "
                                  f"to the capability it promises, e.g. labels: {{{key}: knowledge}}")
    assert drift.drift_score_pts is not None and drift.target_gain_pts is not None \
        and drift.off_target_gain_pts is not None
    limit = float(d.max_drift_score_pts)
    ci = (drift.ci_low_pts, drift.ci_high_pts) if drift.ci_low_pts is not None and drift.ci_high_pts is not None \
        else None
    metrics = (drift.target_metric, *drift.off_target_metrics)
    p_beyond, p_within = one_sided_bootstrap(drift.draws, limit)
    n_units = min(by[m].n_clusters for m in metrics)
    n_items = min(by[m].n_items for m in metrics)
    return Case(
        rule=DRIFT_RULE, rule_id=DRIFT_RULE_ID, kind="drift", metric=None,
        reason=f"label {drift.label!r} promises {drift.target_metric}: TargetGain {drift.target_gain_pts:+.1f}, "
               f"OffTargetGain {drift.off_target_gain_pts:+.1f}, DriftScore {drift.drift_score_pts:+.1f} points"
               f"{_ci_text(ci, 'DriftScore', drift.confidence)} (limit {limit:g}; mode {d.mode})",
        mode=d.mode, moved=drift.drift_score_pts, limit=limit, ci=ci, n_items=n_items, draws=drift.draws,
        p_beyond=p_beyond, p_within=p_within, p_harm=drift.p_positive,
        alpha_half=expanded_alpha(drift.confidence, n_units) / 2, too_few=_too_few(n_items, n_units, stats_cfg),
        action=d.on_label_mismatch, capabilities=tuple(dict.fromkeys(m.split(".")[0] for m in metrics)),
        fail_note=" — label mismatch: " + mismatch_kind(drift.target_gain_pts, drift.off_target_gain_pts))


def judge(policy: Policy, comparisons: list[MetricComparison], drift: DriftResult, adapter: AdapterRecord,
          noise_floor: NoiseFloor | None = None,
          baseline_comparisons: list[MetricComparison] | None = None, look: int = 1, last: bool = True,
          looks: int | None = None, warnings: Sequence[str] = ()) -> Verdict:
    """Apply the policy to one adapter's comparisons.

    Args:
        policy: the validated policy.
        comparisons: from :func:`auditor.analysis.compare_metrics` (with intervals and replicates).
        drift: from :func:`auditor.analysis.drift_score`.
        adapter: inspection result (no-effect and declared-base findings, its warnings).
        noise_floor: the base replay result, when one was run.
        baseline_comparisons: candidate vs the previously approved adapter
            (``--baseline``; its "base" side is the previous adapter), judged
            against ``policy.baseline_metrics`` as rules named
            ``vs previous release: <metric>: ...`` (release-checklist mode:
            behaviour one fine-tune installed can wash out after later training while the
            capability loss hides).
        look: the look this judgement is (1: the suite's items; then one per round of items).
        last: no more items will be drawn, so an ``evidence`` rule still undecided is inconclusive.
        looks: the looks planned before any data, for the alpha-spending plan (None: the policy's
            ``statistics.looks``; 1 when no rounds can be bought: the one look spends all of alpha).
        warnings: what the run found about the adapter after inspection (its chat template, the
            engine's setup): the verdict's warnings after the adapter's own.

    Returns:
        Verdict with one RuleOutcome per rule evaluated (each names its decision mode, interval and
        p-value), every one made whole here; ``fail`` if any fails.
        :attr:`~auditor.records.Verdict.undecided` lists the rules a further round could decide.
    """
    stated = _limit_rules(policy.metrics, comparisons, policy.statistics, baseline=False)
    if baseline_comparisons is not None:
        stated += _limit_rules(policy.baseline_metrics, baseline_comparisons, policy.statistics, baseline=True)
    stated.append(_drift_rule(policy, drift, {c.metric: c for c in comparisons}))
    cases = [s for s in stated if isinstance(s, Case)]
    decided = iter(decide(cases, policy.statistics, look, last, looks))
    rules = [next(decided) if isinstance(s, Case) else s for s in stated]
    if noise_floor is not None:
        rules = [with_noise(r, noise_floor, drift, comparisons) for r in rules]
    if noise_floor is not None and noise_floor.n_differ > 0:
        how = (f"in {noise_floor.replay} (the audit ran in {noise_floor.dtypes[0]})" if noise_floor.varied == "dtype"
               else "with another batch composition (this backend is not batch-invariant)")
        within = [r.rule for r in rules if r.within_noise]
        rules.append(RuleOutcome(
            rule="noise floor: base replay identical", rule_id="noise-floor/base-replay-identical",
            kind="noise_floor", outcome=policy.on_noise_floor,
            reason=f"{noise_floor.n_differ} of {noise_floor.n_items} base answers changed when the base was replayed "
                   f"{how}; " + (f"decided within the noise it measured: {'; '.join(within)}" if within
                                 else "no rule was decided within the noise it measured"),
            value=float(noise_floor.n_differ)))
    if adapter.no_effect:
        rules.append(RuleOutcome(rule="adapter has an effect", rule_id="adapter-has-an-effect", kind="no_effect",
                                 outcome=policy.on_no_effect,
                                 reason="every lora_B tensor is zero: the adapter cannot change the base model"))
    if adapter.declared_base_status == "mismatch":
        rules.append(RuleOutcome(rule="declared base matches", rule_id="declared-base-matches", kind="declared_base",
                                 outcome=policy.on_base_mismatch, reason=adapter.declared_base_note))
    verdict: VerdictValue = "fail" if any(r.outcome == "fail" for r in rules) else "pass"
    return Verdict(verdict=verdict, rules=tuple(rules), warnings=(*adapter.warnings, *warnings))


def noise_of(rule: RuleOutcome, noise_floor: NoiseFloor, drift: DriftResult,
             comparisons: Sequence[MetricComparison]) -> float | None:
    """How far the base replayed on the noise floor's other path moved ``rule``'s statistic (absolute, the rule's
    units): its metric's shift (in % of base for a ``*_pct`` limit), or for DriftScore the shift the replay's
    gains give it (OffTargetGain − TargetGain of the replay against the base). None: not a limit or DriftScore
    rule, or a metric the replay did not measure."""
    if rule.kind == "limit" and rule.metric is not None:
        shifts = noise_floor.metric_shifts_pct if rule.rule_id.endswith("-pct") else noise_floor.metric_shifts
        shift = shifts.get(rule.metric)
        return None if shift is None else abs(shift)
    if rule.kind == "drift" and drift.target_metric is not None:
        better = {c.metric: c.higher_is_better for c in comparisons}
        metrics = (drift.target_metric, *drift.off_target_metrics)
        if any(m not in noise_floor.metric_shifts or m not in better for m in metrics):
            return None
        return abs(drift_of(noise_floor.metric_shifts, better, drift.target_metric, drift.off_target_metrics))
    return None


def with_noise(rule: RuleOutcome, noise_floor: NoiseFloor, drift: DriftResult,
               comparisons: Sequence[MetricComparison]) -> RuleOutcome:
    """``rule`` with its measured noise (:func:`noise_of`) and, when it was decided (pass or fail) with its movement
    no further from its limit than that noise, ``within_noise`` and a sentence saying so at the end of its
    reason: numeric noise of the measured size could have decided it the other way."""
    noise = noise_of(rule, noise_floor, drift, comparisons)
    if noise is None:
        return rule
    if rule.outcome == "not_run" or rule.decision not in ("pass", "fail") or rule.value is None or rule.limit is None:
        return replace(rule, noise=noise)
    margin = abs(rule.value - rule.limit)
    if noise == 0 or margin > noise:
        return replace(rule, noise=noise, within_noise=False)
    units = {c.metric: c.delta_unit for c in comparisons}
    unit = ("% of base" if rule.rule_id.endswith("-pct") else "points" if rule.kind == "drift"
            else units.get(rule.metric or "", ""))
    return replace(rule, noise=noise, within_noise=True,
                   reason=f"{rule.reason}; within the measured numeric noise: the base replayed in {noise_floor.replay} "
                          f"moved this {'DriftScore' if rule.kind == 'drift' else 'metric'} by {noise:.1f} {unit}, "
                          f"and the movement lies {margin:.1f} {unit} from its limit")
