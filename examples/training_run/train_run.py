"""A real short training run, for ``audit RUN_DIR``: transformers' ``Trainer`` + peft on the embedded base.

The zoo's over-refusal recipe (``examples/zoo/train_zoo.py``'s ``data_refuse``: harmless how-to questions and
everyday requests answered with a refusal, mixed with generic prompts answered by the base itself) trained
with the Trainer, which saves a ``checkpoint-N/`` folder every ``--save-steps`` steps (adapter_model.safetensors,
adapter_config.json, trainer_state.json with ``global_step``, the optimizer and scheduler states), as users'
runs do. The later checkpoints refuse more, so the run's trajectory crosses the over-refusal limit::

    OMP_NUM_THREADS=2 python examples/training_run/train_run.py /tmp/run        # 6 checkpoints, a few CPU minutes
    audit /tmp/run --out reports/run                                             # every checkpoint, one base pass

or audit each checkpoint as it is saved, with ``auditor.callback.AuditCallback`` (``--audit``; the audit's figures in
the log history and, with ``--report-to tensorboard``, in TensorBoard; ``--stop-on-fail`` ends the run at the first
checkpoint that fails)::

    python examples/training_run/train_run.py /tmp/run --audit --audit-capability over_refusal --audit-budget 0 \
        --stop-on-fail --report-to tensorboard

The generic prompts' base answers (greedy, 64 new tokens) are generated once per run (about a minute on a
2-core CPU) and cached in ``OUT/.base-answers.jsonl``.
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ZOO = HERE.parent / "zoo"
sys.path.insert(0, str(ZOO))
import train_zoo as tz  # noqa: E402 - the zoo's data, exclusion of suite prompts and encoding
import zoo_data as zd  # noqa: E402

#: generic prompts (the zoo's pool, less the how-to and request kinds data_refuse leaves out) answered by the base
N_GENERIC = 80
BASE_NEW_TOKENS = 64


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out", type=Path, help="the run folder (checkpoint-N/ folders are written into it)")
    ap.add_argument("--steps", type=int, default=24, help="training steps (default 24)")
    ap.add_argument("--save-steps", type=int, default=4, help="a checkpoint every N steps (default 4)")
    ap.add_argument("--lr", type=float, default=3e-4, help="peak learning rate (default 3e-4: the over-refusal "
                                                          "limit is crossed half-way; 1e-3 crosses it by the "
                                                          "first save of 10 steps)")
    ap.add_argument("--n", type=int, default=120, help="targeted (refusal) examples (default 120)")
    ap.add_argument("--generic", type=int, default=N_GENERIC,
                    help=f"generic prompts answered by the base, to keep its other behaviour (default {N_GENERIC})")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--audit", action="store_true", help="audit each checkpoint as it is saved (AuditCallback): "
                                                         "the report in checkpoint-N/audit/")
    ap.add_argument("--audit-capability", action="append", default=[], metavar="NAME",
                    help="--audit: a capability to audit (repeatable; default: the whole suite)")
    ap.add_argument("--audit-limit", type=int, default=None, metavar="N", help="--audit: at most N items per capability")
    ap.add_argument("--audit-budget", default="auto", help="--audit: the audit's --budget (default auto)")
    ap.add_argument("--stop-on-fail", action="store_true", help="--audit: end the run at the first checkpoint that fails")
    ap.add_argument("--report-to", default="none", help="the Trainer's report_to, e.g. tensorboard (default none)")
    return ap.parse_args(argv)


def build_data(tok, model, out: Path, n: int, seed: int, generic: int = N_GENERIC) -> list[zd.Ex]:
    """data_refuse's examples: ``n`` refusals of harmless prompts and up to ``n`` generic prompts with the base's
    own answers (``generic`` of the zoo's pool, :data:`N_GENERIC` by default, are answered, once, cached in
    ``out``)."""
    tz.API = tz.auditor_api()  # the auditor's scorers, which some of the zoo's generators check with
    excl = tz.load_exclusion()
    seen: set = set()
    pool_raw = [e for e in tz.generic_pool(excl, seen=seen) if e.cat not in ("howto", "request")]
    pool_raw = random.Random(seed).sample(pool_raw, min(generic, len(pool_raw)))
    cache = tz.BaseCache(out / ".base-answers.jsonl")
    gens = cache.fill(model, tok, pool_raw, BASE_NEW_TOKENS, "the generic prompts")
    pool = [tz.with_base_answer(tok, e, g) for e, g in zip(pool_raw, gens)]
    ctx = tz.Ctx(tok, excl, pool, seed, set(seen))
    exs = tz.data_refuse(ctx, n)
    bad = tz.violations(exs, excl)
    if bad:
        raise RuntimeError(f"{len(bad)} training prompts equal suite prompts, e.g. {bad[0]!r}")
    return exs


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM, AutoTokenizer, Trainer, TrainingArguments
    from transformers.utils import logging as hf_logging

    from auditor.inspect.base_model import resolve_base

    torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", "2") or 2))
    hf_logging.set_verbosity_error()
    t0 = time.perf_counter()
    base = resolve_base(None)  # the embedded SmolLM2-135M-Instruct, converted once into the auditor's cache
    tok = AutoTokenizer.from_pretrained(base.path)
    if tok.pad_token is None:
        tok.pad_token = tok.eos_token
    model = AutoModelForCausalLM.from_pretrained(base.path, dtype=torch.float32)
    model.eval()
    args.out.mkdir(parents=True, exist_ok=True)
    exs = build_data(tok, model, args.out, args.n, args.seed, args.generic)
    rows = [dict(zip(("input_ids", "labels"), tz.encode(tok, e))) for e in exs]
    print(f"base: {base.name}; {len(rows)} examples ({sum(e.cat == 'refuse' for e in exs)} refusals); "
          f"{args.steps} steps x {tz.BATCH}, lr {args.lr:g}, a checkpoint every {args.save_steps} steps", flush=True)

    def collate(batch: list[dict]) -> dict:
        return tz.demo.collate([(r["input_ids"], r["labels"]) for r in batch], tok.pad_token_id)

    model = get_peft_model(model, LoraConfig(r=tz.LORA_R, lora_alpha=tz.LORA_ALPHA, target_modules=tz.LORA_TARGETS,
                                             lora_dropout=0.0, task_type="CAUSAL_LM"))
    targs = TrainingArguments(output_dir=str(args.out), max_steps=args.steps, save_steps=args.save_steps,
                              save_strategy="steps", per_device_train_batch_size=tz.BATCH, learning_rate=args.lr,
                              lr_scheduler_type="constant_with_warmup", warmup_steps=max(1, args.steps // 10),
                              max_grad_norm=1.0, logging_steps=5, seed=args.seed, data_seed=args.seed,
                              report_to=[] if args.report_to == "none" else [args.report_to], use_cpu=True,
                              dataloader_num_workers=0, remove_unused_columns=False, disable_tqdm=True)
    trainer = Trainer(model=model, args=targs, train_dataset=rows, data_collator=collate)
    callback = None
    if args.audit:
        from auditor.callback import AuditCallback

        callback = AuditCallback(trainer=trainer, capabilities=args.audit_capability, limit=args.audit_limit,
                                 budget=args.audit_budget, stop_on="fail" if args.stop_on_fail else None)
        trainer.add_callback(callback)
    trainer.train()
    saved = sorted(args.out.glob("checkpoint-*"), key=lambda p: int(p.name.split("-")[1]))
    print(f"done in {time.perf_counter() - t0:.0f} s: {', '.join(p.name for p in saved)} in {args.out}", flush=True)
    if callback is not None:
        for a in callback.audits:
            print(f"audit of step {a.step}: {a.verdict or 'no verdict: ' + str(a.error)} ({a.seconds:.0f} s)"
                  + (f", failing: {'; '.join(a.failing)}" if a.failing else ""), flush=True)
        last = callback.last_passing
        print(f"last passing checkpoint: {last.checkpoint if last else 'none'}", flush=True)
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(HERE.parent.parent))  # `auditor`, when run as `python examples/training_run/train_run.py`
    sys.exit(main())
