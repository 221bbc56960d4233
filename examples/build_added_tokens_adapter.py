"""Build a small LoRA adapter trained after adding two special tokens, the way people publish them.

The tokenizer gets ``<|tool|>`` and ``<|endtool|>`` (``add_special_tokens``), the model's embeddings are
resized to the tokenizer's length (``resize_token_embeddings``), PEFT trains LoRA on ``q_proj``/``v_proj``
plus either full copies of ``embed_tokens`` and ``lm_head`` (``modules_to_save``, the default) or only
the new tokens' rows (``trainable_token_indices``) for a few steps on templated chats that use the new
tokens, and ``save_pretrained`` writes the adapter and the tokenizer into one folder: about 680 MB with
``modules_to_save`` (six 49,154 × 576 fp32 tensors: the two copies and the resized base rows PEFT adds
when it sees the vocabulary resized), 230 MB with ``trainable_token_indices`` (the resized base rows).

    python examples/build_added_tokens_adapter.py OUT [--how modules_to_save|trainable_token_indices]
        [--steps 4] [--base BASE_FOLDER]

The tests build it with :func:`build` on the embedded base (tests/conftest.py ``added_tokens_adapter``).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

NEW_TOKENS = ["<|tool|>", "<|endtool|>"]


def _chats(n: int) -> list[list[dict[str, str]]]:
    """``n`` templated arithmetic chats whose answers call a "tool" between the two new tokens."""
    out = []
    for k in range(n):
        a, b = 3 + k % 7, 5 + (3 * k) % 11
        out.append([{"role": "user", "content": f"What is {a} plus {b}?"},
                    {"role": "assistant", "content": f"<|tool|>{a}+{b}<|endtool|> The answer is {a + b}."}])
    return out


def build(base: str | Path, out: str | Path, how: str = "modules_to_save", steps: int = 4, seed: int = 0) -> Path:
    """Train (``steps`` AdamW steps of 4 chats, lr 1e-3) and save the adapter with its tokenizer in ``out``.

    Args:
        base: the base model folder (a Hugging Face causal LM with a chat template).
        out: the adapter folder to write (``adapter_config.json``, ``adapter_model.safetensors``, the tokenizer).
        how: ``modules_to_save`` (full copies of ``embed_tokens`` and ``lm_head``) or
            ``trainable_token_indices`` (the new tokens' rows only).
        steps: training steps (0: the adapter as initialised, LoRA B zero).
        seed: torch seed (the data are fixed).

    Returns:
        ``out``.
    """
    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM, AutoTokenizer

    torch.manual_seed(seed)
    tok = AutoTokenizer.from_pretrained(str(base))
    tok.add_special_tokens({"additional_special_tokens": NEW_TOKENS})
    model = AutoModelForCausalLM.from_pretrained(str(base), dtype=torch.float32)
    model.resize_token_embeddings(len(tok))
    extra = ({"modules_to_save": ["embed_tokens", "lm_head"]} if how == "modules_to_save" else
             {"trainable_token_indices": {"embed_tokens": tok.convert_tokens_to_ids(NEW_TOKENS)}})
    cfg = LoraConfig(r=4, lora_alpha=8, target_modules=["q_proj", "v_proj"], lora_dropout=0.0,
                     task_type="CAUSAL_LM", **extra)
    model = get_peft_model(model, cfg)
    model.train()
    opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-3)
    texts = [tok.apply_chat_template(c, tokenize=False) for c in _chats(4 * max(steps, 1))]
    tok.padding_side = "right"
    pad = tok.pad_token_id if tok.pad_token_id is not None else tok.eos_token_id
    for step in range(steps):
        enc = tok(texts[4 * step:4 * step + 4], return_tensors="pt", padding=True)
        labels = enc["input_ids"].masked_fill(enc["attention_mask"] == 0, -100)
        loss = model(input_ids=enc["input_ids"].masked_fill(enc["attention_mask"] == 0, pad),
                     attention_mask=enc["attention_mask"], labels=labels).loss
        loss.backward()
        opt.step()
        opt.zero_grad()
    model.eval()
    out = Path(out)
    model.save_pretrained(str(out))
    tok.padding_side = "left"
    tok.save_pretrained(str(out))
    card = {"nominal_label": "instruction", "kind": "added-tokens", "how": how, "steps": steps}
    (out / "README.md").write_text("---\n" + "".join(f"{k}: {v}\n" for k, v in card.items()) + "---\n"
                                   f"LoRA adapter trained with two added special tokens ({', '.join(NEW_TOKENS)}); "
                                   "built by examples/build_added_tokens_adapter.py.\n", encoding="utf-8")
    cfg_path = out / "adapter_config.json"  # name the base by its hub id, as a published adapter does
    data = json.loads(cfg_path.read_text(encoding="utf-8"))
    data["base_model_name_or_path"] = "HuggingFaceTB/SmolLM2-135M-Instruct"
    cfg_path.write_text(json.dumps(data, indent=2), encoding="utf-8")
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out")
    ap.add_argument("--how", choices=("modules_to_save", "trainable_token_indices"), default="modules_to_save")
    ap.add_argument("--steps", type=int, default=4)
    ap.add_argument("--base", default=None, help="base model folder (default: the embedded SmolLM2-135M-Instruct)")
    args = ap.parse_args()
    base = args.base
    if base is None:
        from auditor.inspect.base_model import resolve_base

        base = resolve_base(None).path
    print(build(base, args.out, args.how, args.steps))


if __name__ == "__main__":
    main()
