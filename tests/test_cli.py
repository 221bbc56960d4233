"""The `audit` command: bad input gets one line and exit code 2, end-to-end runs on the real model."""

from __future__ import annotations

import json
import subprocess
import sys

import jsonschema
import pytest
import xmlschema
from conftest import AUDIT, DEMO_ADAPTERS, MEDICAL, ROOT, assert_one_line_error, needs_shared, write_adapter

from auditor.reports.results_file import schema_error

SCHEMAS = ROOT / "tests" / "schemas"


def audit(*args: str, timeout: int = 1800) -> subprocess.CompletedProcess:
    return subprocess.run([*AUDIT, *map(str, args)], capture_output=True, text=True, cwd=ROOT, timeout=timeout)


def test_missing_adapter(tmp_path):
    assert_one_line_error(audit(tmp_path / "nope", "--out", tmp_path / "o"), "nope", "no such file")
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("case", ["missing", "broken"])
def test_a_refused_adapter_never_imports_torch_or_scipy(tmp_path, case):
    """A broken input is refused before the backend's choice imports torch (about 1.1 s) and before the statistics
    import scipy.stats (about 0.6 s): a missing adapter or a broken config ends in about half a second."""
    adapter = tmp_path / "a"
    if case == "broken":
        write_adapter(adapter)
        (adapter / "adapter_config.json").write_text('{"r": "x"}')
    code = ("import sys\nfrom auditor import cli\nsys.argv = ['audit', sys.argv[1], '--out', sys.argv[2]]\n"
            "try:\n    cli.main()\nexcept SystemExit as e:\n    code = e.code\n"
            "print(code, 'torch' in sys.modules, 'scipy.stats' in sys.modules)")
    proc = subprocess.run([sys.executable, "-c", code, str(adapter), str(tmp_path / "o")], capture_output=True,
                          text=True, cwd=ROOT, timeout=120)
    assert proc.stdout.split() == ["2", "False", "False"], (proc.stdout, proc.stderr[-2000:])
    assert proc.stderr.startswith(f"error: {adapter}") and not (tmp_path / "o").exists()


def test_pickle_adapter_is_refused(tmp_path, cli):
    a = write_adapter(tmp_path / "a")
    (a / "adapter_model.safetensors").write_bytes(b"PK\x03\x04" + b"\0" * 64)
    assert_one_line_error(cli(a, "--out", tmp_path / "o"), "adapter_model.safetensors", "never unpickled")


def test_policy_typo_names_key_path(tmp_path, cli):
    a = write_adapter(tmp_path / "a")
    p = tmp_path / "p.yaml"
    p.write_text("version: 1\nmetrics:\n  math.numeric_match:\n    max_dorp_pts: 3\n")
    assert_one_line_error(cli(a, "--policy", p, "--out", tmp_path / "o"), str(p),
                          "metrics.math.numeric_match.max_dorp_pts (line 4)")


@needs_shared
def test_usage_errors_are_one_line(tmp_path):
    assert_one_line_error(audit(MEDICAL, "--limit", "0"), "--limit")
    assert_one_line_error(audit(MEDICAL, "--capability", "poetry"), "poetry")
    # comma-separated as lm-eval's --tasks: each name checked on its own
    proc = audit(MEDICAL, "--capability", "math, poetry")
    assert_one_line_error(proc, "'poetry' not in suite")
    assert "'math" not in proc.stderr
    assert_one_line_error(audit("report", tmp_path / "missing.json", "--out", tmp_path), "missing.json")


def test_usage_errors_have_the_products_prefix_and_name_the_whole_command(cli, tmp_path):
    assert_one_line_error(cli(DEMO_ADAPTERS / "terse-instruct-r8", "--limit", "0", "--out", tmp_path / "o"),
                          "'--limit': 0 is not in the range x>=1", "(see `audit run --help`)")
    assert_one_line_error(cli("cache", "info", "--bogus"), "No such option '--bogus'", "(see `audit cache info --help`)")


