"""The verdicts the project promises, on the real embedded base and real adapters under the default policy and
the default smoke suite: the zoo's ``math-good`` (labelled ``math``, trained on arithmetic) passes, the
mislabelled ``terse-instruct-r8`` (labelled ``instruction``, trained on terse arithmetic answers) fails, in one
audit of both (one base pass), as a user runs ``audit ADAPTER ADAPTER``. The dtype is the default (``auto``:
bfloat16 on a CPU with native bf16, else float32): these verdicts hold on either numeric path."""

from __future__ import annotations

import json

import pytest

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def pair(demo_pair):
    """``audit terse-instruct-r8 math-good --quiet`` (conftest: the run is shared with the report's browser test)."""
    return demo_pair


def _results(out, name):
    return json.loads((out / name / "results.json").read_text())


def test_a_good_adapter_passes_the_default_policy(pair):
    proc, out = pair
    assert proc.returncode == 1, proc.stderr[-3000:]  # one of the two fails: the run's exit code is 1
    r = _results(out, "math-good")
    assert r["verdict"]["verdict"] == "pass"
    assert not [x["rule"] for x in r["verdict"]["rules"] if x["outcome"] == "fail"]
    assert r["drift"]["label"] == "math" and r["drift"]["mismatch"] is False


def test_a_mislabelled_adapter_fails_the_default_policy(pair):
    proc, out = pair
    assert proc.returncode == 1, proc.stderr[-3000:]
    r = _results(out, "terse-instruct-r8")
    assert r["verdict"]["verdict"] == "fail"
    failing = {x["rule"] for x in r["verdict"]["rules"] if x["outcome"] == "fail"}
    # trained on terse one-line answers: it stops holding a turn-1 instruction by turn 3
    assert "multiturn.instruction_held_rate: max drop" in failing
    assert r["drift"]["label"] == "instruction"
    # the label mismatch is decided on evidence on this machine's numeric path, and said because it is
    (rule,) = [x for x in r["verdict"]["rules"] if x["rule"] == "nominal label: DriftScore"]
    assert rule["decision"] == "fail" and r["drift"]["ci_low_pts"] > 0 and r["drift"]["mismatch"] is True


def test_the_demo_pair_scores_multiple_choice_by_log_likelihood(pair):
    _, out = pair
    r = _results(out, "math-good")
    knowledge = [it for it in r["items"] if it["capability"] == "knowledge"]
    assert knowledge and all(it["max_new_tokens"] == 0 and it["base"]["n_tokens"] == 0 for it in knowledge)
    assert all(len(it["base"]["detail"]["loglikelihoods"]) == len(it["target"]["choices"]) for it in knowledge)
    # what the embedded base can show: knowledge, robustness and multilingual are measurable by log-likelihood
    decisions = {x["rule"]: x["decision"] for x in r["verdict"]["rules"] if x.get("decision")}
    for rule in ("knowledge.acc: max drop", "robustness.acc: max drop", "robustness.agreement: max drop",
                 "multilingual.acc: max drop"):
        assert decisions[rule] != "not_measurable", rule


@pytest.mark.window  # the window's real audit (scripts/window.sh)
def test_mislabelled_adapter_is_a_label_mismatch(failing_demo):
    # the audit: terse-instruct-r8 on math and IFEval, --limit 16 --budget 96 --dtype float32 --quiet (conftest).
    # 16 items each leave DriftScore undecided: the audit buys items until the mismatch is on evidence
    # fp32: in bf16 (the default on a CPU with native bf16) the 96 items leave DriftScore inconclusive, +21.9
    # [+4.7, +39.1] at 64 items a capability, about 79 needed; the fp32 answers decide it within them
    proc, out = failing_demo
    assert proc.returncode == 1, proc.stderr
    # --quiet: the exit code and the files carry the result. What the libraries warn about themselves at the
    # window's ends is theirs (a peft older than the one that saved the adapter names the config keys it does not
    # know; a newer transformers, its deprecations): a Python warning raised inside site-packages, and its echo line
    noise = [ln for ln in proc.stderr.splitlines() if ln.strip() and ln.strip() != "warnings.warn("
             and not ("site-packages" in ln and "Warning: " in ln)]
    assert proc.stdout == "" and not noise, proc.stderr
    r = json.loads((out / "results.json").read_text())
    d = r["drift"]
    assert d["label"] == "instruction" and d["target_metric"] == "ifeval.prompt_level_strict_acc"
    assert d["mismatch"] and d["drift_score_pts"] > 15
    assert d["drift_score_pts"] == pytest.approx(d["off_target_gain_pts"] - d["target_gain_pts"])
    (rule,) = [x for x in r["verdict"]["rules"] if x["rule"] == "nominal label: DriftScore"]
    assert rule["decision"] == "fail" and rule["mode"] == "evidence" and d["ci_low_pts"] > 0  # the interval excludes 0
    html = (out / "report.html").read_text()
    assert "label mismatch" in html and "DriftScore" in html and "Verdict: FAIL" in html
