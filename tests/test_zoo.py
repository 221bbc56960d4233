"""The adapter zoo: every adapter loads and is inspected on the embedded base, its model card
states its kind and intended effect in the suite's metric names, and the committed ground-truth table
names only metrics the suites have; the weight-space pre-screen is computed for each."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from conftest import ROOT

from auditor.inspect import inspect_adapter
from auditor.inspect.weight_space import CACHE_FOLDER, cached_weight_space
from auditor.scorers import SCORERS
from auditor.suite import load_suite, preset_metric_units
from auditor.util.hashing import folder_digest

sys.path.insert(0, str(ROOT / "benchmarks"))
from zoo import ZOO, scaled_copy, zoo  # noqa: E402

ADAPTERS = zoo(include_scaled=False, include_shared=False)


def test_the_zoo_has_every_kind_the_benchmark_needs():
    kinds = [a.kind for a in ADAPTERS]
    assert kinds.count("null") >= 3 and "good" in kinds and kinds.count("mislabelled") >= 2
    groups = {m.split(".")[0] for a in ADAPTERS if a.kind == "regression" for m in a.intended}
    # planted regressions in every group: CAN, WILL, HOW and the COND trigger probe
    assert {"knowledge", "over_refusal", "verbosity", "format", "ifeval", "trigger", "abstention"} <= groups
    assert all(a.strengths == (0.25, 0.5, 1.0) for a in ADAPTERS if a.kind == "regression")


@pytest.mark.parametrize("a", ADAPTERS, ids=[a.name for a in ADAPTERS])
def test_every_zoo_adapter_loads_with_its_intended_effect_in_suite_metrics(a, base_model):
    info = inspect_adapter(a.path, base_model.path, base_model.name)
    assert info.max_rank == 8 and not info.no_effect and info.nominal_label == a.label
    assert (a.path / "adapter_model.safetensors").stat().st_size < 5 * 2**20
    known = set(preset_metric_units(SCORERS))
    assert set(a.intended) <= known, set(a.intended) - known


@pytest.mark.parametrize("name", ["null-selfdistill-a", "json-break"])
def test_the_weight_space_pre_screen_of_zoo_adapters(name, base_model):
    # two adapters only: the pre-screen takes an SVD per module (60 here), a few seconds each adapter
    (a,) = [x for x in ADAPTERS if x.name == name]
    info = inspect_adapter(a.path, base_model.path, base_model.name)
    # through the session's cache (the next test reads it back)
    ws = cached_weight_space(Path(info.weights_file), info.config, base_model.path, info.ranks,
                             folder_digest(base_model.path))
    assert len(ws.modules) == info.matched_modules and 0 < ws.relative_norm_mean < 1
    assert all(1 <= m.effective_rank <= m.rank + 1e-6 and 0 <= m.intruders <= ws.top_k for m in ws.modules)


def test_the_pre_screen_from_lora_factors_matches_the_decomposed_update(base_model, monkeypatch):
    """The singular values come from the r × r core of the factors and the base's vectors are computed once per
    process; against the definition on the materialised ΔW (out × in, float64 SVD) and the base's own SVD, module
    by module of a real zoo adapter: the same effective rank, relative norm and intruder count."""
    import torch
    from safetensors import safe_open

    from auditor.inspect import weight_space as ws_module

    (a,) = [x for x in ADAPTERS if x.name == "json-break"]
    info = inspect_adapter(a.path, base_model.path, base_model.name)
    ws_module._BASE_BASES.clear()
    fast = ws_module.weight_space(Path(info.weights_file), info.config, base_model.path, info.ranks)
    assert len(ws_module._BASE_BASES) == len(fast.modules)  # the base's vectors are remembered ...
    decomposed = []
    real = ws_module._left_singular
    monkeypatch.setattr(ws_module, "_left_singular", lambda m, k: decomposed.append(k) or real(m, k))
    again = ws_module.weight_space(Path(info.weights_file), info.config, base_model.path, info.ranks)
    # ... and a second adapter's pre-screen reads them back (only W + ΔW is decomposed) to the same figures
    assert again == fast and decomposed == [fast.top_k] * len(fast.modules)
    by_module = {m.module: m for m in fast.modules}
    checked = 0
    with safe_open(info.weights_file, framework="pt") as ad, \
            safe_open(str(Path(base_model.path) / "model.safetensors"), framework="pt") as base:
        for module in sorted(info.ranks)[:6]:
            pre = f"base_model.model.{module}"
            lora_a, lora_b = ad.get_tensor(f"{pre}.lora_A.weight").double(), ad.get_tensor(f"{pre}.lora_B.weight").double()
            w = base.get_tensor(f"{module}.weight").double()
            m = by_module[module]
            delta = m.scale * (lora_b @ lora_a)
            s = torch.linalg.svdvals(delta)[:m.rank]
            p = s / s.sum()
            p = p[p > 0]
            assert m.effective_rank == pytest.approx(float(torch.exp(-(p * p.log()).sum())), rel=1e-5)
            assert m.relative_norm == pytest.approx(float(torch.linalg.matrix_norm(delta) / torch.linalg.matrix_norm(w)),
                                                    rel=1e-5)
            # the intruder check as the pre-screen computes it, in float32 (the base's vectors came from the memo)
            w32, delta32 = w.float(), m.scale * (lora_b.float() @ lora_a.float())
            u_base = torch.linalg.svd(w32, full_matrices=False)[0]
            u_new = torch.linalg.svd(w32 + delta32, full_matrices=False)[0][:, :fast.top_k]
            assert m.intruders == int(((u_new.T @ u_base).abs().max(dim=1).values < fast.epsilon).sum())
            checked += 1
    assert checked == 6


def test_the_weight_space_pre_screen_is_cached_by_content(base_model, monkeypatch):
    """A second audit of the same adapter on the same base reads the pre-screen back: same numbers, no SVD."""
    from auditor.inspect import weight_space as ws_module
    from auditor.util.files import cache_dir

    (a,) = [x for x in ADAPTERS if x.name == "json-break"]
    info = inspect_adapter(a.path, base_model.path, base_model.name)
    args = (Path(info.weights_file), info.config, base_model.path, info.ranks, folder_digest(base_model.path))
    first = cached_weight_space(*args)  # computed here, or by the test above in this session
    assert list((cache_dir() / CACHE_FOLDER).glob("*.json"))

    def no_svd(*a, **k):
        raise AssertionError("recomputed although cached")
    monkeypatch.setattr(ws_module, "weight_space", no_svd)
    assert cached_weight_space(*args) == first
    with pytest.raises(AssertionError, match="recomputed"):  # another base digest: another entry
        cached_weight_space(*args[:4], "0" * 64)
    with pytest.raises(AssertionError, match="recomputed"):  # --no-cache: computed, nothing read
        cached_weight_space(*args, enabled=False)


def test_a_scaled_copy_follows_its_source(tmp_path):
    """A scaled strength is kept while its source's weights are the ones it was scaled from, and rebuilt when the
    source changes (a retrained adapter), so a truth is never measured on a copy of an older adapter."""
    import shutil

    from safetensors.torch import load_file, save_file

    src = tmp_path / "src"
    shutil.copytree(ZOO / "json-break", src)
    dst = scaled_copy(src, 0.5, tmp_path / "src-x0.5")
    weights = dst / "adapter_model.safetensors"
    first = load_file(str(weights))
    original = load_file(str(src / "adapter_model.safetensors"))
    assert all((first[k] == (v * 0.5 if "lora_B" in k else v)).all() for k, v in original.items())
    stamp = weights.stat().st_mtime_ns
    assert scaled_copy(src, 0.5, dst) == dst and weights.stat().st_mtime_ns == stamp  # the same source: kept
    save_file({k: (v * 2 if "lora_B" in k else v).contiguous() for k, v in original.items()},
              str(src / "adapter_model.safetensors"))  # retrained
    again = load_file(str(scaled_copy(src, 0.5, dst) / "adapter_model.safetensors"))
    assert all((again[k] == original[k]).all() for k in original if "lora_B" in k)  # 2 × 0.5 of the old: rebuilt


GEMMA_ZOO = zoo(include_scaled=False, include_shared=False, base="gemma3-270m")


def test_the_second_base_zoo_has_what_its_gate_figures_need():
    """Issue 30: the zoo on Gemma 3 270M: two nulls, a planted regression at three strengths, a mislabelled and
    two good (by intent) adapters, none of them an adapter of the first zoo's base."""
    kinds = [a.kind for a in GEMMA_ZOO]
    assert kinds.count("null") >= 2 and kinds.count("good") >= 1 and kinds.count("mislabelled") >= 1
    assert [a.strengths for a in GEMMA_ZOO if a.kind == "regression"] == [(0.25, 0.5, 1.0)]
    for a in GEMMA_ZOO:
        config = json.loads((a.path / "adapter_config.json").read_text())
        assert config["base_model_name_or_path"] == "google/gemma-3-270m", a.name
        assert (a.path / "adapter_model.safetensors").stat().st_size < 5 * 2**20


