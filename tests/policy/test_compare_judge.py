"""Stages 5–6 (compare, judge): DriftScore as defined in docs/concepts/drift.md, policy validation."""

from __future__ import annotations

import dataclasses

import pytest

from auditor.analysis.compare import compare_metrics
from auditor.analysis.drift import drift_score
from auditor.errors import AuditInputError
from auditor.policy.loading import MetricLimit, load_policy
from auditor.policy.rules import judge
from auditor.records import AdapterRecord, Score
from auditor.scorers import SCORERS
from auditor.suite.manifest import load_suite

METRICS = list(load_suite("smoke", scorers=SCORERS).all_metrics)


def _scores(suite, values_by_variant):
    out = []
    for it in suite.items:
        for v in ("base", "adapter"):
            vals, detail = values_by_variant[v](it)
            out.append(Score(item_id=it.id, variant=v, values=vals, detail=detail))
    return out


def _ifeval_vals(strict_list):
    n = len(strict_list)
    return ({"prompt_level_strict_acc": float(all(strict_list)), "inst_level_strict_acc": sum(strict_list) / n,
             "prompt_level_loose_acc": float(all(strict_list)), "inst_level_loose_acc": sum(strict_list) / n},
            {"n_instructions": n})


def _suite_and_comparisons(base_math: int, adapter_math: int, base_if: int, adapter_if: int):
    suite = load_suite("smoke", limit=4, only=("math", "over_refusal", "ifeval"), scorers=SCORERS)

    def make(math_ok, if_ok):
        def f(it):
            k = int(it.id.split("/")[1][-2:])
            if it.capability == "math":
                return {"numeric_match": float(k <= math_ok)}, {}
            if it.capability == "over_refusal":
                return {"refusal_rate": 0.0}, {}
            return _ifeval_vals([k <= if_ok, True])
        return f

    scores = _scores(suite, {"base": make(base_math, base_if), "adapter": make(adapter_math, adapter_if)})
    return suite, compare_metrics(suite, scores)


def test_deltas_points_and_relative():
    _, comps = _suite_and_comparisons(1, 3, 2, 2)
    m = next(c for c in comps if c.metric == "math.numeric_match")
    assert (m.base, m.adapter) == (0.25, 0.75)
    assert m.delta == pytest.approx(50.0) and m.delta_unit == "points" and m.rel_delta_pct == pytest.approx(200.0)


def test_inst_level_is_weighted_over_instructions():
    suite = load_suite("smoke", limit=2, only=("ifeval",), scorers=SCORERS)
    one = lambda it: _ifeval_vals([False]) if it.id.endswith("01") else _ifeval_vals([True, True, True])
    comps = compare_metrics(suite, _scores(suite, {"base": one, "adapter": one}))
    ila = next(c for c in comps if c.metric == "ifeval.inst_level_strict_acc")
    assert ila.base == pytest.approx(3 / 4)  # 3 of 4 instructions, not mean(0, 1) = 0.5


def test_drift_score_definition_seed003_shape():
    # labelled "instruction": IFEval PLA falls, math NM rises → large positive DriftScore
    _, comps = _suite_and_comparisons(base_math=0, adapter_math=3, base_if=2, adapter_if=1)
    d = drift_score(comps, "instruction", "--label", "ifeval.prompt_level_strict_acc", ["math.numeric_match"], 15)
    assert d.target_gain_pts == pytest.approx(-25.0)
    assert d.off_target_gain_pts == pytest.approx(75.0)
    assert d.drift_score_pts == pytest.approx(100.0) and d.mismatch
    ok = drift_score(comps, "math", "card", "math.numeric_match", ["ifeval.prompt_level_strict_acc"], 15)
    assert ok.drift_score_pts == pytest.approx(-25.0 - 75.0) and not ok.mismatch


def _adapter(warnings=(), declared_base_status="match"):
    return AdapterRecord(path="a", weights_file="a/w", sha256="0" * 64, peft_type="LORA", r=8, lora_alpha=16, target_modules=["q_proj"], ranks={}, n_tensors=2, size_bytes=10, declared_base="x", nominal_label=None, matched_modules=1, warnings=list(warnings),
                       declared_base_status=declared_base_status,
                       declared_base_note=warnings[0] if declared_base_status != "match" else "")


