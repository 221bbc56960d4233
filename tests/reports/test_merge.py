"""``audit merge``: CI shards' results.json files → one index (issue 32, part 3).

The shards are real audits: a tiny random-weight Llama base (2 layers, hidden 64, the embedded base's tokenizer;
``_tiny_family`` of test_model_families.py) and two random LoRAs on it, each audited alone into its own ``--out``
folder (two shards) on the hf backend (``--capability math --limit 2 --budget 0``), then both in one
multi-adapter run. The answers of the later audits come from the answer cache the earlier ones filled (as CI
shards sharing the cache would), so the one run holds the same results as the shards and the merged index must
equal its index byte for byte. The weights are random, so what they score is noise: what is checked is that the
merge shows what the run shows. Faults (a file that is not a results.json, overlapping shards, another suite,
policy or base) are produced from those real files: a copy with one field changed, or a real audit with
``--limit 1`` (another suite).
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
from conftest import assert_one_line_error
from test_model_families import _tiny_family

SHARD_ARGS = ("--capability", "math", "--limit", "2", "--budget", "0", "--backend", "hf", "--quiet")
#: the default policy, with an adapter that carries no nominal label failing (ada has none, bob's card says math):
#: one adapter of the fleet fails whatever the random weights answer
NEEDS_LABEL = "version: 1\nextends: default\ndrift: {on_missing_label: fail}\n"


def _second_lora(adapter: Path, to: Path) -> Path:
    """Another LoRA of the same shapes: ``adapter``'s tensors scaled and shifted (another content digest)."""
    from safetensors.torch import load_file, save_file

    shutil.copytree(adapter, to)
    tensors = load_file(str(adapter / "adapter_model.safetensors"))
    save_file({k: (v * 3 + 0.01).contiguous() for k, v in tensors.items()}, str(to / "adapter_model.safetensors"))
    return to


@pytest.fixture(scope="module")
def fleet(tmp_path_factory, base_model):
    """(base, [adapter ada, adapter bob], shards root, policy): ``root/shard-0`` (ada alone, as `audit ada --out
    shard-0` lays it out: results.json at the top) and ``root/shard-1/bob`` (an artifact folder one level down)."""
    from auditor.api import audit_many

    root = tmp_path_factory.mktemp("merge")
    base, first = _tiny_family("llama", base_model, root)
    ada = shutil.copytree(first, root / "adapters" / "ada")
    bob = _second_lora(ada, root / "adapters" / "bob")
    (bob / "README.md").write_text("---\nnominal_label: math\n---\nA LoRA.\n")
    policy = root / "needs-label.yaml"
    policy.write_text(NEEDS_LABEL)
    opts = {"base": str(base), "policy": str(policy), "capabilities": ("math",), "limit": 2, "budget": 0,
            "backend": "hf"}
    audit_many([str(ada)], out=root / "shards" / "shard-0", **opts)
    audit_many([str(bob)], out=root / "shards" / "shard-1" / "bob", **opts)
    return base, [ada, bob], root / "shards", policy


def test_the_merged_index_is_the_index_of_one_run_over_the_same_adapters(fleet, tmp_path, cli):
    base, (ada, bob), shards, policy = fleet
    run = cli("run", ada, bob, "--base", base, "--policy", policy, *SHARD_ARGS[:-1], "--out", tmp_path / "one-run")
    assert run.returncode == 1, run.stderr[-3000:]  # ada fails (no nominal label)
    # the shards in the other order: rows are in adapter path order whatever the matrix did
    merged = cli("merge", shards / "shard-1", shards / "shard-0", "--out", tmp_path / "merged")
    assert merged.returncode == run.returncode, merged.stderr[-3000:]
    one, m = tmp_path / "one-run", tmp_path / "merged"
    assert (m / "index.html").read_text() == (one / "index.html").read_text()
    for name in ("ada", "bob"):
        a = json.loads((one / name / "results.json").read_text())
        b = json.loads((m / name / "results.json").read_text())
        assert (a["verdict"], a["comparisons"], a["items"]) == (b["verdict"], b["comparisons"], b["items"])
        for report in ("report.html", "summary.md", "junit.xml", "checklist.md", "results.sarif"):
            assert (m / name / report).is_file()
    # each adapter's reports are those `audit report` renders from its shard's results.json
    rendered = cli("report", shards / "shard-0" / "results.json", "--out", tmp_path / "rendered", "--quiet")
    assert rendered.returncode in (0, 1)
    assert (m / "ada" / "report.html").read_text() == (tmp_path / "rendered" / "report.html").read_text()
    # the terminal summary of the run: each adapter's table and report, then the count and the index
    verdicts = [json.loads((one / n / "results.json").read_text())["verdict"]["verdict"] for n in ("ada", "bob")]
    assert verdicts[0] == "fail"
    assert f"{verdicts.count('fail')} of 2 adapters fail; index: {m / 'index.html'}" in " ".join(merged.stderr.split())
    assert merged.stderr.count("verdict: ") == 2 and str(ada) in merged.stderr
    # summary.md: the Markdown index for $GITHUB_STEP_SUMMARY, each failing adapter's summary below it
    summary = (m / "summary.md").read_text()
    assert "| adapter | verdict | nominal label | DriftScore (points) | failing rules | report |" in summary
    assert summary.count("/report.html |") == 2 and summary.index("ada/report.html") < summary.index("bob/report.html")
    for name, verdict in zip(("ada", "bob"), verdicts):
        own = (m / name / "summary.md").read_text()
        assert (own in summary) == (verdict != "pass")
    # --json as `audit A B --json`
    as_json = cli("merge", shards, "--out", tmp_path / "merged", "--json", "--quiet")
    doc = json.loads(as_json.stdout)
    assert as_json.stderr == "" and as_json.returncode == run.returncode
    assert [a["adapter"]["path"] for a in doc["adapters"]] == [str(ada), str(bob)]
    assert doc["verdict"] == "fail"


