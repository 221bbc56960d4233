"""The public Python API: ``from auditor import audit`` drives a real audit and returns the typed result."""

from __future__ import annotations

import json

import pytest
from conftest import DEMO_ADAPTERS


def test_audit_through_the_python_api_returns_the_typed_result(tmp_path):
    from auditor import AuditInputError, AuditResult, audit
    from auditor.reports.results_file import load_results, schema_error

    lines: list[str] = []
    result = audit(DEMO_ADAPTERS / "math-arith-r8", capabilities=("math", "knowledge"), limit=4,
                   out=tmp_path / "report", log=lines.append)
    assert isinstance(result, AuditResult)
    assert result.verdict.verdict in ("pass", "fail") and result.passed == (result.verdict.verdict == "pass")
    assert [c.metric for c in result.comparisons] == ["math.numeric_match", "knowledge.acc", "knowledge.acc_norm"]
    math = result.comparisons[0]
    assert math.n_items == 4 and 0 <= math.base <= 1 and math.delta == pytest.approx(100 * (math.adapter - math.base))
    assert result.drift.label == "math" and result.drift.label_source == "model card"
    assert len(result.items) == 8 and all(it.base.text is not None and it.adapter.text is not None
                                          for it in result.items)
    assert any(line.startswith("backend: hf") for line in lines)
    # agreement with the base: math's 4 generated answers, paired with the base's as the items record them;
    # knowledge is multiple choice scored by log-likelihood (no generated answer) and absent
    from auditor.analysis.agreement import agreement

    agree = result.agreement_with_base
    pairs = [(it.base.text, it.adapter.text) for it in result.items if it.capability == "math"]
    assert list(agree.capabilities) == ["math"] and agree.capabilities["math"] == agreement(pairs) == agree.overall
    assert agree.overall.n_items == 4 and agree.overall.identical == sum(b == a for b, a in pairs) / 4
    # results.json is the record's dict, valid against the shipped schema, and reads back as the same record
    data = result.to_dict()
    assert schema_error(data) is None
    assert json.loads((tmp_path / "report" / "results.json").read_text()) == json.loads(json.dumps(data))
    assert load_results(tmp_path / "report" / "results.json") == AuditResult.from_dict(json.loads(json.dumps(data)))
    assert (tmp_path / "report" / "report.html").is_file()
    with pytest.raises(AuditInputError) as e:
        audit(tmp_path / "no-such-adapter")
    assert e.value.one_line() == f"{tmp_path / 'no-such-adapter'}: no such file or folder"
    with pytest.raises(TypeError):
        audit(DEMO_ADAPTERS / "math-arith-r8", sweet="smoke")


# the Python API under the command's names: no model is loaded until the last test

@pytest.mark.parametrize("text", ["auto", "0", "300", "10m", "20ktok", "auto,20m", "300, 90s", "20ktok,1h"])
def test_budget_is_read_as_the_command_reads_it(text):
    from auditor.api import audit_options
    from auditor.cli.run_command import _Budget
    from auditor.options import AuditOptions
    from auditor.pipeline.rounds import budget_for
    from auditor.scorers import SCORERS
    from auditor.suite.manifest import load_suite

    opts = audit_options(budget=text)
    assert (opts.budget_items, opts.budget_seconds, opts.budget_tokens) == _Budget().convert(text, None, None)
    # the rounds get the budget the command would give them
    suite = load_suite("smoke", limit=2, only=("math",), scorers=SCORERS)
    cpu = type("Cpu", (), {"name": "hf", "device": "cpu"})()  # stands in for a backend: only its name and device are read
    items, seconds, tokens = _Budget().convert(text, None, None)
    assert budget_for(opts, suite, cpu) == budget_for(
        AuditOptions(budget_items=items, budget_seconds=seconds, budget_tokens=tokens), suite, cpu)


def test_the_commands_names_set_the_fields_and_the_old_names_still_work():
    from auditor import AuditOptions
    from auditor.api import audit_options

    assert audit_options(budget=0).budget_items == 0 and audit_options(budget="10m").budget_seconds == 600.0
    assert audit_options(no_cache=True).cache is False and audit_options(no_cache=False).cache is True
    assert audit_options(quiet=False).progress is True and audit_options(quiet=True).progress is False
    assert audit_options(max_adapter_size="1KiB").max_adapter_bytes == 1024
    old = audit_options(budget_items=5, budget_seconds=60.0, cache=False, progress=True, max_adapter_bytes=7)
    assert (old.budget_items, old.budget_seconds, old.cache, old.progress, old.max_adapter_bytes) == (5, 60.0, False,
                                                                                                     True, 7)
    # no options: the command's defaults, but no progress bars; a typed AuditOptions is taken as it is
    assert audit_options() == AuditOptions(progress=False)
    typed = AuditOptions(suite="full", limit=3, capabilities=("math",))
    assert audit_options(typed) == typed
    # keywords beside options override the settings they name and leave the rest
    both = audit_options(typed, limit=1, budget="auto,5m", no_cache=True)
    assert (both.suite, both.capabilities, both.limit, both.cache) == ("full", ("math",), 1, False)
    assert (both.budget_items, both.budget_seconds) == (None, 300.0) and typed.limit == 3  # typed is not changed


