"""The weight-space pre-screen's intruder sample: every module of a small base, an even sample of a large one's
(the same share of each module kind, first layer to last), and the sample on a real adapter and base."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from conftest import HIDDEN, KV, write_adapter

from auditor.inspect.adapter import inspect_adapter
from auditor.inspect.weight_space import intruder_sample, weight_space

# Llama-3-8B's projections: [out, in]
LLAMA_8B = {"q_proj": (4096, 4096), "k_proj": (1024, 4096), "v_proj": (1024, 4096), "o_proj": (4096, 4096),
            "gate_proj": (14336, 4096), "up_proj": (14336, 4096), "down_proj": (4096, 14336)}


def _modules(kinds: dict[str, tuple[int, int]], layers: int) -> dict[str, tuple[int, int]]:
    return {f"model.layers.{i}.x.{k}": shape for i in range(layers) for k, shape in kinds.items()}


def test_a_small_base_is_checked_whole():
    shapes = _modules({"q_proj": (576, 576), "v_proj": (192, 576)}, 30)  # SmolLM2-135M, q/v
    assert intruder_sample(shapes) == set(shapes)


def test_a_large_base_is_sampled_evenly_per_module_kind_within_the_budget():
    qv = _modules({k: LLAMA_8B[k] for k in ("q_proj", "v_proj")}, 32)
    chosen = intruder_sample(qv)
    for kind in ("q_proj", "v_proj"):
        layers = sorted(int(m.split(".")[2]) for m in chosen if m.endswith(kind))
        assert len(layers) == int(2**28 / sum(o * i for o, i in qv.values()) * 32)  # the same share of each kind
        assert layers[0] == 0 and layers[-1] == 31  # first layer to last, in numeric order (2 before 10)
    assert sum(o * i for o, i in (qv[m] for m in chosen)) <= 2**28
    every = _modules(LLAMA_8B, 32)
    chosen = intruder_sample(every)
    assert sorted(m.rsplit(".", 1)[-1] for m in chosen) == sorted(LLAMA_8B)  # at least one of each kind
    assert {m.split(".")[2] for m in chosen} == {"16"}  # one each: the middle layer


@pytest.mark.slow
def test_the_pre_screen_counts_intruders_on_the_sample_only(base_model, tmp_path):
    g = torch.Generator().manual_seed(5)
    t = {}
    for i in range(30):
        for m, out_f in (("q_proj", HIDDEN), ("v_proj", KV)):
            t[f"base_model.model.model.layers.{i}.self_attn.{m}.lora_A.weight"] = torch.randn(4, HIDDEN, generator=g)
            t[f"base_model.model.model.layers.{i}.self_attn.{m}.lora_B.weight"] = torch.randn(out_f, 4, generator=g)
    info = inspect_adapter(write_adapter(tmp_path / "a", tensors=t), base_model.path, base_model.name)
    whole = weight_space(Path(info.weights_file), info.config, base_model.path, info.ranks)
    assert whole.intruders_checked == len(whole.modules) == 60
    # a budget of one q_proj's elements: one module of each kind, the middle layer's
    part = weight_space(Path(info.weights_file), info.config, base_model.path, info.ranks, budget=HIDDEN * HIDDEN)
    counted = {m.module: m.intruders for m in part.modules if m.intruders is not None}
    assert set(counted) == {"model.layers.15.self_attn.q_proj", "model.layers.15.self_attn.v_proj"}
    assert part.intruders_checked == 2 and part.intruders_total == sum(counted.values())
    by_module = {m.module: m for m in whole.modules}
    assert all(by_module[m].intruders == n for m, n in counted.items())  # the same count as the whole check
    # norms and effective ranks are computed on every module either way
    assert [(m.relative_norm, m.effective_rank) for m in part.modules] == \
        [(m.relative_norm, m.effective_rank) for m in whole.modules]
