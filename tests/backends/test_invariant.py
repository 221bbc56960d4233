"""Fixed-rows linear layers (auditor.backends.hf.invariant): a row's result is bit for bit the same alone and
among any number of other rows, in bf16 and fp32; in place in a real model and a real PEFT model, sharing the
parameters; and a real continuous-batching stream in bf16 gives the same greedy answers at any slot count."""

from __future__ import annotations

import pytest
import torch

from auditor.backends.hf.invariant import ROWS, SHORT_BLOCKS, FixedRowsLinear, make_batch_invariant, short_blocks

pytestmark = pytest.mark.window  # (also run at both ends of the transformers/peft window)

# SmolLM2-135M's projection shapes: q/o, k/v, gate/up, down, lm_head
SHAPES = [(576, 576), (576, 192), (576, 1536), (1536, 576), (576, 49152)]


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float32])
@pytest.mark.parametrize("shape", SHAPES)
def test_a_row_is_computed_alike_alone_and_among_others(dtype, shape):
    torch.manual_seed(0)
    linear = FixedRowsLinear(*shape, bias=True).to(dtype)
    x = torch.randn(300, shape[0]).to(dtype)
    with torch.inference_mode():
        alone = torch.cat([linear(x[k:k + 1]) for k in range(40)])
        for n in (2, 3, ROWS - 1, ROWS, ROWS + 1, 100, 300):
            assert torch.equal(linear(x[:n])[:40], alone[:min(n, 40)]), n
        shifted = linear(x[7:47])  # the same rows at other positions of the batch
        assert torch.equal(shifted[:33], alone[7:40])
        # a [batch, tokens, features] input as a model passes it; the same values as torch.nn.Linear's, to rounding
        plain = torch.nn.Linear(*shape, bias=True).to(dtype)
        plain.load_state_dict(linear.state_dict())
        three = x[:60].view(3, 20, -1)
        assert linear(three).shape == (3, 20, shape[1])
        tol = 2e-2 if dtype == torch.bfloat16 else 1e-5
        torch.testing.assert_close(linear(three), plain(three), rtol=tol, atol=tol)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float32])
@pytest.mark.parametrize("shape", [(576, 576), (1536, 576), (576, 49152), (576, 8)])
def test_a_short_last_block_gives_the_rows_a_full_blocks_bits(dtype, shape):
    """A step of fewer than ROWS rows is computed at a short block size where this machine's product gives the
    rows what a full block of ROWS gives them (checked on first use, :func:`short_blocks`): every count of rows
    from 1 to ROWS - 1, on rows of activations' scale and of a wide range, against one plain ROWS-row product."""
    torch.manual_seed(1)
    linear = FixedRowsLinear(*shape, bias=False).to(dtype)
    assert set(short_blocks(linear.weight.t())) <= set(SHORT_BLOCKS)
    for x in (torch.randn(ROWS, shape[0]), torch.randn(ROWS, shape[0]) * torch.exp2(torch.randint(-8, 9, (ROWS, 1)))):
        x = x.to(dtype)
        full = torch.empty(ROWS, shape[1], dtype=dtype)
        with torch.inference_mode():
            torch.matmul(x, linear.weight.t(), out=full)
            for n in range(1, ROWS):
                assert torch.equal(linear(x[:n]), full[:n]), n
                assert torch.equal(linear(x[ROWS - n:]), full[ROWS - n:]), n


def test_a_model_and_its_lora_matrices_are_put_in_place_sharing_their_parameters(base_model):
    from conftest import DEMO_ADAPTERS
    from peft import PeftModel
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(str(base_model.path), dtype=torch.float32)
    embed = model.get_input_embeddings().weight
    q = model.model.layers[3].self_attn.q_proj.weight
    n_linear = sum(type(m) is torch.nn.Linear for m in model.modules())
    assert make_batch_invariant(model) == n_linear == 30 * 7 + 1  # seven projections a layer and lm_head
    assert model.lm_head.weight is embed  # tied weights stay one Parameter
    assert model.model.layers[3].self_attn.q_proj.weight is q
    peft = PeftModel.from_pretrained(model, str(DEMO_ADAPTERS / "math-arith-r8"), adapter_name="adapter")
    def lora():
        return [m for name, m in peft.named_modules() if ".lora_A." in name or ".lora_B." in name]

    assert lora() and make_batch_invariant(peft) == len(lora())
    assert all(isinstance(m, FixedRowsLinear) for m in lora())
    assert not any(type(m) is torch.nn.Linear for m in peft.modules())
    wrapped = peft.base_model.model.model.layers[3].self_attn.q_proj  # PEFT's LoRA layer around the fixed rows
    assert isinstance(wrapped.base_layer, FixedRowsLinear) and wrapped.base_layer.weight is q


@pytest.mark.slow
def test_bf16_greedy_answers_do_not_depend_on_the_slot_count(base_model):
    """The claim the answer cache rests on: a real bf16 stream's answers are the same at 24, 8 and 3 slots
    (with torch's plain linear layers about half of 96 such answers changed: ``benchmarks/bench_invariance.py``)."""
    import json

    from conftest import ROOT
    from transformers import AutoModelForCausalLM, AutoTokenizer, GenerationConfig

    from auditor.backends.hf.stream import stream_generate

    tok = AutoTokenizer.from_pretrained(str(base_model.path))
    model = AutoModelForCausalLM.from_pretrained(str(base_model.path), dtype=torch.bfloat16).eval()
    make_batch_invariant(model)
    rows = [json.loads(line) for line in (ROOT / "auditor/data/suites/builtin/ifeval.jsonl").open()]
    prompts = [list(tok.apply_chat_template([{"role": "user", "content": r["prompt"]}], add_generation_prompt=True,
                                            return_dict=True)["input_ids"]) for r in rows]
    config = GenerationConfig(do_sample=False, eos_token_id=model.generation_config.eos_token_id,
                              pad_token_id=tok.pad_token_id, max_new_tokens=40)
    answers = {slots: stream_generate(model, prompts, [40] * len(prompts), slots=slots, generation_config=config)
               for slots in (24, 8, 3)}
    assert answers[8] == answers[24] and answers[3] == answers[24]
