"""Multiple-choice benchmark loaders on the real files in shared/data/mc: record counts and gold distributions as
shared/data/mc/SOURCES.md gives them, ARC's and OpenBookQA's golds against AI2's own answer files, every row against
the requests lm-evaluation-harness's task builds from the same record, the hub path on hub-shaped records, the data
dir's names, and bad files."""

from __future__ import annotations

import bz2
import json
import re
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from conftest import ROOT, SHARED, needs_shared

from auditor.errors import AuditInputError
from auditor.suite.benchmarks import BENCHMARKS, load_benchmark
from auditor.suite.benchmarks.arc_easy import arc_row, read_arc
from auditor.suite.benchmarks.boolq import read_boolq
from auditor.suite.benchmarks.copa import read_copa
from auditor.suite.benchmarks.hellaswag import read_hellaswag
from auditor.suite.benchmarks.openbookqa import read_openbookqa
from auditor.suite.benchmarks.piqa import read_piqa
from auditor.suite.benchmarks.winogrande import read_winogrande
from auditor.suite.benchmarks.xcopa import XCOPA_CONNECTORS, read_xcopa

sys.path.insert(0, str(ROOT / "benchmarks"))
from lmeval_agreement import harness_docs, harness_task  # noqa: E402  (benchmarks/: lm-evaluation-harness's side)

DATA = SHARED / "data"
MC = DATA / "mc"
LANGS = tuple(XCOPA_CONNECTORS)

#: benchmark → (split, records) from SOURCES.md
COUNTS = {"arc_challenge": ("test", 1172), "arc_easy": ("test", 2376), "piqa": ("validation", 1838),
          "winogrande": ("validation", 1267), "boolq": ("validation", 3270), "copa": ("validation", 100),
          "openbookqa": ("test", 500), "hellaswag": ("validation", 10042)}
#: benchmark → gold index → count, from SOURCES.md
GOLDS = {"piqa": {0: 910, 1: 928}, "winogrande": {0: 628, 1: 639}, "boolq": {1: 2033, 0: 1237},
         "copa": {0: 55, 1: 45}, "openbookqa": {0: 138, 1: 126, 2: 132, 3: 104},
         "hellaswag": {0: 2515, 1: 2485, 2: 2584, 3: 2458}}


def _jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _rows(name: str, split: str | None = None) -> list[dict[str, Any]]:
    return load_benchmark(name, split, DATA).rows


# --------------------------------------------------------------------------- hub-shaped records of the local files
def hub_docs(name: str, split: str) -> list[dict[str, Any]]:
    """The local file's records as the hub dataset lm-evaluation-harness reads holds them (its fields and types)."""
    return harness_docs(name, split, Path(load_benchmark(name, split, DATA).origin))


# --------------------------------------------------------------------------- counts, golds, references
@needs_shared
@pytest.mark.parametrize("name", COUNTS)
def test_record_counts_and_unique_ids(name):
    split, n = COUNTS[name]
    b = load_benchmark(name, None, DATA)
    assert (b.split, len(b.rows), b.n_records) == (split, n, n)
    assert Path(b.origin).parent.parent == MC
    assert len({r["id"] for r in b.rows}) == n
    for i, r in enumerate(b.rows):
        assert r["meta"]["benchmark"] == name and r["meta"]["index"] == i and r["meta"]["source"] == Path(b.origin).name
        assert len(r["labels"]) == len(r["choices"]) >= 2 and 0 <= r["answer"] < len(r["choices"])
        assert isinstance(r["question"], str) and r["question"]
        assert ("contexts" in r) == (name == "winogrande") != ("context" in r)


@needs_shared
@pytest.mark.parametrize("name", GOLDS)
def test_gold_distribution_as_sources_gives_it(name):
    assert Counter(r["answer"] for r in _rows(name)) == GOLDS[name]


@needs_shared
@pytest.mark.parametrize("name,ref", [("arc_challenge", "arc-challenge"), ("arc_easy", "arc-easy"),
                                      ("openbookqa", "openbookqa")])
