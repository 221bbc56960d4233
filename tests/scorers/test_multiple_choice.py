"""Multiple-choice scoring (knowledge, robustness, multilingual) and the builtin MC item files."""

from __future__ import annotations

import json
from collections import Counter, defaultdict

import pytest

from auditor.errors import AuditInputError
from auditor.records import Generation, Item
from auditor.scorers import SCORERS, metrics_of, score_all
from auditor.scorers.multiple_choice import extract_choice, score_multiple_choice
from auditor.suite.manifest import SUITES_DIR, load_suite

CHOICES = ["London", "Paris", "Berlin", "Madrid"]
BUILTIN = SUITES_DIR / "builtin"


@pytest.mark.parametrize("text,letter,rule", [
    ("B", "B", "leading"),
    ("(B)", "B", "leading"),
    ("b)", "B", "leading"),
    ("**B**", "B", "leading"),
    ("B: Paris is the capital.", "B", "leading"),
    ("The answer is B.", "B", "marker"),
    ("Answer: B", "B", "marker"),
    ("The correct answer is: **(D)** Madrid", "D", "marker"),
    ("Paris is the capital, so the answer is B because of that.", "B", "marker"),
    ("Between A and C, the answer is C.", "C", "marker"),  # the marker beats other letters
    ("La réponse est B", "B", "marker"),
    ("Die Antwort ist C.", "C", "marker"),
    ("I think B is right.", "B", "letter_in_text"),
    ("It must be (C), Berlin.", "C", "letter_in_text"),
    ("A is correct.", "A", "letter_in_text"),
    ("Paris", "B", "option_text"),
    ("The capital of France is paris.", "B", "option_text"),
    ("B or C", None, "ambiguous_letters"),  # two letters: a hedge earns nothing
    ("A or B, I am not sure", None, "ambiguous_letters"),
    ("A. London\nB. Paris\nC. Berlin\nD", None, "echoed_options"),
    ("Paris or London", None, "ambiguous_text"),
    ("A city in Europe.", None, "none"),  # "A" + lower-case word is the article
    ("E", None, "none"),  # not an option letter
    ("I don't know.", None, "none"),
])
def test_extract_choice(text, letter, rule):
    assert extract_choice(text, CHOICES) == (letter, rule)


def test_extract_choice_option_text_prefers_the_longer_option():
    assert extract_choice("It is −9.", ["−37", "−9", "9", "37"]) == ("B", "option_text")
    assert extract_choice("9", ["−37", "−9", "9", "37"]) == ("C", "option_text")
    assert extract_choice("Water freezes at 0 degrees", ["0", "10", "-10", "32"]) == ("A", "option_text")


def _mc_item(cap: str, iid: str, choices: list[str], answer: str, meta: dict | None = None) -> Item:
    return Item(id=f"{cap}/{iid}", capability=cap, group="CAN", messages=({"role": "user", "content": "q"},), max_new_tokens=16,
                target={"answer": answer, "choices": choices}, meta=meta or {})


def test_multiple_choice_scorer_records_letter_and_rule():
    item = _mc_item("knowledge", "k1", CHOICES, "B", {"language": "fr"})
    good = score_multiple_choice(item, Generation(item_id=item.id, variant="base", text="The answer is (B).", n_tokens=6))
    assert good.values == {"accuracy": 1.0}
    assert good.detail == {"extracted": "B", "rule": "marker", "gold": "B", "chosen_text": "Paris", "language": "fr"}
    bad = score_multiple_choice(item, Generation(item_id=item.id, variant="base", text="Madrid", n_tokens=2))
    assert bad.values == {"accuracy": 0.0} and bad.detail["rule"] == "option_text" and bad.detail["extracted"] == "D"


def test_robustness_agreement_compares_option_text_across_shuffles():
    shuffled = ["Paris", "Berlin", "Madrid", "London"]
    items = {i.id: i for i in (
        _mc_item("robustness", "q-none", CHOICES, "B", {"cluster": "q", "perturbation": "none"}),
        _mc_item("robustness", "q-shuffle", shuffled, "A", {"cluster": "q", "perturbation": "shuffle"}),
        _mc_item("robustness", "q-typos", CHOICES, "B", {"cluster": "q", "perturbation": "typos"}),
        _mc_item("robustness", "r-shuffle", shuffled, "A", {"cluster": "r", "perturbation": "shuffle"}),
    )}
    answers = {"q-none": "D", "q-shuffle": "C", "q-typos": "B", "r-shuffle": "A"}  # D=Madrid, C=Madrid (shuffled)
    gens = [Generation(item_id=f"robustness/{k}", variant=v, text=t, n_tokens=1) for v in ("base", "adapter") for k, t in answers.items()]
    scores = score_all(items, gens, {"robustness": "multiple_choice_perturbed"})
    by = {(s.item_id.split("/")[1], s.variant): s for s in scores}
    assert by[("q-none", "base")].values == {"accuracy": None, "agreement": None}
    assert by[("q-shuffle", "base")].values == {"accuracy": 0.0, "agreement": 1.0}  # same option, other letter
    assert by[("q-typos", "base")].values == {"accuracy": 1.0, "agreement": 0.0}  # right, but changed its answer
    assert by[("r-shuffle", "adapter")].values == {"accuracy": 1.0, "agreement": None}  # original not in the run
    assert by[("q-shuffle", "base")].detail["original_text"] == "Madrid"
    assert [m.name for m in metrics_of("multiple_choice_perturbed")] == ["accuracy", "agreement"]


