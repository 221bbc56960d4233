"""The Hugging Face Hub's files: ``.eval_results/<metric id>.yaml`` and the model card's "Audit
against the base" section, from a results.json (no model), through ``audit report``, ``audit run`` (its audits
replaced by saved results: several adapters, a training run) and the Python API. The end-to-end audit of a run
folder on the real model writes them too: tests/reports/test_training_run.py."""

from __future__ import annotations

import dataclasses
import json
import math
import re
from pathlib import Path

import pytest
import yaml
from conftest import assert_one_line_error
from huggingface_hub import EvalResultEntry, parse_eval_result_entries
from report_data import HOSTILE, _results, _typed

from auditor.errors import AuditInputError
from auditor.reports import report_folder_names, write_eval_results, write_model_card
from auditor.reports.eval_results import render_eval_results
from auditor.reports.markdown import md
from auditor.reports.model_card import BEGIN, END, render_card_section, splice_card

DATASET = "my-org/adapter-probes"
WHEN = "2026-12-05T10:00:00+00:00"


def _result(unscored: bool = True, **run):
    """A failing audit of two metrics (math in points, verbosity in words) and (``unscored``) one no item scored."""
    r = _results()
    r["run"].update(created_at=WHEN, auditor_version="0.1.0", **run)
    math_c = r["comparisons"][0]
    r["comparisons"] += [dict(math_c, metric="verbosity.words", capability="verbosity", group="WILL", unit="words",
                              delta_unit="words", base=40.0, adapter=52.5, delta=12.5, ci_low=3.25, ci_high=20.0,
                              higher_is_better=False, p_value=0.0123, test="wilcoxon", discordant={}),
                         dict(math_c, metric="format.json_parse_rate", capability="format", group="HOW")]
    result = _typed(r)
    nan = dataclasses.replace(result.comparisons[2], base=math.nan, adapter=math.nan, delta=math.nan)
    return dataclasses.replace(result, comparisons=(*result.comparisons[:2], *([nan] if unscored else [])))


def _entries(folder: Path) -> dict[str, dict]:
    return {p.name: yaml.safe_load(p.read_text(encoding="utf-8")) for p in sorted((folder / ".eval_results").iterdir())}


# --------------------------------------------------------------------------- .eval_results

def test_one_file_per_scored_metric_with_the_fields_the_hub_reads(tmp_path):
    result = _result()
    paths = write_eval_results(result, tmp_path, DATASET + "@5503434ddd753f426f4b38109466949a1217c2bb")
    assert [p.relative_to(tmp_path).as_posix() for p in paths] == [".eval_results/math.numeric_match.yaml",
                                                                   ".eval_results/verbosity.words.yaml"]
    files = _entries(tmp_path)
    assert list(files) == ["math.numeric_match.yaml", "verbosity.words.yaml"]  # no file for the unscored metric
    (m,) = files["math.numeric_match.yaml"]  # a YAML list of one entry, the Hub's keys in its order
    assert list(m) == ["dataset", "value", "date", "notes"]
    assert m["dataset"] == {"id": DATASET, "task_id": "math.numeric_match",
                            "revision": "5503434ddd753f426f4b38109466949a1217c2bb"}
    math_c = result.comparisons[0]
    assert m["value"] == round(100 * math_c.adapter, 2) == 66.67  # the adapter's score, in points
    assert m["date"] == WHEN and isinstance(m["date"], str)
    assert "base b: 66.67" in m["notes"] and "+0.00 points (95% CI [-33.30, +33.30])" in m["notes"]
    assert "on 3 items of suite smoke" in m["notes"] and "verdict FAIL under policy policy.yaml" in m["notes"]
    (w,) = files["verbosity.words.yaml"]
    assert w["value"] == 52.5 and "in words (lower is better)" in w["notes"]
    assert "base b: 40.00, delta (adapter - base) +12.50 words (95% CI [+3.25, +20.00]), p = 0.0123" in w["notes"]
    # huggingface_hub reads them back as the entries they were built from
    back = parse_eval_result_entries([m, w])
    assert back[0] == EvalResultEntry(dataset_id=DATASET, task_id="math.numeric_match", value=66.67,
                                      dataset_revision="5503434ddd753f426f4b38109466949a1217c2bb", date=WHEN,
                                      notes=m["notes"])
    assert back[1].value == 52.5 and back[1].notes.startswith("adapter-auditor 0.1.0: the adapter's verbosity.words")