def test_golds_equal_ai2s_answer_files(name, ref):
    expected = [(r["id"], r["answerKey"]) for r in _jsonl(MC / "_reference" / "aristo-leaderboard"
                                                           / f"{ref}-test-question-answers.jsonl")]
    assert [(r["id"], r["meta"]["keys"][r["answer"]]) for r in _rows(name)] == expected


@needs_shared
def test_arc_keys_and_choice_counts_vary():
    for name, shapes, sizes in [
        ("arc_challenge", {"ABCD": 1144, "1234": 21, "123": 1, "ABC": 3, "ABCDE": 3}, {4: 1165, 3: 4, 5: 3}),
        ("arc_easy", {"ABCD": 2268, "1234": 97, "ABC": 7, "ABCDE": 4}, {4: 2365, 3: 7, 5: 4}),
    ]:
        rows = _rows(name)
        assert Counter("".join(r["meta"]["keys"]) for r in rows) == shapes
        assert Counter(len(r["choices"]) for r in rows) == sizes
        # the gold of a 1-4 keyed item is found by its label, not by letter arithmetic
        numeric = next(r for r in rows if r["meta"]["keys"] == ["1", "2", "3", "4"])
        raw = next(r for r in _jsonl(Path(load_benchmark(name, None, DATA).origin)) if r["id"] == numeric["id"])
        assert numeric["meta"]["keys"][numeric["answer"]] == raw["answerKey"]


@needs_shared
def test_winogrande_answers_agree_with_the_labels_file():
    labels = (MC / "winogrande" / "dev-labels.lst").read_text().split()
    rows = _rows("winogrande")
    assert [str(r["answer"] + 1) for r in rows] == labels
    first = rows[0]
    assert first["id"] == "3FCO4VKOZ4BJQ6IFC0VAIBK4KTWE7U-2" and first["labels"] == ["Sarah", "Maria"]
    assert first["contexts"] == ["Sarah was a much better surgeon than Maria so Sarah",
                                 "Sarah was a much better surgeon than Maria so Maria"]
    assert first["choices"] == ["always got the easier cases."] * 2 and first["answer"] == 1


@needs_shared
def test_xcopa_every_language_and_split():
    golds = {}
    for part, n in (("test", 500), ("validation", 100)):
        for lang in LANGS:
            b = load_benchmark("xcopa", f"{part}.{lang}", DATA)
            assert len(b.rows) == n and b.split == f"{part}.{lang}"
            assert {r["meta"]["language"] for r in b.rows} == {lang}
            assert [r["id"] for r in b.rows] == [f"xcopa-{lang}-{part}-{i}" for i in range(n)]
            # CRLF line ends: no carriage return reaches a row
            assert not any("\r" in s for r in b.rows for s in (r["context"], *r["choices"], *r["labels"]))
            golds.setdefault(part, set()).add(tuple(r["answer"] for r in b.rows))
    assert all(len(g) == 1 for g in golds.values())  # the labels are the same in every language
    it = {r["meta"]["index"]: r for r in _rows("xcopa", "test.it")}
    et = {r["meta"]["index"]: r for r in _rows("xcopa", "test.et")}
    # the question differs across the languages' files for a few items; each file's own value is used
    assert et[84]["meta"]["question"] == "cause" and it[84]["meta"]["question"] == "effect"
    assert it[84]["context"].endswith(" quindi") and et[84]["context"].endswith(" sest")


@needs_shared
def test_boolq_copa_openbookqa_first_rows():
    boolq = _rows("boolq")[0]
    assert boolq["context"].startswith("Ethanol fuel -- All biomass")
    assert boolq["context"].endswith("\nQuestion: does ethanol take more energy make that produces?\nAnswer:")
    assert (boolq["choices"], boolq["answer"], boolq["id"]) == (["no", "yes"], 0, "boolq-validation-0")
    copa = _rows("copa")[0]
    assert copa["context"] == "The man turned on the faucet therefore" and copa["meta"]["question"] == "effect"
    assert copa["choices"] == [" the toilet filled with water.", " water flowed from the spout."]
    assert copa["labels"] == ["The toilet filled with water.", "Water flowed from the spout."]
    obqa = _rows("openbookqa")[1]
    assert obqa["id"] == "1129" and obqa["context"] == "There is most likely going to be fog around:"
    assert obqa["choices"] == ["a marsh", "a tundra", "the plains", "a desert"] and obqa["answer"] == 0


