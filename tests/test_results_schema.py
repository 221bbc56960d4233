"""results.json's schema is generated from the records: the shipped file is the generator's
output, a result the records make validates with every optional block, and hostile edits do not.

How it is checked without a model: the result is made of the records the pipeline hands on (an inspected
adapter with its weight space, tokenizer files and resized vocabulary, a hub revision, rules of each kind,
rounds, a budget, a noise floor, a release baseline), the parts other modules write taken from them
(:meth:`~auditor.records.AdapterRecord.with_warnings`, the cache's counters, the hub reference, the prompt
templates). A real audit's results.json is validated by the slow end-to-end tests
(``tests/test_cli.py``, ``tests/test_api.py``) through the same :func:`schema_error`.
"""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Literal

import jsonschema
import pytest

from auditor.cache.generations import CacheStats
from auditor.inspect.hub import HubRef
from auditor.records import (
    AdapterRecord,
    Agreement,
    AgreementWithBase,
    Budget,
    DriftResult,
    MetricComparison,
    ModuleWeightSpace,
    NoiseFloor,
    PromptTemplate,
    Round,
    RuleOutcome,
    TokenizerFiles,
    Verdict,
    VocabResize,
    WeightSpace,
    schema_files,
    to_plain,
)
from auditor.reports.results_file import RESULTS_SCHEMA_PATH, load_results, schema_error
from auditor.results import (
    RESULTS_SCHEMA_VERSION,
    Answer,
    AuditResult,
    BaselineRecord,
    BaseRecord,
    ItemRecord,
    PolicyRecord,
    RunRecord,
    StatisticsRecord,
    SuiteRecord,
)

SHA = "ab" * 32


def test_the_shipped_schema_is_the_generators_output():
    assert schema_files.SCHEMA_PATH == RESULTS_SCHEMA_PATH
    assert RESULTS_SCHEMA_PATH.read_text(encoding="utf-8") == schema_files.results_schema_text(), (
        "auditor/data/schemas/results.schema.json is stale: run python -m auditor.records.schema_files --write")
    assert schema_files.main(["--check"]) == 0


def test_the_schema_is_draft_2020_12_of_this_version():
    schema = json.loads(RESULTS_SCHEMA_PATH.read_text(encoding="utf-8"))
    jsonschema.Draft202012Validator.check_schema(schema)
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert schema["$id"].endswith(f"results-{RESULTS_SCHEMA_VERSION}.schema.json")
    assert schema["properties"]["schema_version"]["const"] == RESULTS_SCHEMA_VERSION
    assert list(schema["properties"]) == [f.name for f in dataclasses.fields(AuditResult)]


def _adapter(path: str, hub: HubRef | None = None) -> AdapterRecord:
    ws = WeightSpace(modules=(ModuleWeightSpace(module="q_proj", rank=8, scale=2.0, relative_norm=0.01,
                                                effective_rank=5.5, intruders=1),),
                     relative_norm_mean=0.01, relative_norm_max=0.01, effective_rank_mean=5.5, intruders_total=1,
                     intruders_per_module=1.0, skipped=("embed_tokens",))
    tok = TokenizerFiles(files=("tokenizer.json", "tokenizer_config.json"), chat_template="differs",
                         template_file="tokenizer_config.json", template_sha256=SHA, base_template_sha256=SHA,
                         vocabulary="differs", vocab_size=49154, base_vocab_size=49152, added_tokens=2,
                         new_tokens=("<x>", "<y>@49153"), special_tokens={"pad": ("<x>", None)},
                         template_text="{{ messages }}")
    vocab = VocabResize(base_size=49152, size=49154, added=("<x>", "<y>"), n_added=2, how="modules_to_save",
                        modules=("model.embed_tokens", "lm_head"), tokenizer_file="tokenizer.json")
    info = AdapterRecord(path=path, weights_file=f"{path}/adapter_model.safetensors", sha256=SHA, peft_type="LORA",
                         r=8, lora_alpha=16.0, target_modules=("q_proj", "v_proj"), ranks={"layers.0.q_proj": 8},
                         n_tensors=4, size_bytes=1024, declared_base="HuggingFaceTB/SmolLM2-135M-Instruct",
                         nominal_label="math", matched_modules=2, warnings=("inspection note",),
                         declared_base_status="local_folder", declared_base_note="trained from a local folder",
                         weight_space=ws, tokenizer_files=tok, vocab_resize=vocab, max_rank=8, content_sha256=SHA,
                         hub=hub.as_dict() if hub else None)
    return info.with_warnings(("chat template differs",))


