"""Draft and verify on the hf backend: greedy acceptance of a draft, the batched verification pass against one
plain forward per prefix, and an adapter's answers with ``draft="base"`` against plain decoding (fp32) on the
real embedded base, with a real demo adapter and a null one."""

from __future__ import annotations

import pytest
from conftest import DEMO_ADAPTERS, write_adapter

from auditor.backends.hf.draft import Verified, accept, greedy_choices, make_draft
from auditor.records import Item, Request

EOS = 2


@pytest.mark.parametrize(("draft", "choices", "budget", "expected"), [
    # the whole draft, its EOS included, is the adapter's own choice: done, nothing to decode
    ([5, 6, EOS], [5, 6, EOS, 9], 8, Verified([5, 6, EOS], True, 3)),
    # the first disagreement: the adapter's token is taken, decoding goes on from there
    ([5, 6, 7, EOS], [5, 8, 1, 1, 1], 8, Verified([5, 8], False, 1)),
    # disagreement at the first token
    ([5, 6, EOS], [4, 0, 0, 0], 8, Verified([4], False, 0)),
    # the adapter ends earlier than the base: its EOS is taken and the answer is complete
    ([5, 6, 7, EOS], [5, EOS, 0, 0, 0], 8, Verified([5, EOS], True, 1)),
    # another EOS id than the draft's ends the answer too
    ([5, 6, EOS], [5, 6, 3, 0], 8, Verified([5, 6, 3], True, 2)),
    # the draft fills the budget (the base ran out of tokens): accepted whole, no token after it
    ([5, 6, 7], [5, 6, 7, 8], 3, Verified([5, 6, 7], True, 3)),
    # the adapter goes on where the base stopped: its token is taken, one short of the budget
    ([5, EOS], [5, 9, 0], 4, Verified([5, 9], False, 1)),
    # a disagreement in the budget's last position completes the answer
    ([5, 6, 7], [5, 6, 4, 0], 3, Verified([5, 6, 4], True, 2)),
])
def test_greedy_acceptance(draft, choices, budget, expected):
    assert accept(draft, choices, budget, {EOS, 3}) == expected


class _Tok:
    def __call__(self, text, add_special_tokens=False):
        return {"input_ids": [ord(c) for c in text]}


def test_the_draft_is_the_base_answer_then_eos_cut_to_the_budget():
    assert make_draft(_Tok(), "abc", EOS, 8) == [97, 98, 99, EOS]
    assert make_draft(_Tok(), "abc", EOS, 3) == [97, 98, 99]
    assert make_draft(_Tok(), "", EOS, 3) == [EOS]


QUESTIONS = ["What is 17 + 25? Answer with a number.", "Name three colours.", "Say hello in French.",
             "Write one sentence about the sea.", "What is the capital of Italy?", "Count from 1 to 5.",
             "Give a JSON object with a key 'a' set to 1.", "Explain what a prime number is in one sentence."]


def _items() -> list[Item]:
    return [Item(id=f"t/{k}", capability="t", group="HOW", messages=({"role": "user", "content": q},),
                 max_new_tokens=[12, 40, 24, 48, 8, 32, 20, 40][k], target={}) for k, q in enumerate(QUESTIONS)]


@pytest.mark.slow
def test_the_verification_pass_gives_one_forward_per_prefix(base_model):
    """Right padded, several requests a pass, only the draft's logits kept: the argmax after every prefix is
    what a forward pass over that prefix alone picks."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(base_model.path))
    model = AutoModelForCausalLM.from_pretrained(str(base_model.path), dtype=torch.float32).eval()
    prompts = [tok.apply_chat_template([{"role": "user", "content": q}], add_generation_prompt=True,
                                       return_dict=True)["input_ids"] for q in QUESTIONS[:4]]
    drafts = [tok(t, add_special_tokens=False)["input_ids"] for t in ("42", "Red, green and blue.", "", "Waves")]
    got = greedy_choices(model, prompts, drafts, pad=tok.pad_token_id)
    with torch.inference_mode():
        for p, d, g in zip(prompts, drafts, got):
            want = [int(model(input_ids=torch.tensor([p + d[:j]])).logits[0, -1].argmax()) for j in range(len(d) + 1)]
            assert g == want


@pytest.fixture(scope="module", params=["demo", "null"])
def adapter(request, tmp_path_factory):
    """A real demo adapter, or a null one (LoRA B = 0, as PEFT initialises it: the base's function exactly)."""
    if request.param == "demo":
        return DEMO_ADAPTERS / "math-arith-r8"
    from safetensors.torch import load_file, save_file

    folder = write_adapter(tmp_path_factory.mktemp("null"))
    tensors = load_file(folder / "adapter_model.safetensors")
    save_file({k: t * 0 if "lora_B" in k else t for k, t in tensors.items()}, str(folder / "adapter_model.safetensors"))
    return folder


@pytest.mark.slow
def test_drafted_answers_are_plain_greedy_answers_in_fp32(base_model, adapter, tmp_path):
    """``draft="base"`` gives the adapter's plain greedy answers (fp32) and records what it drafted; a null
    adapter's drafts are accepted whole."""
    from auditor.backends.hf.backend import HFBackend
    from auditor.cache import GenerationCache
    from auditor.records import Variant

    items = _items()
    requests = [Request(item=i, variant=v) for v in ("base", "adapter") for i in items]
    answers = {}
    for mode in ("off", "base"):
        b = HFBackend(base_model.path, [Variant.of_folder("adapter", adapter, "digest")], dtype="float32", batch_size=4,
                      cache=GenerationCache(tmp_path / mode), base_digest="test-base", draft=mode)
        b.show_progress = False
        answers[mode] = [(g.text, g.n_tokens) for g in b.generate(requests)]
        info = b.run_info("adapter")
        assert info["draft"] == mode
        if mode == "base":
            [d] = info["drafts"]
            assert d["variant"] == "adapter" and d["drafted"] == len(items)
            assert 0 <= d["accepted_tokens"] <= d["draft_tokens"]
            if adapter.name != "math-arith-r8":
                assert d["accepted_whole"] == len(items)
        else:
            assert info["drafts"] == []
    assert answers["base"] == answers["off"]


def test_draft_base_is_refused_where_it_is_not_verified(base_model, tmp_path):
    from auditor.backends.hf.backend import HFBackend
    from auditor.errors import AuditInputError

    with pytest.raises(AuditInputError, match="--draft base"):
        HFBackend(base_model.path, (), batching="static", draft="base")
    assert HFBackend(base_model.path, (), batching="static", draft="auto").draft == "off"
    assert HFBackend(base_model.path, (), dtype="float32", device="cpu", draft="auto").draft == "off"
    assert HFBackend(base_model.path, (), dtype="bfloat16", device="cpu", draft="auto").draft == "base"