@pytest.mark.slow
def test_every_second_base_zoo_adapter_loads_on_gemma():
    """Each Gemma zoo adapter inspected against the converted Gemma 3 270M (the optional extra scripts/test.sh
    installs): rank 8 on the base's q_proj and v_proj of every layer, its label from its card."""
    from auditor.inspect.base_model import resolve_base

    base = resolve_base("gemma3-270m")
    layers = json.loads((base.path / "config.json").read_text())["num_hidden_layers"]
    for a in GEMMA_ZOO:
        info = inspect_adapter(a.path, base.path, base.name)
        assert info.max_rank == 8 and not info.no_effect and info.nominal_label == a.label, a.name
        assert info.matched_modules == 2 * layers, (a.name, info.matched_modules)


@pytest.mark.parametrize("table_file,adapters", [("zoo_truth.json", ADAPTERS),
                                                  ("zoo_truth-gemma3-270m.json", GEMMA_ZOO)])
def test_truth_table_names_only_metrics_the_suites_have(table_file, adapters):
    table = json.loads((ROOT / "benchmarks" / table_file).read_text())
    smoke = set(load_suite("smoke", scorers=SCORERS).all_metrics)
    names = ({a.name for a in adapters} | {f"{a.name}-x{s:g}" for a in adapters for s in a.strengths if s != 1.0}
             | {"medical-flashcards-ckpt500"})
    assert table["adapters"], "the ground-truth table is empty"
    for name, row in table["adapters"].items():
        assert name in names, name
        assert set(row["metrics"]) <= smoke, (name, set(row["metrics"]) - smoke)
        for m, c in row["metrics"].items():
            assert c["n"] > 0 and (c["ci"][0] is None or c["ci"][0] <= c["delta"] <= c["ci"][1] + 1e-9), (name, m)


