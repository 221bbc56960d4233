"""The evidence decision mode: fail on evidence of harm beyond the limit, pass when the data
exclude a clear regression, otherwise undecided (and inconclusive at the last look); rules the base
cannot move are not measurable; the simulated gate keeps its stated error rates."""

from __future__ import annotations

import sys

import numpy as np
import pytest
from conftest import ROOT

from auditor.analysis import StatsSettings, compare_metrics, drift_score
from auditor.policy import load_policy
from auditor.policy.rules import judge
from auditor.records import AdapterRecord, Capability, Item, MetricSpec, Score, Suite
from auditor.scorers import SCORERS
from auditor.suite import preset_metric_units

sys.path.insert(0, str(ROOT / "benchmarks"))

UNITS = preset_metric_units(SCORERS)


def _policy(tmp_path, body: str = ""):
    p = tmp_path / "p.yaml"
    p.write_text("version: 1\nstatistics: {seed: 0, min_items: 5}\nmetrics:\n"
                 "  math.numeric_match: {max_drop_pts: 10, mode: evidence}\n"
                 "  knowledge.acc: {max_drop_pts: 10, mode: evidence}\n" + body)
    return load_policy(p, sorted(UNITS), UNITS)


def _adapter():
    return AdapterRecord(path="a", weights_file="a/w", sha256="0" * 64, peft_type="LORA", r=8, lora_alpha=16, target_modules=["q_proj"], ranks={}, n_tensors=2, size_bytes=10, declared_base="x", nominal_label=None, matched_modules=1)


def _comparisons(base: list[int], adapter: list[int], cap: str = "math", chance: bool = False,
                 choices: int = 4):
    metric = "numeric_match" if cap == "math" else "acc"
    spec = MetricSpec(name=metric, chance_floor=chance)
    items = tuple(Item(id=f"{cap}/{k}", capability=cap, group="CAN", messages=({"role": "user", "content": str(k)},), max_new_tokens=8,
                       target={"choices": ["a"] * choices} if chance else {}) for k in range(len(base)))
    suite = Suite(name="s", version=1, path="s", capabilities=(Capability(name=cap, group="CAN", scorer="x", metrics=(spec,)),), items=items)
    scores = [Score(item_id=it.id, variant=v, values={metric: float(x)}, detail={}) for it, b, a in zip(items, base, adapter)
              for v, x in (("base", b), ("adapter", a))]
    return compare_metrics(suite, scores, StatsSettings(confidence=0.95, n_resamples=2000, seed=0))


def _rule(policy, comps, look=1, last=True):
    v = judge(policy, comps, drift_score(comps, None, "none", None, [], 15), _adapter(), look=look, last=last)
    (r,) = [x for x in v.rules if x.rule.endswith("max drop") and x.decision]
    return v, r


def test_a_real_drop_beyond_the_limit_fails_with_exact_mcnemar(tmp_path):
    # 40 items: base passes 24, the adapter loses 14 of them and gains none (−35 points)
    base = [1] * 24 + [0] * 16
    adapter = [0] * 14 + [1] * 10 + [0] * 16
    (c,) = _comparisons(base, adapter)
    assert c.p_decrease == pytest.approx(0.5 ** 14) and c.p_increase == 1.0
    v, r = _rule(_policy(tmp_path), [c])
    assert r.decision == "fail" and r.outcome == "fail" and v.verdict == "fail" and r.look == 1
    assert r.p_value == pytest.approx(0.5 ** 14) and r.mode == "evidence"


def test_no_movement_passes_when_a_clear_regression_is_excluded(tmp_path):
    base = [1, 0] * 40
    adapter = list(base)
    adapter[0], adapter[1] = 0, 1  # one flip each way: no movement
    _, r = _rule(_policy(tmp_path), _comparisons(base, adapter))
    assert r.decision == "pass" and r.upper_bound is not None and r.upper_bound < 20


