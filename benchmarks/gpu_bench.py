"""The hf backend's generation stage on a GPU vs a raw ``model.generate`` loop, no downloads.

    PYTHONPATH=. python benchmarks/gpu_bench.py            # on a GPU machine (under 5 minutes on one H200)
    PYTHONPATH=. python benchmarks/gpu_bench.py --tiny     # a small model on CPU: checks the script itself

Builds everything on the machine: a randomly initialised Llama model with
the shape of Llama-3-8B (hidden 4096, 32 layers, 32 query / 8 key-value
heads, MLP 14336, vocabulary 128,256) in bf16, a random LoRA adapter (r=16,
alpha 32, q/k/v/o projections, non-zero B so it changes the outputs), and a
word-level tokenizer over the same vocabulary with a minimal chat template.
Prompts are random words; a random model rarely emits EOS, so every request
runs to its budget and both sides generate the same number of tokens.

It times the auditor's generation stage (``HFBackend.generate`` on base and
adapter variants, cache off; with its default ``mix_variants="auto"``, and
again with the other choice) and a plain loop of
``model.generate`` over the same prompts and batch size (base with the
adapter disabled, then the adapter), each twice and interleaved so that both
are timed warm, and prints one line:
the ratio raw/audit (goal >= 0.9: the auditor costs at most 10% over raw
generation) and both throughputs in new tokens per second.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from raw_generate import raw_generate_loop  # noqa: E402  (benchmarks/, the script's own folder)

from auditor.backends.hf.backend import HFBackend  # noqa: E402
from auditor.records import Item, Request, Variant  # noqa: E402

SHAPES = {
    "llama-8b": dict(hidden_size=4096, intermediate_size=14336, num_hidden_layers=32, num_attention_heads=32,
                     num_key_value_heads=8, vocab_size=128256, max_position_embeddings=8192, rope_theta=500000.0),
    "tiny": dict(hidden_size=256, intermediate_size=512, num_hidden_layers=2, num_attention_heads=4,
                 num_key_value_heads=2, vocab_size=4096, max_position_embeddings=2048),
}
CHAT_TEMPLATE = ("{% for m in messages %}<|{{ m['role'] }}|> {{ m['content'] }} {% endfor %}"
                 "{% if add_generation_prompt %}<|assistant|>{% endif %}")


def build_tokenizer(vocab_size: int, folder: Path):
    """A word-level tokenizer whose ids cover the whole vocabulary (w0 ... wN), saved to ``folder``."""
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    specials = ["<pad>", "<eos>", "<unk>", "<|user|>", "<|assistant|>", "<|system|>"]
    vocab = {t: k for k, t in enumerate(specials)}
    vocab.update({f"w{k}": k for k in range(len(specials), vocab_size)})
    tok = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, pad_token="<pad>", eos_token="<eos>", unk_token="<unk>",
                                   additional_special_tokens=specials[3:])
    fast.chat_template = CHAT_TEMPLATE
    fast.save_pretrained(folder)
    return fast


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tiny", action="store_true", help="a 2-layer model on CPU, to check the script")
    ap.add_argument("--prompts", type=int, default=128)
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--max-new-tokens", type=int, default=128)
    ap.add_argument("--prompt-words", type=int, default=200)
    args = ap.parse_args()

    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import LlamaConfig, LlamaForCausalLM

    shape = "tiny" if args.tiny else "llama-8b"
    device = "cuda" if torch.cuda.is_available() and not args.tiny else "cpu"
    dtype = "bfloat16" if device == "cuda" else "float32"
    work = Path(tempfile.mkdtemp(prefix="gpu-bench-"))
    base_dir, adapter_dir = work / "base", work / "adapter"
    t_build = time.perf_counter()
    torch.manual_seed(0)
    tok = build_tokenizer(SHAPES[shape]["vocab_size"], base_dir)
    config = LlamaConfig(**SHAPES[shape], pad_token_id=tok.pad_token_id, eos_token_id=tok.eos_token_id,
                         bos_token_id=None, tie_word_embeddings=False)
    with torch.device(device):
        model = LlamaForCausalLM(config).to(getattr(torch, dtype))
    model.generation_config.pad_token_id = tok.pad_token_id
    model.save_pretrained(base_dir)
    lora = LoraConfig(r=16, lora_alpha=32, target_modules=["q_proj", "k_proj", "v_proj", "o_proj"],
                      init_lora_weights=False, task_type="CAUSAL_LM")
    get_peft_model(model, lora).save_pretrained(adapter_dir)
    del model
    if device == "cuda":
        torch.cuda.empty_cache()
    build_s = time.perf_counter() - t_build

    g = torch.Generator().manual_seed(1)
    n_vocab = SHAPES[shape]["vocab_size"]
    items = []
    for k in range(args.prompts):
        n_words = int(args.prompt_words * (0.5 + torch.rand(1, generator=g).item()))
        words = " ".join(f"w{int(i)}" for i in torch.randint(6, n_vocab, (n_words,), generator=g))
        items.append(Item(id=f"p/{k}", capability="bench", group="HOW", messages=({"role": "user", "content": words},), max_new_tokens=args.max_new_tokens, target={}))
    requests = [Request(item=i, variant=v) for i in items for v in ("base", "adapter")]

    backend = HFBackend(base_dir, [Variant.of_folder("adapter", adapter_dir, "random-r16")], batch_size=args.batch_size, dtype=dtype,
                        device=device)
    backend._generate_batch(["w10 w11"], 4)  # warm-up (kernel selection, allocator)
    default_mix = backend.mix_variants  # "auto": mixed batches on the CPU, one variant per call on a GPU

    def audit_stage(mix: bool) -> tuple[float, int]:
        backend.mix_variants = mix
        s0, t0 = backend.stats.generate_s, sum(backend.stats.new_tokens.values())
        backend.generate(requests)  # cache off: every request is generated
        return backend.stats.generate_s - s0, sum(backend.stats.new_tokens.values()) - t0

    model, tokenizer = backend.model, backend.tokenizer
    # each side is timed twice, interleaved (raw, audit, other mixing, raw, audit): the first passes
    # also pay for the allocator's growth and kernel selection; the ratio is taken from the second
    raw1_s, _ = raw_generate_loop(model, tokenizer, items, args.batch_size, device)
    print(f"gpu_bench: first raw pass {raw1_s:.2f} s", flush=True)
    audit1_s, _ = audit_stage(default_mix)
    other_s, _ = audit_stage(not default_mix)
    raw_s, raw_tokens = raw_generate_loop(model, tokenizer, items, args.batch_size, device)
    print(f"gpu_bench: second raw pass {raw_s:.2f} s", flush=True)
    audit_s, audit_tokens = audit_stage(default_mix)
    name = torch.cuda.get_device_name(0) if device == "cuda" else "CPU"
    line = {"device": name, "model": f"random {shape} {dtype}", "lora": "r=16 q,k,v,o", "prompts": len(items),
            "variants": 2, "batch_size": args.batch_size, "max_new_tokens": args.max_new_tokens,
            "mixed_variants": default_mix, "audit_generate_s": round(audit_s, 2), "raw_generate_s": round(raw_s, 2),
            "ratio_raw_over_audit": round(raw_s / audit_s, 3),
            "audit_tok_per_s": round(audit_tokens / audit_s, 1), "raw_tok_per_s": round(raw_tokens / raw_s, 1),
            f"ratio_if_mixed_variants_{not default_mix}": round(raw_s / other_s, 3),
            "first_pass_raw_s": round(raw1_s, 2), "first_pass_audit_s": round(audit1_s, 2),
            "build_s": round(build_s, 1)}
    print("gpu_bench: " + json.dumps(line), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