def _policy_min_items_1(tmp_path):
    """The default policy, but deciding on 4 items (the tests' fake suites are tiny)."""
    import yaml

    from auditor.policy.loading import DEFAULT_POLICY

    raw = yaml.safe_load(DEFAULT_POLICY.read_text())
    raw.setdefault("statistics", {})["min_items"] = 1
    for lim in raw["metrics"].values():
        lim["mode"] = "point"
    raw["drift"]["mode"] = "point"  # the point-estimate judge these tiny fake suites test
    p = tmp_path / "policy.yaml"
    p.write_text(yaml.safe_dump(raw))
    return load_policy(p, METRICS)


def test_judge_fails_on_drop_and_mismatch_and_passes_otherwise(tmp_path):
    policy = _policy_min_items_1(tmp_path)
    _, comps = _suite_and_comparisons(base_math=0, adapter_math=3, base_if=2, adapter_if=1)
    d = drift_score(comps, "instruction", "--label", "ifeval.prompt_level_strict_acc", ["math.numeric_match"], 15)
    v = judge(policy, comps, d, _adapter())
    assert v.verdict == "fail"
    failing = {r.rule for r in v.failing}
    # PLA strict −25 points; ILA strict −12.5 (1 of 8 instructions); both beyond the 10-point limit
    assert failing == {"ifeval.prompt_level_strict_acc: max drop", "ifeval.inst_level_strict_acc: max drop",
                       "nominal label: DriftScore"}
    _, same = _suite_and_comparisons(2, 2, 2, 2)
    d2 = drift_score(same, "math", "card", "math.numeric_match", ["ifeval.prompt_level_strict_acc"], 15)
    assert judge(policy, same, d2, _adapter()).verdict == "pass"


def test_base_mismatch_is_a_warning_by_default():
    policy = load_policy(None, METRICS)
    _, same = _suite_and_comparisons(2, 2, 2, 2)
    d = drift_score(same, None, "none", None, [], 15)
    v = judge(policy, same, d, _adapter(["adapter declares base 'a' but is audited on 'b'"], "mismatch"))
    assert v.verdict == "pass"
    assert {r.outcome for r in v.rules if r.rule == "declared base matches"} == {"warn"}


@pytest.mark.parametrize("text,needle", [
    ("version: 1\nmetrics:\n  math.numeric_match: {max_dorp_pts: 5}\n",
     "metrics.math.numeric_match.max_dorp_pts (line 3): unknown key 'max_dorp_pts'"),
    ("version: 1\nmetrics:\n  math.numeric_match: {max_drop_pts: ten}\n",
     "metrics.math.numeric_match.max_drop_pts (line 3): 'ten' is not of type 'number'"),
    ("version: 1\nmetrics:\n  math.numeric_match: {max_drop_pts: 500}\n", "500 is greater than the maximum of 100"),
    ("version: 1\nlabels:\n  instruction: {off_target: [math.numeric_match]}\n", "'target' is a required property"),
    ("version: 1\nmetrics:\n  math.numerc_match: {max_drop_pts: 5}\n", "unknown metric 'math.numerc_match'"),
    ("version: 1\na: &a [1, 2]\nb: *a\n", "YAML aliases"),
    ("version: 1\nmetrics: [\n", "invalid YAML"),
    ("- 1\n- 2\n", "must be a YAML mapping"),
])
def test_invalid_policy_names_key_path(tmp_path, text, needle):
    p = tmp_path / "policy.yaml"
    p.write_text(text)
    with pytest.raises(AuditInputError) as e:
        load_policy(p, METRICS)
    assert needle in e.value.one_line() and str(p) in e.value.one_line()


def test_default_policy_is_valid():
    p = load_policy(None, METRICS)
    assert p.labels["instruction"].target == "ifeval.prompt_level_strict_acc"


def test_adapter_without_effect_fails_by_default():
    policy = load_policy(None, METRICS)
    _, same = _suite_and_comparisons(2, 2, 2, 2)
    d = drift_score(same, None, "none", None, [], 15)
    a = dataclasses.replace(_adapter(), no_effect=True)
    v = judge(policy, same, d, a)
    assert v.verdict == "fail" and [r.rule for r in v.failing] == ["adapter has an effect"]


