"""Policy files as a user writes them: the omitted mode, `extends:`, the
release policy's burden of proof, labels mapped to capabilities."""

from __future__ import annotations

import pytest
from conftest import assert_one_line_error, write_adapter

from auditor.analysis import StatsSettings, compare_metrics, drift_score
from auditor.errors import AuditInputError
from auditor.policy import load_policy
from auditor.policy.extends import BUNDLED_POLICIES
from auditor.policy.rules import judge
from auditor.records import AdapterRecord, Capability, Item, MetricSpec, Score, Suite
from auditor.reports.view import no_drift_note
from auditor.scorers import SCORERS
from auditor.suite import preset_metric_units

UNITS = preset_metric_units(SCORERS)
RELEASE = BUNDLED_POLICIES / "release.yaml"


def _load(path):
    return load_policy(path, sorted(UNITS), UNITS)


def _write(tmp_path, name: str, text: str):
    p = tmp_path / name
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text)
    return p


def _adapter():
    return AdapterRecord(path="a", weights_file="a/w", sha256="0" * 64, peft_type="LORA", r=8, lora_alpha=16,
                       target_modules=["q_proj"], ranks={}, n_tensors=2, size_bytes=10, declared_base="x",
                       nominal_label=None, matched_modules=1)


def _comparisons(per_cap: dict[str, tuple[str, list[int], list[int]]]):
    """capability → (metric, base pass/fail per item, adapter pass/fail per item): real compare_metrics."""
    caps, items, scores = [], [], []
    for cap, (metric, base, adapter) in per_cap.items():
        caps.append(Capability(name=cap, group="CAN", scorer="x", metrics=(MetricSpec(name=metric),)))
        for k, (b, a) in enumerate(zip(base, adapter)):
            it = Item(id=f"{cap}/{k}", capability=cap, group="CAN", max_new_tokens=8, target={},
                      messages=({"role": "user", "content": f"{cap} {k}"},))
            items.append(it)
            scores += [Score(item_id=it.id, variant=v, values={metric: float(x)}, detail={})
                       for v, x in (("base", b), ("adapter", a))]
    suite = Suite(name="s", version=1, path="s", capabilities=tuple(caps), items=tuple(items))
    return suite, compare_metrics(suite, scores, StatsSettings(confidence=0.95, n_resamples=2000, seed=0))


# ---- the omitted mode is the recommended one


def test_a_rule_and_drift_without_mode_are_judged_on_evidence(tmp_path):
    policy = _load(_write(tmp_path, "p.yaml", "version: 1\nstatistics: {min_items: 5}\n"
                                              "metrics:\n  math.numeric_match: {max_drop_pts: 10}\n"
                                              "drift: {max_drift_score_pts: 15}\n"))
    assert policy.metrics["math.numeric_match"].mode == "evidence" and policy.drift.mode == "evidence"
    # 16 items, 3 lost and 1 gained (−12.5 points): beyond the limit on its point estimate (point mode
    # would fail it) but not statistically real: evidence leaves it undecided and buys items
    _, comps = _comparisons({"math": ("numeric_match", [1] * 8 + [0] * 8, [0, 0, 0] + [1] * 6 + [0] * 7)})
    assert comps[0].delta == pytest.approx(-12.5)
    v = judge(policy, comps, drift_score(comps, None, "none", None, [], 15), _adapter(), last=False)
    (r,) = [x for x in v.rules if x.rule == "math.numeric_match: max drop"]
    assert r.mode == "evidence" and r.decision == "undecided"


# ---- extends


def test_extends_default_overrides_deeply_and_null_removes(tmp_path):
    child = _load(_write(tmp_path, "p.yaml", "extends: default\nstatistics: {on_inconclusive: fail}\n"
                                             "metrics:\n  math.numeric_match: {max_drop_pts: 5}\n"
                                             "  verbosity.words: ~\n"))
    default = _load(None)
    assert child.metrics["math.numeric_match"].limits == (("max_drop_pts", 5.0),)
    assert child.metrics["math.numeric_match"].mode == "evidence"  # the parent's mode, kept
    assert child.metrics["knowledge.acc"] == default.metrics["knowledge.acc"]
    assert "verbosity.words" not in child.metrics and "verbosity.words" in default.metrics
    assert child.statistics.on_inconclusive == "fail" and child.statistics.looks == default.statistics.looks
    assert child.labels == default.labels and "extends" not in child.content