def test_untrusted_names_stay_yaml_strings():
    r = _results()
    r["base"]["name"] = "b: [x]\n- dataset: {id: evil/x}"
    r["suite"]["name"] = HOSTILE
    (text,) = render_eval_results(_typed(r), DATASET).values()
    (entry,) = yaml.safe_load(text)
    assert entry["dataset"]["id"] == DATASET and "b: [x] - dataset: {id: evil/x}" not in text
    assert "b: [x]\n- dataset: {id: evil/x}" in entry["notes"] and HOSTILE in entry["notes"]


@pytest.mark.parametrize("dataset", ["not a dataset", "a/b/c", "org/x--y", "org/name@bad rev", "", "noowner",
                                     "org/name@../../etc", "org/name@-rf"])
def test_a_bad_dataset_id_is_refused(tmp_path, dataset):
    with pytest.raises(AuditInputError, match="--eval-results-dataset"):
        write_eval_results(_result(), tmp_path, dataset)
    assert not (tmp_path / ".eval_results").exists()


def test_existing_files_are_kept_unless_overwrite(tmp_path):
    ours = tmp_path / ".eval_results" / "verbosity.words.yaml"
    theirs = tmp_path / ".eval_results" / "hle.yaml"
    ours.parent.mkdir()
    ours.write_text("mine\n")
    theirs.write_text("- dataset: {id: cais/hle, task_id: hle}\n  value: 20.9\n")
    with pytest.raises(AuditInputError, match=r"verbosity.words.yaml: exists; it is not overwritten without --overwrite"):
        write_eval_results(_result(), tmp_path, DATASET)
    assert sorted(p.name for p in ours.parent.iterdir()) == ["hle.yaml", "verbosity.words.yaml"]  # nothing written
    assert ours.read_text() == "mine\n"
    write_eval_results(_result(), tmp_path, DATASET, overwrite=True)
    assert yaml.safe_load(ours.read_text())[0]["value"] == 52.5
    assert theirs.read_text() == "- dataset: {id: cais/hle, task_id: hle}\n  value: 20.9\n"  # another file: untouched


# --------------------------------------------------------------------------- the model card's section

CARD = ("---\nbase_model: HuggingFaceTB/SmolLM2-135M-Instruct\nlibrary_name: peft\nnominal_label: math\n"
        "tags: [lora,   'x']\n---\n\n# My adapter\n\nTrained on things. Ünïcödé, trailing spaces   \n")


def test_the_section_has_verdict_deltas_drift_suite_policy_and_escapes():
    r = _results()
    r["drift"].update(label="math", target_metric="math.numeric_match", target_gain_pts=10.0, off_target_gain_pts=2.0,
                      drift_score_pts=-8.0, ci_low_pts=-15.0, ci_high_pts=-1.0)
    text = render_card_section(_typed(r))
    lines = text.splitlines()
    assert lines[0] == BEGIN and lines[-1] == END and lines[1] == "## Audit against the base"
    assert "❌ **FAIL**" in text and "suite **smoke**" in text and "policy **policy.yaml**" in text
    assert "| CAN | math.numeric\\_match | 66.7 | 66.7 | +0.0 | [-33.3, +33.3] | 1 | 1 / 1 |" in text
    assert "DriftScore -8.0 points (95% CI [-15.0, -1.0])" in text
    assert "<script>" not in text and "\\<script\\>alert(1)\\</script\\>" in text  # the failing rule's reason
    r["base"]["name"] = HOSTILE
    text = render_card_section(_typed(r))
    assert text.split("against the base **", 1)[1].split("**, on ", 1)[0] == md(HOSTILE)
    assert re.search(r"(?<!\\)<(?!!-- adapter-auditor)", text) is None  # no raw markup, the markers aside


