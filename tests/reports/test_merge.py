"""``audit merge``: CI shards' results.json files → one index.

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
    assert rendered.returncode == 1, rendered.stderr  # ada's verdict: fail
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
        assert r.returncode == 1 and r.stderr == "", r.stderr  # ada fails
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
    assert r.returncode == 1, r.stderr  # ada (the hostile copy) fails
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

    def worked_examples(d):  # the same items asked after other worked examples (a suite's fewshot samples)
        d["items"][0]["rendered_prompt"] = "Q: 2 + 2?\nA: 4\n\n" + d["items"][0]["rendered_prompt"]

    shown = _edited(bob, tmp_path / "fewshot", worked_examples)
    assert_one_line_error(cli("merge", shards / "shard-0", shown, "--out", tmp_path / "o"), "another prompt than",
                          "worked examples included")
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


# ---------------------------------------------------------------- defects found by a new user's try


def test_an_adapter_folder_named_like_an_index_file_gets_another_report_folder(fleet, tmp_path, cli):
    """An adapter folder named summary.md (or Index.html: the names are compared case-insensitively, as a macOS
    disk does) never becomes the merged summary.md's folder; the multi-adapter run names it alike, so the merged
    index is still the run's, byte for byte."""
    base, (ada, bob), shards, policy = fleet
    odd = shutil.copytree(ada, tmp_path / "adapters" / "summary.md")
    shard = cli("run", odd, "--base", base, "--policy", policy, *SHARD_ARGS, "--out", tmp_path / "s0")
    assert shard.returncode == 1, shard.stderr[-3000:]  # a copy of ada: no nominal label, fails
    first, second = sorted([odd, bob], key=str)  # the merge's rows are in adapter path order
    run = cli("run", first, second, "--base", base, "--policy", policy, *SHARD_ARGS, "--out", tmp_path / "one-run")
    merged = cli("merge", tmp_path / "s0", shards / "shard-1", "--out", tmp_path / "o9", "--quiet")
    assert merged.returncode == run.returncode, merged.stderr
    assert sorted(p.name for p in (tmp_path / "o9").iterdir()) == ["bob", "index.html", "summary.md", "summary.md-2"]
    assert (tmp_path / "o9" / "summary.md").is_file() and (tmp_path / "o9" / "summary.md-2" / "report.html").is_file()
    assert (tmp_path / "o9" / "index.html").read_text() == (tmp_path / "one-run" / "index.html").read_text()
    assert sorted(p.name for p in (tmp_path / "one-run").iterdir()) == ["bob", "index.html", "summary.md-2"]

    from auditor.reports import report_folder_names

    assert report_folder_names(["/a/Index.html", "/b/RUN.JSON", "/c/Ada", "/d/ada"]) == [
        "Index.html-2", "RUN.JSON-2", "Ada", "ada-2"]


def test_every_output_path_is_checked_before_anything_is_written(fleet, tmp_path, cli):
    shards = fleet[2]
    out = tmp_path / "o"
    (out / "index.html").mkdir(parents=True)
    assert_one_line_error(cli("merge", shards, "--out", out), str(out / "index.html"), "is a folder")
    assert sorted(p.name for p in out.iterdir()) == ["index.html"]  # no adapter folder written
    (out / "index.html").rmdir()
    (out / "bob").write_text("a file where bob's folder goes")
    assert_one_line_error(cli("merge", shards, "--out", out), str(out / "bob"), "must be a folder")
    assert sorted(p.name for p in out.iterdir()) == ["bob"]


def _rerun(cli, fleet, out: Path, *extra: str) -> Path:
    """A real shard of ada (as shard-0) audited with ``extra`` options."""
    base, (ada, _), _, policy = fleet
    r = cli("run", ada, "--base", base, "--policy", policy, *SHARD_ARGS, *extra, "--out", out)
    assert r.returncode == 1, r.stderr[-3000:]  # ada fails (no nominal label)
    assert json.loads((out / "results.json").read_text())["verdict"]["verdict"] == "fail"
    return out


