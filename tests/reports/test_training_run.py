"""run.json and the run's index.html: the shipped run.schema.json is the generator's output, and an
end-to-end audit of a run folder (real zoo adapters in the Trainer layout) whose run.json agrees with each
checkpoint's results.json, whose chart is inline SVG with the text escaped, and whose checkpoints get their own
Hub eval results and model-card section (--eval-results, --model-card '{adapter}')."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import pytest
from conftest import ROOT, SHARED
from test_hub_files import DATASET, _entries

from auditor.records import schema_files
from auditor.reports.model_card import END
from auditor.reports.results_file import RUN_SCHEMA_PATH, first_schema_error

ZOO = ROOT / "examples" / "zoo"


def test_the_shipped_run_schema_is_the_generators_output():
    assert schema_files.RUN_SCHEMA_PATH == RUN_SCHEMA_PATH
    assert RUN_SCHEMA_PATH.read_text(encoding="utf-8") == schema_files.run_schema_text(), (
        "auditor/data/schemas/run.schema.json is stale: run python -m auditor.records.schema_files --write")
    assert schema_files.main(["--check"]) == 0


def _run_folder(tmp_path):
    """Real adapters as a Trainer run: a null adapter at step 100, the over-refusal one at step 300
    (its folder named checkpoint-3, so the step must come from trainer_state.json)."""
    run = tmp_path / "run <b>"
    for src, name, step in (("null-selfdistill-a", "checkpoint-100", 100), ("refuse-harmless", "checkpoint-3", 300)):
        shutil.copytree(ZOO / src, run / name)
        (run / name / "trainer_state.json").write_text(json.dumps({"global_step": step, "log_history": []}))
    return run


@pytest.mark.slow
def test_a_run_folder_is_audited_in_step_order(tmp_path, cli, base_model):
    run = _run_folder(tmp_path)
    out = tmp_path / "out"
    originals = {name: (run / name / "README.md").read_text(encoding="utf-8") for name in ("checkpoint-100", "checkpoint-3")}
    proc = cli(run, "--capability", "over_refusal", "--limit", "20", "--budget", "0", "--out", out,
               "--data-dir", SHARED / "data", "--eval-results", tmp_path / "hub", "--eval-results-dataset", DATASET,
               "--model-card", str(run / "{adapter}" / "README.md"), "--overwrite")
    assert proc.returncode == 1, proc.stderr[-3000:]  # the over-refusal checkpoint fails
    data = json.loads((out / "run.json").read_text(encoding="utf-8"))
    # the Hub's files of each checkpoint: its own .eval_results and its own card's section
    for c in data["checkpoints"]:
        saved = json.loads((out / c["report"] / "results.json").read_text(encoding="utf-8"))
        assert saved["verdict"]["verdict"] == ("fail" if Path(c["path"]).name == "checkpoint-3" else "pass")
        (comparison,) = saved["comparisons"]
        (entry,) = _entries(tmp_path / "hub" / c["report"])["over_refusal.refusal_rate.yaml"]
        assert entry["value"] == round(100 * comparison["adapter"], 2) and entry["date"] == saved["run"]["created_at"]
        card = (Path(c["path"]) / "README.md").read_text(encoding="utf-8")
        assert card.startswith(originals[Path(c["path"]).name]) and card.rstrip().endswith(END)
        assert f"**{saved['verdict']['verdict'].upper()}**" in card
    assert first_schema_error(RUN_SCHEMA_PATH, data) is None
    assert [c["step"] for c in data["checkpoints"]] == [100, 300]
    verdicts = {}
    for c in data["checkpoints"]:
        results = json.loads((out / c["report"] / "results.json").read_text(encoding="utf-8"))
        assert c["verdict"] == results["verdict"]["verdict"]
        verdicts[c["step"]] = c["verdict"]
    passing = [s for s, v in verdicts.items() if v == "pass"]
    failing = [s for s, v in verdicts.items() if v == "fail"]
    assert data["last_passing"] == (passing[-1] if passing else None)
    assert data["first_failing"] == (failing[0] if failing else None)
    assert verdicts[300] == "fail" and data["first_failing_rules"]
    assert proc.returncode == (1 if failing else 0)
    html = (out / "index.html").read_text(encoding="utf-8")
    assert '<figure class="chart" data-metric="over_refusal.refusal_rate">' in html and "<svg" in html
    assert "run &lt;b&gt;" in html and "run <b>" not in html
    assert "<script" not in html and "http" not in html.split("</head>")[1].replace('http://www.w3.org/2000/svg', '')
    assert "last passing checkpoint" in proc.stderr.lower()


@pytest.mark.slow
def test_stop_at_first_fail_lists_the_rest_as_not_audited(tmp_path, cli, base_model):
    run = _run_folder(tmp_path)
    shutil.copytree(ZOO / "null-selfdistill-b", run / "checkpoint-500")
    out = tmp_path / "out"
    proc = cli(run, "--checkpoints", "steps:300,500", "--stop-at-first-fail", "--capability", "over_refusal",
               "--limit", "20", "--budget", "0", "--out", out, "--data-dir", SHARED / "data")
    assert proc.returncode == 1, proc.stderr[-3000:]
    data = json.loads((out / "run.json").read_text(encoding="utf-8"))
    assert [(c["step"], c["verdict"]) for c in data["checkpoints"]] == [(300, "fail"), (500, "not_audited")]
    assert data["stopped_early"] and data["last_passing"] is None and data["first_failing"] == 300
    assert not (out / "checkpoint-500").exists()


def test_a_metric_no_item_scored_has_no_point_and_run_json_stays_valid(tmp_path):
    """A checkpoint whose audit has a metric no item scored (NaN: e.g. a --limit that leaves a capability empty)
    gets no point for it; run.json is still schema-valid (it used to fail its own schema check, exit 3)."""
    from test_hub_files import _result

    from auditor.inspect.checkpoints import Checkpoint
    from auditor.reports.run_json import run_json, run_summary

    result = _result(unscored=True)
    assert any(math.isnan(c.delta) for c in result.comparisons)
    ck = Checkpoint(step=10, path=tmp_path / "checkpoint-10", step_source="folder name")
    summary = run_summary(str(tmp_path), "all", [ck], [result], ["checkpoint-10"])
    assert [d.metric for d in summary.checkpoints[0].deltas] == [c.metric for c in result.comparisons
                                                                 if not math.isnan(c.delta)]
    assert first_schema_error(RUN_SCHEMA_PATH, json.loads(run_json(summary))) is None