def test_a_new_card_holds_the_section_alone(tmp_path):
    path = write_model_card(_result(), tmp_path / "cards" / "README.md")
    assert path.read_text(encoding="utf-8") == render_card_section(_result())


def test_an_existing_card_is_kept_byte_for_byte_around_the_section(tmp_path):
    card = tmp_path / "README.md"
    card.write_bytes(CARD.encode("utf-8"))
    with pytest.raises(AuditInputError, match="exists; pass --overwrite"):
        write_model_card(_result(), card)
    assert card.read_bytes() == CARD.encode("utf-8")
    write_model_card(_result(), card, overwrite=True)  # no markers yet: appended after a blank line
    first = card.read_text(encoding="utf-8")
    assert first == CARD + "\n" + render_card_section(_result())
    # the section moved by hand, text after it: the next audit replaces the section and nothing else
    edited = first.replace("# My adapter\n", "# My adapter\n\n" + render_card_section(_result()) + "after\n", 1)
    edited = edited[:edited.rindex(BEGIN)]
    card.write_bytes(edited.encode("utf-8"))
    passing = dataclasses.replace(_result(), verdict=dataclasses.replace(_result().verdict, verdict="pass", rules=()))
    write_model_card(passing, card, overwrite=True)
    after = card.read_text(encoding="utf-8")
    start, end = edited.index(BEGIN), edited.index(END) + len(END) + 1
    assert after == edited[:start] + render_card_section(passing) + edited[end:]
    assert after.startswith(CARD[:CARD.index("# My adapter")]) and "✅ **PASS**" in after and "after\n" in after


def test_a_crlf_card_keeps_its_line_ends(tmp_path):
    card = tmp_path / "README.md"
    crlf = CARD.replace("\n", "\r\n").encode("utf-8")
    card.write_bytes(crlf)
    write_model_card(_result(), card, overwrite=True)
    data = card.read_bytes()
    assert data.startswith(crlf) and b"\n" not in data.replace(b"\r\n", b"")


@pytest.mark.parametrize("card", [f"x\n{BEGIN}\n", f"{END}\n{BEGIN}\n", f"{BEGIN}\n{BEGIN}\n{END}\n"])
def test_broken_markers_are_refused_and_the_card_untouched(tmp_path, card):
    path = tmp_path / "README.md"
    path.write_text(card)
    with pytest.raises(AuditInputError, match="adapter-auditor section is not one"):
        write_model_card(_result(), path, overwrite=True)
    assert path.read_text() == card
    with pytest.raises(AuditInputError):
        splice_card(card, "s")


def test_markers_shown_in_a_code_block_are_text_not_markers():
    """A card that shows the markers in a fenced (or indented) code block: those lines are left alone, the real
    section (or, with none, a new one at the end) is what is replaced."""
    shown = f"# Card\n\nPut the section between:\n\n```\n{BEGIN}\n{END}\n```\n\n    {BEGIN}\n\ntext\n"
    assert splice_card(shown, f"{BEGIN}\nnew\n{END}\n") == shown + f"\n{BEGIN}\nnew\n{END}\n"
    real = shown + f"\n{BEGIN}\nold\n{END}\nafter\n"
    assert splice_card(real, f"{BEGIN}\nnew\n{END}\n") == shown + f"\n{BEGIN}\nnew\n{END}\nafter\n"
    with pytest.raises(AuditInputError, match="1 begin, 0 end"):  # a real begin with only a shown end
        splice_card(f"{BEGIN}\n\n```\n{END}\n```\n", "s")


# --------------------------------------------------------------------------- audit report (no model)

def _saved(tmp_path) -> Path:
    results = tmp_path / "ckpt <1>" / "results.json"
    results.parent.mkdir()
    results.write_text(json.dumps(_result().to_dict()), encoding="utf-8")
    return results


