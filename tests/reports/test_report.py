"""Stage 7 (report): outputs are written, re-rendered from results.json, and escape model output."""

from __future__ import annotations

import base64
import dataclasses
import hashlib
import io
import json
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import jsonschema
import pytest
import xmlschema
from conftest import AUDIT, ROOT
from report_data import HOSTILE, _complete, _results, _typed  # noqa: F401

from auditor.errors import AuditInputError
from auditor.reports import write_reports
from auditor.reports.html import render_html
from auditor.reports.junit import render_junit
from auditor.reports.markdown import SUMMARY_MAX_CHARS, render_checklist, render_summary_md
from auditor.reports.results_file import RESULTS_SCHEMA_PATH, load_results, schema_error
from auditor.reports.sarif import render_sarif
from auditor.reports.view import chart_groups, group_summary, item_rows, ordinal, share_pct
from auditor.reports.view import reason as _reason
from auditor.results import AuditResult

SCHEMAS = ROOT / "tests" / "schemas"



def test_html_escapes_model_output_and_shows_regression_first():
    html = render_html(_typed(_results()))
    # the raw markup never appears: in HTML it is entity-escaped, in the items' JSON block \u003c-escaped
    assert "<script>alert" not in html and "<img src=x" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "\\u003cscript\\u003ealert(1)\\u003c/script\\u003e" in html
    assert html.index("Verdict: FAIL") < html.index("Capabilities")
    rows = item_rows(_typed(_results()))
    # item m0 regressed (1 → 0) and comes first; m1 improved; m2 is the same
    assert [(r["id"], r["outcome"]) for r in rows] == [("math/m0", "regression"), ("math/m1", "improvement"),
                                                       ("math/m2", "same")]
    assert "http://" not in html and "https://" not in html  # self-contained: no external resources


def test_html_allows_only_its_own_script_by_hash():
    html = render_html(_typed(_results()))
    csp = re.search(r'http-equiv="Content-Security-Policy" content="([^"]+)"', html).group(1)
    (script,) = re.findall(r"<script>(.*?)</script>", html, flags=re.S)
    digest = base64.b64encode(hashlib.sha256(script.encode()).digest()).decode()
    assert f"script-src 'sha256-{digest}'" in csp and "default-src 'none'" in csp


def test_group_cards_and_chart_follow_the_intervals():
    r = _results()
    r["comparisons"].append(dict(r["comparisons"][0], metric="math.other", base=0.9, adapter=0.5, delta=-40.0,
                                 ci_low=-60.0, ci_high=-20.0))
    (card,) = group_summary(_typed(r))
    assert card["group"] == "CAN" and card["worse"] == ["math.other"] and card["better"] == []
    assert card["rules"]["fail"] == 1 and card["status"] == "fail"
    (panel,) = chart_groups(_typed(r), width=300)
    assert panel["span"] == 100  # the widest interval end, 60 points, rounds up to 100
    other = panel["rows"][1]
    assert other["direction"] == "worse" and other["lox"] < other["dx"] < other["hix"] < 150  # left of Δ = 0
    assert other["ax"] < other["bx"]


def test_item_reasons_show_each_ifeval_instruction():
    detail = {"instructions": ["punctuation:no_comma", "change_case:english_lowercase"],
              "followed_strict": [False, True], "followed_loose": [True, True]}
    assert _reason(detail, "ifeval") == ("punctuation:no_comma ✗ strict ✓ loose; change_case:english_lowercase ✓ strict ✓ loose")
    assert _reason({"extracted": 60.0, "gold": 540.0}) == "extracted: 60.0; gold: 540.0"


