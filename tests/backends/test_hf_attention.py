"""Per-request attention in a continuous-batching stream (auditor.backends.hf_attention) against the
library's own sdpa over the dense block-diagonal mask: the same greedy fp32 answers on the real base,
through every path of the function (a batch of decoding requests, a whole prompt, a chunk after cached
tokens: a shared template start or a prompt split over steps), and the model's attention restored."""

from __future__ import annotations

import pytest


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

    from auditor.backends import hf_attention
    from auditor.backends.hf_stream import stream_generate

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


def test_a_model_on_another_attention_is_left_as_it_is(model):
    from auditor.backends.hf_attention import per_request_attention

    m, _ = model
    m.set_attn_implementation("eager")
    try:
        with per_request_attention(m):
            assert m.config._attn_implementation == "eager"
    finally:
        m.set_attn_implementation("sdpa")


def test_a_model_with_sliding_window_layers_keeps_the_librarys_attention_and_its_answers(base_model):
    """Gemma 3's sliding-window layers: under another implementation transformers built their masks
    wrong (the real Gemma 3 270M answered garbage), so such a model keeps the library's attention; its
    stream's greedy answers are model.generate's."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer, Gemma3TextConfig, GenerationConfig

    from auditor.backends.hf_attention import LIBRARY, attention_path, per_request_attention
    from auditor.backends.hf_stream import stream_generate

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
    from auditor.backends.hf_attention import WIDTH_QUANTUM, _groups

    def width_of(lengths: list[int]) -> dict[int, int]:
        return {r: w for w, rs in _groups(list(range(len(lengths))), lengths) for r in rs}

    alone = width_of([130])[0]
    assert alone == -(-130 // WIDTH_QUANTUM) * WIDTH_QUANTUM
    assert width_of([130, 900, 5])[0] == alone == width_of([64, 130, 129, 2000])[1]
    groups = _groups([0, 1, 2, 3], [1, WIDTH_QUANTUM, WIDTH_QUANTUM + 1, 3 * WIDTH_QUANTUM])
    assert [w for w, _ in groups] == [3 * WIDTH_QUANTUM, 2 * WIDTH_QUANTUM, WIDTH_QUANTUM]  # widest first
    assert groups[-1][1] == [0, 1]


@pytest.mark.parametrize("max_batch_tokens", [1024, 40])
def test_keys_read_straight_from_the_cache_pages_give_the_read_backs_bf16_answers_bit_for_bit(
        model, max_batch_tokens, monkeypatch):
    """The keys are gathered from the paged cache through ``read_index`` (a decoding request's a page at a
    time) instead of from the library's read-back copy: the same values in the same layout, so even bf16
    answers (which move with any change of rounding) are the read-back's token for token; and the direct
    path is the one taken."""
    import copy
    import types

    import torch
    from transformers import GenerationConfig
    from transformers.generation.continuous_batching.cache_allocators.full_attention import (
        FullAttentionCacheAllocator,
    )

    from auditor.backends import hf_attention
    from auditor.backends.hf_stream import stream_generate

    m, tok = model
    m16 = copy.deepcopy(m).to(torch.bfloat16)
    prompts = [list(tok.apply_chat_template([{"role": "user", "content": q}], add_generation_prompt=True,
                                            return_dict=True)["input_ids"]) for q in QUESTIONS]
    budgets = [6 + 3 * k for k in range(len(prompts))]
    config = GenerationConfig(do_sample=False, eos_token_id=None, pad_token_id=tok.pad_token_id,
                              max_new_tokens=max(budgets))
    kw = dict(slots=4, generation_config=config, max_batch_tokens=max_batch_tokens)

    reads = []
    pages = FullAttentionCacheAllocator.get_cache_for_block_table
    monkeypatch.setattr(FullAttentionCacheAllocator, "get_cache_for_block_table",
                        lambda self, layer_idx: reads.append(layer_idx) or pages(self, layer_idx))
    by_token = []  # decoding keys gathered a token at a time (the read-back's way), not a page at a time
    spans = hf_attention._Rows.spans
    monkeypatch.setattr(hf_attention._Rows, "spans", lambda self, *a: by_token.append(1) or spans(self, *a))
    plans, forwards = [], []  # a step is planned once, at its first layer, for every layer
    plan = hf_attention._plan
    monkeypatch.setattr(hf_attention, "_plan", lambda *a: plans.append(1) or plan(*a))
    hook = m16.register_forward_pre_hook(lambda *_: forwards.append(1))
    direct = stream_generate(m16, prompts, budgets, **kw)
    hook.remove()
    assert len(reads) >= m16.config.num_hidden_layers * max(budgets)  # every decoding step, every layer
    assert not by_token
    assert len(plans) == len(forwards) >= max(budgets)

    original = hf_attention._write_and_read
    monkeypatch.setattr(hf_attention, "_write_and_read", lambda cache, *a: original(
        types.SimpleNamespace(update=cache.update), *a))  # no allocators in sight: the library's read-back
    reads.clear()
    read_back = stream_generate(m16, prompts, budgets, **kw)
    assert not reads and by_token
    assert direct == read_back
    assert [len(a) for a in direct] == budgets  # no EOS: every step of every request compared


def test_a_one_token_prompt_in_a_step_of_whole_prompts_decodes_from_its_own_keys(model):
    """A step that reads nothing from the cache (every request a whole prompt) can still hold a request of
    one query token: a one-token prompt. Its keys are the step's own, as a decoding request's; the
    library's answers in fp32, token for token."""
    from transformers import GenerationConfig

    from auditor.backends.hf_stream import stream_generate

    m, tok = model
    prompts = [[tok.convert_tokens_to_ids("Hello")], list(tok("The capital of France is")["input_ids"]),
               [tok.convert_tokens_to_ids("The")]]
    config = GenerationConfig(do_sample=False, eos_token_id=None, pad_token_id=tok.pad_token_id, max_new_tokens=6)
    kw = dict(slots=3, generation_config=config)
    ours = stream_generate(m, prompts, [6, 6, 6], attention="per_request", **kw)
    assert ours == stream_generate(m, prompts, [6, 6, 6], attention="library", **kw)
    assert [len(a) for a in ours] == [6, 6, 6]