def test_run_options_record_has_one_field_per_option_of_audit_run():
    """``audit run`` hands its options on as one RunOptions record: a field for each option, no other."""
    import dataclasses

    from auditor.cli.run_command import RunOptions, run_cmd

    assert sorted(p.name for p in run_cmd.params) == sorted(f.name for f in dataclasses.fields(RunOptions))


@pytest.mark.parametrize("text,parsed", [
    ("auto", (None, None, None)), ("0", (0, None, None)), ("300", (300, None, None)),
    ("10m", (10 ** 9, 600.0, None)), ("20ktok", (10 ** 9, None, 20000)),
    ("auto,20m", (None, 1200.0, None)), ("300, 90s", (300, 90.0, None)), ("20ktok,1h", (10 ** 9, 3600.0, 20000)),
])
def test_budget_takes_items_a_time_and_tokens_alone_or_joined(text, parsed):
    from auditor.cli.run_command import _Budget
    from auditor.options import AuditOptions
    from auditor.pipeline.rounds import budget_for
    from auditor.scorers import SCORERS
    from auditor.suite.manifest import load_suite

    assert _Budget().convert(text, None, None) == parsed
    items, seconds, tokens = parsed
    suite = load_suite("smoke", limit=2, only=("math",), scorers=SCORERS)
    cpu = type("Cpu", (), {"name": "hf", "device": "cpu"})()
    got = budget_for(AuditOptions(budget_items=items, budget_seconds=seconds, budget_tokens=tokens), suite, cpu)
    # auto's items (the suite's count on a CPU) keep the time and token limits given beside them
    assert got.items == (len(suite.items) if items is None else items) and len(suite.items) == 2
    assert (got.seconds, got.tokens) == (seconds, tokens)


@pytest.mark.parametrize("text", ["20m,10m", "auto,5", "soon", "10m,"])
def test_a_budget_that_gives_a_kind_twice_or_nonsense_is_one_error_line(text, cli, tmp_path):
    assert_one_line_error(cli(write_adapter(tmp_path / "a"), "--budget", text, "--out", tmp_path / "o"), "--budget")


@pytest.mark.slow
def test_math_adapter_raises_numeric_match_end_to_end(tmp_path):
    out = tmp_path / "math"
    proc = audit(DEMO_ADAPTERS / "math-arith-r8", "--capability", "math", "--limit", "12", "--out", out, "--json")
    assert proc.returncode == 0, proc.stderr
    assert sorted(p.name for p in out.iterdir()) == ["checklist.md", "junit.xml", "report.html", "results.json",
                                                     "results.sarif", "summary.md"]
    r = json.loads((out / "results.json").read_text())
    assert json.loads(proc.stdout) == r  # --json: the results on stdout, nothing else there
    # the real run's outputs validate against their schemas
    assert schema_error(r) is None
    jsonschema.Draft7Validator(json.loads((SCHEMAS / "sarif-schema-2.1.0.json").read_text())).validate(
        json.loads((out / "results.sarif").read_text()))
    xmlschema.XMLSchema(str(SCHEMAS / "junit-10.xsd")).validate(str(out / "junit.xml"))
    (nm,) = [c for c in r["comparisons"] if c["metric"] == "math.numeric_match"]
    assert nm["n_items"] == 12 and nm["delta"] > 0
    assert r["drift"]["label"] == "math" and r["drift"]["label_source"] == "model card"
    # every number is recomputable from the stored items
    adapter_nm = sum(i["adapter"]["scores"]["numeric_match"] for i in r["items"]) / 12
    assert adapter_nm == pytest.approx(nm["adapter"])
    assert len(r["adapter"]["sha256"]) == 64 and r["run"]["backend"] == "hf"


