"""The audit's multiple-choice log-likelihoods against lm-evaluation-harness's own, item by item.

    HF_HUB_OFFLINE=1 python benchmarks/lmeval_agreement.py --data-dir /path/to/data [--n 100] [--seed 0]
        [--benchmarks arc_easy,piqa,...] [--batch-size 32] [--order auditor-first|lm-eval-first]

(``--data-dir`` defaults to ``$AUDITOR_DATA_DIR``; one of them is needed.) On the embedded base in float32 on the
CPU, a seeded sample of ``--n`` items of each benchmark, as its loader (:mod:`auditor.suite.benchmarks`) reads it,
is scored twice in one process, one side after the other:

* ``auditor``: the rows made items (:func:`auditor.suite.rows.item_from_row`, prompt template ``{context}``, the
  ``loglikelihood`` scorer's targets) and scored by the hf backend (:meth:`CachedBackend.loglikelihoods`: its
  tokenisation and one forward pass per item), then :func:`auditor.scorers.loglikelihood.score_loglikelihood`;
* ``lm-eval``: lm-evaluation-harness (Gao et al., Zenodo 10.5281/zenodo.5371628) on the same records: its own
  task (built from its installed task yaml, the sampled records as a local json dataset: nothing is downloaded)
  builds the requests (``construct_requests``), its ``hf`` model (``HFLM``, float32, CPU) computes every
  (context, continuation) log-likelihood through its public ``loglikelihood`` API, and its ``process_results``
  gives acc and acc_norm.

Both sides must ask the same (context, continuation) pairs (checked per item). Reports per benchmark the
agreement of the chosen answer (acc's argmax and acc_norm's), the largest |Δ log-likelihood|, both sides'
accuracies, every item whose chosen answer differs (both sides' log-likelihoods and margins) and each side's
seconds. Writes ``benchmarks/out/lmeval_agreement.json`` and prints a markdown table.
"""

from __future__ import annotations

import argparse
import bz2
import csv
import json
import os
import random
import re
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]

#: name in the report → (loader, split, lm-evaluation-harness task yaml under lm_eval/tasks/)
BENCHMARKS = {
    "arc_easy": ("arc_easy", "test", "arc/arc_easy.yaml"),
    "arc_challenge": ("arc_challenge", "test", "arc/arc_challenge.yaml"),
    "piqa": ("piqa", "validation", "piqa/piqa.yaml"),
    "winogrande": ("winogrande", "validation", "winogrande/default.yaml"),
    "boolq": ("boolq", "validation", "super_glue/boolq/default.yaml"),
    "copa": ("copa", "validation", "super_glue/copa/default.yaml"),
    "openbookqa": ("openbookqa", "test", "openbookqa/openbookqa.yaml"),
    "xcopa_it": ("xcopa", "test.it", "xcopa/default_it.yaml"),
    "xcopa_sw": ("xcopa", "test.sw", "xcopa/default_sw.yaml"),
    "hellaswag": ("hellaswag", "validation", "hellaswag/hellaswag.yaml"),
}