def test_thin_evidence_is_undecided_then_inconclusive_with_items_to_decide(tmp_path):
    # 16 items, 3 lost and 1 gained (−12.5 points): beyond the limit, but not statistically real
    base = [1] * 8 + [0] * 8
    adapter = [0, 0, 0] + [1] * 5 + [1] + [0] * 7
    comps = _comparisons(base, adapter)
    _, r = _rule(_policy(tmp_path), comps, last=False)
    assert r.decision == "undecided" and r.capabilities == ("math",) and "undecided after look 1" in r.reason
    _, r = _rule(_policy(tmp_path), comps, look=3, last=True)
    assert r.decision == "inconclusive" and r.outcome == "warn" and r.items_to_decide > 16
    assert f"about {r.items_to_decide} items would likely decide it" in r.reason


def test_a_metric_at_its_floor_is_not_measurable_unless_it_fails(tmp_path):
    # the base scores 0 of 20: the metric cannot drop; the rule says so instead of passing
    _, r = _rule(_policy(tmp_path), _comparisons([0] * 20, [0] * 20))
    assert r.decision == "not_measurable" and r.outcome == "warn" and r.measurable is False and r.room == 0
    assert "not measurable on this base: the base scores 0.0 (0 of 20 items) and its floor is 0" in r.reason


def test_a_room_near_the_limit_draws_more_items_before_it_is_called_not_measurable(tmp_path):
    # the base right on 2 of 24 (room 8.3 under a 10-point limit, at least half of it) and a null adapter:
    # before the last look more items may show the base's room, so the rule stays undecided and names its
    # capability (the round's draw); at the last look it is not measurable
    base = [1, 1] + [0] * 22
    comps = _comparisons(base, list(base))
    _, r = _rule(_policy(tmp_path), comps, last=False)
    assert r.decision == "undecided" and r.capabilities == ("math",) and r.room == pytest.approx(100 / 12)
    assert "passing, but the base's room (8.3) is short of the limit" in r.reason and r.items_to_decide is None
    _, r = _rule(_policy(tmp_path), comps, look=3, last=True)
    assert r.decision == "not_measurable" and "(2 of 24 items)" in r.reason
    # a room under half the limit is not measured further: 1 of 24 (4.2 points)
    _, r = _rule(_policy(tmp_path), _comparisons([1] + [0] * 23, [1] + [0] * 23), last=False)
    assert r.decision == "not_measurable"


def test_multiple_choice_at_chance_is_not_measurable(tmp_path):
    # 4-option questions, base 27.5% (chance 25%): a broken adapter would look the same
    base = [1] * 11 + [0] * 29
    (c,) = _comparisons(base, list(base), cap="knowledge", chance=True)
    assert c.floor == pytest.approx(0.25)
    _, r = _rule(_policy(tmp_path), [c])
    assert r.decision == "not_measurable" and "chance is 25.0" in r.reason


def test_below_chance_is_harm_not_a_floor(tmp_path):
    """Issue 30: a multiple-choice accuracy an adapter drives below chance is measurable, decided on its
    evidence: the held-out third-party case (7 of 32 → 0 of 32, base already below chance)."""
    base = [1] * 7 + [0] * 25
    (c,) = _comparisons(base, [0] * 32, cap="knowledge", chance=True)
    assert c.floor == pytest.approx(0.25) and c.adapter == 0.0
    _, r = _rule(_policy(tmp_path), [c], last=False)
    assert r.decision != "not_measurable" and r.measurable is True and r.room == pytest.approx(100 * 7 / 32)
    # the first look spends little alpha (exact McNemar p = 0.5**7): undecided, the audit buys items; with no
    # more items to buy, the last look decides on the same data, and the drop is real there: it fails
    assert r.decision == "undecided"
    _, r = _rule(_policy(tmp_path), [c], look=4, last=True)
    assert r.decision == "fail" and r.outcome == "fail"


def test_an_adapter_at_or_above_chance_still_leaves_a_chance_level_base_not_measurable(tmp_path):
    # the base at chance (10 of 40), the adapter too but on other items: nothing shows, not measurable
    base = [1] * 10 + [0] * 30
    adapter = [0] * 10 + [1] * 10 + [0] * 20
    (c,) = _comparisons(base, adapter, cap="knowledge", chance=True)
    _, r = _rule(_policy(tmp_path), [c])
    assert r.decision == "not_measurable" and "chance is 25.0" in r.reason


