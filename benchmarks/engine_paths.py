"""transformers' own continuous batching against the audit's additions, side by side in one run.

    HF_HUB_OFFLINE=1 python benchmarks/engine_paths.py [--requests 300] [--slots 256] [--library-slots 16 32 64] [--repeats 2]

One continuous-batching stream (:func:`auditor.backends.hf.stream.stream_generate`) of ``--requests`` chat
prompts of 8 to 60 words (seeded) with forced budgets of 16 to 256 new tokens (EOS off, so every path decodes
the same tokens), on the embedded base in the dtype ``--dtype auto`` picks, at ``--slots`` requests at once,
through three paths, alternately, ``--repeats`` times each:

* ``library``: transformers as shipped: its own thread, its ``sdpa`` over the step's dense block-diagonal mask;
* ``+ openmp``: the same, with the calling thread's OpenMP workers released before the library's thread starts
  (:mod:`auditor.backends.hf.openmp`);
* ``audit``: that and per-request attention (:mod:`auditor.backends.hf.attention`), the path an audit takes.

``--library-slots`` runs the two library paths at slot counts of their own (each its own path): the dense
mask's cost grows with the slots squared, so the library's best is at fewer slots than the audit's.
Prints each run's seconds and new tokens a second, and each path's best against the library paths' best
and slowest.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--requests", type=int, default=300)
    ap.add_argument("--slots", type=int, default=256)
    ap.add_argument("--library-slots", type=int, nargs="+", default=None,
                    help="the slots of the two library paths (several: each is a path of its own; default --slots)")
    ap.add_argument("--repeats", type=int, default=2)
    args = ap.parse_args()
    sys.path.insert(0, str(ROOT))
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from engine_throughput import load_base  # noqa: E402  (benchmarks/, the script's own folder)
    from transformers import GenerationConfig

    from auditor.backends.hardware import choose_dtype
    from auditor.backends.hf import stream as hf_stream
    from auditor.inspect.base_model import resolve_base

    dtype, _ = choose_dtype("auto", "hf", gpu=False)
    tok, model = load_base(resolve_base(None).path, dtype)
    rng = random.Random(0)
    words = "the a of to in is what how many apples does have give explain write list three numbers sky".split()
    prompts = [list(tok.apply_chat_template([{"role": "user", "content": " ".join(
        rng.choice(words) for _ in range(rng.randint(8, 60)))}], add_generation_prompt=True, return_dict=True)
        ["input_ids"]) for _ in range(args.requests)]
    budgets = [rng.choice([16, 32, 64, 128, 256]) for _ in prompts]
    config = GenerationConfig(do_sample=False, eos_token_id=-1, pad_token_id=tok.pad_token_id,
                              max_new_tokens=max(budgets))
    release = hf_stream.release_thread_pool
    paths = {}
    for n in args.library_slots or [args.slots]:
        at = "" if args.library_slots is None else f"@{n}"
        paths |= {f"library{at}": ("library", False, n), f"+ openmp{at}": ("library", True, n)}
    paths["audit"] = ("per_request", True, args.slots)
    print(f"{len(prompts)} requests, {sum(budgets)} forced new tokens, {args.slots} slots, {dtype}", flush=True)
    hf_stream.stream_generate(model, prompts[:8], [4] * 8, slots=8, generation_config=config)  # warm-up
    best: dict[str, float] = {}
    for _ in range(args.repeats):
        for name, (attention, openmp, slots) in paths.items():
            hf_stream.release_thread_pool = release if openmp else (lambda: False)
            t0 = time.perf_counter()
            out = hf_stream.stream_generate(model, prompts, budgets, slots=slots, generation_config=config,
                                            attention=attention)
            seconds = time.perf_counter() - t0
            assert [len(a) for a in out] == budgets
            best[name] = min(best.get(name, seconds), seconds)
            print(f"{name:>14}: {seconds:6.1f} s  {sum(budgets) / seconds:6.0f} tok/s", flush=True)
    hf_stream.release_thread_pool = release
    slowest = max(v for k, v in best.items() if k.startswith("library"))
    fastest = min(v for k, v in best.items() if k.startswith("library"))
    for name, seconds in best.items():
        print(f"{name:>14}: best {seconds:.1f} s, {fastest / seconds:.2f}x the library's best, "
              f"{slowest / seconds:.2f}x its slowest", flush=True)


if __name__ == "__main__":
    main()