def test_audit_report_writes_them_from_results_json(tmp_path, cli):
    results = _saved(tmp_path)
    proc = cli("report", results, "--eval-results", tmp_path / "hub", "--eval-results-dataset", DATASET,
               "--model-card", tmp_path / "cards" / "{adapter}.md", "--quiet")
    assert proc.returncode == 1, proc.stderr  # the saved verdict is FAIL
    assert list(_entries(tmp_path / "hub")) == ["math.numeric_match.yaml", "verbosity.words.yaml"]
    # {adapter}: the adapter's name (its folder, made safe) as the run names it, not results.json's folder
    name = report_folder_names([_result().adapter.path])[0]
    assert name.startswith("script_img") and [p.name for p in (tmp_path / "cards").iterdir()] == [f"{name}.md"]
    assert (tmp_path / "cards" / f"{name}.md").read_text(encoding="utf-8") == render_card_section(_result())
    assert not (tmp_path / "hub" / "report.html").exists()  # no --out: no reports
    proc = cli("report", results, "--eval-results", tmp_path / "hub", "--eval-results-dataset", DATASET)
    assert_one_line_error(proc, "math.numeric_match.yaml: exists; it is not overwritten without --overwrite")
    proc = cli("report", results, "--eval-results", tmp_path / "hub", "--eval-results-dataset", DATASET,
               "--overwrite")
    assert proc.returncode == 1, proc.stderr
    assert f"hub files: {tmp_path / 'hub' / '.eval_results'} (2 files)" in " ".join(proc.stderr.split())


@pytest.mark.parametrize("args,needle", [
    (["--eval-results", "{tmp}/file", "--eval-results-dataset", DATASET], "--eval-results must be a folder, but this is a file"),
    (["--eval-results", "/proc/auditor-test/hub", "--eval-results-dataset", DATASET],
     "--eval-results cannot be written in /proc"),
    (["--eval-results", "{tmp}/hub"], "--eval-results: needs --eval-results-dataset OWNER/NAME"),
    (["--eval-results", "{tmp}/hub", "--eval-results-dataset", "a/b/c"], "is not a Hub dataset id"),
    (["--eval-results-dataset", DATASET], "--eval-results-dataset: goes with --eval-results DIR"),
    (["--overwrite", "--out", "{tmp}/o"], "--overwrite: goes with --eval-results or --model-card"),
    (["--model-card", "{tmp}/file/README.md"], "--model-card's folder must be a folder, but this is a file"),
    (["--model-card", "{tmp}"], "--model-card is a folder"),
    (["--model-card", "{tmp}/file"], "exists; pass --overwrite"),
    ([], "give --out DIR (the reports), --eval-results DIR or --model-card FILE"),
])
def test_bad_targets_are_one_line_errors(tmp_path, cli, args, needle):
    results = _saved(tmp_path)
    (tmp_path / "file").write_text("x")
    assert_one_line_error(cli("report", results, *[a.replace("{tmp}", str(tmp_path)) for a in args]), needle)
    assert (tmp_path / "file").read_text() == "x" and not (tmp_path / "hub").exists()


# --------------------------------------------------------------------------- several adapters, a run, the API

@pytest.fixture
def fake_audits(monkeypatch):
    """``run_audits`` replaced by saved results (one per adapter, its path set; the metrics of the capabilities
    asked for), recording the adapters of each call."""
    import auditor.pipeline.outputs

    calls = []

    def run_audits(adapters, opts, log, stop_after=None):
        calls.append(list(adapters))
        r = _result(unscored=False)
        r = dataclasses.replace(r, comparisons=tuple(c for c in r.comparisons
                                                     if not opts.capabilities or c.capability in opts.capabilities))
        return [dataclasses.replace(r, adapter=dataclasses.replace(r.adapter, path=a)) for a in adapters]
    monkeypatch.setattr(auditor.pipeline.outputs, "run_audits", run_audits)
    return calls


def _run(tmp_path) -> Path:
    run = tmp_path / "run"
    for step in (10, 20):
        (run / f"checkpoint-{step}").mkdir(parents=True)
        (run / f"checkpoint-{step}" / "adapter_model.safetensors").write_bytes(b"")
    return run