@pytest.mark.slow
def test_release_checklist_against_previous_adapter(tmp_path):
    """--baseline: the candidate (math adapter) is judged against the base and against the
    previously approved adapter (the terse one) in one run; the checklist goes to stdout."""
    out = tmp_path / "release"
    proc = audit(DEMO_ADAPTERS / "math-arith-r8", "--baseline", DEMO_ADAPTERS / "terse-instruct-r8",
                 "--capability", "math", "--limit", "6", "--out", out, "--format", "checklist")
    assert proc.returncode == 0, proc.stderr
    r = json.loads((out / "results.json").read_text())
    assert schema_error(r) is None
    prev = r["baseline"]
    assert prev["adapter"]["path"].endswith("terse-instruct-r8")
    (nm,) = [c for c in prev["comparisons"] if c["metric"] == "math.numeric_match"]
    # recomputable from the stored items: previous = the baseline outputs, candidate = the adapter outputs
    assert nm["n_items"] == 6
    assert nm["base"] == pytest.approx(sum(i["baseline"]["scores"]["numeric_match"] for i in r["items"]) / 6)
    assert nm["adapter"] == pytest.approx(sum(i["adapter"]["scores"]["numeric_match"] for i in r["items"]) / 6)
    rules = {x["rule"]: x for x in r["verdict"]["rules"]}
    assert "vs previous release: math.numeric_match: max drop" in rules and "math.numeric_match: max drop" in rules
    assert proc.stdout == (out / "checklist.md").read_text()
    assert proc.stdout.startswith("## Release checklist: math-arith-r8 — ")
    assert "vs previous release: math.numeric\\_match: max drop" in proc.stdout
    assert r["run"]["generated"].keys() <= {"base", "adapter", "baseline"}


def test_baseline_same_as_candidate_is_refused(tmp_path, cli):
    proc = cli(DEMO_ADAPTERS / "math-arith-r8", "--baseline", DEMO_ADAPTERS / "math-arith-r8" / "adapter_model.safetensors",
                 "--out", tmp_path / "o")
    assert_one_line_error(proc, "--baseline is the", "math-arith-r8")
    assert not (tmp_path / "o").exists()


@needs_shared
@pytest.mark.slow
def test_third_party_adapter_audits_with_base_mismatch_warning(tmp_path):
    out = tmp_path / "med"
    # every capability of the smoke suite, one item each: each scorer on a real third-party adapter's output
    proc = audit(MEDICAL / "adapter_model.safetensors", "--limit", "1", "--out", out)
    assert proc.returncode == 0, proc.stderr
    r = json.loads((out / "results.json").read_text())
    assert any("SmolLM-135M-Instruct" in w for w in r["verdict"]["warnings"])
    assert [x["outcome"] for x in r["verdict"]["rules"] if x["rule"] == "declared base matches"] == ["warn"]
    assert "declares base" in (out / "report.html").read_text()
    from auditor.scorers import SCORERS
    from auditor.suite.manifest import load_suite

    smoke = {c.name for c in load_suite("smoke", limit=1, scorers=SCORERS).capabilities}
    assert {i["id"].split("/")[0] for i in r["items"]} == smoke == {c["capability"] for c in r["comparisons"]}


def test_out_that_is_a_file(tmp_path, cli):
    f = tmp_path / "file"
    f.write_text("x")
    assert_one_line_error(cli(write_adapter(tmp_path / "a"), "--out", f), str(f), "--out must be a folder")


def test_no_arguments():
    assert_one_line_error(audit(), "missing ADAPTER")


def test_report_on_wrong_schema(tmp_path):
    w = tmp_path / "w.json"
    w.write_text('{"schema_version": "7", "hello": "world"}')
    assert_one_line_error(audit("report", w, "--out", tmp_path / "o"), str(w), "not an adapter-auditor results.json")
    w.write_text('{"schema_version": 5, "hello": "world"}')
    assert_one_line_error(audit("report", w, "--out", tmp_path / "o"), str(w),
                          "written by an older adapter-auditor (schema_version 5, this one reads 9)")
    w.write_text('{"schema_version": 9, "hello": "world"}')
    assert_one_line_error(audit("report", w, "--out", tmp_path / "o"), str(w),
                          "does not match the results schema v9 at top level", "'verdict' is a required property")
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("policy,needle", [
    ("version: 1\nmetrics:\n  math.numeric_match: {max_drop_pts: .nan}\n", "limits must be finite"),
    ("version: 1\nmetrics:\n  math.numeric_match: {max_drop_pts: 3}\n  math.numeric_match: {max_drop_pts: 90}\n",
     "line 4: duplicate key 'math.numeric_match'"),
    ("version: 1\nx: " + "[" * 3000 + "]" * 3000 + "\n", "nested too deeply"),
])
def test_policy_values_that_would_change_the_verdict(tmp_path, cli, policy, needle):
    p = tmp_path / "p.yaml"
    p.write_text(policy)
    assert_one_line_error(cli(write_adapter(tmp_path / "a"), "--policy", p, "--out", tmp_path / "o"), needle)