def test_shards_generated_with_another_template_dtype_or_backend_are_refused(fleet, tmp_path, cli):
    shards = fleet[2]
    bob = shards / "shard-1"
    plain = _rerun(cli, fleet, tmp_path / "plain", "--chat-template", "none")
    line = assert_one_line_error(cli("merge", bob, plain, "--out", tmp_path / "o"), str(plain / "results.json"),
                                 "another chat template than", "prompted plainly (--chat-template none)",
                                 "the base pass the index says is shared was not")
    assert str(bob / "bob" / "results.json") in line
    args = _rerun(cli, fleet, tmp_path / "args", "--chat-template-arg", "enable_thinking=false")
    assert_one_line_error(cli("merge", bob, args, "--out", tmp_path / "o"), "another chat template than")
    dtype = json.loads((shards / "shard-0" / "results.json").read_text())["run"]["dtype"]
    other = "float32" if dtype != "float32" else "bfloat16"
    wide = _rerun(cli, fleet, tmp_path / "dtype", "--dtype", other)
    assert_one_line_error(cli("merge", bob, wide, "--out", tmp_path / "o"), "another dtype than", f"dtype {other}",
                          "pin it")
    vllm = _edited(shards / "shard-0" / "results.json", tmp_path / "vllm", lambda d: d["run"].update(backend="vllm"))
    assert_one_line_error(cli("merge", bob, vllm, "--out", tmp_path / "o"), "another backend than", "backend vllm")
    assert not (tmp_path / "o").exists()


def test_an_adapter_template_used_in_one_shard_and_not_in_another_is_refused(fleet, tmp_path, cli):
    """Two adapters that ship their own chat template: one shard prompted its adapter with it (the default),
    the other did not (--chat-template base): the base's prompts agree, the setting does not."""
    shards = fleet[2]

    def ships_own(used: bool):
        def edit(d):
            d["adapter"]["tokenizer_files"].update(chat_template="differs", template_file="chat_template.jinja",
                                                   template_sha256="cd" * 32)
            if used:
                d["run"]["prompts"]["adapter"].update(chat_template="adapter", template_sha256="cd" * 32)
        return edit

    own = _edited(shards / "shard-0" / "results.json", tmp_path / "own", ships_own(True))
    base = _edited(shards / "shard-1" / "bob" / "results.json", tmp_path / "base", ships_own(False))
    assert_one_line_error(cli("merge", own, base, "--out", tmp_path / "o"), "another adapter template than",
                          "not used (--chat-template base, none or FILE)", "used (--chat-template adapter)")
    # an adapter that ships no template is prompted alike either way: it merges with both
    r = cli("merge", own, shards / "shard-1", "--out", tmp_path / "ok", "--quiet")
    assert r.returncode == 1 and r.stderr == "", r.stderr  # ada fails


def test_what_a_ci_matrix_varies_between_runners_still_merges(fleet, tmp_path, cli):
    shards = fleet[2]

    def other_runner(d):  # another machine: paths, batch sizes, the engine's streams, cache, timings, versions
        run = d["run"]
        run.update(batch_size=8, backend_reason="auto: no GPU, hf", dtype_reason="--dtype " + run["dtype"],
                   timings={"load_s": 9.0, "generate_s": 90.0, "total_s": 99.0}, created_at="2030-01-01T00:00:00Z")
        run["hf"]["streams"] = []
        run["hf"]["slots"] = 16
        run["cache"]["location"] = {"protocol": "s3", "path": "bucket/generations"}
        run["versions"]["torch"] = "2.99.0+cu128"
        for p in run["prompts"].values():
            p.update(template_file="/runner-2/base/chat_template.jinja", tokenizer_path="/runner-2/base")

    moved = _edited(shards / "shard-1" / "bob" / "results.json", tmp_path / "moved", other_runner)
    r = cli("merge", shards / "shard-0", moved, "--out", tmp_path / "merged", "--quiet")
    assert r.returncode == 1 and r.stderr == "", r.stderr


def test_an_out_folder_that_is_or_holds_a_shard_is_refused(fleet, tmp_path, cli, monkeypatch):
    shards = fleet[2]
    root = shutil.copytree(shards, tmp_path / "artifacts")
    s0, s1 = root / "shard-0", root / "shard-1"
    index_before = sorted(p.name for p in s0.iterdir())
    assert_one_line_error(cli("merge", s0, s1, "--out", s0), "--out", f"{s0} is the shard {s0}",
                          "give --out a folder of its own")
    # files named inside --out: the merge would overwrite the shard's reports
    assert_one_line_error(cli("merge", s0 / "results.json", s1, "--out", s0), "--out",
                          f"{s0} holds the input {s0 / 'results.json'}")
    assert_one_line_error(cli("merge", s0, s1, "--out", ""), "--out", "is empty")
    monkeypatch.chdir(root)
    assert_one_line_error(cli("merge", "shard-0", "shard-1", "--out", "."), "--out", ". holds the input shard-0")
    assert sorted(p.name for p in s0.iterdir()) == index_before  # nothing written
    # --out inside the shards' folder stays fine (its own copies are skipped on the next merge)
    r = cli("merge", ".", "--out", "merged", "--quiet")
    assert r.returncode == 1 and r.stderr == "", r.stderr