# --------------------------------------------------------------------------- lm-evaluation-harness's own requests
def harness_requests(task_yaml: str, docs: list[dict[str, Any]], tmp_path: Path
                     ) -> list[tuple[list[tuple[str, str]], int]]:
    """(the (context, continuation) pairs lm-evaluation-harness's task sends for zero-shot, its gold index) per
    doc, the task built from its installed yaml on ``docs`` as a local json dataset (nothing downloaded)."""
    task = harness_task(task_yaml, docs, tmp_path)
    out = []
    for doc in task.eval_docs:
        ctx = task.fewshot_context(doc, 0)
        args = [r.arguments for r in task.construct_requests(doc, ctx, metadata=(task.config.task, 0, 1))]
        gold = task.doc_to_text(doc) if task.multiple_input else task.doc_to_target(doc)
        if isinstance(gold, str):  # COPA's target is the gold choice's text: its index, as the task scores it
            gold = task.doc_to_choice(doc).index(gold)
        out.append((args, gold))
    return out


def row_requests(row: dict[str, Any]) -> tuple[list[tuple[str, str]], int]:
    """What a row asks the scorer for: (context, target delimiter + choice) per choice, and the gold index."""
    contexts = row.get("contexts") or [row["context"]] * len(row["choices"])
    return [(c, " " + choice) for c, choice in zip(contexts, row["choices"], strict=True)], row["answer"]


@needs_shared
@pytest.mark.parametrize("name,split,task_yaml", [
    ("arc_easy", "test", "arc/arc_easy.yaml"), ("arc_challenge", "test", "arc/arc_challenge.yaml"),
    ("piqa", "validation", "piqa/piqa.yaml"), ("winogrande", "validation", "winogrande/default.yaml"),
    ("boolq", "validation", "super_glue/boolq/default.yaml"), ("copa", "validation", "super_glue/copa/default.yaml"),
    ("openbookqa", "test", "openbookqa/openbookqa.yaml"), ("hellaswag", "validation", "hellaswag/hellaswag.yaml"),
    *[("xcopa", f"{part}.{lang}", f"xcopa/default_{lang}.yaml") for part in ("test", "validation") for lang in LANGS],
])
def test_every_row_asks_what_lm_eval_asks(name, split, task_yaml, tmp_path):
    rows = _rows(name, split)
    expected = harness_requests(task_yaml, hub_docs(name, split), tmp_path)
    assert len(expected) == len(rows)
    for row, want in zip(rows, expected, strict=True):
        assert row_requests(row) == want, row["id"]


def test_hellaswag_release_records_as_lm_eval_builds_them(tmp_path):
    # the release's jsonl (the hub's fields): ctx_b capitalised, every [...] removed, " [title]" → ". "
    recs = [{"ind": 24, "activity_label": "Roof shingle removal", "ctx_a": "A man is sitting on a roof.",
             "ctx_b": "he", "ctx": "A man is sitting on a roof. he", "label": "3", "split": "val",
             "split_type": "indomain", "source_id": "activitynet~v_-JhWjGDPHMY",
             "endings": ["is using wrap to wrap a pair of skis.", "is ripping level tiles off.",
                         "is holding a rubik's cube.", "starts pulling up roofing on a roof."]},
            {"ind": 92, "activity_label": "Finance and Business", "ctx_a": "[header] How to get a loan [title] Ask.",
             "ctx_b": "then Call your BANK", "ctx": "", "label": "0", "split": "val", "split_type": "zeroshot",
             "source_id": "wikihow~1", "endings": ["[step] Fill  in the form [title] Sign.", "b", "c", "d"]}]
    f = tmp_path / "hellaswag_val.jsonl"
    f.write_text("".join(json.dumps(r) + "\n" for r in recs))
    rows = load_benchmark("hellaswag", "validation", tmp_path).rows
    assert [row_requests(r) for r in rows] == harness_requests("hellaswag/hellaswag.yaml", recs, tmp_path)
    assert rows[0]["context"] == "Roof shingle removal: A man is sitting on a roof. He"
    assert rows[1]["context"] == "Finance and Business: How to get a loan. Ask. Then call your bank"
    # preprocess strips before it drops "[step]": the ending keeps a leading space, as lm-eval scores it
    assert rows[1]["choices"][0] == " Fill in the form. Sign." and rows[1]["meta"]["ind"] == 92