def test_extends_a_path_relative_to_the_file_in_a_chain(tmp_path):
    _write(tmp_path, "base/team.yaml", "extends: default\ndrift: {max_drift_score_pts: 30}\n")
    _write(tmp_path, "base/strict.yaml", "extends: team.yaml\nmetrics:\n  knowledge.acc: {max_drop_pts: 3}\n")
    p = _load(_write(tmp_path, "adapters/p.yaml", "extends: ../base/strict.yaml\non_base_mismatch: fail\n"))
    assert p.drift.max_drift_score_pts == 30 and p.metrics["knowledge.acc"].limits == (("max_drop_pts", 3.0),)
    assert p.on_base_mismatch == "fail" and p.drift.on_label_mismatch == "fail"


@pytest.mark.parametrize("files,needle", [
    ({"p.yaml": "extends: p.yaml\nversion: 1\n"}, "extends (line 1): policies extend each other in a cycle"),
    ({"p.yaml": "version: 1\nextends: nope\n"}, "extends (line 2): no bundled policy 'nope' (bundled: default, release"),
    ({"p.yaml": "version: 1\nextends: ./nope.yaml\n"}, "extends (line 2): the policy it extends, './nope.yaml', is not a file"),
    ({"p.yaml": "extends: [default]\n"}, "extends (line 1): extends names one policy"),
])
def test_extends_faults_name_the_file(tmp_path, files, needle):
    for name, text in files.items():
        _write(tmp_path, name, text)
    with pytest.raises(AuditInputError) as e:
        _load(tmp_path / "p.yaml")
    assert e.value.path == str(tmp_path / "p.yaml") and needle in e.value.one_line()


def test_a_cycle_names_the_file_that_closes_it_and_every_file_in_it(tmp_path):
    p = _write(tmp_path, "p.yaml", "extends: q.yaml\n")
    q = _write(tmp_path, "q.yaml", "version: 1\nextends: p.yaml\n")
    with pytest.raises(AuditInputError) as e:
        _load(p)
    assert e.value.path == str(q)
    assert e.value.fault == f"extends (line 2): policies extend each other in a cycle: {p} → {q} → {p}"


def test_a_fault_in_the_parent_names_the_parent_and_its_line(tmp_path):
    parent = _write(tmp_path, "parent.yaml", "version: 1\nmetrics:\n  math.numeric_match: {max_drop_pts: 500}\n")
    _write(tmp_path, "p.yaml", "extends: parent.yaml\nmetrics:\n  knowledge.acc: {max_drop_pts: 5}\n")
    with pytest.raises(AuditInputError) as e:
        _load(tmp_path / "p.yaml")
    assert e.value.path == str(parent)
    assert "metrics.math.numeric_match.max_drop_pts (line 3): 500 is greater than the maximum of 100" in e.value.fault


@pytest.mark.parametrize("files,needle", [
    ({"p.yaml": "extends: q.yaml\n", "q.yaml": "extends: p.yaml\nversion: 1\n"}, "cycle"),
    ({"p.yaml": "version: 1\nextends: missing.yaml\n"}, "is not a file"),
])
def test_extends_faults_exit_2_with_one_line(tmp_path, cli, files, needle):
    for name, text in files.items():
        _write(tmp_path, name, text)
    p = tmp_path / "p.yaml"
    assert_one_line_error(cli(write_adapter(tmp_path / "a"), "--policy", p, "--out", tmp_path / "o"), str(p), needle)


# ---- the release policy: the burden of proof on the adapter