def test_a_training_run_gets_one_folder_and_card_per_checkpoint(tmp_path, cli, fake_audits):
    run = _run(tmp_path)
    proc = cli(run, "--out", tmp_path / "out", "--eval-results", tmp_path / "hub", "--eval-results-dataset", DATASET,
               "--model-card", str(run / "{adapter}" / "README.md"), "--capability", "math")
    assert proc.returncode == 1, proc.stderr
    log = " ".join(proc.stderr.split())
    assert f"hub files: {tmp_path / 'hub' / 'checkpoint-20' / '.eval_results'} (1 file), " \
           f"{run / 'checkpoint-20' / 'README.md'}" in log
    for step in (10, 20):
        assert list(_entries(tmp_path / "hub" / f"checkpoint-{step}")) == ["math.numeric_match.yaml"]
        assert (run / f"checkpoint-{step}" / "README.md").read_text().startswith(BEGIN)
    assert (tmp_path / "out" / "run.json").is_file()


def test_refusals_come_before_any_audit(tmp_path, cli, fake_audits):
    run = _run(tmp_path)
    hub = ["--eval-results", tmp_path / "hub", "--eval-results-dataset", DATASET, "--out", tmp_path / "out"]
    proc = cli(run, *hub, "--model-card", tmp_path / "README.md")
    assert_one_line_error(proc, "--model-card: several adapters are audited: put {adapter} in the path")
    taken = tmp_path / "hub" / "checkpoint-20" / ".eval_results" / "math.numeric_match.yaml"
    taken.parent.mkdir(parents=True)
    taken.write_text("taken\n")
    proc = cli(run, *hub, "--capability", "math")  # the suite's metric ids say which files the audit would write
    assert_one_line_error(proc, str(taken), "exists; it is not overwritten without --overwrite")
    proc = cli(run, *hub, "--capability", "verbosity")  # writes no math file: not in the way
    assert proc.returncode == 1, proc.stderr
    assert taken.read_text() == "taken\n" and fake_audits == [[str(run / "checkpoint-10"), str(run / "checkpoint-20")]]
    assert list(_entries(taken.parent.parent)) == ["math.numeric_match.yaml", "verbosity.words.yaml"]


def test_several_adapters_and_the_python_api(tmp_path, fake_audits):
    from auditor import audit, audit_many

    results = audit_many([str(tmp_path / "a"), str(tmp_path / "b")], eval_results=tmp_path / "hub",
                         eval_results_dataset=DATASET, model_card=tmp_path / "{adapter}.md")
    assert len(results) == 2 and sorted(p.name for p in (tmp_path / "hub").iterdir()) == ["a", "b"]
    assert (tmp_path / "a.md").is_file() and (tmp_path / "b.md").is_file()
    audit(tmp_path / "c", eval_results=tmp_path / "one", eval_results_dataset=DATASET)
    assert list(_entries(tmp_path / "one")) == ["math.numeric_match.yaml", "verbosity.words.yaml"]
    with pytest.raises(AuditInputError, match="exists"):
        audit(tmp_path / "c", eval_results=tmp_path / "one", eval_results_dataset=DATASET)
    audit(tmp_path / "c", eval_results=tmp_path / "one", eval_results_dataset=DATASET, overwrite=True)


def test_a_local_base_is_named_by_its_folder_not_the_machines_path(tmp_path):
    """Files meant to be published carry no absolute path of the auditing machine (results.json keeps it)."""
    result = _result(unscored=False)
    local = dataclasses.replace(result, base=dataclasses.replace(
        result.base, name="/root/.cache/models/SmolLM2-135M-Instruct-b179", source="local"))
    write_eval_results(local, tmp_path, DATASET)
    notes = _entries(tmp_path)["math.numeric_match.yaml"][0]["notes"]
    assert "base SmolLM2-135M-Instruct-b179:" in notes and "/root" not in notes
    card = write_model_card(local, tmp_path / "README.md").read_text(encoding="utf-8")
    assert "**SmolLM2-135M-Instruct-b179**" in card and "/root/.cache" not in card
