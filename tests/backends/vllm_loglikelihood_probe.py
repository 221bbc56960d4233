"""The process of tests/backends/test_vllm.py's log-likelihood test: the vllm backend scores a few real
multiple-choice items under the SmolLM2 base and a demo adapter (its self-check against the hf backend
included), the hf backend scores them too, and the self-check is shown vLLM's base numbers as the adapter's
(what a dropped LoRA returns). Prints one JSON object. A script of its own: vLLM's engine starts its
processes by spawning, which re-imports the main module (not pytest's)."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from auditor.backends.hf.backend import HFBackend
from auditor.backends.vllm.engine import VLLMBackend
from auditor.errors import AuditInputError
from auditor.inspect.base_model import resolve_base
from auditor.records import Item, Request, Variant
from auditor.scorers.loglikelihood import build_target

#: (context, choices, gold): shared contexts, then one item with a context per choice (WinoGrande's partial scoring)
ROWS = [("Question: What is 7 + 5?\nAnswer:", ["12", "13", "11", "75"], 0),
        ("Question: What is 9 times 3?\nAnswer:", ["21", "27", "93", "12"], 1),
        ("The capital of France is", ["Paris", "Berlin", "Madrid"], 0),
        ("Question: Which is heavier, a ton of bricks or a feather?\nAnswer:", ["a feather", "a ton of bricks"], 1)]


def items() -> list[Item]:
    out = [Item(id=f"mc/{k}", capability="mc", group="CAN", messages=({"role": "user", "content": c},),
                max_new_tokens=0, output_type="multiple_choice",
                target=build_target({"choices": ch, "answer": a, "contexts": [c] * len(ch)}))
           for k, (c, ch, a) in enumerate(ROWS)]
    out.append(Item(id="mc/partial", capability="mc", group="CAN", messages=({"role": "user", "content": "_"},),
                    max_new_tokens=0, output_type="multiple_choice",
                    target=build_target({"choices": ["ate a sandwich.", "ate a sandwich."], "answer": 0,
                                         "contexts": ["Tom was hungry, so Tom", "Tom was hungry, so the table"]})))
    return out


def main(adapter: Path, dtype: str) -> None:
    base = resolve_base(None)
    its = items()
    vllm = VLLMBackend(base.path, [Variant.of_folder("adapter", adapter, "a" * 64)], max_rank=8, dtype=dtype)
    vllm.show_progress = False
    gens = vllm.loglikelihoods([Request(item=it, variant=v) for v in ("base", "adapter") for it in its],
                               use_cache=False)
    got = {v: [list(g.loglikelihoods or ()) for g in gens if g.variant == v] for v in ("base", "adapter")}
    hf = HFBackend(base.path, [Variant.of_folder("adapter", adapter, "a" * 64)], dtype=dtype, device="cpu")
    hf.show_progress = False
    ref = {v: [lls for lls, _ in hf.score_choices(v, its)] for v in ("base", "adapter")}
    checks = {v: vllm.ll_check.get(v) for v in ("base", "adapter")}
    recorded = vllm.run_info("adapter")["loglikelihood_check"]
    # vLLM's base numbers given as the adapter's: what the self-check sees when the LoRA is dropped
    base_as_adapter = [(lls, 0) for lls in got["base"][:3]]
    try:
        vllm.check_loglikelihoods("adapter", its[:3], base_as_adapter)
        refusal = None
    except AuditInputError as e:
        refusal = e.one_line()
    print(json.dumps({"vllm": got, "hf": ref, "scored_tokens": [g.scored_tokens for g in gens],
                      "ll_check": checks, "calls": vllm.scoring_calls, "generate_calls": vllm.calls, "run_info": recorded,
                      "refusal": refusal}))


if __name__ == "__main__":
    main(Path(sys.argv[1]), sys.argv[2])
    sys.stdout.flush()
    os._exit(0)  # the engine's processes end with the interpreter; their teardown may abort after the figures