def test_a_page_at_a_time_gathers_the_token_gathers_keys_and_falls_back_where_pages_are_not_whole():
    """``_PagedRows.spans`` (whole pages) against the token-by-token gather on a cache laid out as the
    library's (a shared first block, lengths 1, 16, 17, 33 and 64, blocks out of order): the same keys and
    values at every kept position; a width that is not whole pages, and a layout whose pages do not start
    on page rows, are gathered a token at a time (exactly the token gather's tensors)."""
    import torch

    from auditor.backends.hf_attention import _PagedRows

    torch.manual_seed(0)
    page, kv, hd, width = 16, 3, 4, 64
    k_pages, v_pages = torch.randn(20, page, kv, hd), torch.randn(20, page, kv, hd)
    tables = [[7], [7], [7, 2], [7, 11, 4], [9, 0, 13, 5]]  # (block 7 shared by the first four requests)
    lens = torch.tensor([1, 16, 17, 33, 64])
    read = torch.tensor([tables[r][t // page] * page + t % page for r in range(5) for t in range(int(lens[r]))])
    starts = torch.cumsum(torch.cat([torch.zeros(1, dtype=torch.long), lens[:-1]]), 0)
    rows = _PagedRows(read, k_pages, v_pages)
    by_token = super(_PagedRows, rows).spans(starts, lens, width, len(read))
    by_page = rows.spans(starts, lens, width, len(read))
    keep = (torch.arange(width)[None, :] < lens[:, None]).view(-1)
    for a, b in zip(by_page, by_token):
        assert a.shape == b.shape == (5 * width, kv * hd)
        assert torch.equal(a[keep], b[keep])
    for w in (24, width):  # a width of one and a half pages; a layout one row off the page boundary
        shifted = _PagedRows(read + (w == width), k_pages, v_pages)
        for a, b in zip(shifted.spans(starts, lens, w, len(read)),
                        super(_PagedRows, shifted).spans(starts, lens, w, len(read))):
            assert torch.equal(a, b)