def test_unknown_or_doubled_option_names_are_one_clear_error():
    from auditor import AuditInputError, audit
    from auditor.api import audit_options

    with pytest.raises(TypeError, match=r"unknown audit option 'budgt' \(did you mean 'budget'") as e:
        audit_options(budgt="10m")
    assert "no_cache" in str(e.value)  # the command's names are listed
    with pytest.raises(TypeError, match=r"unknown audit options 'capability' \(did you mean 'capabilities'.*"
                                        r"'nocache' \(did you mean 'no_cache', 'cache'"):
        audit("never-read", capability="math", nocache=True)  # refused before the adapter is looked at
    with pytest.raises(TypeError, match="give budget= or budget_items=, not both"):
        audit_options(budget="10m", budget_items=3)
    with pytest.raises(TypeError, match="give no_cache= or cache=, not both"):
        audit_options(no_cache=True, cache=True)
    with pytest.raises(TypeError, match="quiet must be True or False"):
        audit_options(quiet="yes")
    with pytest.raises(TypeError, match="options must be an auditor.AuditOptions, not dict"):
        audit_options({"suite": "smoke"})  # type: ignore[arg-type]
    with pytest.raises(AuditInputError) as bad:
        audit_options(budget="20m,10m")
    assert bad.value.one_line().startswith("budget: '20m,10m' gives time twice")
    with pytest.raises(AuditInputError, match="max_adapter_size: 'big' is not a size"):
        audit_options(max_adapter_size="big")


def test_log_lines_are_plain_text_without_rich_markup():
    from rich.markup import escape

    from auditor.api import plain_log

    lines: list[str] = []
    say = plain_log(lines.append)
    hostile = "[bold]adapter[/bold] \x1b[31mred"  # an untrusted name, escaped as the pipeline escapes it
    say(f"[yellow]warning:[/] {escape(hostile)}")
    say("[bold]backend:[/] hf (auto: no GPU)")
    # our markup is gone, the untrusted text reads as it is (its brackets kept), control characters dropped
    assert lines == ["warning: [bold]adapter[/bold] [31mred", "backend: hf (auto: no GPU)"]
    quiet: list[str] = []
    plain_log(quiet.append, quiet=True)("[bold]backend:[/] hf")
    plain_log(None)("[bold]backend:[/] hf")  # no log: nothing, and no error
    assert quiet == []  # quiet=True, as --quiet: no log lines


_ADAPTER = {"weights_file": "w", "sha256": "0" * 64, "r": 8, "max_rank": 8, "n_tensors": 2, "size_bytes": 1,
            "target_modules": ["q_proj"], "matched_modules": 1}


def _result(comparisons, drift, baseline=None):
    """A typed AuditResult built from a results.json mapping (no model): ``comparisons`` and ``drift`` as given."""
    from auditor.results import AuditResult

    return AuditResult.from_dict({
        "schema_version": 9,
        "verdict": {"verdict": "fail", "warnings": [], "rules": [
            {"rule": "math.numeric_match: max drop", "rule_id": "math.numeric_match/max-drop", "kind": "limit",
             "metric": "math.numeric_match", "outcome": "fail", "reason": "dropped"},
            {"rule": "declared base matches", "rule_id": "declared-base-matches", "kind": "declared_base",
             "outcome": "warn", "reason": "w"},
            {"rule": "verbosity.words: max rise", "rule_id": "verbosity.words/max-rise-pct", "kind": "limit",
             "metric": "verbosity.words", "outcome": "pass", "reason": "ok"}]},
        "adapter": dict(_ADAPTER, path="a"),
        "base": {"name": "b", "path": "p", "source": "local", "content_hash": "f" * 64},
        "suite": {"name": "smoke", "version": 1, "path": "s", "item_ids": [], "items_sha256": "a" * 64},
        "policy": {"path": "policy.yaml", "content": {}, "sha256": "b" * 64},
        "comparisons": comparisons, "drift": drift, "items": [], "noise_floor": None, "baseline": baseline,
        "statistics": {"confidence": 0.95, "n_resamples": 100, "seed": 0, "multiplicity": "bh", "min_items": 1},
        "run": {"backend": "hf", "dtype": "float32", "batch_size": 4, "limit": None, "decoding": "greedy",
                "capabilities": ["math", "verbosity"], "timings": {"load_s": 1, "generate_s": 2, "total_s": 3}, "versions": {},
                "auditor_version": "0", "created_at": "now"},
    })