@needs_shared
def test_hellaswag_text_form_differs_from_lm_eval_only_as_sources_says():
    rows = _rows("hellaswag")
    assert rows[0]["context"] == "Roof shingle removal: A man is sitting on a roof. he"  # not "He": no ctx_b
    raw = bz2.decompress((MC / "hellaswag" / "hellaswag_val_full.txt.bz2").read_bytes()).decode().split("\n")
    assert len(raw) == 60253 and raw[-1] == ""
    # brackets left in the text form (SOURCES.md: 2 contexts, 16 endings); every [...] pair goes, as lm-eval drops it
    assert sum("[" in raw[k] for k in range(0, 60252, 6)) == 2
    assert sum("[" in raw[k + j] for k in range(0, 60252, 6) for j in range(2, 6)) == 16
    pair = re.compile(r"\[.*?\]")
    assert sum(bool(pair.search(raw[k + j])) for k in range(0, 60252, 6) for j in range(2, 6)) == 11
    assert not any(pair.search(t) for r in rows for t in (r["context"], *r["choices"]))


# --------------------------------------------------------------------------- the hub path, offline
@needs_shared
@pytest.mark.parametrize("name,split,call", [
    ("arc_easy", "test", ("allenai/ai2_arc", "ARC-Easy", "test")),
    ("arc_challenge", "test", ("allenai/ai2_arc", "ARC-Challenge", "test")),
    ("piqa", "validation", ("baber/piqa", None, "validation")),
    ("winogrande", "validation", ("allenai/winogrande", "winogrande_xl", "validation")),
    ("boolq", "validation", ("aps/super_glue", "boolq", "validation")),
    ("copa", "validation", ("aps/super_glue", "copa", "validation")),
    ("openbookqa", "test", ("allenai/openbookqa", "main", "test")),
    ("xcopa", "validation.sw", ("cambridgeltl/xcopa", "sw", "validation")),
    ("hellaswag", "validation", ("Rowan/hellaswag", None, "validation")),
])
def test_hub_records_give_the_files_rows(name, split, call, monkeypatch):
    import auditor.suite.benchmarks.choice_rows as choice_rows

    asked = []
    docs = hub_docs(name, split)
    if name == "winogrande":  # the hub's records have no qID
        docs = [{k: v for k, v in d.items() if k != "qID"} for d in docs]
    monkeypatch.setattr(choice_rows, "hub_split", lambda *a: asked.append(a) or docs)
    bench = BENCHMARKS[name]
    hub = bench.read_hub(bench.hub_id, split)
    assert asked == [call] and hub.origin == f"hub:{call[0]}" and hub.split == split
    local = _rows(name, split)

    def same(r: dict[str, Any]) -> dict[str, Any]:
        return {k: v for k, v in r.items() if k not in ("meta", "id")}

    assert [same(r) for r in hub.rows] == [same(r) for r in local]
    if name == "winogrande":
        assert hub.rows[5]["id"] == "winogrande-validation-5"
    else:
        assert [r["id"] for r in hub.rows] == [r["id"] for r in local]
    assert hub.rows[0]["meta"]["source"] == call[0]


def test_arc_hub_and_release_shapes_give_one_row():
    release = {"id": "X_1", "answerKey": "2", "question": {"stem": "Why?", "choices": [
        {"text": "a", "label": "1"}, {"text": "b", "label": "2"}, {"text": "c", "label": "3"}]}}
    hub = {"id": "X_1", "answerKey": "2", "question": "Why?", "choices": {"text": ["a", "b", "c"],
                                                                         "label": ["1", "2", "3"]}}
    assert arc_row(release, 0, "test", "f", 1, "s") == arc_row(hub, 0, "test", "f", 1, "s")
    assert arc_row(hub, 0, "test", "f", 1, "s")["answer"] == 1