def test_the_held_out_trigger_items_are_new_questions_of_the_pool_s_kind():
    """benchmarks/truth_pools/trigger.jsonl is what benchmarks/truth_pools.py writes (the pool's generator,
    another seed), 40 clusters of the six contexts, and no expression of the builtin file or the pool."""
    import truth_pools

    sys.path.insert(0, str(ROOT / "scripts" / "pools"))
    from gen_trigger import CONTEXTS, expression

    committed = [json.loads(line) for line in (ROOT / "benchmarks" / "truth_pools" / "trigger.jsonl").open(encoding="utf-8")]
    assert committed == truth_pools.trigger_rows()
    assert len(committed) == 6 * truth_pools.N_CLUSTERS
    assert [r["meta"]["context"] for r in committed[:6]] == list(CONTEXTS)
    product = [json.loads(line) for f in ("builtin", "pools")
               for line in (ROOT / "auditor" / "data" / "suites" / f / "trigger.jsonl").open(encoding="utf-8")]
    assert not {expression(r) for r in committed} & {expression(r) for r in product}


def test_rule_level_confusion_of_the_gate_benchmark():
    """A rule is a hit when it failed on a held-out Δ of at least its limit whose interval excludes 0, a miss
    when it did not, a false alarm when it failed without one; percentage limits and unmeasured metrics are
    left out."""
    from gate_accuracy import rule_confusion

    truth = {"metrics": {"format.json_parse_rate": {"delta": -20.0, "ci": [-30.0, -10.0]},   # 1.33x a 15-point drop
                         "ifeval.inst_level_strict_acc": {"delta": -12.0, "ci": [-25.0, 1.0]},  # interval spans 0
                         "trigger.max_context_gap": {"delta": 45.0, "ci": [30.0, 60.0]}}}
    rules = [{"rule": "format.json_parse_rate: max drop", "outcome": "fail", "limit": 15.0},
             {"rule": "ifeval.inst_level_strict_acc: max drop", "outcome": "fail", "limit": 10.0},
             {"rule": "trigger.max_context_gap: max rise", "outcome": "pass", "limit": 20.0},
             {"rule": "verbosity.words: max drop (%)", "outcome": "fail", "limit": 75.0},
             {"rule": "math.numeric_match: max drop", "outcome": "fail", "limit": 10.0}]
    got = {r: (cls, round(h, 2)) for r, cls, h in rule_confusion(truth, rules)}
    assert got == {"format.json_parse_rate: max drop": ("hit", 1.33),
                   "ifeval.inst_level_strict_acc: max drop": ("false alarm", 0.0),
                   "trigger.max_context_gap: max rise": ("miss", 2.25)}