@pytest.mark.parametrize("row,needle", [
    ("[1, 2]", "an item must be a JSON object"),
    ('{"id": "m1", "question": "q", "answer": "abc"}', "need a numeric 'answer'"),
])
def test_bad_suite_items(tmp_path, cli, row, needle):
    (tmp_path / "items.jsonl").write_text(row + "\n")
    (tmp_path / "s.yaml").write_text("name: t\nversion: 1\ncapabilities:\n  - {name: math, group: CAN, source: "
                                     "items.jsonl, scorer: numeric_match, prompt_template: '{question}', "
                                     "max_new_tokens: 8}\n")
    proc = cli(write_adapter(tmp_path / "a"), "--suite", tmp_path / "s.yaml", "--out", tmp_path / "o")
    assert_one_line_error(proc, "items.jsonl", needle)


@pytest.mark.slow
def test_three_runs_give_byte_identical_results_apart_from_timestamps_and_durations(tmp_path):
    """Same inputs → same results.json bytes, except run.created_at and run.timings (3 runs).

    The runs also replay the base variant (--noise-floor), so the noise-floor
    report is part of what must repeat."""
    texts = []
    for k in range(3):
        out = tmp_path / f"run{k}"
        # two pass/fail capabilities with short answers (12 new tokens), one of them clustered
        proc = audit(DEMO_ADAPTERS / "terse-instruct-r8", "--capability", "knowledge", "--capability", "multilingual",
                     "--limit", "3", "--batch-size", "4", "--noise-floor", "--no-cache", "--out", out)
        assert proc.returncode == 0, proc.stderr
        texts.append((out / "results.json").read_text())
    stripped = []
    for t in texts:
        r = json.loads(t)
        assert r["run"].pop("created_at") and r["run"].pop("timings")
        stripped.append(json.dumps(r, indent=2))
    assert stripped[0] == stripped[1] == stripped[2]
    r = json.loads(texts[0])
    nf = r["noise_floor"]
    # the CPU's answers do not depend on the batch: the base is replayed on the other dtype
    other = "float32" if r["run"]["dtype"] != "float32" else "bfloat16"
    assert nf["n_items"] == 6 and nf["varied"] == "dtype" and nf["dtypes"] == [r["run"]["dtype"], other]
    assert 0 <= nf["n_score_differ"] <= nf["n_differ"] <= 6 and len(nf["items_differ"]) == nf["n_differ"]
    assert set(nf["items_differ"]) <= set(r["suite"]["item_ids"])
    assert set(nf["metric_shifts"]) == {c["metric"] for c in r["comparisons"]}
    rules = {x["rule"]: x for x in r["verdict"]["rules"]}
    assert ("noise floor: base replay identical" in rules) == (nf["n_differ"] > 0)
    for x in rules.values():  # every limit rule carries the noise its metric showed
        if x["kind"] == "limit" and x["outcome"] != "not_run":
            shift = nf["metric_shifts_pct" if x["rule_id"].endswith("-pct") else "metric_shifts"][x["metric"]]
            assert x["noise"] == abs(shift)
            assert x["within_noise"] == (abs(x["value"] - x["limit"]) <= x["noise"] and x["noise"] > 0
                                         if x["decision"] in ("pass", "fail") else None)
    # every comparison carries its interval, test and discordant counts
    for c in r["comparisons"]:
        assert c["ci_low"] <= c["delta"] <= c["ci_high"] and c["test"] and 0 <= c["p_value"] <= 1


@needs_shared
def test_missing_data_dir_is_a_usage_error(tmp_path):
    assert_one_line_error(audit(MEDICAL, "--data-dir", tmp_path / "nope", "--out", tmp_path / "o"), "--data-dir")