def _comparison(**kw: Any) -> MetricComparison:
    fields: dict[str, Any] = {"metric": "math.numeric_match", "capability": "math", "group": "CAN", "n_items": 3,
                              "base": 0.5, "adapter": 0.25, "delta": -25.0, "delta_unit": "points",
                              "rel_delta_pct": -50.0, "higher_is_better": True, "n_clusters": 3, "ci_low": -50.0,
                              "ci_high": 0.0, "rel_ci_pct": (-100.0, 0.0), "test": "mcnemar_exact", "p_value": 0.5,
                              "p_adjusted": 0.5, "discordant": {"base_only": 1, "adapter_only": 0},
                              "p_decrease": 0.25, "p_increase": 1.0, "draws": [1.0, 2.0]}
    return MetricComparison(**(fields | kw))


def _result() -> AuditResult:
    """One audit's record with every optional block present (none of results.json's keys left out)."""
    rules = (
        RuleOutcome(rule="math.numeric_match: max drop", rule_id="math.numeric_match/max-drop", kind="limit",
                    metric="math.numeric_match", outcome="fail", reason="dropped", value=25.0, limit=10.0,
                    mode="evidence", decision="fail", ci=(5.0, 50.0), p_value=0.01, p_adjusted=0.02, n_items=3,
                    look=2, room=50.0, measurable=True, upper_bound=40.0, items_to_decide=None,
                    capabilities=("math",)),
        RuleOutcome(rule="vs previous release: math.numeric_match: max drop",
                    rule_id="baseline/math.numeric_match/max-drop", kind="baseline_limit",
                    metric="math.numeric_match", outcome="not_run", reason="left out", decision="undecided",
                    items_to_decide=40),
        RuleOutcome(rule="nominal label: DriftScore", rule_id="nominal-label/DriftScore", kind="drift",
                    outcome="warn", reason="drifted", mode="point", decision="inconclusive"),
        RuleOutcome(rule="declared base matches", rule_id="declared-base-matches", kind="declared_base",
                    outcome="pass", reason="local folder"),
    )
    answer = Answer(text="<b>42</b>", n_tokens=3, scores={"numeric_match": 1.0, "other": None},
                    detail={"extracted": 42.0})
    item = ItemRecord(id="math/m0", capability="math", group="CAN", prompt="6 x 7?", rendered_prompt="<user>6 x 7?",
                      rendered_prompts={"adapter": "<adapter user>6 x 7?"},
                      messages=({"role": "user", "content": "6 x 7?"},), max_new_tokens=8, target={"answer": 42},
                      meta={"cluster": "c0"}, base=answer, adapter=answer, baseline=answer, round=2)
    template = PromptTemplate(chat_template="file:tmpl.jinja", template_file="tmpl.jinja", template_sha256=SHA,
                              tokenizer="adapter", tokenizer_path="adapters/a", text="{{ messages }}")
    cache = CacheStats(enabled=True, hits={"base": 3}, misses={"adapter": 3, "baseline": 3}, writes=6)
    hub = HubRef(repo_id="owner/name", requested="main", revision="c" * 40, path=Path("/snap"), subfolder="ckpt")
    run = RunRecord(
        backend="vllm", backend_reason="auto: GPU, vllm", dtype="bfloat16", batch_size="auto", limit=3,
        batch_sizes_used={"8": 2}, capabilities=("math",), decoding="greedy",
        prompts={"base": to_plain(dataclasses.replace(template, chat_template="base", tokenizer="base")),
                 "adapter": to_plain(template), "baseline": to_plain(template)},
        new_tokens={"base": 9, "adapter": 9, "baseline": 9}, generated={"base": 3, "adapter": 3},
        cache=cache.as_dict(), adapters_in_run=2,
        vllm={"max_lora_rank": 8, "max_loras": 3, "lora_name": "adapter-" + "0" * 16, "lora_int_id": 1,
              "engine_args": {"gpu_memory_utilization": 0.8},
              "settings": {"max_model_len": {"value": 4096, "source": "auditor", "why": "fits"}},
              "generate_calls": [{"base": 3, "adapter": 3}], "self_check": None},
        openai=None, model_loaded=True,
        rounds=(Round(look=1, items={"math": 3}, undecided=("math.numeric_match: max drop",)),
                Round(look=2, items={"math": 6}, new_items={"math": 3})),
        budget=Budget(items=3, seconds=600.0, looks=2, used_items=3),
        timings={"load_s": 1.0, "generate_s": 2.0, "rounds_s": 0.5, "weight_space_s": 0.2, "total_s": 3.5}, versions={"python": "3.11"},
        auditor_version="0.1.0", created_at="2026-12-03T09:52:22+00:00")
    return AuditResult(
        schema_version=RESULTS_SCHEMA_VERSION,
        verdict=Verdict(verdict="fail", rules=rules, warnings=("engine setup",)),
        adapter=_adapter("adapters/a", hub), base=BaseRecord(name="b", path="p", source="local", content_hash=SHA,
                                                             hub=hub.as_dict(), folder_sha256=SHA,
                                                             reason="declared: the adapter declares 'b', a local folder"),
        suite=SuiteRecord(name="smoke", version="2", path="s.yaml", item_ids=(item.id,), items_sha256=SHA,
                          sources=({"benchmark": "gsm8k", "n_selected": 1},), scorers={"math": "numeric_match"}),
        policy=PolicyRecord(path="policy.yaml", content={"version": 1}, sha256=SHA),
        comparisons=(_comparison(),),
        agreement_with_base=AgreementWithBase(
            overall=Agreement(identical=0.75, n_items=4, first_difference_word=3.0),
            capabilities={"math": Agreement(identical=0.75, n_items=4, first_difference_word=3.0),
                          "ifeval": Agreement(identical=1.0, n_items=2, first_difference_word=None)}),
        drift=DriftResult(label="math", label_source="model card", target_metric="math.numeric_match",
                          off_target_metrics=("ifeval.prompt_level_strict_acc",), target_gain_pts=-25.0,
                          off_target_gain_pts=0.0, drift_score_pts=25.0, mismatch=True, ci_low_pts=5.0,
                          ci_high_pts=45.0, p_positive=0.01),
        items=(item,),
        noise_floor=NoiseFloor(n_items=3, batch_sizes=(8, 8), n_differ=1, n_score_differ=0, items_differ=(item.id,),
                               items_score_differ=(), varied="dtype", dtypes=("bfloat16", "float32"),
                               metric_shifts={"math.numeric_match": -33.3}, metric_shifts_pct={}),
        baseline=BaselineRecord(adapter=_adapter("adapters/v1"), comparisons=(_comparison(base=0.75),)),
        statistics=StatisticsRecord(confidence=0.95, n_resamples=1000, seed=0, multiplicity="bh", min_items=1,
                                    interval="percentile", tests={"pass/fail": "mcnemar"}, p_adjusted="BH",
                                    alpha=0.05, looks=2, beta=0.1, clear_harm=2.0, spending=1.0),
        run=run)


