"""Multiple choice by log-likelihood: the scorer's acc / acc_norm (as lm-evaluation-harness defines them), the
items a manifest builds for it, and the manifest's checks."""

from __future__ import annotations

import json

import pytest

from auditor.errors import AuditInputError
from auditor.records import Generation, Item
from auditor.scorers import SCORERS, score_all
from auditor.scorers.loglikelihood import argmax, build_target, score_loglikelihood
from auditor.suite.manifest import load_suite


def _item(choices, answer, contexts=None, meta=None):
    contexts = contexts or ["Question: q\nAnswer:"] * len(choices)
    target = build_target({"choices": choices, "answer": answer, "contexts": contexts})
    return Item(id="k/1", capability="k", group="CAN", messages=({"role": "user", "content": contexts[0]},),
                max_new_tokens=0, target=target, meta=meta or {}, output_type="multiple_choice")


def _gen(lls, variant="base"):
    return Generation(item_id="k/1", variant=variant, text="", n_tokens=0, loglikelihoods=tuple(lls))


def test_acc_takes_the_largest_loglikelihood_and_acc_norm_divides_by_characters():
    # "a" (1 char) at -2.0 → -2.0 per char; "a long answer" (13 chars) at -6.5 → -0.5 per char
    item = _item(["a", "a long answer"], 0)
    s = score_loglikelihood(item, _gen([-2.0, -6.5]))
    assert s.values == {"acc": 1.0, "acc_norm": 0.0}
    assert s.detail["chosen"] == "A" and s.detail["chosen_norm"] == "B" and s.detail["margin"] == 4.5
    assert item.target["continuations"] == [" a", " a long answer"] and item.target["lengths"] == [1, 13]


def test_ties_go_to_the_first_choice_as_numpy_argmax_and_nan_is_lowest():
    assert argmax([-1.0, -1.0, -3.0]) == 0
    assert argmax([float("nan"), -5.0]) == 1


def test_per_choice_contexts_normalise_by_the_context_length():
    # WinoGrande's partial scoring: the option sits in the context, the continuation is shared;
    # lm-evaluation-harness's acc_norm then divides by the length of what doc_to_choice returns: the contexts
    item = _item(["sat down.", "sat down."], 1, contexts=["Ann gave Bo a chair so Ann", "Ann gave Bo a chair so Bo"])
    assert item.target["lengths"] == [26, 25]
    # -3.0 / 26 < -2.5 / 25
    assert score_loglikelihood(item, _gen([-3.0, -2.5])).values == {"acc": 1.0, "acc_norm": 1.0}


def test_a_wrong_number_of_loglikelihoods_is_refused():
    with pytest.raises(ValueError, match="2 log-likelihoods for 3 choices"):
        score_loglikelihood(_item(["x", "y", "z"], 0), _gen([-1.0, -2.0]))


@pytest.mark.parametrize("row,needle", [
    ({"choices": ["x"], "answer": 0}, "a list of 2 to"),
    ({"choices": ["x", "y"], "answer": 2}, "'answer'"),
    ({"choices": ["x", "y"], "answer": True}, "'answer'"),
    ({"choices": ["x", "x"], "answer": 0}, "same context and continuation"),
    ({"choices": ["x", "y"], "answer": 0, "labels": ["only one"]}, "'labels'"),
])
def test_bad_rows_name_the_field(row, needle):
    with pytest.raises(ValueError, match=needle):
        build_target({"contexts": ["c"] * len(row["choices"]), **row})


