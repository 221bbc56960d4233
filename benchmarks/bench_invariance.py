"""How many greedy bf16 answers change when only the slot count (the requests decoded beside them) does.

Run from the repository root, alone on the machine::

    HF_HUB_OFFLINE=1 python benchmarks/bench_invariance.py

The suite's first 24 IFEval prompts (48 new tokens each) through one continuous-batching stream of the
embedded base at 24, 8 and 3 slots; prints, for 8 and 3 slots, the answers that differ from the
24-slot stream's and the token where each one diverges (benchmarks/RESULTS.md, "Throughput").
"""

from __future__ import annotations

import json
from pathlib import Path

import torch
from transformers import AutoModelForCausalLM, AutoTokenizer, GenerationConfig

from auditor.backends.hf.stream import stream_generate
from auditor.inspect.base_model import resolve_base

REPO = Path(__file__).resolve().parent.parent


def main() -> None:
    path = str(resolve_base(None).path)
    tok = AutoTokenizer.from_pretrained(path)
    model = AutoModelForCausalLM.from_pretrained(path, dtype=torch.bfloat16).eval()
    rows = [json.loads(line) for line in (REPO / "auditor/data/suites/builtin/ifeval.jsonl").open()][:24]
    prompts = [list(tok.apply_chat_template([{"role": "user", "content": r["prompt"]}], add_generation_prompt=True,
                                            return_dict=False)) for r in rows]
    config = GenerationConfig(do_sample=False, eos_token_id=model.generation_config.eos_token_id,
                              pad_token_id=tok.pad_token_id, max_new_tokens=48)
    outs = {slots: stream_generate(model, prompts, [48] * len(prompts), slots=slots, generation_config=config)
            for slots in (24, 8, 3)}
    ref = outs[24]
    for slots in (8, 3):
        changed = [(j, next((t for t, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b))))
                   for j, (a, b) in enumerate(zip(outs[slots], ref)) if a != b]
        print(f"{slots} slots: {len(changed)} of {len(ref)} answers differ from 24 slots'"
              + "".join(f"; prompt {j} from token {t}" for j, t in changed))


if __name__ == "__main__":
    main()