def test_harmful_refusal_counts_refusing_as_better():
    (rate,) = metrics_of("refusal_unsafe")
    (over,) = metrics_of("refusal")
    assert rate.name == over.name == "refusal_rate"
    assert rate.higher_is_better and not over.higher_is_better


@pytest.mark.parametrize("row,fault", [
    ({"choices": ["a"], "answer": "A"}, "a list of 2 to 10 option texts"),
    ({"choices": ["a", "A "], "answer": "A"}, "distinct option texts"),
    ({"choices": ["a", "b"], "answer": "C"}, "one of the letters"),
    ({"choices": ["a", "b"], "answer": True}, "one of the letters"),
])
def test_multiple_choice_target_errors(row, fault):
    with pytest.raises(ValueError, match=fault):
        SCORERS["multiple_choice"].build_target(row)
    assert SCORERS["multiple_choice"].build_target({"choices": ["a", "b"], "answer": 1}) == {"answer": "B", "choices": ["a", "b"]}


def test_robustness_row_without_cluster_is_an_input_error(tmp_path):
    (tmp_path / "r.jsonl").write_text(json.dumps({"id": "x", "question": "q", "choices": ["a", "b"], "answer": "A",
                                                  "meta": {"perturbation": "typos"}}) + "\n")
    m = tmp_path / "s.yaml"
    m.write_text("name: x\nversion: 1\ncapabilities:\n  - {name: robustness, group: CAN, source: r.jsonl, "
                 "scorer: multiple_choice_perturbed, prompt_template: '{question}\\n{options}', max_new_tokens: 8}\n")
    with pytest.raises(AuditInputError, match=r"r.jsonl: line 1: robustness items need meta.cluster"):
        load_suite(str(m), scorers=SCORERS)


# --------------------------------------------------------------------------- builtin item files
def _rows(name: str) -> list[dict]:
    return [json.loads(line) for line in (BUILTIN / name).read_text(encoding="utf-8").splitlines()]


def test_knowledge_items_are_balanced_four_option_questions():
    rows = _rows("knowledge.jsonl")
    assert len(rows) == 40
    assert Counter(r["answer"] for r in rows) == {"A": 10, "B": 10, "C": 10, "D": 10}
    assert all(len(r["choices"]) == 4 for r in rows)
    item = load_suite("smoke", only=("knowledge",), scorers=SCORERS).items[0]
    # scored by log-likelihood: each option text continues the context (lm-evaluation-harness's ARC prompt)
    assert item.output_type == "multiple_choice" and item.max_new_tokens == 0
    assert item.prompt == "Question: What is the capital of France?\nAnswer:"
    assert item.target["continuations"] == [" London", " Paris", " Berlin", " Madrid"]
    assert item.target["answer"] == "B" and item.target["lengths"] == [6, 5, 6, 6]


def test_robustness_clusters_keep_the_gold_option_text():
    knowledge = {r["id"]: r for r in _rows("knowledge.jsonl")}
    clusters = defaultdict(dict)
    for r in _rows("robustness.jsonl"):
        clusters[r["meta"]["cluster"]][r["meta"]["perturbation"]] = r
    assert len(clusters) == 20
    for cid, by in clusters.items():
        assert set(by) == {"none", "shuffle", "paraphrase", "typos", "format"}
        orig = knowledge[cid]
        gold = orig["choices"]["ABCD".index(orig["answer"])]
        assert by["none"]["question"] == orig["question"] and by["none"]["choices"] == orig["choices"]
        for p, r in by.items():
            assert sorted(r["choices"]) == sorted(orig["choices"]), (cid, p)
            assert r["choices"]["ABCD".index(r["answer"])] == gold, (cid, p)
        assert by["shuffle"]["answer"] != orig["answer"]
        assert by["paraphrase"]["question"] != orig["question"] and by["typos"]["question"] != orig["question"]
        assert "options" in by["format"]


def test_multilingual_items_three_languages_same_answers():
    knowledge = {r["id"]: r for r in _rows("knowledge.jsonl")}
    rows = _rows("multilingual.jsonl")
    langs = Counter(r["meta"]["language"] for r in rows)
    assert len(langs) >= 3 and "en" not in langs and set(langs.values()) == {20}
    for r in rows:
        orig = knowledge[r["meta"]["cluster"]]
        assert r["answer"] == orig["answer"] and r["question"] != orig["question"]
        assert r["instruction"] and "(A, B, C" in r["instruction"]


def test_smoke_mc_capabilities_fit_the_budget():
    s = load_suite("smoke", scorers=SCORERS)
    its = [i for i in s.items if i.capability == "harmful_refusal"]
    assert len(its) >= 16 and len(its) * its[0].max_new_tokens <= 1000
    for cap in ("knowledge", "robustness", "multilingual"):  # scored by log-likelihood: nothing is generated
        its = [i for i in s.items if i.capability == cap]
        assert len(its) >= 16 and {i.max_new_tokens for i in its} == {0}, cap
    rob = Counter(i.meta["cluster"] for i in s.items if i.capability == "robustness")
    assert set(rob.values()) == {5}  # whole clusters: the original and its 4 perturbations
    ml = Counter(i.meta["cluster"] for i in s.items if i.capability == "multilingual")
    assert len(ml) == 20 and set(ml.values()) == {3}  # every question, in French, Spanish and German