def test_invalid_json_names_the_line_once(fleet, tmp_path, cli):
    bad = tmp_path / "bad" / "results.json"
    bad.parent.mkdir()
    bad.write_text('{\n  "schema_version": 1,\n  "verdict": "unterminated')
    line = assert_one_line_error(cli("merge", bad, "--out", tmp_path / "o"), str(bad),
                                 "invalid JSON: Unterminated string starting at line 3 column 14")
    assert "at at" not in line


def test_a_results_file_that_is_not_a_regular_file_or_too_big_is_refused(fleet, tmp_path, cli, monkeypatch):
    import os

    from auditor.util import jsonio

    shards = fleet[2]
    zero = tmp_path / "dz" / "results.json"
    zero.parent.mkdir()
    zero.symlink_to("/dev/zero")
    for command in ("merge", "report"):  # one reader: `audit report` refuses it alike
        assert_one_line_error(cli(command, zero, "--out", tmp_path / "o"), str(zero),
                              "is a device, not a regular file")
    fifo = tmp_path / "fifo" / "results.json"
    fifo.parent.mkdir()
    os.mkfifo(fifo)
    assert_one_line_error(cli("merge", fifo, "--out", tmp_path / "o"), str(fifo),
                          "is a FIFO (named pipe), not a regular file")  # refused, not a read that waits forever
    monkeypatch.setattr(jsonio, "MAX_JSON_BYTES", 1000)
    big = shards / "shard-0" / "results.json"
    assert_one_line_error(cli("merge", big, "--out", tmp_path / "o"), str(big),
                          f"is {big.stat().st_size:,} bytes, over the 1,000-byte limit of a JSON file")
    assert not (tmp_path / "o").exists()


def test_bidi_controls_in_an_adapter_path_are_shown_as_code_points(fleet, tmp_path, cli):
    """U+202E (right-to-left override) would make ``adapters/<RLO>lmth.exe`` read ``adapters/exe.html``: the
    terminal, summary.md and index.html show it as ``<U+202E>``; results.json keeps the path as it was."""
    shards = fleet[2]
    path = "adapters/\u202elmth.exe\u2066x\u2069\u200f"
    spoof = _edited(shards / "shard-0" / "results.json", tmp_path / "spoof",
                    lambda d: d["adapter"].update(path=path))
    r = cli("merge", spoof, shards / "shard-1", "--out", tmp_path / "m")
    assert r.returncode == 1, r.stderr
    out = tmp_path / "m"
    shown = {"terminal": r.stderr, "summary.md": (out / "summary.md").read_text(),
             "index.html": (out / "index.html").read_text()}
    for where, text in shown.items():
        assert not any(c in text for c in "\u202e\u2066\u2069\u200f"), where
    assert "<U+202E>lmth.exe<U+2066>x<U+2069><U+200F>" in " ".join(r.stderr.split())
    assert r"\<U+202E\>lmth.exe" in shown["summary.md"] and "&lt;U+202E&gt;lmth.exe" in shown["index.html"]
    copy = next(p for p in out.iterdir() if p.is_dir() and p.name != "bob") / "results.json"
    assert json.loads(copy.read_text())["adapter"]["path"] == path


def test_strip_controls_drops_controls_and_shows_bidi_formatting_characters():
    from auditor.util.text import strip_controls

    assert strip_controls("a\x1b[31mb\tc\nd\x9b") == "a[31mb\tc\nd"
    assert strip_controls("x\u202ay\u202bz\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200e\u200f\u061c") == (
        "x<U+202A>y<U+202B>z<U+202C><U+202D><U+202E><U+2066><U+2067><U+2068><U+2069><U+200E><U+200F><U+061C>")
    assert strip_controls("שלום, مرحبا: 日本語 ✅") == "שלום, مرحبا: 日本語 ✅"  # right-to-left text itself is kept


def test_shards_of_other_capabilities_are_refused_naming_them(tmp_path, cli):
    from report_data import _results

    from auditor.reports import write_reports
    from auditor.reports.results_file import load_results
    from auditor.results import AuditResult

    def shard(name: str, capabilities: list[str], answer: int) -> Path:
        r = _results()
        r["adapter"]["sha256"] = r["adapter"]["content_sha256"] = name[0] * 64
        r["run"]["capabilities"] = capabilities
        r["items"][0]["target"] = {"answer": answer}  # the other suite's own items
        write_reports(AuditResult.from_dict(r), tmp_path / name)
        return tmp_path / name

    one, two = shard("a", ["math"], 1), shard("b", ["math", "ifeval"], 2)
    assert load_results(one / "results.json").run.capabilities == ("math",)
    line = assert_one_line_error(cli("merge", one, two, "--out", tmp_path / "o"), "another suite than",
                                 "with --capability math ifeval (items", "with --capability math (items")
    assert line.index("math ifeval") < line.index("not suite")