def _jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def harness_docs(loader: str, split: str, path: Path) -> list[dict[str, Any]]:
    """The records of the loader's file as the hub dataset lm-evaluation-harness's task reads holds them (its
    fields and types), one per row, in the file's order."""
    if loader in ("arc_easy", "arc_challenge"):
        docs = []
        for r in _jsonl(path):
            q = r["question"]
            if isinstance(q, dict):  # the release's shape; the hub's has question/choices flat already
                r = {"id": r["id"], "question": q["stem"], "answerKey": r["answerKey"],
                     "choices": {"text": [c["text"] for c in q["choices"]], "label": [c["label"] for c in q["choices"]]}}
            docs.append(r)
        return docs
    if loader == "piqa":
        labels = path.with_name(path.name.removesuffix(".jsonl") + "-labels.lst").read_text().split()
        return [{**r, "label": int(y)} for r, y in zip(_jsonl(path), labels, strict=True)]
    if loader == "boolq":  # SuperGLUE's label: 0 False, 1 True
        return [{**r, "label": int(r["label"] in (True, "true"))} for r in _jsonl(path)]
    if loader == "openbookqa":
        with path.open(encoding="utf-8", newline="") as f:
            table = list(csv.reader(f, delimiter="\t", quoting=csv.QUOTE_NONE))[1:]
        docs = []
        for rid, stem, choices, _, key in table:
            parts = re.split(r"\(([A-D])\) ", choices)
            docs.append({"id": rid, "question_stem": stem, "answerKey": key,
                         "choices": {"text": [t.strip() for t in parts[2::2]], "label": parts[1::2]}})
        return docs
    if loader == "hellaswag" and path.name.endswith(".bz2"):  # llama.cpp's text form: ctx only, all of it as ctx_a
        lines = bz2.decompress(path.read_bytes()).decode("utf-8").split("\n")
        docs = []
        for k in range(0, len(lines) - 1, 6):
            activity, _, ctx = lines[k].partition(": ")
            docs.append({"ind": k // 6, "activity_label": activity, "ctx_a": ctx, "ctx_b": "", "ctx": ctx,
                         "endings": lines[k + 2:k + 6], "label": lines[k + 1]})
        return docs
    return _jsonl(path)  # winogrande, copa, xcopa, hellaswag's jsonl: the hub's records as they are


def harness_task(task_yaml: str, docs: list[dict[str, Any]], tmp: Path) -> Any:
    """lm-evaluation-harness's task from its installed yaml, on ``docs`` as a local json dataset."""
    import lm_eval
    from lm_eval.api.task import ConfigurableTask
    from lm_eval.tasks._yaml_loader import load_yaml

    cfg = load_yaml(Path(lm_eval.__file__).parent / "tasks" / task_yaml)
    f = tmp / f"{cfg['task']}.jsonl"
    f.write_text("".join(json.dumps(d, ensure_ascii=False) + "\n" for d in docs), encoding="utf-8")
    cfg.update(dataset_path="json", dataset_name=None, training_split=None, validation_split=None, test_split="test",
               dataset_kwargs={"data_files": {"test": str(f)}, "cache_dir": str(tmp / "hf_cache")})
    return ConfigurableTask(config=cfg)


def first_argmax(values: list[float]) -> int:
    """``numpy.argmax``: the first of the largest."""
    import numpy as np

    return int(np.argmax(np.array(values, dtype=np.float64)))