def test_policy_option_names_a_bundled_policy_as_extends_does(tmp_path, monkeypatch):
    assert _load("release") == _load(RELEASE)
    monkeypatch.chdir(tmp_path)
    _write(tmp_path, "release", "version: 1\nextends: default\n")  # a file of that name is the user's policy
    assert _load("release").path == "release"
    with pytest.raises(AuditInputError, match=r"nope: policy file not found, and no bundled policy of that name "
                                              r"\(bundled: default, release"):
        _load("nope")


def test_release_extends_default_and_judges_every_limit_as_a_margin():
    release, default = _load(RELEASE), _load(None)
    assert "extends: default" in RELEASE.read_text()
    assert set(release.metrics) == set(default.metrics) and set(release.baseline_metrics) == set(default.baseline_metrics)
    for mine, theirs in ((release.metrics, default.metrics), (release.baseline_metrics, default.baseline_metrics)):
        for m, lim in mine.items():
            assert lim.limits == theirs[m].limits and lim.action == theirs[m].action, m  # the default's limits
            assert lim.mode in ("non_inferiority", "point"), m  # no evidence rule: its settings are unused
    assert release.drift.mode == "non_inferiority" and release.statistics.on_inconclusive == "fail"
    assert release.labels == default.labels


def test_release_fails_an_adapter_that_does_not_show_it_is_within_the_limit():
    # 40 items, the adapter loses 4 and gains 1 (−7.5 points): within the 10-point limit, but the
    # interval reaches beyond it, so nothing is shown either way
    base = [1] * 20 + [0] * 20
    adapter = [0] * 4 + [1] * 16 + [1] + [0] * 19
    _, comps = _comparisons({"math": ("numeric_match", base, adapter)})
    drift = drift_score(comps, None, "none", None, [], 15)
    v = judge(_load(RELEASE), comps, drift, _adapter())
    (r,) = [x for x in v.rules if x.rule == "math.numeric_match: max drop"]
    assert r.decision == "inconclusive" and r.outcome == "fail" and v.verdict == "fail"  # exit code 1
    # the default policy, judging the same data on evidence, does not fail it
    assert judge(_load(None), comps, drift, _adapter()).verdict != "fail"


# ---- labels beyond two


def test_default_policy_labels_every_capability_a_label_can_promise():
    labels = _load(None).labels
    assert labels["instruction"].off_target == ("math.numeric_match",)  # the two explicit ones unchanged
    promised = {lt.target.split(".")[0] for lt in labels.values()}
    assert promised == {c for c in (m.split(".")[0] for m in UNITS) if c not in ("verbosity", "trigger")}
    k = labels["knowledge"]
    assert k.target == "knowledge.acc" and k.capability == "knowledge"
    assert "knowledge.acc" not in k.off_target and "math.numeric_match" in k.off_target
    assert labels["safety"].target == "harmful_refusal.refusal_rate"


def test_a_domain_label_mapped_to_a_capability_gets_a_drift_score(tmp_path):
    policy = _load(_write(tmp_path, "p.yaml", "extends: default\nlabels: {medical: knowledge, chat: instruction}\n"))
    assert policy.labels["chat"] == policy.labels["instruction"]  # another label: the same promise
    # a run of three capabilities: knowledge flat, math +50 points, IFEval flat
    suite, comps = _comparisons({"knowledge": ("acc", [1] * 5 + [0] * 15, [1] * 5 + [0] * 15),
                                 "math": ("numeric_match", [0] * 20, [1] * 10 + [0] * 10),
                                 "ifeval": ("prompt_level_strict_acc", [1] * 10 + [0] * 10, [1] * 10 + [0] * 10)})
    promise = policy.promise("medical", suite.metric_names())
    assert promise is not None and promise.target == "knowledge.acc"
    assert set(promise.off_target) == {"math.numeric_match", "ifeval.prompt_level_strict_acc"}  # the run's others
    d = drift_score(comps, "medical", "--label", promise.target, promise.off_target, 15)
    # docs/concepts/drift.md: TargetGain on knowledge (0), OffTargetGain the mean over the others ((50 + 0) / 2)
    assert d.target_gain_pts == pytest.approx(0.0) and d.off_target_gain_pts == pytest.approx(25.0)
    assert d.drift_score_pts == pytest.approx(25.0) and d.mismatch
    v = judge(policy, comps, d, _adapter())
    assert [r.rule for r in v.rules if r.kind in ("drift", "label")] == ["nominal label: DriftScore"]
    assert no_drift_note(d, v.rules) is None