def test_a_merge_inside_the_shards_folder_does_not_read_its_own_copies(fleet, tmp_path, cli):
    shards = fleet[2]
    root = shutil.copytree(shards, tmp_path / "artifacts")
    for _ in range(2):  # the second merge finds the first one's results.json copies under --out and skips them
        r = cli("merge", root, "--out", root / "merged", "--quiet")
        assert r.returncode in (0, 1) and r.stderr == "", r.stderr
    assert sorted(p.name for p in (root / "merged").iterdir()) == ["ada", "bob", "index.html", "summary.md"]


def test_model_output_and_adapter_names_stay_escaped_in_the_merged_reports(fleet, tmp_path, cli):
    shards = fleet[2]
    data = json.loads((shards / "shard-0" / "results.json").read_text())
    data["items"][0]["adapter"]["text"] = "<script>alert('answer')</script>"
    data["adapter"]["path"] = "adapters/<img src=x onerror=alert(1)>"
    hostile = tmp_path / "hostile" / "results.json"
    hostile.parent.mkdir()
    hostile.write_text(json.dumps(data))
    r = cli("merge", hostile, shards / "shard-1", "--out", tmp_path / "merged", "--quiet")
    assert r.returncode in (0, 1), r.stderr
    folder = next(p for p in (tmp_path / "merged").iterdir() if p.is_dir() and p.name != "bob")
    assert folder.name == "img_src_x_onerror_alert_1"  # a safe folder name
    index = (tmp_path / "merged" / "index.html").read_text()
    assert "<img src=x" not in index and "&lt;img src=x onerror=alert(1)&gt;" in index
    report = (folder / "report.html").read_text()
    assert "<script>alert('answer')" not in report and "alert('answer')" in report.replace("\\u0027", "'")
    assert "<img src=x" not in report
    summary = (tmp_path / "merged" / "summary.md").read_text()
    assert not re.search(r"(?<!\\)<", summary) and r"\<img src=x onerror=alert(1)\>" in summary


def _edited(src: Path, to: Path, edit) -> Path:
    data = json.loads(src.read_text())
    edit(data)
    to.mkdir(parents=True)
    (to / "results.json").write_text(json.dumps(data))
    return to


def test_files_that_are_not_results_of_this_version_are_one_line_errors(fleet, tmp_path, cli):
    shards = fleet[2]
    ok = shards / "shard-0"
    (tmp_path / "empty").mkdir()
    assert_one_line_error(cli("merge", ok, tmp_path / "missing", "--out", tmp_path / "o"), "missing",
                          "no such file or folder")
    assert_one_line_error(cli("merge", ok, tmp_path / "empty", "--out", tmp_path / "o"), "empty",
                          "holds no results.json")
    bad = tmp_path / "bad" / "results.json"
    bad.parent.mkdir()
    bad.write_text("{not json")
    assert_one_line_error(cli("merge", ok, bad.parent, "--out", tmp_path / "o"), str(bad))
    newer = _edited(ok / "results.json", tmp_path / "newer", lambda d: d.update(schema_version=99))
    assert_one_line_error(cli("merge", ok, newer, "--out", tmp_path / "o"), str(newer / "results.json"),
                          "newer adapter-auditor")
    other = tmp_path / "other.json"
    other.write_text(json.dumps({"hello": "world"}))
    assert_one_line_error(cli("merge", ok, other, "--out", tmp_path / "o"), str(other), "not an adapter-auditor")
    broken = _edited(ok / "results.json", tmp_path / "broken", lambda d: d["verdict"].pop("rules"))
    assert_one_line_error(cli("merge", broken, "--out", tmp_path / "o"), "does not match the results schema")
    assert not (tmp_path / "o").exists()  # refused before anything is written


