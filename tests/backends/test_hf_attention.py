"""Per-request attention in a continuous-batching stream (auditor.backends.hf.attention) against the
library's own sdpa over the dense block-diagonal mask: the same greedy fp32 answers on the real base,
through every path of the function (a batch of decoding requests, a whole prompt, a chunk after cached
tokens: a shared template start or a prompt split over steps), and the model's attention restored."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.window  # (also run at both ends of the transformers/peft window)


@pytest.fixture(scope="module")
def model(base_model):
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(base_model.path))
    m = AutoModelForCausalLM.from_pretrained(str(base_model.path), dtype=torch.float32).eval()
    return m, tok


QUESTIONS = ["What is 12 + 30?", "Name a colour of the sky.", "Write a haiku about rain.",
             "List three prime numbers.", "Explain what a LoRA adapter is in one sentence.",
             "Translate 'good morning' into French.", "What is the capital of Japan?",
             "Say hello in a JSON object with one key."]


@pytest.mark.parametrize("max_batch_tokens,share_prefix,quantum",
                         [(1024, True, 64), (40, False, 64), (1024, False, 4)])
def test_per_request_attention_gives_the_librarys_fp32_answers(model, max_batch_tokens, share_prefix, quantum,
                                                               monkeypatch):
    from transformers import GenerationConfig

    from auditor.backends.hf import attention as hf_attention
    from auditor.backends.hf.stream import stream_generate

    # quantum 4: a step's decoding requests fall in several width groups (as long answers at 128 slots do)
    monkeypatch.setattr(hf_attention, "WIDTH_QUANTUM", quantum)
    m, tok = model
    prompts = [tok.apply_chat_template([{"role": "user", "content": q}], add_generation_prompt=True) for q in QUESTIONS]
    prompts = [list(p["input_ids"] if hasattr(p, "keys") else p) for p in prompts]
    budgets = [4 + 2 * k for k in range(len(prompts))]  # requests end at different steps
    config = GenerationConfig(do_sample=False, eos_token_id=m.generation_config.eos_token_id,
                              pad_token_id=tok.pad_token_id, max_new_tokens=max(budgets))
    kw = dict(slots=4, generation_config=config, max_batch_tokens=max_batch_tokens, share_prefix=share_prefix)
    ours = stream_generate(m, prompts, budgets, attention="per_request", **kw)
    assert m.config._attn_implementation == "sdpa"  # restored after the stream
    library = stream_generate(m, prompts, budgets, attention="library", **kw)
    assert ours == library
    assert all(0 < len(a) <= b for a, b in zip(ours, budgets))


def test_a_model_with_sliding_window_layers_keeps_the_librarys_attention_and_its_answers(base_model):
    """Gemma 3's sliding-window layers: under another implementation transformers built their masks
    wrong (the real Gemma 3 270M answered garbage), so such a model keeps the library's attention; its
    stream's greedy answers are model.generate's."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer, Gemma3TextConfig, GenerationConfig

    from auditor.backends.hf.attention import LIBRARY, attention_path, per_request_attention
    from auditor.backends.hf.stream import stream_generate

    tok = AutoTokenizer.from_pretrained(str(base_model.path))
    config = Gemma3TextConfig(vocab_size=len(tok), hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                              num_attention_heads=4, num_key_value_heads=1, head_dim=16, query_pre_attn_scalar=16,
                              sliding_window=8, layer_types=["sliding_attention", "full_attention"],
                              max_position_embeddings=512)
    torch.manual_seed(0)
    m = AutoModelForCausalLM.from_config(config, attn_implementation="sdpa").eval()
    assert attention_path(m.config) == LIBRARY
    with per_request_attention(m):
        assert m.config._attn_implementation == "sdpa"
    prompts = [list(tok(q)["input_ids"]) for q in QUESTIONS[:4]]  # 6-14 tokens: past the window of 8
    gc = GenerationConfig(do_sample=False, eos_token_id=None, pad_token_id=tok.pad_token_id, max_new_tokens=12)
    ours = stream_generate(m, prompts, [12] * 4, slots=4, generation_config=gc)
    with torch.inference_mode():
        plain = [m.generate(torch.tensor([p]), generation_config=gc)[0, len(p):].tolist() for p in prompts]
    assert ours == plain


def test_a_decoding_requests_padded_width_is_its_own_length_rounded_up_whoever_decodes_beside_it():
    """The padded width (so the SDPA call's shape, and with it the kernel's rounding) of a request is a
    function of its own key length: the same in every company, so the step's longest request no longer
    moves the others' bf16 answers."""
    from auditor.backends.hf.attention import WIDTH_QUANTUM, _groups

    def width_of(lengths: list[int]) -> dict[int, int]:
        return {r: w for w, rs in _groups(list(range(len(lengths))), lengths) for r in rs}

    alone = width_of([130])[0]
    assert alone == -(-130 // WIDTH_QUANTUM) * WIDTH_QUANTUM
    assert width_of([130, 900, 5])[0] == alone == width_of([64, 130, 129, 2000])[1]
    groups = _groups([0, 1, 2, 3], [1, WIDTH_QUANTUM, WIDTH_QUANTUM + 1, 3 * WIDTH_QUANTUM])
    assert [w for w, _ in groups] == [3 * WIDTH_QUANTUM, 2 * WIDTH_QUANTUM, WIDTH_QUANTUM]  # widest first
    assert groups[-1][1] == [0, 1]


def test_each_forward_is_planned_once_at_its_first_layer(model, monkeypatch):
    """The step's plan (offsets, width groups, masks, key positions) is made once per forward, not per layer."""
    from transformers import GenerationConfig

    from auditor.backends.hf import attention as hf_attention
    from auditor.backends.hf.stream import stream_generate

    m, tok = model
    prompts = [list(tok(q)["input_ids"]) for q in QUESTIONS[:4]]
    config = GenerationConfig(do_sample=False, eos_token_id=None, pad_token_id=tok.pad_token_id, max_new_tokens=5)
    plans, forwards = [], []
    plan = hf_attention._plan
    monkeypatch.setattr(hf_attention, "_plan", lambda *a: plans.append(1) or plan(*a))
    hook = m.register_forward_pre_hook(lambda *_: forwards.append(1))
    try:
        out = stream_generate(m, prompts, [5] * 4, slots=4, generation_config=config)
    finally:
        hook.remove()
    assert [len(a) for a in out] == [5] * 4
    assert len(plans) == len(forwards) >= 5


def test_a_one_token_prompt_in_a_step_of_whole_prompts_decodes_from_its_own_keys(model):
    """A step that reads nothing from the cache (every request a whole prompt) can still hold a request of
    one query token: a one-token prompt. Its keys are the step's own, as a decoding request's; the
    library's answers in fp32, token for token."""
    from transformers import GenerationConfig

    from auditor.backends.hf.stream import stream_generate

    m, tok = model
    prompts = [[tok.convert_tokens_to_ids("Hello")], list(tok("The capital of France is")["input_ids"]),
               [tok.convert_tokens_to_ids("The")]]
    config = GenerationConfig(do_sample=False, eos_token_id=None, pad_token_id=tok.pad_token_id, max_new_tokens=6)
    kw = dict(slots=3, generation_config=config)
    ours = stream_generate(m, prompts, [6, 6, 6], attention="per_request", **kw)
    assert ours == stream_generate(m, prompts, [6, 6, 6], attention="library", **kw)
    assert [len(a) for a in ours] == [6, 6, 6]