def test_a_result_with_every_block_validates_and_reads_back(tmp_path):
    result = _result()
    data = json.loads(json.dumps(result.to_dict()))
    assert schema_error(data) is None
    for block in ("weight_space", "tokenizer_files", "vocab_resize", "hub", "content_sha256", "declared_base_status"):
        assert data["adapter"][block] is not None, block
    path = tmp_path / "results.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    assert load_results(path).to_dict() == data


def test_a_metric_no_item_scored_is_null_and_valid():
    r = _result()
    nan = dataclasses.replace(r.comparisons[0], base=math.nan, adapter=math.nan, delta=math.nan, ci_low=math.nan)
    data = dataclasses.replace(r, comparisons=(nan,)).to_dict()
    assert [data["comparisons"][0][k] for k in ("base", "adapter", "delta", "ci_low")] == [None] * 4
    assert schema_error(data) is None


def test_the_optional_blocks_may_be_null_or_absent():
    r = _result()
    data = dataclasses.replace(r, noise_floor=None, baseline=None,
                               run=dataclasses.replace(r.run, budget=None, vllm=None, cache=None, prompts=None),
                               adapter=dataclasses.replace(r.adapter, hub=None, weight_space=None,
                                                           tokenizer_files=None, vocab_resize=None)).to_dict()
    assert "vllm" not in data["run"] and data["run"]["budget"] is None and data["adapter"]["hub"] is None
    assert schema_error(data) is None