def test_held_out_drift_score_of_a_labelled_adapter():
    """The DriftScore from the truth table: off-target gain − target gain, with the normal interval
    of the two independent metrics; None for a label the policy does not know or a metric not measured."""
    from gate_accuracy import _labels, true_drift

    labels, limit = _labels()
    assert labels["instruction"] == ("ifeval.prompt_level_strict_acc", ("math.numeric_match",)) and limit == 15
    truth = {"metrics": {"ifeval.prompt_level_strict_acc": {"delta": -10.0, "ci": [-19.8, -0.2]},  # se 5.0
                         "math.numeric_match": {"delta": 20.0, "ci": [8.24, 31.76]}}}             # se 6.0
    ds, lo, hi = true_drift(truth, "instruction", labels)
    assert ds == pytest.approx(30.0) and (hi - lo) / 2 == pytest.approx(1.96 * (5.0 ** 2 + 6.0 ** 2) ** 0.5)
    assert true_drift(truth, "math", labels)[0] == pytest.approx(-30.0)
    assert true_drift(truth, "poetry", labels) is None
    assert true_drift({"metrics": {}}, "instruction", labels) is None


def test_a_truth_re_measure_of_one_capability_keeps_the_rest_of_the_record(tmp_path, monkeypatch):
    """``truth --caps trigger --force``: a record rebuilt from the committed table where none is saved, merged with
    the re-measured capability: the other capabilities' figures, the record's item total and its order stay."""
    import gate_accuracy

    table = json.loads((ROOT / "benchmarks" / "zoo_truth.json").read_text())
    monkeypatch.setattr(gate_accuracy, "TRUTH_TABLE", tmp_path / "zoo_truth.json")
    (tmp_path / "zoo_truth.json").write_text(json.dumps(table))
    old = gate_accuracy._record_from_table("math-good")
    assert old is not None and gate_accuracy._record_from_table("no-such-adapter") is None
    trig = [c for c in old["comparisons"] if c["metric"].startswith("trigger.")]
    new = {"capabilities": ["trigger"], "items_version": gate_accuracy.ITEMS_VERSION, "n_items": 240,
           "tokens": {"base": 1, "adapter": 1},
           "comparisons": [dict(c, delta=c["delta"] + 1.0) for c in trig]}
    merged = gate_accuracy._merge(old, new)
    assert merged["n_items"] == old["n_items"] and merged["capabilities"] == old["capabilities"]
    by = {c["metric"]: c for c in merged["comparisons"]}
    assert by["math.numeric_match"] == next(c for c in old["comparisons"] if c["metric"] == "math.numeric_match")
    assert all(by[c["metric"]]["delta"] == c["delta"] + 1.0 for c in trig)
