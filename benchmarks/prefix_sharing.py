"""Prefix sharing in a mixed stream, on and off, side by side in one run.

    HF_HUB_OFFLINE=1 python benchmarks/prefix_sharing.py --data-dir path/to/data [--n 64] [--shots 5]

A mixed continuous-batching stream (:func:`auditor.backends.hf_stream.stream_generate` with ``variants``: the
base and an adapter in one stream, the CPU default) of ``--n`` GSM8K questions behind one ``--shots``-shot
prefix (the first questions of ``gsm8k_test.jsonl`` with their reference answers), each asked of the embedded
base and of ``examples/adapters/terse-instruct-r8``, 32 new tokens each, greedy, in the dtype ``--dtype auto``
picks. It runs with the prompt pages shared per variant (the default) and with sharing off
(``share_prefix=False``), alternately, ``--repeats`` times each, and prints the seconds, the ratio, and how many
answers differ (bf16 rounds differently where a prefix's keys were computed in another step). The demo's
zero-shot suite shares only the chat template's first page; this is the few-shot case where sharing matters.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--data-dir", type=Path, required=True, help="holds gsm8k_test.jsonl")
    ap.add_argument("--n", type=int, default=64, help="questions (each asked of the base and the adapter)")
    ap.add_argument("--shots", type=int, default=5)
    ap.add_argument("--slots", type=int, default=128)
    ap.add_argument("--repeats", type=int, default=2)
    args = ap.parse_args()
    sys.path.insert(0, str(ROOT))
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from engine_throughput import load_base  # noqa: E402  (benchmarks/, the script's own folder)
    from peft import PeftModel
    from transformers import GenerationConfig

    from auditor.backends.hardware import choose_dtype
    from auditor.backends.hf_stream import stream_generate
    from auditor.inspect.base_model import resolve_base

    rows = [json.loads(line) for line in (args.data_dir / "gsm8k_test.jsonl").read_text().splitlines() if line.strip()]
    shots = "".join(f"Question: {r['question']}\nAnswer: {r['answer']}\n\n" for r in rows[:args.shots])
    questions = rows[args.shots:args.shots + args.n]
    base = resolve_base(None)
    dtype, _ = choose_dtype("auto", "hf", gpu=False)
    tok, model = load_base(base.path, dtype)
    model = PeftModel.from_pretrained(model, str(ROOT / "examples" / "adapters" / "terse-instruct-r8"),
                                      adapter_name="adapter").eval()
    prompts = [list(tok.apply_chat_template([{"role": "user", "content": f"{shots}Question: {r['question']}\nAnswer:"}],
                                            add_generation_prompt=True, return_dict=True)["input_ids"])
               for r in questions]
    prompts, variants = prompts + prompts, ["base"] * len(prompts) + ["adapter"] * len(prompts)
    config = GenerationConfig(do_sample=False, eos_token_id=model.generation_config.eos_token_id,
                              pad_token_id=tok.pad_token_id, max_new_tokens=32)
    print(f"{len(prompts)} requests (base + adapter), {sum(map(len, prompts)) // len(prompts)} prompt tokens each, "
          f"{args.shots}-shot, {args.slots} slots, {dtype}", flush=True)
    seconds: dict[bool, list[float]] = {True: [], False: []}
    answers: dict[bool, list[list[int]]] = {}
    for _ in range(args.repeats):
        for share in (True, False):
            t0 = time.perf_counter()
            answers[share] = stream_generate(model, prompts, [32] * len(prompts), slots=args.slots,
                                             generation_config=config, variants=variants, share_prefix=share)
            seconds[share].append(time.perf_counter() - t0)
            print(f"  prefix pages {'shared per variant' if share else 'not shared'}: {seconds[share][-1]:.1f} s, "
                  f"{sum(map(len, answers[share]))} new tokens", flush=True)
    best = {k: min(v) for k, v in seconds.items()}
    differ = sum(a != b for a, b in zip(answers[True], answers[False]))
    print(f"shared {best[True]:.1f} s vs not shared {best[False]:.1f} s (best of {args.repeats}) -> "
          f"{best[False] / best[True]:.2f}x; answers that differ: {differ} of {len(prompts)}")


if __name__ == "__main__":
    main()