def test_results_schema_is_valid_and_catches_faults():
    schema = json.loads(RESULTS_SCHEMA_PATH.read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    assert schema_error(_results()) is None
    r = _results()
    r["comparisons"][0]["p_value"] = 1.5
    assert "comparisons.0.p_value" in schema_error(r)
    r = _results()
    del r["items"][1]["adapter"]["text"]
    assert "items.1.adapter" in schema_error(r)


def test_sarif_and_junit_validate_against_their_schemas(tmp_path):
    r = _results()
    sarif = json.loads(render_sarif(_typed(r)))
    jsonschema.Draft7Validator(json.loads((SCHEMAS / "sarif-schema-2.1.0.json").read_text())).validate(sarif)
    (run,) = sarif["runs"]
    assert [(x["ruleId"], x["level"]) for x in run["results"]] == [("math.numeric_match/max-drop", "error"),
                                                                   ("declared-base-matches", "warning")]
    assert run["results"][0]["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "w"
    assert "<script>" in run["results"][0]["message"]["text"]  # JSON text, shown as text by SARIF viewers
    xmlschema.XMLSchema(str(SCHEMAS / "junit-10.xsd")).validate(io.StringIO(render_junit(_typed(r))))


def test_summary_fits_a_pr_comment():
    r = _results()
    r["verdict"]["rules"] = [dict(r["verdict"]["rules"][0], rule=f"rule {i}", reason="x" * 400) for i in range(400)]
    md = render_summary_md(_typed(r))
    assert len(md) <= SUMMARY_MAX_CHARS and md.rstrip().endswith("see the full report.")


def test_summary_md_escapes():
    md = render_summary_md(_typed(_results()))
    assert "<script>" not in md and "\\<script\\>" in md
    assert md.startswith("## ❌ adapter-auditor: FAIL")


def test_write_and_rerender_from_results_json(tmp_path):
    paths = write_reports(_typed(_results()), tmp_path / "a")
    assert sorted(p.name for p in paths.values()) == ["checklist.md", "junit.xml", "report.html", "results.json",
                                                      "results.sarif", "summary.md"]
    suite = ET.parse(paths["junit.xml"]).getroot().find("testsuite")
    assert suite.get("tests") == "2" and suite.get("failures") == "1"
    proc = subprocess.run([*AUDIT, "report", str(paths["results.json"]), "--out", str(tmp_path / "b")],
                          capture_output=True, text=True, cwd=ROOT)
    assert proc.returncode == 1, proc.stderr  # the stored verdict is FAIL
    assert (tmp_path / "b" / "report.html").read_text() == paths["report.html"].read_text()
    assert f"report: {tmp_path / 'b' / 'report.html'} (and the other reports in {tmp_path / 'b'})" in proc.stderr


def test_load_results_rejects_other_json(tmp_path):
    p = tmp_path / "r.json"
    p.write_text(json.dumps({"hello": 1}))
    with pytest.raises(AuditInputError, match="not an adapter-auditor results.json"):
        load_results(p)
    p.write_text(json.dumps({"schema_version": 99, "verdict": {}}))
    with pytest.raises(AuditInputError, match="written by a newer adapter-auditor .schema_version 99"):
        load_results(p)
    p.write_text(json.dumps({"schema_version": 1, "run_dir": "runs/x", "checkpoints": []}))
    with pytest.raises(AuditInputError, match="is a training run's run.json, not an audit's results.json"):
        load_results(p)


_NOISE = {"n_items": 2, "batch_sizes": [8, 8], "n_differ": 0, "n_score_differ": 0, "items_differ": [],
          "items_score_differ": [], "varied": "dtype", "dtypes": ["bfloat16", "float32"], "metric_shifts": {},
          "metric_shifts_pct": {}}


@pytest.mark.parametrize("edit,needle", [
    (lambda r: r["verdict"].update(verdict="PASS"), "at verdict.verdict: 'PASS' is not one of"),
    (lambda r: r["verdict"]["rules"][0].update(outcome="maybe"), "at verdict.rules.0.outcome: 'maybe' is not one of"),
    (lambda r: r["verdict"].update(verdict="pass"), "contradicts its rules"),
    (lambda r: r["verdict"].update(rules=[], verdict="pass"), "verdict.rules is empty"),
    (lambda r: r["items"].append(dict(r["items"][0])), "appears twice in items"),
    (lambda r: r["comparisons"][0].update(ci_low=0.5, ci_high=-0.5), "has ci_low 0.5 above ci_high -0.5"),
    (lambda r: r["verdict"]["rules"][0].update(within_noise=True, noise=2.0), "within_noise true without a noise"),
    (lambda r: r.update(noise_floor=_NOISE) or r["verdict"]["rules"][0].update(within_noise=True, noise=0.0),
     "within_noise true without a noise"),
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
    p.write_text(json.dumps(_results()).replace('"delta": 0.0', '"delta": 1e400'))
    with pytest.raises(AuditInputError, match="number 1e400 is out of range"):
        load_results(p)
    p.write_text(json.dumps(_results()).replace("q0 ", "q0 \\ud800 ".replace("\\\\", "\\")))
    with pytest.raises(AuditInputError, match="surrogates"):
        load_results(p)


def test_control_characters_do_not_reach_junit_or_markdown():
    r = _results()
    r["verdict"]["rules"][0]["reason"] = "bad \x1b[31mred\x1b]0;pwned\x07 \x00 end"
    r["suite"]["name"] = "<script>x</script>\rnext"
    ET.fromstring(render_junit(_typed(r)).split("?>", 1)[1])  # well-formed XML
    assert "\x1b" not in render_junit(_typed(r)) and "\x00" not in render_junit(_typed(r))
    md = render_summary_md(_typed(r))
    assert "\x1b" not in md and "<script>" not in md and "\r" not in md


def _with_baseline():
    r = _results()
    prev = dict(r["comparisons"][0], base=1.0, adapter=2 / 3, delta=-33.3, ci_low=-66.7, ci_high=0.0)
    r["baseline"] = {"adapter": dict(r["adapter"], path="adapters/v1-" + HOSTILE, sha256="c" * 64),
                     "comparisons": [prev]}
    r["verdict"]["rules"].append({"rule": "vs previous release: math.numeric_match: max drop",
                                  "rule_id": "baseline/math.numeric_match/max-drop", "kind": "baseline_limit",
                                  "metric": "math.numeric_match", "outcome": "fail",
                                  "reason": "math.numeric_match dropped by 33.3 points (100.0 → 66.7, previous → "
                                            "candidate)", "value": 33.3, "limit": 10.0, "mode": "point",
                                  "decision": "fail", "ci": [0.0, 66.7], "p_value": None, "p_adjusted": None,
                                  "n_items": 3})
    return _complete(r)


def test_baseline_comparison_in_every_output():
    r = _with_baseline()
    assert schema_error(r) is None
    html = render_html(_typed(r))
    assert "Against the previous release" in html and "adapters/v1-&lt;script&gt;" in html
    table = html.split('id="baseline"')[1].split("</table>")[0]
    header, row = table.count("<th>"), table.split("</tr>")[1]
    assert header == 9 and row.count("<td") == 9, table  # no relative Δ or BH column against the previous release
    assert ">100.0<" in row and ">66.7<" in row and ("−33.3" in row or "-33.3" in row), row
    md = render_summary_md(_typed(r))
    assert "**Against the previous release**" in md and "| previous | candidate |" in md
    junit = render_junit(_typed(r))
    assert 'name="vs previous release: math.numeric_match: max drop"' in junit


def _with_agreement(**overall):
    """The fixture with a second math metric, a multiple-choice capability (no generated answer) and the agreement of
    50 generated math answers with the base's (43 the same; ``overall`` replaces its figures)."""
    r = _results()
    math_c = r["comparisons"][0]
    r["comparisons"] += [dict(math_c, metric="math.other"),
                         dict(math_c, metric="knowledge.acc", capability="knowledge")]
    same = {"identical": 0.86, "n_items": 50, "first_difference_word": 6.6} | overall
    r["agreement_with_base"] = {"overall": same, "capabilities": {"math": same}}
    return r


AGREEMENT = "The adapter changed 14% of its 50 generated answers at all (the first differing word: 7th on average)."


def test_every_output_shows_how_many_generated_answers_are_the_bases():
    r = _with_agreement()
    assert schema_error(r) is None
    html = render_html(_typed(r))
    table = html.split('id="capabilities"')[1].split("</table>")[0]
    assert "<th>same as base</th>" in table
    rows = [row for row in table.split("</tr>") if "<td" in row]
    # the capability's share on its first row, nothing on its further rows, — for multiple choice
    assert [re.findall(r"<td[^>]*>([^<]*)</td>", row)[-1] for row in rows] == ["86%", "", "—"]
    assert f'<p id="agreement">{AGREEMENT}</p>' in html
    md = render_summary_md(_typed(r))
    assert "| same as base |" in md and AGREEMENT in md
    assert [line.rsplit("|", 2)[1].strip() for line in md.splitlines() if line.startswith("| CAN |")] == \
        ["86%", "", "—"]
    text = " ".join(_terminal(_typed(r)).split())
    assert AGREEMENT in text and "86%" in text


def test_the_agreement_sentence_without_a_difference_or_a_generated_answer():
    r = _with_agreement(identical=1.0, n_items=6, first_difference_word=None)
    assert "The adapter changed none of its 6 generated answers: each is the base's, word for word." in \
        render_summary_md(_typed(r))
    r["agreement_with_base"] = {"overall": {"identical": None, "n_items": 0, "first_difference_word": None},
                                "capabilities": {}}  # multiple choice only
    md, html = render_summary_md(_typed(r)), render_html(_typed(r))
    assert "The adapter changed" not in md and 'id="agreement"' not in html
    assert [line.rsplit("|", 2)[1].strip() for line in md.splitlines() if line.startswith("| CAN |")] == \
        ["—", "", "—"]


def test_ordinals_and_shares_as_the_reports_write_them():
    assert [ordinal(n) for n in (1, 2, 3, 4, 11, 12, 13, 21, 22, 23, 101, 111, 112)] == [
        "1st", "2nd", "3rd", "4th", "11th", "12th", "13th", "21st", "22nd", "23rd", "101st", "111th", "112th"]
    assert [share_pct(x) for x in (0.0, 0.001, 0.14, 0.999, 1.0)] == ["0%", "<1%", "14%", ">99%", "100%"]


def test_checklist_ticks_only_passed_rules_and_gives_evidence():
    r = _with_baseline()
    r["verdict"]["rules"].append({"rule": "ifeval.prompt_level_strict_acc: max drop", "outcome": "pass",
                                  "reason": "ifeval changed by 0.0 points"})
    lines = render_checklist(_typed(r)).splitlines()
    assert lines[0].startswith("## Release checklist: ") and lines[0].endswith("— FAIL")
    boxes = [x for x in lines if x.startswith("- [")]
    assert boxes[0].startswith("- [ ] math.numeric\\_match: max drop — **FAIL**: r \\<script\\>")
    assert "- [x] ifeval.prompt\\_level\\_strict\\_acc: max drop — pass: ifeval changed by 0.0 points" in boxes
    assert any(x.startswith("- [ ] declared base matches — warning — needs a reviewer's sign-off") for x in boxes)
    assert any("previous release (`--baseline`)" in x for x in lines)
    assert "<script>" not in "\n".join(lines)


def test_a_render_fault_never_loses_results_json(tmp_path, monkeypatch):
    import auditor.reports as report

    def broken(results):
        raise KeyError("a template bug")

    monkeypatch.setattr(report, "render_html", broken)
    with pytest.raises(AuditInputError, match="incomplete or invalid results data"):
        write_reports(_typed(_results()), tmp_path / "out")
    assert load_results(tmp_path / "out" / "results.json") == _typed(_results())  # kept, and re-renderable
    assert not (tmp_path / "out" / "report.html").exists()


def test_an_out_folder_that_cannot_be_written_is_refused_before_any_work(tmp_path):
    with pytest.raises(AuditInputError, match="--out cannot be written in /proc"):
        write_reports(_typed(_results()), Path("/proc/auditor-test/out"))


def test_a_limited_run_says_so_next_to_its_verdict():
    r = _results()
    assert "--limit" not in render_summary_md(_typed(r)) and "--limit" not in render_html(_typed(r)).split("<main>")[0]
    r["run"]["limit"] = 3
    banner = render_html(_typed(r)).split("<main>")[0]
    assert "<b>--limit 3</b>: at most 3 items per capability: a quick check" in banner
    assert "> **--limit 3:** at most 3 items per capability" in render_summary_md(_typed(r))


def test_a_metric_no_item_scored_is_written_as_null_and_read_back(tmp_path):
    """A comparison whose base/adapter values are NaN (no item of the capability was scored on the
    metric) is written as JSON null: results.json stays strict JSON, valid against the schema, and
    `audit report` can read it back (NaN again in the typed record, rendered as before)."""
    import math


    r = AuditResult.from_dict(_results())
    nan = dataclasses.replace(r.comparisons[0], base=math.nan, adapter=math.nan, delta=math.nan)
    r = dataclasses.replace(r, comparisons=(nan,))
    paths = write_reports(r, tmp_path / "out")

    def no_nan(name):
        raise AssertionError(f"results.json holds {name}")
    data = json.loads(paths["results.json"].read_text(), parse_constant=no_nan)
    assert [data["comparisons"][0][k] for k in ("base", "adapter", "delta")] == [None, None, None]
    assert schema_error(data) is None
    back = load_results(paths["results.json"])
    assert all(math.isnan(getattr(back.comparisons[0], k)) for k in ("base", "adapter", "delta"))
    write_reports(back, tmp_path / "again")  # re-rendering works on it


def _terminal(result) -> str:
    """What :func:`print_summary` prints for ``result``, on an 80-column console that is no terminal."""
    from rich.console import Console

    from auditor.reports.terminal import print_summary

    out = io.StringIO()
    print_summary(Console(file=out, width=80, soft_wrap=True, highlight=False), result)
    return out.getvalue()


def _left_out(r, *capabilities):
    """``r`` with one not-run rule per capability that ``--capability`` left out."""
    for cap in capabilities:
        r["verdict"]["rules"].append({"rule": f"{cap}.score: limits", "rule_id": f"{cap}.score/limits",
                                      "kind": "limit", "metric": f"{cap}.score", "outcome": "not_run",
                                      "reason": f"capability {cap} was not part of this run"})
    return r


def test_the_terminal_gives_the_rules_capability_left_out_one_line():
    text = _terminal(_typed(_left_out(_results(), "knowledge", "ifeval", "knowledge")))
    assert "not_run" not in text, text
    assert "not run (capabilities not audited: ifeval, knowledge): 3 rules" in text, text
    assert "fail: math.numeric_match: max drop" in text  # the rules that did run keep their own lines


def test_the_terminal_repeats_the_limit_warning():
    r = _results()
    assert "--limit" not in _terminal(_typed(r))
    r["run"]["limit"] = 2
    assert "--limit 2: at most 2 items per capability: a quick check with wide intervals" in _terminal(_typed(r))
    r["run"]["budget"] = {"items": 0, "seconds": None, "looks": 1, "used_items": 0}
    text = " ".join(_terminal(_typed(r)).split())
    assert "not the full suite's verdict; no rounds for undecided rules (--limit buys none unless --budget" in text
    r["run"]["budget"]["items"] = 8  # --limit 2 --budget 8: rounds were possible
    assert "no rounds" not in _terminal(_typed(r))


def test_the_terminal_baseline_heading_names_previous_and_candidate():
    r = _with_baseline()
    r["adapter"]["path"] = "adapters/v2"
    r["baseline"]["adapter"]["path"] = "adapters/v1"
    text = " ".join(_terminal(_typed(r)).split())
    assert "previous release (adapters/v1) → candidate (adapters/v2)" in text, text


def test_log_lines_are_not_folded_when_stderr_is_no_terminal():
    line = "interval [" + "-12.5, +3.0] " * 20
    proc = subprocess.run([sys.executable, "-c", "from auditor.cli.console import console; import sys; "
                           "console.print(sys.argv[1])", line], capture_output=True, text=True, cwd=ROOT)
    assert proc.stderr.strip() == line.strip(), proc.stderr


def test_a_limited_checklist_says_so_under_its_verdict():
    r = _results()
    assert "--limit" not in render_checklist(_typed(r))
    r["run"]["limit"] = 4
    lines = render_checklist(_typed(r)).splitlines()
    assert lines[2] == "> **--limit 4:** at most 4 items per capability: a quick check with wide intervals, " \
                       "not the full suite's verdict", lines


def test_the_summary_and_the_report_say_when_answers_were_batch_invariant():
    r = _results()
    plain_md, plain_html = render_summary_md(_typed(r)), render_html(_typed(r))
    assert "batch-invariant" not in plain_md and "fixed_rows" not in plain_html
    # fixed-rows layers with the library's attention (a model with sliding-window layers): not batch-invariant
    r["run"]["hf"] = {"batching": "continuous", "numerics": "fixed_rows/64", "attention": "sdpa",
                      "batch_invariant": False}
    assert "batch-invariant" not in render_summary_md(_typed(r))
    r["run"]["hf"] |= {"attention": "per_request_sdpa/2", "batch_invariant": True}
    assert "numeric path" in plain_md and ", batch-invariant (" in render_summary_md(_typed(r))
    assert "fixed_rows/64" in render_html(_typed(r))


def test_the_summary_and_the_report_name_the_rules_decided_within_the_measured_noise():
    r = _results()
    rule = r["verdict"]["rules"][0]
    rule |= {"decision": "fail", "value": 12.8, "limit": 10.0, "noise": 4.2, "within_noise": True}
    r["noise_floor"] = {"n_items": 24, "batch_sizes": [16, 16], "n_differ": 5, "n_score_differ": 2,
                        "items_differ": [], "items_score_differ": [], "varied": "dtype",
                        "dtypes": ["bfloat16", "float32"], "metric_shifts": {"math.numeric_match": -4.2},
                        "metric_shifts_pct": {}}
    summary, html = render_summary_md(_typed(r)), render_html(_typed(r))
    assert "**Noise floor** (the base replayed in float32): 5 of 24 base answers changed; decided within that " \
           "noise:" in summary
    assert "numeric\\_match: max drop: fail, 2.8 from its limit (noise 4.2)" in summary
    assert "replayed in float32 (the audit ran in bfloat16" in html and "+4.2" not in html and "-4.2" in html
    assert "Decided within that noise" in html