_MATH = {"metric": "math.numeric_match", "capability": "math", "group": "CAN", "n_items": 40, "base": 0.5,
         "adapter": 0.375, "delta": -12.5, "delta_unit": "points", "rel_delta_pct": -25.0, "higher_is_better": True,
         "ci_low": -20.0, "ci_high": -5.0, "p_value": 0.01}
_WORDS = {"metric": "verbosity.words", "capability": "verbosity", "group": "STYLE", "n_items": 10, "base": 80.0,
          "adapter": 88.0, "delta": 8.0, "delta_unit": "words", "rel_delta_pct": 10.0, "higher_is_better": False,
          "unit": "words"}  # no interval, no p-value: left out
_DRIFT = {"label": "math", "label_source": "--label", "target_metric": "math.numeric_match",
          "off_target_metrics": ["verbosity.words"], "target_gain_pts": -12.5, "off_target_gain_pts": -10.0,
          "drift_score_pts": 2.5, "mismatch": False, "ci_low_pts": -1.0, "ci_high_pts": 6.0}


def test_flat_metrics_are_plain_floats_with_their_units_in_the_keys():
    from auditor.reports.results_file import schema_error

    result = _result([_MATH, _WORDS], _DRIFT)
    assert schema_error(result.to_dict()) is None  # the fixture is a valid results.json
    assert result.flat_metrics() == {
        "audit/verdict_pass": 0.0, "audit/rules_fail_n": 1.0, "audit/rules_warn_n": 1.0,
        "audit/math.numeric_match/base_frac": 0.5, "audit/math.numeric_match/adapter_frac": 0.375,
        "audit/math.numeric_match/delta_pts": -12.5, "audit/math.numeric_match/ci_low_pts": -20.0,
        "audit/math.numeric_match/ci_high_pts": -5.0, "audit/math.numeric_match/rel_delta_pct": -25.0,
        "audit/math.numeric_match/p_value": 0.01, "audit/math.numeric_match/n_items": 40.0,
        "audit/verbosity.words/base_words": 80.0, "audit/verbosity.words/adapter_words": 88.0,
        "audit/verbosity.words/delta_words": 8.0, "audit/verbosity.words/rel_delta_pct": 10.0,
        "audit/verbosity.words/n_items": 10.0,
        "audit/drift_score_pts": 2.5, "audit/target_gain_pts": -12.5, "audit/off_target_gain_pts": -10.0,
        "audit/drift_ci_low_pts": -1.0, "audit/drift_ci_high_pts": 6.0}
    assert all(type(v) is float for v in result.flat_metrics().values())
    # no DriftScore (a label without one): its keys are left out; a baseline's comparisons get their own keys
    no_drift = dict(_DRIFT, target_gain_pts=None, off_target_gain_pts=None, drift_score_pts=None, ci_low_pts=None,
                    ci_high_pts=None)
    with_baseline = _result([_MATH], no_drift, baseline={"adapter": dict(_ADAPTER, path="prev"), "comparisons": [_MATH]})
    assert schema_error(with_baseline.to_dict()) is None
    flat = with_baseline.flat_metrics("")
    assert not any("drift" in k or "gain" in k for k in flat)
    assert flat["vs_baseline/math.numeric_match/delta_pts"] == flat["math.numeric_match/delta_pts"] == -12.5


def test_a_one_item_audit_under_the_commands_names_logs_plain_lines(tmp_path):
    """The one real audit here: one math item, no rounds, the typed options beside the command's names."""
    from auditor import AuditOptions, audit

    lines: list[str] = []
    result = audit(DEMO_ADAPTERS / "math-arith-r8", options=AuditOptions(capabilities=("math",), limit=3),
                   limit=1, budget=0, no_cache=True, log=lines.append)
    assert [(c.metric, c.n_items) for c in result.comparisons] == [("math.numeric_match", 1)]
    assert result.run.budget is not None and result.run.budget.items == 0 and result.run.cache["enabled"] is False
    # the label's DriftScore needs capabilities left out: its note arrives without the [yellow] markup
    assert ("note: DriftScore for label 'math' needs capabilities left out of this run: ifeval "
            "(add --capability ifeval)") in lines
    assert lines and not any("[/" in line or "[yellow]" in line for line in lines)
    flat = result.flat_metrics()
    assert flat["audit/verdict_pass"] == float(result.passed)
    assert flat["audit/math.numeric_match/delta_pts"] == result.comparisons[0].delta
    assert "audit/drift_score_pts" not in flat