# --------------------------------------------------------------------------- the data dir's names
@needs_shared
def test_flat_and_folder_names_in_a_data_dir(tmp_path):
    for link, target in [("ARC-Easy-Test.jsonl", "arc_easy/ARC-Easy-Test.jsonl"),
                         ("boolq_val.jsonl", "boolq/val.jsonl"), ("piqa_valid.jsonl", "piqa/valid.jsonl"),
                         ("piqa_valid-labels.lst", "piqa/valid-labels.lst"), ("test.tr.jsonl", "xcopa/test.tr.jsonl"),
                         ("hellaswag_val_full.txt.bz2", "hellaswag/hellaswag_val_full.txt.bz2")]:
        (tmp_path / link).symlink_to(MC / target)
    (tmp_path / "copa").mkdir()
    (tmp_path / "copa" / "val.jsonl").symlink_to(MC / "copa" / "val.jsonl")
    assert [len(load_benchmark(n, s, tmp_path).rows) for n, s in [
        ("arc_easy", None), ("boolq", None), ("piqa", None), ("xcopa", "test.tr"), ("hellaswag", None), ("copa", None)]
    ] == [2376, 3270, 1838, 500, 10042, 100]
    with pytest.raises(AuditInputError, match=r"no winogrande data for split 'validation'.*winogrande_dev.jsonl"):
        load_benchmark("winogrande", None, tmp_path)
    with pytest.raises(AuditInputError, match=r"has no split 'test.xx'"):
        load_benchmark("xcopa", "test.xx", tmp_path)


# --------------------------------------------------------------------------- bad files
ARC_REC = {"id": "A_1", "answerKey": "B", "question": {"stem": "Q?", "choices": [{"text": "x", "label": "A"},
                                                                                {"text": "y", "label": "B"}]}}


def _write(path: Path, *lines: str, end: str = "\n") -> Path:
    path.write_text("".join(line + end for line in lines), encoding="utf-8", newline="")
    return path


def test_bad_jsonl_lines_and_records_name_the_file_and_line(tmp_path):
    good = json.dumps(ARC_REC)
    f = _write(tmp_path / "ARC-Easy-Test.jsonl", good, good[:40])
    with pytest.raises(AuditInputError, match=r"ARC-Easy-Test.jsonl: line 2: invalid JSON"):
        read_arc(f)
    _write(f, good, json.dumps({**ARC_REC, "answerKey": "E"}))
    with pytest.raises(AuditInputError, match=r"ARC-Easy-Test.jsonl: line 2: answerKey 'E' is none of the option labels"):
        read_arc(f)
    _write(f, json.dumps({**ARC_REC, "question": {"stem": "Q?", "choices": [{"text": "x", "label": "B"}]}}))
    with pytest.raises(AuditInputError, match=r"line 1: 1 choice\(s\)"):
        read_arc(f)
    f = _write(tmp_path / "val.jsonl", json.dumps({"question": "q", "passage": "p", "idx": 0, "label": "maybe"}))
    with pytest.raises(AuditInputError, match=r"val.jsonl: line 1: label 'maybe' is not true or false"):
        read_boolq(f)
    copa = {"premise": "It rained.", "choice1": "A.", "choice2": "B.", "question": "effect", "label": 0, "idx": 0}
    _write(f, json.dumps(copa), json.dumps({**copa, "question": "why"}))
    with pytest.raises(AuditInputError, match=r"val.jsonl: line 2: question 'why' is not 'cause' or 'effect'"):
        read_copa(f)
    _write(f, json.dumps({**copa, "label": 2}))
    with pytest.raises(AuditInputError, match=r"line 1: label 2 is not 0 \(choice1\) or 1 \(choice2\)"):
        read_copa(f)
    wino = {"qID": "q", "sentence": "A _ b.", "option1": "x", "option2": "y", "answer": "3"}
    f = _write(tmp_path / "dev.jsonl", json.dumps(wino))
    with pytest.raises(AuditInputError, match=r"dev.jsonl: line 1: answer '3' is not \"1\""):
        read_winogrande(f)
    _write(f, json.dumps({**wino, "answer": "1", "sentence": "No blank."}))
    with pytest.raises(AuditInputError, match=r"line 1: the sentence has no '_' blank"):
        read_winogrande(f)


