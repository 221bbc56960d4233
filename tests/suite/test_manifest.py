"""Stage 2 (plan): the smoke suite is data, complete and well formed."""

from __future__ import annotations

import json
import re

import pytest
from conftest import DEMO_ADAPTERS, assert_one_line_error

from auditor.errors import AuditInputError
from auditor.scorers import SCORERS
from auditor.suite.manifest import load_suite, manifest_metric_ids
from auditor.suite.plan import plan_requests


def test_smoke_suite_covers_can_will_how_cond_with_12_plus_items_each():
    s = load_suite("smoke", scorers=SCORERS)
    groups = {c.name: c.group for c in s.capabilities}
    assert groups == {
        "math": "CAN", "knowledge": "CAN", "robustness": "CAN", "multilingual": "CAN",
        "over_refusal": "WILL", "harmful_refusal": "WILL", "verbosity": "WILL", "abstention": "WILL",
        "ifeval": "HOW", "format": "HOW", "multiturn": "HOW", "trigger": "COND"}
    for c in s.capabilities:
        assert sum(i.capability == c.name for i in s.items) >= 12
    assert len({i.id for i in s.items}) == len(s.items)


def test_ifeval_items_use_registered_instructions():
    from lm_eval.tasks.ifeval.instructions_registry import INSTRUCTION_DICT

    for it in load_suite("smoke", only=("ifeval",), scorers=SCORERS).items:
        ids = it.target["instruction_id_list"]
        assert ids and all(i in INSTRUCTION_DICT for i in ids)
        assert len(it.target["kwargs"]) == len(ids)


def test_limit_only_and_requests():
    s = load_suite("smoke", limit=2, only=("math",), scorers=SCORERS)
    assert [i.id for i in s.items] == ["math/m01", "math/m02"]
    assert "ifeval.prompt_level_strict_acc" in s.all_metrics
    reqs = plan_requests(s)
    assert [(r.item.id, r.variant) for r in reqs][:2] == [("math/m01", "base"), ("math/m01", "adapter")]


def test_unknown_preset_and_capability():
    with pytest.raises(AuditInputError, match="unknown suite 'nope'"):
        load_suite("nope", scorers=SCORERS)
    with pytest.raises(AuditInputError, match="not in suite"):
        load_suite("smoke", only=("poetry",), scorers=SCORERS)


def test_a_misspelt_capability_gets_the_names_and_a_suggestion(cli, tmp_path):
    line = assert_one_line_error(cli(DEMO_ADAPTERS / "terse-instruct-r8", "--capability", "maths", "--out",
                                     tmp_path / "o"), "--capability: 'maths' not in suite 'smoke'",
                                 "math, knowledge", "did you mean 'math'?")
    assert "[" not in line


def _manifest(folder, capability: str):
    """A one-capability suite manifest in ``folder``; ``capability`` is its YAML flow mapping."""
    m = folder / "s.yaml"
    m.write_text(f"name: x\nversion: 1\ncapabilities:\n  - {capability}\n")
    return m


def test_bad_manifest_names_key_path(tmp_path):
    m = _manifest(tmp_path, "{name: math, group: CAN, source: a.jsonl, scorer: numeric_match, max_new_tokens: 0}")
    with pytest.raises(AuditInputError, match=r"capabilities.0.max_new_tokens"):
        load_suite(str(m), scorers=SCORERS)


def test_unknown_benchmark_or_split_names_the_manifest_and_field(tmp_path):
    for source, fault in (("{benchmark: xstest, split: harmful}", "has no split 'harmful'"),
                          ("{benchmark: arc}", "'arc' is not one of")):
        m = _manifest(tmp_path, f"{{name: over_refusal, group: WILL, source: {source}, scorer: refusal, "
                                "max_new_tokens: 8}")
        with pytest.raises(AuditInputError) as e:
            load_suite(str(m), data_dir=str(tmp_path), scorers=SCORERS)
        assert e.value.path == str(m) and e.value.fault.startswith("capabilities.0.source") and fault in e.value.fault