def test_below_chance_at_chance_level_base_buys_items_then_fails_on_evidence(tmp_path):
    """The zoo's instruct-as-math case (robustness 25.0 → 10.0 on 40 items): no longer not measurable;
    thin evidence keeps it undecided (the audit buys items), and the same rate on twice the items fails."""
    base = [1] * 10 + [0] * 30
    adapter = [1] * 4 + [0] * 36
    (c,) = _comparisons(base, adapter, cap="knowledge", chance=True)
    _, r = _rule(_policy(tmp_path), [c], last=False)
    assert r.decision in ("undecided", "fail") and r.measurable is True
    (c,) = _comparisons(base * 2, adapter * 2, cap="knowledge", chance=True)
    _, r = _rule(_policy(tmp_path), [c], look=4, last=True)
    assert r.decision == "fail"


def test_one_sided_p_values_are_valid_under_the_null_for_clustered_data():
    """The sign-flip test used for clustered metrics rejects a null at about its level (and no more)."""
    from auditor.analysis import stats
    from auditor.util.seeding import rng_for

    rng = np.random.default_rng(1)
    hits = 0
    trials = 400
    for t in range(trials):
        n = 30
        clusters = np.repeat(np.arange(10), 3)
        b = (rng.random(n) < 0.5).astype(float)
        a = np.where(rng.random(n) < 0.3, 1 - b, b)  # symmetric flips: no effect
        d = stats.PairedData(b, a, np.ones(n), clusters)
        p_dec, p_inc = stats.one_sided_p(d, 999, rng_for(t, "x"))
        hits += p_dec < 0.05
    assert hits / trials <= 0.05 + 2 * np.sqrt(0.05 * 0.95 / trials)


def test_null_adapters_fail_the_default_gate_at_most_5_percent_over_every_look():
    """Simulated audits of null adapters on the smoke suite's real item counts and clusters, with the
    default policy and every round its budget buys (benchmarks/gate_simulation.py): at most 5% fail."""
    from gate_simulation import simulate

    res = simulate(None, 120, 0.15, seed=7, n_resamples=1000)
    false_fails = sum(r.verdict == "fail" for r in res)
    assert false_fails / len(res) <= 0.05, [r.failing for r in res if r.verdict == "fail"]


def test_a_regression_three_times_its_limit_is_detected():
    """IFEval prompt-level accuracy down 30 points (3× its limit): the gate fails it in ≥ 90% of audits."""
    from gate_simulation import simulate

    res = simulate(None, 30, 0.15, {"ifeval.prompt_level_strict_acc": 0.30}, seed=11, n_resamples=1000)
    assert sum(r.verdict == "fail" for r in res) / len(res) >= 0.9


def test_the_looks_spend_alpha_by_the_plan_and_one_planned_look_spends_all_of_it(tmp_path):
    from auditor.policy.decisions import alpha_at_look

    stats = load_policy(None, sorted(UNITS), UNITS).statistics  # alpha 0.05, 4 looks, spending 2
    shares = [alpha_at_look(stats, k) for k in range(1, stats.looks + 1)]
    assert sum(shares) == pytest.approx(stats.alpha) and shares == sorted(shares)
    assert shares[0] == pytest.approx(0.05 / 64)  # (1/8)^2 of alpha on the suite's own items
    assert alpha_at_look(stats, 1, looks=1) == pytest.approx(stats.alpha)  # --budget 0: one look, all of it
    # a drop that is real at 5% but not at the first look's share: fails only when no round is planned
    base, adapter = [1] * 20 + [0] * 20, [0] * 7 + [1] * 13 + [0] * 20  # −17.5 points, McNemar p = 1/128
    policy = _policy(tmp_path)
    comps = _comparisons(base, adapter)
    drift = drift_score(comps, None, "none", None, [], 15)
    one = judge(policy, comps, drift, _adapter(), look=1, last=True, looks=1)
    planned = judge(policy, comps, drift, _adapter(), look=1, last=False)
    decision = lambda v: [x.decision for x in v.rules if x.rule.startswith("math") and x.decision][0]  # noqa: E731
    assert decision(one) == "fail" and decision(planned) == "undecided"