def test_an_unknown_label_says_no_drift_score_is_computed():
    policy = _load(None)
    suite, comps = _comparisons({"math": ("numeric_match", [1] * 10, [1] * 10)})
    assert policy.promise("style", suite.metric_names()) is None
    d = drift_score(comps, "style", "model card", None, [], 15)
    v = judge(policy, comps, d, _adapter())
    (r,) = [x for x in v.rules if x.kind == "label"]
    assert r.outcome == "warn" and "no DriftScore is computed" in r.reason and "labels: {style: knowledge}" in r.reason
    assert no_drift_note(d, v.rules) == r.reason  # what the terminal, summary.md and report.html show
    odd = judge(policy, comps, drift_score(comps, "x\x1b[2J", "model card", None, [], 15), _adapter())
    assert "\x1b" not in next(x for x in odd.rules if x.kind == "label").reason  # a card's escapes stay quoted


def test_a_capability_label_with_none_of_its_others_in_the_run_is_not_run():
    policy = _load(None)
    suite, _ = _comparisons({"knowledge": ("accuracy", [1] * 10, [1] * 10)})
    assert policy.promise("knowledge", suite.metric_names()) is None


def test_what_a_label_needs_that_the_run_left_out_is_named():
    policy = _load(None)
    only_math = ["math.numeric_match"]
    assert policy.missing_for("math", only_math) == ["ifeval"]  # its explicit off-target
    assert policy.missing_for("instruction", only_math) == ["ifeval"]  # its target
    assert policy.missing_for("math", [*only_math, "ifeval.prompt_level_strict_acc"]) == []  # decided: nothing
    # a capability-mapped label: its target, and its others only when none of them is in the run
    assert policy.missing_for("knowledge", only_math) == ["knowledge"]
    others = policy.missing_for("knowledge", ["knowledge.acc"])
    assert others and "knowledge" not in others and "math" in others
    assert policy.missing_for("style", only_math) == [] and policy.missing_for(None, only_math) == []


@pytest.mark.parametrize("labels,needle", [
    ("{medical: cardiology}", "labels.medical (line 2): 'cardiology' is not another label of this policy, a capability"),
    ("{style: verbosity}", "labels.style (line 2): verbosity.words is measured in words, not points"),
    ("{a: b, b: a}", "labels name each other in a cycle"),
])
def test_label_faults_name_the_key(tmp_path, labels, needle):
    p = _write(tmp_path, "p.yaml", f"extends: default\nlabels: {labels}\n")
    with pytest.raises(AuditInputError) as e:
        _load(p)
    assert e.value.path == str(p) and needle in e.value.fault


def test_the_drift_rule_not_run_names_the_capabilities_the_label_needs():
    policy = _load(None)
    _, comps = _comparisons({"math": ("numeric_match", [1] * 10, [1] * 10)})
    d = drift_score(comps, "math", "--label", None, [], 15)
    (r,) = [x for x in judge(policy, comps, d, _adapter()).rules if x.kind == "drift"]
    assert r.outcome == "not_run"
    assert r.reason == "label 'math': its target/off-target capabilities (ifeval) were not part of this run"


def test_a_points_limit_under_one_point_is_warned_about(tmp_path):
    path = _write(tmp_path, "p.yaml", "version: 1\nmetrics:\n  math.numeric_match:\n    max_drop_pts: 0.05\n"
                                      "  knowledge.acc:\n    max_drop_pts: 5\n")
    policy = _load(path)
    assert policy.warnings == (f"{path}: metrics.math.numeric_match.max_drop_pts (line 4): 0.05 is less than one "
                               "point; *_pts limits are written in points (a limit of 5 points is written 5, not 0.05)",)
    assert _load(None).warnings == ()  # the bundled policy's limits are points