def test_duplicate_item_ids_name_the_item_file_and_both_lines(tmp_path):
    rows = [{"id": "a", "question": "1+1?", "answer": 2}, {"id": "b", "question": "2+2?", "answer": 4},
            {"id": "a", "question": "3+3?", "answer": 6}]
    (tmp_path / "a.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    m = _manifest(tmp_path, "{name: math, group: CAN, source: a.jsonl, scorer: numeric_match, "
                            "prompt_template: '{question}', max_new_tokens: 8}")
    with pytest.raises(AuditInputError) as e:
        load_suite(str(m), scorers=SCORERS)
    assert e.value.path == str(tmp_path / "a.jsonl") and e.value.fault == "line 3: item id 'a' repeats line 1"


@pytest.mark.parametrize("selection", ["sample: 2, seed: 1", "first: 1", "sample: all"])
def test_a_repeated_id_fails_whatever_the_sampling_keeps(tmp_path, selection):
    rows = [{"id": "a", "question": "1+1?", "answer": 2}, {"id": "b", "question": "2+2?", "answer": 4},
            {"id": "c", "question": "5+5?", "answer": 10}, {"id": "a", "question": "3+3?", "answer": 6}]
    (tmp_path / "a.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    m = _manifest(tmp_path, f"{{name: math, group: CAN, source: {{path: a.jsonl, {selection}}}, "
                            "scorer: numeric_match, prompt_template: '{question}', max_new_tokens: 8}")
    for limit in (None, 1):
        with pytest.raises(AuditInputError, match="line 4: item id 'a' repeats line 1"):
            load_suite(str(m), limit=limit, scorers=SCORERS)


def test_hostile_manifest_values_are_one_clear_error(tmp_path):
    (tmp_path / "a.jsonl").write_text(json.dumps({"id": "a", "question": "1+1?", "answer": 2}) + "\n"
                                      + json.dumps({"id": "b", "question": "2+2?", "answer": 4}) + "\n")
    (tmp_path / "folder.jsonl").mkdir()
    cap = "{{name: math, group: CAN, source: {source}, scorer: numeric_match, prompt_template: '{{question}}', " \
          "max_new_tokens: 8}}"
    assert len(load_suite(str(_manifest(tmp_path, cap.format(source="{path: a.jsonl, first: 2.0}"))), scorers=SCORERS).items) == 2
    cases = [
        (cap.format(source='"a\\0.jsonl"'), "s.yaml", "capabilities.0.source: a path cannot hold a NUL character"),
        (cap.format(source="folder.jsonl"), "folder.jsonl", "is a folder, not a JSONL file"),
        (cap.format(source="a.jsonl") + "\n    version: 2", "s.yaml", "invalid YAML"),
    ]
    for text, where, fault in cases:
        with pytest.raises(AuditInputError) as e:
            load_suite(str(_manifest(tmp_path, text)), scorers=SCORERS)
        assert e.value.path.endswith(where) and fault in e.value.fault, e.value.one_line()
    m = tmp_path / "dup.yaml"
    m.write_text("name: x\nversion: 1\nname: y\ncapabilities:\n  - " + cap.format(source="a.jsonl") + "\n")
    with pytest.raises(AuditInputError, match="line 3: duplicate key 'name'"):
        load_suite(str(m), scorers=SCORERS)
    m.write_text("name: x\nversion: " + "9" * 5000 + "\ncapabilities:\n  - " + cap.format(source="a.jsonl") + "\n")
    with pytest.raises(AuditInputError, match="a value YAML cannot read: Exceeds the limit"):
        load_suite(str(m), scorers=SCORERS)
    (tmp_path / "a.jsonl").write_text('{"id": "a", "question": "q", "answer": ' + "9" * 5000 + "}\n")
    with pytest.raises(AuditInputError, match="line 1: Exceeds the limit"):
        load_suite(str(_manifest(tmp_path, cap.format(source="a.jsonl"))), scorers=SCORERS)


def test_a_control_character_in_a_named_path_is_shown_escaped():
    e = AuditInputError("owner/name\n", "no such file or folder")
    assert e.one_line() == "owner/name\\n: no such file or folder"
    assert AuditInputError("a\x1b[31mb", "x").one_line() == "a\\x1b[31mb: x"


def test_a_trailing_newline_does_not_pass_an_anchored_pattern(tmp_path):
    from auditor.inspect.hub import looks_like_hub_id

    m = _manifest(tmp_path, '{name: "math\\n", group: CAN, source: a.jsonl, scorer: numeric_match, max_new_tokens: 8}')
    with pytest.raises(AuditInputError, match=r"capabilities.0.name"):
        load_suite(str(m), scorers=SCORERS)
    assert looks_like_hub_id("owner/name") and not looks_like_hub_id("owner/name\n")


def test_bad_item_line_named(tmp_path):
    (tmp_path / "a.jsonl").write_text(json.dumps({"id": 1, "question": "q", "answer": 1}) + "\n{oops\n")
    m = tmp_path / "s.yaml"
    m.write_text("name: x\nversion: 1\ncapabilities:\n  - {name: math, group: CAN, source: a.jsonl, "
                 "scorer: numeric_match, prompt_template: '{question}', max_new_tokens: 8}\n")
    with pytest.raises(AuditInputError, match="line 2: invalid JSON"):
        load_suite(str(m), scorers=SCORERS)


def test_every_scorer_declares_metrics():
    assert all(s.metrics for s in SCORERS.values())


def test_manifest_aliases_and_non_string_cluster_are_refused(tmp_path):
    from auditor.errors import AuditInputError

    (tmp_path / "items.jsonl").write_text('{"id": "a", "question": "1+1?", "answer": 2, "meta": {"cluster": ["x"]}}\n')
    m = tmp_path / "s.yaml"
    m.write_text("name: &n s\nversion: 1\ncapabilities:\n  - {name: math, group: CAN, source: items.jsonl, "
                 "scorer: numeric_match, prompt_template: '{question}', max_new_tokens: 8}\nx: *n\n")
    with pytest.raises(AuditInputError, match="YAML aliases"):
        load_suite(str(m), scorers=SCORERS)
    m.write_text("name: s\nversion: 1\ncapabilities:\n  - {name: math, group: CAN, source: items.jsonl, "
                 "scorer: numeric_match, prompt_template: '{question}', max_new_tokens: 8}\n")
    with pytest.raises(AuditInputError, match="meta.cluster must be a string"):
        load_suite(str(m), scorers=SCORERS)


@pytest.mark.parametrize("template,needle", [
    ("{question:>999999999}", "'{question:>999999999}' is not a plain field name"),
    ("{question.__class__}", "'{question.__class__}' is not a plain field name"),
    ("{question!r}", "'{question!r}' is not a plain field name"),
    ("{question[0]}", "is not a plain field name"),
    ("{question", "capabilities.0.prompt_template: "),
])
def test_prompt_template_fills_plain_names_only(tmp_path, template, needle):
    (tmp_path / "a.jsonl").write_text(json.dumps({"id": 1, "question": "q", "answer": 1}) + "\n")
    m = tmp_path / "s.yaml"
    m.write_text("name: x\nversion: 1\ncapabilities:\n  - {name: math, group: CAN, source: a.jsonl, "
                 f"scorer: numeric_match, prompt_template: {json.dumps(template)}, max_new_tokens: 8}}\n")
    with pytest.raises(AuditInputError, match=re.escape(needle)) as e:
        load_suite(str(m), scorers=SCORERS)
    assert e.value.path == str(m)


def test_the_metric_ids_of_a_suite_come_from_its_manifest_alone():
    """What ``--eval-results`` checks before an audit (no item loaded): every metric id of the suite's
    capabilities, or of those ``--capability`` keeps; an unknown preset is the suite's one-line error."""
    assert manifest_metric_ids("smoke", ("math", "ifeval"), scorers=SCORERS) == [
        "math.numeric_match", "ifeval.prompt_level_strict_acc", "ifeval.inst_level_strict_acc",
        "ifeval.prompt_level_loose_acc", "ifeval.inst_level_loose_acc"]
    assert manifest_metric_ids("smoke", scorers=SCORERS) == list(load_suite("smoke", limit=1, scorers=SCORERS).all_metrics)
    with pytest.raises(AuditInputError, match="unknown suite 'nope'"):
        manifest_metric_ids("nope", scorers=SCORERS)


def test_fewshot_samples_become_worked_example_turns_of_every_item_and_pool_item(tmp_path):
    (tmp_path / "a.jsonl").write_text(json.dumps({"id": "a", "question": "1+1?", "answer": 2}) + "\n")
    (tmp_path / "p.jsonl").write_text(json.dumps({"id": "p", "question": "2+2?", "answer": 4}) + "\n")
    cap = ("{name: math, group: CAN, source: a.jsonl, pool: p.jsonl, scorer: numeric_match, "
           "prompt_template: 'Q: {question}', max_new_tokens: 8, fewshot: {samples: "
           "[{question: '3+3?', response: '#### 6'}, {question: '4+4?', response: '#### 8'}]}}")
    suite = load_suite(str(_manifest(tmp_path, cap)), scorers=SCORERS)
    (item,) = suite.items
    assert item.fewshot == ({"role": "user", "content": "Q: 3+3?"}, {"role": "assistant", "content": "#### 6"},
                            {"role": "user", "content": "Q: 4+4?"}, {"role": "assistant", "content": "#### 8"})
    assert not item.fewshot_always and item.messages == ({"role": "user", "content": "Q: 1+1?"},)
    assert [m["content"] for m in item.turns(plain=True)][-1] == "Q: 1+1?" and item.turns(plain=False) == list(item.messages)
    from auditor.suite.pools import load_pool

    (drawn,) = load_pool(suite, "math", data_dir=tmp_path).draw(1)
    assert drawn.id == "math/p" and drawn.fewshot == item.fewshot
    always = load_suite(str(_manifest(tmp_path, cap.replace("{samples:", "{when: always, samples:"))), scorers=SCORERS)
    assert always.items[0].fewshot_always and len(always.items[0].turns(plain=False)) == 5
    # until: where the samples are shown, the answer ends at the first stop string (leading blanks skipped)
    cut = load_suite(str(_manifest(tmp_path, cap.replace("{samples:", '{until: ["\\n\\n", "Q:"], samples:'))),
                     scorers=SCORERS).items[0]
    assert cut.until == ("\n\n", "Q:")
    rambling = "\n\n#### 2\n\nQ: 5+5?\n\n#### 10"
    assert cut.answer(rambling, plain=True) == "#### 2" and cut.answer("#### 2 Q: 9+9?", plain=True) == "#### 2 "
    assert cut.answer(rambling, plain=False) == rambling  # a chat model was not shown the samples
    assert item.answer(rambling, plain=True) == rambling  # no until: the whole text


@pytest.mark.parametrize("fewshot,fault", [
    ("{samples: [{question: '3+3?'}]}", "capabilities.0.fewshot.samples.0: 'response' is a required property"),
    ("{samples: [{answer: 6, response: '#### 6'}]}", "capabilities.0.fewshot.samples.0: field 'question' needed by"),
    ("{samples: []}", "capabilities.0.fewshot.samples: [] should be non-empty"),
    ("{when: sometimes, samples: [{question: q, response: r}]}", "capabilities.0.fewshot.when: 'sometimes' is not one"),
    ("{until: [''], samples: [{question: q, response: r}]}", "capabilities.0.fewshot.until.0: '' should be non-empty"),
    ("{samples: [{1: x, question: q, response: r}]}", "capabilities.0.fewshot.samples.0: its keys must be text"),
    ("[{question: q, response: r}]", "capabilities.0.fewshot: [{'question': 'q', 'response': 'r'}] is not of type"),
])
def test_a_bad_fewshot_entry_is_one_error_naming_its_key_path(tmp_path, fewshot, fault):
    (tmp_path / "a.jsonl").write_text(json.dumps({"id": "a", "question": "1+1?", "answer": 2}) + "\n")
    cap = ("{name: math, group: CAN, source: a.jsonl, scorer: numeric_match, prompt_template: 'Q: {question}', "
           f"max_new_tokens: 8, fewshot: {fewshot}}}")
    with pytest.raises(AuditInputError) as e:
        load_suite(str(_manifest(tmp_path, cap)), scorers=SCORERS)
    assert e.value.path.endswith("s.yaml") and fault in e.value.fault, e.value.one_line()


def test_fewshot_on_a_multiple_choice_capability_is_refused(tmp_path):
    (tmp_path / "a.jsonl").write_text(json.dumps({"id": "a", "question": "q", "choices": ["x", "y"], "answer": 0})
                                      + "\n")
    cap = ("{name: knowledge, group: CAN, source: a.jsonl, scorer: loglikelihood, prompt_template: '{question}', "
           "fewshot: {samples: [{question: q, response: r}]}}")
    with pytest.raises(AuditInputError, match="capabilities.0.fewshot: scorer 'loglikelihood' scores each choice"):
        load_suite(str(_manifest(tmp_path, cap)), scorers=SCORERS)