def test_baseline_limits_judge_candidate_against_previous_release(tmp_path):
    """--baseline: the candidate passes against the base but loses IFEval that the
    previous release had installed → the 'vs previous release' rule fails."""
    import yaml

    from auditor.policy.loading import DEFAULT_POLICY
    from auditor.policy.rules import BASELINE_PREFIX

    raw = yaml.safe_load(DEFAULT_POLICY.read_text())
    raw["statistics"]["min_items"] = 1
    for section in (raw["metrics"], raw["baseline"]["metrics"]):
        for lim in section.values():
            lim["mode"] = "point"
    (tmp_path / "p.yaml").write_text(yaml.safe_dump(raw))
    policy = load_policy(tmp_path / "p.yaml", METRICS)
    # vs base: math and IFEval unchanged (2 → 2); vs previous: previous had IFEval 4 of 4, candidate 2 of 4
    _, vs_base = _suite_and_comparisons(2, 2, 2, 2)
    _, vs_prev = _suite_and_comparisons(base_math=2, adapter_math=2, base_if=4, adapter_if=2)
    d = drift_score(vs_base, "math", "card", "math.numeric_match", ["ifeval.prompt_level_strict_acc"], 15)
    assert judge(policy, vs_base, d, _adapter()).verdict == "pass"
    v = judge(policy, vs_base, d, _adapter(), baseline_comparisons=vs_prev)
    assert v.verdict == "fail"
    assert {r.rule for r in v.failing} == {BASELINE_PREFIX + "ifeval.prompt_level_strict_acc: max drop"}
    (r,) = v.failing
    assert "previous → candidate" in r.reason and r.value == pytest.approx(50.0)
    # the vs-base rules are all still there, unprefixed
    assert any(x.rule == "ifeval.prompt_level_strict_acc: max drop" and x.outcome == "pass" for x in v.rules)


def test_policy_without_baseline_section_uses_the_vs_base_limits(tmp_path):
    p = tmp_path / "p.yaml"
    p.write_text("version: 1\nmetrics:\n  math.numeric_match: {max_drop_pts: 7}\n")
    assert load_policy(p, METRICS).baseline_metrics == {"math.numeric_match": MetricLimit(limits=(("max_drop_pts", 7.0),))}
    p.write_text("version: 1\nbaseline:\n  metrics:\n    math.nope: {max_drop_pts: 7}\n")
    with pytest.raises(AuditInputError, match=r"baseline.metrics.math.nope \(line 4\): unknown metric"):
        load_policy(p, METRICS)


def test_a_single_cluster_is_inconclusive_not_certain(tmp_path):
    """Items that are variants of one question resample together: one cluster gives a
    zero-width interval, which must not decide a `confident` rule nor colour the report."""
    import dataclasses

    from auditor.reports.view import comparison_cells
    from auditor.reports.view import direction as _direction

    policy = load_policy(None, METRICS)
    _, comps = _suite_and_comparisons(base_math=4, adapter_math=0, base_if=2, adapter_if=2)
    one = [dataclasses.replace(c, n_items=30, n_clusters=1, ci_low=c.delta, ci_high=c.delta) for c in comps]
    d = drift_score(one, "math", "card", "math.numeric_match", ["ifeval.prompt_level_strict_acc"], 15)
    (r,) = [x for x in judge(policy, one, d, _adapter()).rules if x.rule == "math.numeric_match: max drop"]
    assert r.decision == "inconclusive" and r.outcome == "warn" and "single question (one cluster)" in r.reason
    plain = dataclasses.replace(comps[0], ci_low=-100.0, ci_high=-100.0, higher_is_better=True, unit="fraction",
                                n_clusters=1, base=1.0, adapter=0.0, delta=-100.0)
    assert _direction(plain) == "unclear" and comparison_cells(plain)["ci"] == "—"
    assert _direction(dataclasses.replace(plain, n_clusters=5)) == "worse"


@pytest.mark.parametrize("tg,og,needle", [
    (-20.0, 0.0, "promises got worse"), (-5.0, 30.0, "improved, the one the label promises did not"),
    (0.0, 30.0, "improved, the one the label promises did not"), (5.0, 40.0, "gained more than"),
])
def test_label_mismatch_says_which_way(tg, og, needle):
    from auditor.policy.rules import mismatch_kind

    assert needle in mismatch_kind(tg, og)


def test_a_limit_rule_reason_counts_its_items():
    suite = load_suite("smoke", limit=4, only=("math",), scorers=SCORERS)
    scores = [Score(item_id=i.id, variant=v, values={"numeric_match": float(v == "base" or k % 2)}, detail={})
              for k, i in enumerate(suite.items) for v in ("base", "adapter")]
    comps = compare_metrics(suite, scores)
    verdict = judge(load_policy(None, suite.all_metrics), comps, drift_score(comps, None, "none", None, [], 15.0),
                    _adapter())
    rule = next(r for r in verdict.rules if r.rule == "math.numeric_match: max drop")
    assert "(100.0 → 50.0; 4 items)" in rule.reason, rule.reason