def test_xcopa_crlf_file_and_bad_split(tmp_path):
    rec = {"premise": "Piove.", "choice1": "Esco.", "choice2": "Resto.", "question": "effect", "label": 1, "idx": 0,
           "changed": False}
    f = _write(tmp_path / "val.it.jsonl", json.dumps(rec, ensure_ascii=False), end="\r\n")
    (row,) = read_xcopa(f, "validation.it").rows
    assert (row["context"], row["choices"], row["answer"]) == ("Piove quindi", ["esco.", "resto."], 1)
    with pytest.raises(AuditInputError, match=r"unknown split 'validation.xx'"):
        read_xcopa(f, "validation.xx")


def test_piqa_labels_file_faults(tmp_path):
    rec = json.dumps({"goal": "g", "sol1": "a", "sol2": "b"})
    f = _write(tmp_path / "valid.jsonl", rec, rec)
    with pytest.raises(AuditInputError, match=r"valid-labels.lst: PIQA labels file not found"):
        read_piqa(f)
    labels = _write(tmp_path / "valid-labels.lst", "0", "2")
    with pytest.raises(AuditInputError, match=r"valid-labels.lst: line 2: label '2' is not 0 or 1"):
        read_piqa(f)
    _write(labels, "0")
    with pytest.raises(AuditInputError, match=r"valid-labels.lst: 1 labels for the 2 records of valid.jsonl"):
        read_piqa(f)
    _write(labels, "0", "1")
    assert [r["answer"] for r in read_piqa(f).rows] == [0, 1]


def test_openbookqa_tsv_faults(tmp_path):
    header = "ID\tQuestion Stem\tChoices\tComplete Question\tAnswer Key"
    good = "7-1\tA \"quoted\" stem\t(A) x (B) y (C) z (D) w\tfull\tC"
    f = _write(tmp_path / "test.tsv", header, good)
    (row,) = read_openbookqa(f).rows
    assert (row["context"], row["choices"], row["answer"]) == ('A "quoted" stem', ["x", "y", "z", "w"], 2)
    _write(f, header, good, "7-2\tstem\tx y z w\tfull\tA")
    with pytest.raises(AuditInputError, match=r"test.tsv: line 3: 'Choices' 'x y z w' is not of the form"):
        read_openbookqa(f)
    _write(f, header, "7-2\tstem\t(A) x (B) y\tA")
    with pytest.raises(AuditInputError, match=r"test.tsv: line 2: 4 tab-separated cells; the header has 5"):
        read_openbookqa(f)
    _write(f, header.replace("Answer Key", "Key"), good)
    with pytest.raises(AuditInputError, match=r"test.tsv: line 1: column\(s\) \['Answer Key'\] missing"):
        read_openbookqa(f)
    _write(f, header, good.replace("\tC", "\tE"))
    with pytest.raises(AuditInputError, match=r"line 2: answerKey 'E' is none of the option labels"):
        read_openbookqa(f)


def test_hellaswag_text_faults(tmp_path):
    f = tmp_path / "hellaswag_val_full.txt.bz2"
    f.write_bytes(bz2.compress(b"A: b\n1\nw\nx\ny\nz\nC: d\n"))
    with pytest.raises(AuditInputError, match=r"txt.bz2: line 7: an incomplete context"):
        read_hellaswag(f)
    f.write_bytes(bz2.compress(b"A: b\n4\nw\nx\ny\nz\n"))
    with pytest.raises(AuditInputError, match=r"txt.bz2: line 2: gold index '4' is not 0-3"):
        read_hellaswag(f)
    f.write_bytes(b"A: b\n1\nw\nx\ny\nz\n")
    with pytest.raises(AuditInputError, match=r"txt.bz2: not bz2 data"):
        read_hellaswag(f)
    f.write_bytes(bz2.compress(b"A: b\n1\nw\nx\ny\nz\n")[:-10])
    with pytest.raises(AuditInputError, match=r"txt.bz2: truncated bz2 data"):
        read_hellaswag(f)