def test_overlapping_shards_are_refused(fleet, tmp_path, cli):
    shards = fleet[2]
    again = shutil.copytree(shards / "shard-0", tmp_path / "retry")
    line = assert_one_line_error(cli("merge", shards, again, "--out", tmp_path / "o"), "audits the same adapter",
                                 "each adapter belongs to one shard")
    assert str(again / "results.json") in line and str(shards / "shard-0" / "results.json") in line

    def other_commit(d):
        d["adapter"]["content_sha256"] = "ab" * 32

    stale = _edited(shards / "shard-0" / "results.json", tmp_path / "stale", other_commit)
    assert_one_line_error(cli("merge", shards, stale, "--out", tmp_path / "o"), "with other content",
                          "results of two commits")


def test_shards_of_another_suite_policy_or_base_are_refused(fleet, tmp_path, cli):
    base, (ada, _), shards, policy = fleet
    # real shards of ada audited with --limit 1 (another suite, as far as one index goes) or the default policy
    limit_1 = cli("run", ada, "--base", base, "--policy", policy, *SHARD_ARGS[:2], "--limit", "1", *SHARD_ARGS[4:],
                  "--out", tmp_path / "limit-1")
    default = cli("run", ada, "--base", base, *SHARD_ARGS, "--out", tmp_path / "default-policy")
    assert {limit_1.returncode, default.returncode} <= {0, 1}, limit_1.stderr[-3000:] + default.stderr[-3000:]
    assert_one_line_error(cli("merge", shards / "shard-1", tmp_path / "limit-1", "--out", tmp_path / "o"),
                          str(tmp_path / "limit-1" / "results.json"), "another suite than", "one index would mix")
    assert_one_line_error(cli("merge", shards / "shard-1", tmp_path / "default-policy", "--out", tmp_path / "o"),
                          "another policy than", "default.yaml", "needs-label.yaml")
    bob = shards / "shard-1" / "bob" / "results.json"
    other = _edited(bob, tmp_path / "base", lambda d: d["base"].update(folder_sha256="ef" * 32))
    assert_one_line_error(cli("merge", shards / "shard-0", other, "--out", tmp_path / "o"), "another base than")
    assert not (tmp_path / "o").exists()

    def elsewhere(d):  # another runner's paths, the same contents: one audit
        d["policy"]["path"] = "/runner-2/needs-label.yaml"
        d["base"].update(name="/runner-2/llama-base", path="/runner-2/llama-base")

    moved = _edited(bob, tmp_path / "moved", elsewhere)
    r = cli("merge", shards / "shard-0", moved, "--out", tmp_path / "merged", "--quiet")
    assert r.returncode == 1 and r.stderr == "", r.stderr


def test_merge_needs_a_shard(cli):
    assert_one_line_error(cli("merge"), "Missing argument", "audit merge --help")


def test_the_markdown_index_fits_a_job_summary_however_many_adapters(fleet):
    from auditor.reports import load_results
    from auditor.reports.markdown import INDEX_MAX_BYTES, render_index_md

    shards = fleet[2]
    ada = load_results(shards / "shard-0" / "results.json")  # fails
    summary = "## ❌ adapter-auditor: FAIL\n" + "x" * 50_000 + "\n"
    text = render_index_md([ada] * 40, [f"ada-{k}" for k in range(40)], [summary] * 40)
    assert len(text.encode()) <= INDEX_MAX_BYTES
    assert text.count("/report.html |") == 40  # every row
    kept = text.count("## ❌ adapter-auditor: FAIL")
    assert 0 < kept < 40 and f"the summaries of {40 - kept} more adapters" in text
    many = 20_000  # rows alone over the limit: the table is cut too, saying so
    text = render_index_md([ada] * many, [f"a{k}" for k in range(many)], [summary] * many)
    assert len(text.encode()) <= INDEX_MAX_BYTES and "more adapters left out to fit the job summary" in text