def test_a_round_goes_first_to_rules_that_can_still_show_harm():
    # a passing rule held to measure its base's room (measurable false, cheap) and an undecided rule that can
    # fail (dearer): with room in the budget for one capability, the one that can fail gets it
    from auditor.pipeline.rounds import round_sizes
    from auditor.records import RuleOutcome

    held = RuleOutcome(rule="math.numeric_match: max drop", outcome="warn", reason="", value=0.0, limit=10.0,
                       decision="undecided", measurable=False, capabilities=("math",))
    open_ = RuleOutcome(rule="ifeval.prompt_level_strict_acc: max drop", outcome="warn", reason="", value=8.0,
                        limit=10.0, decision="undecided", measurable=True, items_to_decide=200,
                        capabilities=("ifeval",))
    sizes = round_sizes([held, open_], {"math": 24, "ifeval": 24}, {"math": 200, "ifeval": 200}, budget_left=24,
                        tokens_per_item={"math": 10.0, "ifeval": 100.0})
    assert sizes == {"ifeval": 24}
    # with room for both, both get their round
    assert round_sizes([held, open_], {"math": 24, "ifeval": 24}, {"math": 200, "ifeval": 200}, budget_left=48,
                       tokens_per_item={"math": 10.0, "ifeval": 100.0}) == {"ifeval": 24, "math": 24}


def _noise(shift: float, varied: str = "dtype"):
    from auditor.records import NoiseFloor

    return NoiseFloor(n_items=40, batch_sizes=(8, 8), n_differ=3, n_score_differ=2, items_differ=("a", "b", "c"),
                      items_score_differ=("a", "b"), varied=varied, dtypes=("bfloat16", "float32"),
                      metric_shifts={"math.numeric_match": shift}, metric_shifts_pct={})


def test_a_decision_within_the_measured_flip_noise_says_so(tmp_path):
    # 40 items, the adapter loses 14 of 24 (−35 points, fails on evidence); the base replayed on the other dtype
    # moves the metric by 27.5 points, so the movement lies within the noise of the 10-point limit
    base = [1] * 24 + [0] * 16
    adapter = [0] * 14 + [1] * 10 + [0] * 16
    comps = _comparisons(base, adapter)
    policy = _policy(tmp_path)
    for shift, within in ((-27.5, True), (25.0, True), (-24.9, False), (0.0, False)):
        v = judge(policy, comps, drift_score(comps, None, "none", None, [], 15), _adapter(), _noise(shift))
        (r,) = [x for x in v.rules if x.rule == "math.numeric_match: max drop"]
        assert r.decision == "fail" and r.outcome == "fail"
        assert r.noise == abs(shift) and r.within_noise is within
        assert ("within the measured numeric noise: the base replayed in float32 moved this metric by" in r.reason) is within
        (floor,) = [x for x in v.rules if x.kind == "noise_floor"]
        assert floor.outcome == "warn" and "replayed in float32 (the audit ran in bfloat16)" in floor.reason
        assert ("decided within the noise it measured: math.numeric_match: max drop" in floor.reason) is within


def test_an_undecided_rule_gets_the_noise_but_no_within_noise_flag(tmp_path):
    base = [1] * 8 + [0] * 8
    adapter = [0] * 3 + [1] * 5 + [1] + [0] * 7
    comps = _comparisons(base, adapter)
    v = judge(_policy(tmp_path), comps, drift_score(comps, None, "none", None, [], 15), _adapter(), _noise(-3.0),
              last=False)
    (r,) = [x for x in v.rules if x.rule == "math.numeric_match: max drop"]
    assert r.decision == "undecided" and r.noise == 3.0 and r.within_noise is None