def test_robustness_agreement_compares_the_chosen_option_text_across_perturbations():
    rows = [("q-none", "none", ["Paris", "Rome"], 0, [-1.0, -2.0]),
            ("q-shuffle", "shuffle", ["Rome", "Paris"], 1, [-2.0, -1.0]),
            ("q-typos", "typos", ["Paris", "Rome"], 0, [-3.0, -1.0])]
    items, gens = {}, []
    for local, pert, choices, answer, lls in rows:
        target = build_target({"choices": choices, "answer": answer, "contexts": ["Question: q\nAnswer:"] * 2})
        it = Item(id=f"robustness/{local}", capability="robustness", group="CAN", messages=(), max_new_tokens=0,
                  target=target, meta={"cluster": "q", "perturbation": pert}, output_type="multiple_choice")
        items[it.id] = it
        gens.append(Generation(item_id=it.id, variant="base", text="", n_tokens=0, loglikelihoods=tuple(lls)))
    scores = {s.item_id: s.values for s in score_all(items, gens, {"robustness": "loglikelihood_perturbed"})}
    assert scores["robustness/q-none"] == {"acc": None, "acc_norm": None, "agreement": None}
    assert scores["robustness/q-shuffle"]["agreement"] == 1.0 and scores["robustness/q-shuffle"]["acc"] == 1.0
    assert scores["robustness/q-typos"]["agreement"] == 0.0 and scores["robustness/q-typos"]["acc"] == 0.0


def _manifest(tmp_path, body: str, rows: list[dict]) -> str:
    (tmp_path / "items.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    m = tmp_path / "m.yaml"
    m.write_text(f"name: t\nversion: 1\ncapabilities:\n  - name: knowledge\n    group: CAN\n"
                 f"    source: {tmp_path / 'items.jsonl'}\n{body}")
    return str(m)


def test_a_manifest_builds_multiple_choice_items_from_the_template(tmp_path):
    rows = [{"id": "a", "question": "2 + 2?", "choices": ["3", "4"], "answer": "B"}]
    m = _manifest(tmp_path, '    scorer: loglikelihood\n    prompt_template: "Q: {question}\\nA:"\n', rows)
    (item,) = load_suite(m, scorers=SCORERS).items
    assert item.output_type == "multiple_choice" and item.max_new_tokens == 0
    assert item.target["contexts"] == ["Q: 2 + 2?\nA:"] * 2 and item.target["continuations"] == [" 3", " 4"]
    # choices_as: letter, as lm-evaluation-harness's MMLU task: the options listed, their letters continue
    m = _manifest(tmp_path, '    scorer: loglikelihood\n    prompt_template: "{question}\\n{options}\\nAnswer:"\n'
                            '    choices_as: letter\n', rows)
    (item,) = load_suite(m, scorers=SCORERS).items
    assert item.prompt == "2 + 2?\nA. 3\nB. 4\nAnswer:"
    assert item.target["continuations"] == [" A", " B"] and item.target["choices"] == ["3", "4"]


def test_per_choice_contexts_fill_the_template_each(tmp_path):
    rows = [{"id": "w", "contexts": ["Ann gave Bo a chair so Ann", "Ann gave Bo a chair so Bo"],
             "choices": ["sat down.", "sat down."], "answer": 1}]
    m = _manifest(tmp_path, '    scorer: loglikelihood\n    prompt_template: "{context}"\n', rows)
    (item,) = load_suite(m, scorers=SCORERS).items
    assert item.target["contexts"] == rows[0]["contexts"] and item.target["answer"] == "B"


@pytest.mark.parametrize("body,needle", [
    ('    scorer: loglikelihood\n    prompt_template: "{question}"\n    max_new_tokens: 8\n',
     "capabilities.0.max_new_tokens: scorer 'loglikelihood' scores each choice by log-likelihood"),
    ('    scorer: multiple_choice\n    prompt_template: "{question}"\n',
     "capabilities.0: 'max_new_tokens' is required"),
    ('    scorer: loglikelihood\n    prompt_template: "{question}"\n    choices_as: number\n',
     "capabilities.0.choices_as"),
])
def test_manifest_faults_are_one_line_errors(tmp_path, body, needle):
    m = _manifest(tmp_path, body, [{"id": "a", "question": "q", "choices": ["3", "4"], "answer": "B"}])
    with pytest.raises(AuditInputError, match="m.yaml") as e:
        load_suite(m, scorers=SCORERS)
    assert needle in str(e.value)