def test_the_agreement_with_the_base_is_recorded_per_capability_and_overall(tmp_path):
    data = json.loads(json.dumps(_result().to_dict()))
    assert list(data)[list(data).index("comparisons") + 1] == "agreement_with_base"  # beside the deltas
    assert data["agreement_with_base"] == {
        "overall": {"identical": 0.75, "n_items": 4, "first_difference_word": 3.0},
        "capabilities": {"math": {"identical": 0.75, "n_items": 4, "first_difference_word": 3.0},
                         "ifeval": {"identical": 1.0, "n_items": 2, "first_difference_word": None}}}
    assert schema_error(data) is None
    path = tmp_path / "results.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    assert load_results(path).agreement_with_base == _result().agreement_with_base
    # an audit of multiple choice only compares no generated answer: nulls, no capability
    empty = dataclasses.replace(_result(), agreement_with_base=AgreementWithBase()).to_dict()
    assert empty["agreement_with_base"] == {"overall": {"identical": None, "n_items": 0, "first_difference_word": None},
                                            "capabilities": {}}
    assert schema_error(empty) is None
    schema = json.loads(RESULTS_SCHEMA_PATH.read_text(encoding="utf-8"))
    fields = schema["$defs"]["agreement"]["properties"]
    assert "fraction in [0, 1]" in fields["identical"]["description"]
    assert "1-based position" in fields["first_difference_word"]["description"]


def _parent(data: Any, path: str) -> tuple[Any, Any]:
    """The container holding dotted ``path`` of ``data`` and its key there (a list index for digits)."""
    *parents, last = path.split(".")
    for p in parents:
        data = data[int(p)] if p.isdigit() else data[p]
    return data, int(last) if last.isdigit() else last


def _set(path: str, value: Any) -> Callable[[Any], None]:
    def edit(data: Any) -> None:
        parent, key = _parent(data, path)
        parent[key] = value
    return edit


def _delete(path: str) -> Callable[[Any], None]:
    def edit(data: Any) -> None:
        parent, key = _parent(data, path)
        del parent[key]
    return edit


@pytest.mark.parametrize("edit,where,says", [
    (_set("verdict.rules.0.outcome", "maybe"), "verdict.rules.0.outcome", "'maybe' is not one of"),
    (_set("verdict.rules.1.kind", "vibes"), "verdict.rules.1.kind", "'vibes' is not one of"),
    (_set("verdict.rules.0.mode", "lenient"), "verdict.rules.0.mode", "'lenient' is not one of"),
    (_delete("verdict.rules.0.rule_id"), "verdict.rules.0", "'rule_id' is a required property"),
    (_delete("items.0.round"), "items.0", "'round' is a required property"),
    (_delete("run.rounds"), "run", "'rounds' is a required property"),
    (_delete("baseline.adapter.sha256"), "baseline.adapter", "'sha256' is a required property"),
    (_set("comparisons.0.delta", "-25.0"), "comparisons.0.delta", "is not of type 'number', 'null'"),
    (_set("adapter.r", "8"), "adapter.r", "is not of type 'integer'"),
    (_set("run.budget.items", 1.5), "run.budget.items", "is not of type 'integer'"),
    (_set("comparisons.0.p_value", 1.5), "comparisons.0.p_value", "greater than the maximum of 1"),
    (_set("comparisons.0.confidence", None), "comparisons.0.confidence", "None is not of type 'number'"),
    (_set("adapter.sha256", "not-a-digest"), "adapter.sha256", "does not match"),
    (_set("run.batch_size", "huge"), "run.batch_size", "does not match"),
    (_set("run.batch_size", 0), "run.batch_size", "less than the minimum of 1"),
    (_set("items.0.base", None), "items.0.base", "None is not of type 'object'"),
    (_set("run.new_tokens", {"adapter7": 1}), "run.new_tokens", "'adapter7' is not one of"),
    (_set("run.rounds.0.look", 0), "run.rounds.0.look", "less than the minimum of 1"),
    (_set("base.reason", "because"), "base.reason", "does not match"),
    (_set("schema_version", 5), "schema_version", "9 was expected"),
    (_delete("agreement_with_base"), "top level", "'agreement_with_base' is a required property"),
    (_set("agreement_with_base.overall.identical", 1.5), "agreement_with_base.overall.identical",
     "greater than the maximum of 1"),
    (_set("agreement_with_base.capabilities.math.first_difference_word", 0),
     "agreement_with_base.capabilities.math.first_difference_word", "less than the minimum of 1"),
    (_set("agreement_with_base.capabilities.math.n_items", -1), "agreement_with_base.capabilities.math.n_items",
     "less than the minimum of 0"),
    (_set("noise_floor.dtypes", ["bfloat16", "float32", "float16"]), "noise_floor.dtypes", "is too long"),
    (_set("noise_floor.varied", "moon"), "noise_floor.varied", "'moon' is not one of"),
    (_set("noise_floor.metric_shifts", [1.0]), "noise_floor.metric_shifts", "is not of type 'object'"),
    (_set("verdict.rules.0.noise", -3.0), "verdict.rules.0.noise", "less than the minimum of 0"),
    (_set("verdict.rules.0.within_noise", "yes"), "verdict.rules.0.within_noise", "is not of type 'boolean'"),
])
def test_hostile_edits_fail_validation(edit, where, says):
    data = _result().to_dict()
    edit(data)
    error = schema_error(data)
    assert error is not None and f"at {where}: " in error and says in error, error


