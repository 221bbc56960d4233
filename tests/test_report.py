"""Stage 7 (report): outputs are written, re-rendered from results.json, and escape model output."""

from __future__ import annotations

import json
import subprocess
import xml.etree.ElementTree as ET

import pytest

from auditor.errors import AuditInputError
from auditor.report import load_results, render_html, render_junit, render_summary_md, write_reports
from conftest import AUDIT, ROOT

HOSTILE = '<script>alert(1)</script><img src=x onerror="alert(2)"> | **bold** `code`'


def _results():
    items = []
    for i, (b, a) in enumerate([(1.0, 0.0), (0.0, 1.0), (1.0, 1.0)]):
        items.append({"id": f"math/m{i}", "capability": "math", "group": "CAN", "prompt": f"q{i} {HOSTILE}",
                      "rendered_prompt": "r", "max_new_tokens": 8, "target": {"answer": 1},
                      "base": {"text": "base " + HOSTILE, "n_tokens": 3, "scores": {"numeric_match": b}, "detail": {}},
                      "adapter": {"text": "adapter " + HOSTILE, "n_tokens": 3, "scores": {"numeric_match": a},
                                  "detail": {}}})
    return {
        "schema_version": 2,
        "verdict": {"verdict": "fail", "warnings": [HOSTILE],
                    "rules": [{"rule": "math.numeric_match: max drop", "outcome": "fail", "reason": "r " + HOSTILE,
                               "value": 1, "limit": 0, "mode": "point", "decision": "fail", "ci": [-10.0, 70.0],
                               "p_value": None, "p_adjusted": None, "n_items": 3},
                              {"rule": "declared base matches", "outcome": "warn", "reason": "w", "value": None,
                               "limit": None, "mode": None, "decision": None, "ci": None, "p_value": None,
                               "p_adjusted": None, "n_items": None}]},
        "adapter": {"path": "x/" + HOSTILE, "weights_file": "w", "sha256": "0" * 64, "peft_type": "LORA", "r": 8,
                    "lora_alpha": 16, "target_modules": ["q_proj"], "ranks": {}, "n_tensors": 2, "size_bytes": 1,
                    "declared_base": HOSTILE, "nominal_label": None, "matched_modules": 1, "warnings": [],
                    "max_rank": 8},
        "base": {"name": "b", "path": "p", "source": "local", "content_hash": "f" * 64},
        "suite": {"name": "smoke", "version": 1, "path": "s", "item_ids": [i["id"] for i in items]},
        "policy": {"path": "policy.yaml", "content": {}},
        "comparisons": [{"metric": "math.numeric_match", "capability": "math", "group": "CAN", "n_items": 3,
                         "base": 2 / 3, "adapter": 2 / 3, "delta": 0.0, "delta_unit": "points", "rel_delta_pct": 0.0,
                         "higher_is_better": True, "unit": "fraction", "aggregate": "mean", "n_clusters": 3,
                         "confidence": 0.95, "ci_low": -33.3, "ci_high": 33.3, "rel_ci_pct": [-50.0, 50.0],
                         "test": "mcnemar_exact", "p_value": 1.0, "p_adjusted": 1.0,
                         "discordant": {"base_only": 1, "adapter_only": 1}}],
        "drift": {"label": HOSTILE, "label_source": "--label", "target_metric": None, "off_target_metrics": [],
                  "target_gain_pts": None, "off_target_gain_pts": None, "drift_score_pts": None, "mismatch": False,
                  "ci_low_pts": None, "ci_high_pts": None, "confidence": 0.95},
        "items": items,
        "run": {"backend": "hf", "dtype": "float32", "batch_size": 4, "limit": None, "decoding": "greedy",
                "new_tokens": {}, "timings": {"load_s": 1, "generate_s": 2, "total_s": 3}, "versions": {"python": "3"},
                "auditor_version": "0", "created_at": "now", "capabilities": ["math"]},
    }


def test_html_escapes_model_output_and_shows_regression_first():
    html = render_html(_results())
    assert "<script>" not in html and "<img src=x" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert html.index("Verdict: FAIL") < html.index("Capabilities")
    # item m0 regressed (1 → 0) and is shown; m1 improved and is not a regression
    assert "math/m0" in html and "math/m1" not in html
    assert "http://" not in html and "https://" not in html  # self-contained: no external resources


def test_summary_md_escapes():
    md = render_summary_md(_results())
    assert "<script>" not in md and "\\<script\\>" in md
    assert md.startswith("## ❌ adapter-auditor: FAIL")


def test_write_and_rerender_from_results_json(tmp_path):
    paths = write_reports(_results(), tmp_path / "a")
    assert sorted(p.name for p in paths.values()) == ["junit.xml", "report.html", "results.json", "summary.md"]
    suite = ET.parse(paths["junit.xml"]).getroot().find("testsuite")
    assert suite.get("tests") == "2" and suite.get("failures") == "1"
    proc = subprocess.run([*AUDIT, "report", str(paths["results.json"]), "--out", str(tmp_path / "b")],
                          capture_output=True, text=True, cwd=ROOT)
    assert proc.returncode == 1, proc.stderr  # the stored verdict is FAIL
    assert (tmp_path / "b" / "report.html").read_text() == paths["report.html"].read_text()


def test_load_results_rejects_other_json(tmp_path):
    p = tmp_path / "r.json"
    p.write_text(json.dumps({"hello": 1}))
    with pytest.raises(AuditInputError, match="not an adapter-auditor results.json"):
        load_results(p)


@pytest.mark.parametrize("edit,needle", [
    (lambda r: r["verdict"].update(verdict="PASS"), "verdict.verdict must be 'pass' or 'fail'"),
    (lambda r: r["verdict"]["rules"][0].update(outcome="maybe"), "a rule outcome must be"),
    (lambda r: r["verdict"].update(verdict="pass"), "contradicts its rules"),
])
def test_load_results_refuses_inconsistent_verdicts(tmp_path, edit, needle):
    r = _results()
    edit(r)
    p = tmp_path / "results.json"
    p.write_text(json.dumps(r))
    with pytest.raises(AuditInputError, match=needle):
        load_results(p)


def test_load_results_refuses_nan_and_lone_surrogates(tmp_path):
    p = tmp_path / "results.json"
    p.write_text(json.dumps(_results()).replace('"delta": 0.0', '"delta": NaN'))
    with pytest.raises(AuditInputError, match="non-standard JSON number NaN"):
        load_results(p)
    p.write_text(json.dumps(_results()).replace("q0 ", "q0 \\ud800 ".replace("\\\\", "\\")))
    with pytest.raises(AuditInputError, match="surrogates"):
        load_results(p)


def test_control_characters_do_not_reach_junit_or_markdown():
    r = _results()
    r["verdict"]["rules"][0]["reason"] = "bad \x1b[31mred\x1b]0;pwned\x07 \x00 end"
    r["suite"]["name"] = "<script>x</script>\rnext"
    ET.fromstring(render_junit(r).split("?>", 1)[1])  # well-formed XML
    assert "\x1b" not in render_junit(r) and "\x00" not in render_junit(r)
    md = render_summary_md(r)
    assert "\x1b" not in md and "<script>" not in md and "\r" not in md