def margin(values: list[float], a: int, b: int) -> float:
    return float(values[a] - values[b])


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--data-dir", default=os.environ.get("AUDITOR_DATA_DIR"),
                    help="local benchmark files (default $AUDITOR_DATA_DIR; one of them is needed)")
    ap.add_argument("--n", type=int, default=100, help="items per benchmark (a seeded sample; 0: all)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--benchmarks", default=",".join(BENCHMARKS), help=f"comma-separated, of {list(BENCHMARKS)}")
    ap.add_argument("--batch-size", type=int, default=32, help="lm-evaluation-harness's HFLM batch size")
    ap.add_argument("--order", choices=("auditor-first", "lm-eval-first"), default="auditor-first",
                    help="which side runs first (the timings' order)")
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "out" / "lmeval_agreement.json"))
    args = ap.parse_args()
    if not args.data_dir:
        ap.error("--data-dir DIR (or $AUDITOR_DATA_DIR) is needed: a folder with the benchmarks' files")
    names = [b.strip() for b in args.benchmarks.split(",") if b.strip()]
    unknown = [b for b in names if b not in BENCHMARKS]
    if unknown:
        ap.error(f"unknown benchmark(s) {unknown}; known: {list(BENCHMARKS)}")
    sys.path.insert(0, str(ROOT))
    import torch

    from auditor.backends.hf.backend import HFBackend
    from auditor.inspect.base_model import resolve_base
    from auditor.records import Request
    from auditor.scorers.loglikelihood import build_target, score_loglikelihood
    from auditor.suite.benchmarks import load_benchmark
    from auditor.suite.rows import item_from_row
    from auditor.suite.specs import CapabilitySpec, SourceSpec

    base = resolve_base(None).path
    tmp = Path(tempfile.mkdtemp(prefix="lmeval-agreement-"))
    # ------------------------------------------------------------------ the same sampled records, both ways
    plan: dict[str, dict[str, Any]] = {}
    for name in names:
        loader, split, task_yaml = BENCHMARKS[name]
        got = load_benchmark(loader, split, args.data_dir)
        docs = harness_docs(loader, split, Path(got.origin))
        if len(docs) != len(got.rows):
            raise SystemExit(f"{name}: {len(docs)} records for lm-eval, {len(got.rows)} rows")
        picked = sorted(random.Random(f"{args.seed}:{name}").sample(range(len(got.rows)), args.n)) \
            if 0 < args.n < len(got.rows) else list(range(len(got.rows)))
        cap = CapabilitySpec(0, name, "CAN", "loglikelihood", SourceSpec.from_manifest({"benchmark": loader}), 0,
                             "{context}")
        # a row with per-choice contexts (WinoGrande's) has no ``context`` field, which item_from_row's first
        # filling of the template needs before it fills in each choice's own: given the first one, unused
        items = [item_from_row(cap, {"context": got.rows[i]["contexts"][0], **got.rows[i]} if "contexts" in got.rows[i]
                               else got.rows[i], got.origin, i, build_target=build_target,
                               output_type="multiple_choice") for i in picked]
        (tmp / name).mkdir()
        task = harness_task(task_yaml, [docs[i] for i in picked], tmp / name)
        tdocs = list(task.eval_docs)
        instances = []
        for k, doc in enumerate(tdocs):
            ctx = task.fewshot_context(doc, 0)
            instances.append(task.construct_requests(doc, ctx, metadata=(name, k, 1)))
        same = sum([tuple(i.arguments) for i in inst] == list(zip(it.target["contexts"], it.target["continuations"]))
                   for inst, it in zip(instances, items, strict=True))
        plan[name] = {"split": split, "source": Path(got.origin).name, "items": items, "task": task, "docs": tdocs,
                      "instances": instances, "same_requests": same}
        print(f"{name}: {len(items)} items of {len(got.rows)}, identical requests {same}/{len(items)}", flush=True)
    n_threads = torch.get_num_threads()
    requests = [Request(item=it, variant="base") for p in plan.values() for it in p["items"]]
    flat = [i for p in plan.values() for inst in p["instances"] for i in inst]
    got: dict[str, Any] = {}

    def audit_load() -> Any:  # the rows' items through the hf backend
        backend = HFBackend(base, (), dtype="float32", device="cpu")
        backend.show_progress = False
        _ = backend.model
        return backend

    def harness_load() -> Any:  # lm-evaluation-harness's own requests through its HFLM
        from lm_eval.models.huggingface import HFLM

        return HFLM(pretrained=str(base), dtype="float32", device="cpu", batch_size=args.batch_size)

    sides = {"auditor": (audit_load, lambda b: b.loglikelihoods(requests, use_cache=False), len(requests), "items"),
             "lm_eval": (harness_load, lambda lm: lm.loglikelihood(flat, disable_tqdm=True), len(flat), "requests")}
    for side in ("auditor", "lm_eval") if args.order == "auditor-first" else ("lm_eval", "auditor"):
        load, score, count, unit = sides[side]
        t0 = time.perf_counter()
        engine = load()
        t1 = time.perf_counter()
        got[side] = score(engine)
        got[f"{side}_load"], got[f"{side}_score"] = t1 - t0, time.perf_counter() - t1
        del engine
        print(f"{side}: load {got[f'{side}_load']:.1f} s, {count} {unit} scored in {got[f'{side}_score']:.1f} s",
              flush=True)
    by_id = {g.item_id: g for g in got["auditor"]}
    results = got["lm_eval"]
    a_load, a_score, h_load, h_score = (got[k] for k in ("auditor_load", "auditor_score", "lm_eval_load",
                                                         "lm_eval_score"))
    # ------------------------------------------------------------------ item by item
    report: dict[str, Any] = {}
    pos = 0
    for name, p in plan.items():
        rows: list[dict[str, Any]] = []
        agree = agree_norm = 0
        acc = {"auditor": [0.0, 0.0], "lm-eval": [0.0, 0.0]}
        max_delta = 0.0
        disagreements = []
        for item, doc, inst in zip(p["items"], p["docs"], p["instances"], strict=True):
            res = results[pos:pos + len(inst)]
            pos += len(inst)
            h_lls = [float(r[0]) for r in res]
            a_lls = list(by_id[item.id].loglikelihoods or ())
            score = score_loglikelihood(item, by_id[item.id])
            h_metrics = p["task"].process_results(doc, res)
            lengths = [float(len(c)) for c in p["task"].doc_to_choice(doc)]
            a_pick, h_pick = first_argmax(a_lls), first_argmax(h_lls)
            a_norm = [x / max(1, n) for x, n in zip(a_lls, item.target["lengths"])]
            h_norm = [x / n for x, n in zip(h_lls, lengths)]
            a_pick_n, h_pick_n = first_argmax(a_norm), first_argmax(h_norm)
            # the audit's picks as its scorer reports them, and lm-eval's accuracies from its own process_results
            assert "ABCDEFGHIJ".index(score.detail["chosen"]) == a_pick, item.id
            assert "ABCDEFGHIJ".index(score.detail["chosen_norm"]) == a_pick_n, item.id
            gold = "ABCDEFGHIJ".index(item.target["answer"])
            # (a task whose yaml lists acc only, as boolq's, copa's and winogrande's: acc_norm from its pick, as
            # process_results computes it)
            h_metrics.setdefault("acc_norm", float(h_pick_n == gold))
            assert float(h_pick == gold) == h_metrics["acc"] and float(h_pick_n == gold) == h_metrics["acc_norm"], item.id
            deltas = [a - h for a, h in zip(a_lls, h_lls)]
            delta = max(abs(d) for d in deltas)
            max_delta = max(max_delta, delta)
            agree += a_pick == h_pick
            agree_norm += a_pick_n == h_pick_n
            acc["auditor"][0] += score.values["acc"] or 0.0
            acc["auditor"][1] += score.values["acc_norm"] or 0.0
            acc["lm-eval"][0] += h_metrics["acc"]
            acc["lm-eval"][1] += h_metrics["acc_norm"]
            rows.append({"id": item.id, "gold": gold, "auditor": a_lls, "lm_eval": h_lls, "max_abs_delta": delta})
            for metric, a_v, h_v, ap_, hp_, scale in (("acc", a_lls, h_lls, a_pick, h_pick, 1.0),
                                                      ("acc_norm", a_norm, h_norm, a_pick_n, h_pick_n, None)):
                if ap_ == hp_:
                    continue
                # the two picks' gap on each side (nats; acc_norm: nats per character), and the float noise the
                # item shows on those two choices, scaled the same way
                lens = [1.0] * len(a_v) if scale else lengths
                noise = max(abs(deltas[ap_]) / lens[ap_], abs(deltas[hp_]) / lens[hp_])
                a_gap, h_gap = margin(a_v, ap_, hp_), margin(h_v, hp_, ap_)
                tie = a_v[ap_] == a_v[hp_] or h_v[hp_] == h_v[ap_]
                why = ("exact tie" if tie else "margin within float noise" if max(a_gap, h_gap) <= 2 * noise + 1e-12
                       else "UNEXPLAINED")
                disagreements.append({
                    "id": item.id, "metric": metric, "gold": gold, "auditor_pick": ap_, "lm_eval_pick": hp_,
                    "auditor_loglikelihoods": a_lls, "lm_eval_loglikelihoods": h_lls, "lengths": lengths,
                    "auditor_margin": a_gap, "lm_eval_margin": h_gap, "noise": noise, "explanation": why})
        n = len(p["items"])
        report[name] = {
            "split": p["split"], "source": p["source"], "items": n, "same_requests": p["same_requests"],
            "requests": sum(len(i) for i in p["instances"]),
            "agreement_acc": 100.0 * agree / n, "agreement_acc_norm": 100.0 * agree_norm / n,
            "max_abs_delta_nats": max_delta,
            "acc": {"auditor": acc["auditor"][0] / n, "lm-eval": acc["lm-eval"][0] / n},
            "acc_norm": {"auditor": acc["auditor"][1] / n, "lm-eval": acc["lm-eval"][1] / n},
            "disagreements": disagreements, "per_item": rows}
    import lm_eval
    import transformers

    total = sum(r["items"] for r in report.values())
    out = {"base": str(base), "dtype": "float32", "device": "cpu", "torch_threads": n_threads, "n": args.n,
           "seed": args.seed, "versions": {"lm_eval": lm_eval.__version__, "transformers": transformers.__version__,
                                            "torch": torch.__version__},
           "seconds": {"auditor_load": a_load, "auditor_score": a_score, "lm_eval_load": h_load,
                       "lm_eval_score": h_score, "lm_eval_batch_size": args.batch_size, "order": args.order},
           "items": total, "benchmarks": report}
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(out, indent=1) + "\n")
    # ------------------------------------------------------------------ the table
    print("\n| benchmark | items | same requests | agree acc | agree acc_norm | max abs Δ (nats) | acc auditor / lm-eval "
          "| acc_norm auditor / lm-eval |")
    print("|---|---|---|---|---|---|---|---|")
    for name, r in report.items():
        print(f"| {name} | {r['items']} | {r['same_requests']}/{r['items']} | {r['agreement_acc']:.1f}% | "
              f"{r['agreement_acc_norm']:.1f}% | {r['max_abs_delta_nats']:.2e} | {r['acc']['auditor']:.3f} / "
              f"{r['acc']['lm-eval']:.3f} | {r['acc_norm']['auditor']:.3f} / {r['acc_norm']['lm-eval']:.3f} |")
    ag = sum(r["agreement_acc"] * r["items"] for r in report.values()) / max(1, total)
    agn = sum(r["agreement_acc_norm"] * r["items"] for r in report.values()) / max(1, total)
    print(f"| all | {total} | {sum(r['same_requests'] for r in report.values())}/{total} | {ag:.1f}% | {agn:.1f}% | "
          f"{max(r['max_abs_delta_nats'] for r in report.values()):.2e} | | |")
    print(f"\nscoring: auditor {a_score:.1f} s, lm-eval {h_score:.1f} s (lm-eval / auditor {h_score / a_score:.2f}x); "
          f"load: auditor {a_load:.1f} s, lm-eval {h_load:.1f} s; {n_threads} torch threads")
    dis = [d for r in report.values() for d in r["disagreements"]]
    if dis:
        print("\n| item | metric | gold | auditor pick | lm-eval pick | auditor lls | lm-eval lls | auditor margin "
              "| lm-eval margin | noise | why |")
        print("|---|---|---|---|---|---|---|---|---|---|---|")
        for d in dis:
            print(f"| {d['id']} | {d['metric']} | {d['gold']} | {d['auditor_pick']} | {d['lm_eval_pick']} | "
                  f"{[round(x, 6) for x in d['auditor_loglikelihoods']]} | "
                  f"{[round(x, 6) for x in d['lm_eval_loglikelihoods']]} | {d['auditor_margin']:.2e} | "
                  f"{d['lm_eval_margin']:.2e} | {d['noise']:.2e} | {d['explanation']} |")
    else:
        print("\nno item's chosen answer differs")
    print(f"\nwrote {args.out}")


if __name__ == "__main__":
    main()
