"""How many greedy answers change when only the slot count (the requests decoded beside them) does.

Run from the repository root, alone on the machine::

    HF_HUB_OFFLINE=1 python benchmarks/bench_invariance.py [--prompts 96] [--dtype bfloat16 float32]

The builtin suite's first ``--prompts`` generated prompts (IFEval, math, over-refusal, verbosity,
abstention; 64 new tokens each, EOS on) through one continuous-batching
stream of the embedded base at 96, 24, 8 and 3 slots, in each dtype, with torch's plain linear layers, with
:class:`auditor.backends.hf.invariant.FixedRowsLinear` in their place padding every last block to a full one, and
with it as an audit runs it on the CPU (short last blocks where they give a full block's bits), one after the
other in one process. Prints, for each, the answers that differ from the first slot count's, the
token where each diverges, and each stream's seconds (benchmarks/RESULTS.md, "bench_invariance.py").
"""

from __future__ import annotations

import argparse
import copy
import json
import time
from pathlib import Path

import torch
from transformers import AutoModelForCausalLM, AutoTokenizer, GenerationConfig

from auditor.backends.hf.invariant import make_batch_invariant
from auditor.backends.hf.stream import stream_generate
from auditor.inspect.base_model import resolve_base

REPO = Path(__file__).resolve().parent.parent
SLOTS = (96, 24, 8, 3)
#: the builtin suite's generated prompts, in this order (IFEval's 24 first)
FILES = ("ifeval.jsonl", "math.jsonl", "over_refusal.jsonl", "verbosity.jsonl", "abstention.jsonl")


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--prompts", type=int, default=96)
    ap.add_argument("--dtype", nargs="+", default=["bfloat16", "float32"])
    ap.add_argument("--variants", nargs="+", default=["plain linear", "fixed rows, full blocks only", "fixed rows"],
                    help="the linear layers compared: 'plain linear' (torch's), 'fixed rows, full blocks only' (every "
                         "last block padded to ROWS rows), 'fixed rows' (short last blocks where they give the same "
                         "bits: what an audit runs)")
    args = ap.parse_args()
    path = str(resolve_base(None).path)
    tok = AutoTokenizer.from_pretrained(path)
    texts = [r.get("prompt") or r["question"] for f in FILES
             for r in map(json.loads, (REPO / "auditor/data/suites/builtin" / f).open())][:args.prompts]
    prompts = [list(tok.apply_chat_template([{"role": "user", "content": t}], add_generation_prompt=True,
                                            return_dict=True)["input_ids"]) for t in texts]
    for dtype in args.dtype:
        plain = AutoModelForCausalLM.from_pretrained(path, dtype=getattr(torch, dtype)).eval()
        fixed = copy.deepcopy(plain)
        make_batch_invariant(fixed)
        full_blocks = copy.deepcopy(plain)
        make_batch_invariant(full_blocks, use_short_blocks=False)
        config = GenerationConfig(do_sample=False, eos_token_id=plain.generation_config.eos_token_id,
                                  pad_token_id=tok.pad_token_id, max_new_tokens=64)
        answers = {}
        for name, model in (("plain linear", plain), ("fixed rows, full blocks only", full_blocks),
                            ("fixed rows", fixed)):
            if name not in args.variants:
                continue
            outs, secs = {}, {}
            for slots in SLOTS:
                t0 = time.perf_counter()
                outs[slots] = stream_generate(model, prompts, [64] * len(prompts), slots=slots,
                                              generation_config=config)
                secs[slots] = time.perf_counter() - t0
            ref = outs[SLOTS[0]]
            print(f"{dtype}, {name}: " + ", ".join(f"{s} slots {secs[s]:.1f} s" for s in SLOTS), flush=True)
            for slots in SLOTS[1:]:
                changed = [(j, next((t for t, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b))))
                           for j, (a, b) in enumerate(zip(outs[slots], ref)) if a != b]
                print(f"  {slots} slots: {len(changed)} of {len(ref)} answers differ from {SLOTS[0]} slots'"
                      + "".join(f"; prompt {j} from token {t}" for j, t in changed[:8])
                      + ("; …" if len(changed) > 8 else ""), flush=True)
            answers[name] = outs
        if {"fixed rows", "fixed rows, full blocks only"} <= answers.keys():
            same = sum(a == b for s in SLOTS for a, b in zip(answers["fixed rows"][s],
                                                            answers["fixed rows, full blocks only"][s]))
            print(f"  fixed rows with short blocks vs full blocks only: {same} of {len(SLOTS) * len(prompts)} "
                  "answers identical", flush=True)


if __name__ == "__main__":
    main()