# the generator on records of its own: how each type maps, and what it refuses
Word = Literal["a", "b"]


@dataclasses.dataclass(frozen=True, kw_only=True)
class Part:
    n: int


@dataclasses.dataclass(frozen=True, kw_only=True)
class Toy:
    word: Word
    maybe_word: Word | None
    text: str | None
    number: float
    pair: tuple[float, float]
    mixed: tuple[int, str]
    words: tuple[str, ...]
    counts: Mapping[str, int]
    anything: Any
    either: int | str
    part: Part | None
    parts: tuple[Part, ...]
    absent: int | None = dataclasses.field(default=None, metadata={"omit_none": True})
    hidden: str = dataclasses.field(default="", metadata={"plain": False})


def test_the_type_mapping():
    s = schema_files.schema_of(Toy, 1, {"Toy.words": {"minItems": 1, "description": "some"}})
    props = s["properties"]
    assert list(props) == [f.name for f in dataclasses.fields(Toy) if f.name != "hidden"]
    assert s["required"] == list(props)[:-1]  # omit_none: a property, not required
    assert props["word"] == {"enum": ["a", "b"]} and props["maybe_word"] == {"enum": ["a", "b", None]}
    assert props["text"] == {"type": ["string", "null"]} and props["number"] == {"type": ["number", "null"]}
    assert props["pair"] == {"type": "array", "items": {"type": ["number", "null"]}, "minItems": 2, "maxItems": 2}
    assert props["mixed"]["prefixItems"] == [{"type": "integer"}, {"type": "string"}]
    assert props["words"] == {"type": "array", "items": {"type": "string"}, "minItems": 1, "description": "some"}
    assert props["counts"] == {"type": "object", "additionalProperties": {"type": "integer"}}
    assert props["anything"] == {} and props["either"] == {"type": ["integer", "string"]}
    assert props["part"] == {"oneOf": [{"type": "null"}, {"$ref": "#/$defs/part"}]}  # used twice: one $def
    assert s["$defs"]["part"] == {"type": "object", "required": ["n"], "properties": {"n": {"type": "integer"}}}
    assert props["absent"] == {"type": "integer"}  # never written null
    jsonschema.Draft202012Validator.check_schema(s)


def test_a_table_entry_naming_no_field_and_an_unknown_type_are_refused():
    with pytest.raises(ValueError, match="Toy.wrod"):
        schema_files.schema_of(Toy, 1, {"Toy.wrod": {"minimum": 1}})

    @dataclasses.dataclass(frozen=True, kw_only=True)
    class Odd:
        when: complex

    with pytest.raises(TypeError, match="complex"):
        schema_files.schema_of(Odd, 1, {})
