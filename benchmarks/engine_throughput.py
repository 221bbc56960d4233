"""Part (e) of bench_audit.py: the audit's generation throughput beside the raw engine's best, on the
same machine in one run, and what the hardware allows.

* **raw engine**: plain ``model.generate`` (static batching, KV cache, greedy) of the base with
  ``min_new_tokens = max_new_tokens = FORCED`` (no early stop), on the smoke suite's own rendered
  prompts, at each batch size of a sweep, in the dtype the audit runs in; its best tokens/s is the
  engine's best on this machine;
* **audit**: the ``audit`` command as a user runs it (the README's demo: terse-instruct-r8 on the
  smoke suite, every round included, answer cache off), read back from its results.json: new tokens of
  both variants over the whole generation stage (``run.timings.generate_s``), and the prompt tokens
  it prefilled; each stream timed (``benchmarks/timed_streams.py``: in the demo one mixed stream a look,
  the suite's items first, then each round's);
* **the same workload on the raw engine**: the audit's prompt tokens at the sweep's best prefill rate
  (a ``max_new_tokens=1`` call on the same batch) plus its new tokens at the best decoding rate (the
  forced tokens' wall without that prefill): the seconds plain ``generate`` would need for the audit's
  own mix of prefill and decoding, against the audit's generation stage (``workload_ratio``); the
  new-token ratio alone charges the audit for prefilling 3 prompt tokens a new one where the raw loop
  prefills about 1.4;
* **hardware limit**: FLOPs per token (2 × the parameters a token passes through, embeddings aside,
  plus the output head) × tokens/s against the cores' peak (cores × clock × FLOPs per cycle of the
  dtype's vector unit), and bytes per decoding step (the weights, read once per step) against the
  memory bandwidth (measured here with a large copy).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
FORCED = 64
SWEEP = (8, 24, 64, 128)


def memory_bandwidth_gbs(size_mb: int = 512, repeats: int = 5) -> float:
    """Copy bandwidth (read + write, GB/s) of a large array: the memory's speed as decoding sees it."""
    import numpy as np

    a = np.ones(size_mb * 2**20 // 8)
    b = np.empty_like(a)
    best = 0.0
    for _ in range(repeats):
        t0 = time.perf_counter()
        np.copyto(b, a)
        best = max(best, 2 * a.nbytes / (time.perf_counter() - t0) / 1e9)
    return best


def peak_gflops(dtype: str) -> tuple[float, str]:
    """The cores' peak (GFLOP/s) for the dtype's matrix products, and how it was computed."""
    import torch

    from auditor.backends.hardware import cpu_flags

    if torch.cuda.is_available():
        return float("nan"), "GPU: not estimated"
    mhz = 0.0
    try:
        mhz = max(float(ln.split(":")[1]) for ln in open("/proc/cpuinfo") if ln.startswith("cpu MHz"))
    except (OSError, ValueError):
        pass
    flags = cpu_flags()
    lanes = 16 if "avx512f" in flags else 8 if "avx2" in flags else 4
    per_cycle = 2 * 2 * lanes  # two FMA units, an FMA is two FLOPs
    if dtype == "bfloat16" and "amx_bf16" in flags:
        per_cycle = 1024  # AMX's tile unit: 1,024 bf16 operations a cycle a core (Intel, 4th Gen Xeon)
    elif dtype == "bfloat16" and "avx512_bf16" in flags:
        per_cycle *= 2  # vdpbf16ps: pairs of bf16 products per fp32 lane
    cores = os.cpu_count() or 1
    return cores * mhz / 1000 * per_cycle, f"{cores} cores × {mhz / 1000:.2f} GHz × {per_cycle} FLOP/cycle"


def _params(model: Any) -> tuple[int, int]:
    """(parameters a token's forward multiplies by, embeddings aside but the output head counted; bytes
    read per decoding step: every weight once)."""
    config = model.config
    total = sum(p.numel() for p in model.parameters())
    embed = int(config.vocab_size) * int(config.hidden_size)
    head = embed  # tied or not, the output head is one vocab × hidden product per token
    per_token = total - embed + head if getattr(config, "tie_word_embeddings", False) else total - embed
    nbytes = sum(p.numel() * p.element_size() for p in model.parameters())
    return per_token, nbytes


def load_base(base_path: Path, dtype: str) -> tuple[Any, Any]:
    """The base's tokenizer and model in ``dtype`` (a torch dtype name), in eval mode, its weights copied
    out of the memory-mapped file as the audit loads them."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(base_path))
    model = AutoModelForCausalLM.from_pretrained(str(base_path), dtype=getattr(torch, dtype)).eval()
    for p in model.parameters():
        p.data = p.data.clone()
    return tok, model


def raw_sweep(base_path: Path, dtype: str, prompts: list[str]) -> dict[int, dict[str, float]]:
    """Static ``generate`` of the base at each batch size of :data:`SWEEP`, :data:`FORCED` forced tokens."""
    import torch

    tok, model = load_base(base_path, dtype)
    tok.padding_side = "left"
    out = {}
    kw = dict(do_sample=False, temperature=None, top_p=None, top_k=None, pad_token_id=tok.pad_token_id)
    with torch.inference_mode():
        model.generate(**tok(["Hello"], return_tensors="pt"), max_new_tokens=4, **kw)
        for b in SWEEP:
            batch = (prompts * (b // len(prompts) + 1))[:b]
            enc = tok(batch, return_tensors="pt", padding=True, add_special_tokens=False)
            t0 = time.perf_counter()
            model.generate(**enc, max_new_tokens=1, **kw)  # the prefill alone (and one token)
            prefill = time.perf_counter() - t0
            t0 = time.perf_counter()
            model.generate(**enc, max_new_tokens=FORCED, min_new_tokens=FORCED, **kw)
            wall = time.perf_counter() - t0
            prompt = int(enc["attention_mask"].sum())  # the prompts' own tokens, padding left out
            out[b] = {"tokens_per_s": round(b * FORCED / wall, 1), "ms_per_step": round(1000 * wall / FORCED, 1),
                      "processed_per_s": round((prompt + b * FORCED) / wall, 1),
                      "prefill_per_s": round(prompt / prefill, 1),
                      "decode_per_s": round(b * (FORCED - 1) / max(wall - prefill, 1e-9), 1)}
            print(f"    raw generate {dtype} batch {b}: {out[b]['tokens_per_s']} tok/s, "
                  f"{out[b]['ms_per_step']} ms/step; prefill {out[b]['prefill_per_s']} prompt tok/s, "
                  f"decoding {out[b]['decode_per_s']} tok/s", flush=True)
    per_token, nbytes = _params(model)
    out[0] = {"flops_per_token": 2.0 * per_token, "bytes_per_step": float(nbytes)}
    return out


def audit_run(work: Path, extra: list[str]) -> dict[str, Any]:
    """The README's demo audit (one adapter), answer cache off; its results.json's run record."""
    out, streams = work / "audit-e", work / "streams.json"
    # the command a user runs, each of its streams timed (benchmarks/timed_streams.py)
    cmd = [sys.executable, str(ROOT / "benchmarks" / "timed_streams.py"), str(streams),
           str(ROOT / "examples" / "adapters" / "terse-instruct-r8"), "--out", str(out), "--no-cache", "-q", *extra]
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if proc.returncode not in (0, 1):
        raise SystemExit(f"audit failed ({proc.returncode}): {proc.stderr[-2000:]}")
    res = json.loads((out / "results.json").read_text())
    return {"wall_s": wall, "result": res, "streams": json.loads(streams.read_text())}


def prompt_tokens(base_path: Path, res: dict[str, Any]) -> int:
    """Prompt tokens the audit prefilled (every item's rendered prompt, once per variant)."""
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(base_path))
    n = 0
    for it in res["items"]:
        for variant in ("base", "adapter"):
            text = (it.get("rendered_prompts") or {}).get(variant, it["rendered_prompt"])
            n += len(tok(text, add_special_tokens=False)["input_ids"])
    return n


def part_e(base_path: Path, suite: Any, extra_args: list[str]) -> tuple[dict[str, Any], list[str]]:
    """Run part (e); returns its figures and the lines to print."""
    work = Path(tempfile.mkdtemp(prefix="bench-e-"))
    a = audit_run(work, extra_args)
    run = a["result"]["run"]
    dtype = run["dtype"]
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(base_path))
    prompts = [tok.apply_chat_template(list(i.messages), tokenize=False, add_generation_prompt=True)
               for i in suite.items[:128]]
    raw = raw_sweep(base_path, dtype, prompts)
    shape = raw.pop(0)
    best_b = max(raw, key=lambda b: raw[b]["tokens_per_s"])
    best = raw[best_b]["tokens_per_s"]
    best_processed = max(r["processed_per_s"] for r in raw.values())
    best_prefill = max(r["prefill_per_s"] for r in raw.values())
    best_decode = max(r["decode_per_s"] for r in raw.values())
    new = sum(run["new_tokens"].values())
    gen_s = run["timings"]["generate_s"]
    audit_tps = new / gen_s
    ptoks = prompt_tokens(base_path, a["result"])
    peak, how = peak_gflops(dtype)
    bw = memory_bandwidth_gbs()
    flops = shape["flops_per_token"]
    compute_limit = peak * 1e9 / flops
    step_bytes = shape["bytes_per_step"]
    figures = {"dtype": dtype, "raw": raw, "raw_best_tokens_per_s": best, "raw_best_batch": best_b,
               "audit_new_tokens": new, "audit_prompt_tokens": ptoks, "audit_generate_s": gen_s,
               "audit_wall_s": a["wall_s"], "audit_tokens_per_s": audit_tps, "ratio": audit_tps / best,
               "audit_all_tokens_per_s": (new + ptoks) / gen_s, "flops_per_token": flops, "peak_gflops": peak,
               "peak_how": how, "bandwidth_gbs": bw, "bytes_per_step": step_bytes,
               "compute_limit_tokens_per_s": compute_limit, "hf": run.get("hf"), "verdict": a["result"]["verdict"]["verdict"],
               "drift": a["result"]["drift"], "raw_best_processed_per_s": best_processed,
               "processed_ratio": (new + ptoks) / gen_s / best_processed, "streams": a["streams"],
               # the audit's own workload (its prompt and new tokens) at the raw engine's best prefill and best
               # decoding rates, each at its best batch: what the engine alone would take for this work
               "raw_best_prefill_per_s": best_prefill, "raw_best_decode_per_s": best_decode,
               "workload_at_raw_s": ptoks / best_prefill + new / best_decode}
    figures["workload_ratio"] = figures["workload_at_raw_s"] / gen_s
    lines = [
        f"(e) throughput, dtype {dtype} (--dtype auto: {run.get('dtype_reason', '')}):",
        "    raw model.generate, 64 forced tokens, the suite's prompts: "
        + ", ".join(f"batch {b} {r['tokens_per_s']} tok/s ({r['ms_per_step']} ms/step)" for b, r in raw.items())
        + f"; best {best} tok/s at batch {best_b}",
        f"    audit (demo, cache off, every round): {new} new tokens in {gen_s:.1f} s of generation "
        f"({a['wall_s']:.1f} s wall) = {audit_tps:.1f} tok/s -> {audit_tps / best:.2f}x the raw best (goal >= 0.8); "
        f"with its {ptoks} prompt tokens {figures['audit_all_tokens_per_s']:.1f} tok/s processed",
        f"    prompt + new tokens processed per second: audit {figures['audit_all_tokens_per_s']:.1f}, raw best "
        f"{best_processed:.1f} (its prompts' own tokens + {FORCED} forced a row) -> {figures['processed_ratio']:.2f}x",
        f"    the audit's workload at the raw engine's best rates ({ptoks} prompt tokens at {best_prefill:.0f} "
        f"prefilled tok/s + {new} new at {best_decode:.0f} decoded tok/s): {figures['workload_at_raw_s']:.1f} s, "
        f"the audit took {gen_s:.1f} s -> {figures['workload_ratio']:.2f}x the raw engine's speed on this workload",
        *(f"    stream {k}: {s['requests']} requests at {s['slots']} "
          f"slots, {s['prompt_tokens']} prompt + {s['new_tokens']} new tokens in {s['wall_s']:.1f} s = "
          f"{s['new_tokens'] / s['wall_s']:.1f} new tok/s; half the requests ended at {s['ended_50pct_s']:.1f} s, "
          f"90% at {s['ended_90pct_s']:.1f} s, the last at {s['ended_100pct_s']:.1f} s"
          for k, s in enumerate(a["streams"], 1)),
        f"    hardware: {flops / 1e9:.2f} GFLOP per token, peak {peak:.0f} GFLOP/s ({how}) -> at most "
        f"{compute_limit:.0f} tok/s by compute (prefill and decoding alike); {step_bytes / 2**20:.0f} MiB read per "
        f"decoding step at {bw:.1f} GB/s copy bandwidth -> {bw * 1e9 / step_bytes:.1f} steps/s, so a batch of B rows "
        f"decodes at most {bw * 1e9 / step_bytes:.1f}·B tok/s by bandwidth; the raw best reaches "
        f"{100 * best / compute_limit:.0f}% of the compute limit, the audit {100 * figures['audit_all_tokens_per_s'] / compute_limit:.0f}% "
        "(prompt tokens counted)",
    ]
    return figures, lines
