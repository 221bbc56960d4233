"""Draft and verify against plain decoding, side by side in one run on one machine.

Run from the repository root, alone on the machine (a second model process slows both)::

    HF_HUB_OFFLINE=1 python benchmarks/draft_bench.py [--dtype auto|float32|bfloat16] [--parts abc]

Each part runs the same work twice, ``--draft base`` and ``--draft off``, and prints their ratio (goal in brackets):

(a) a warm-base audit of a near-null adapter [<= 0.35]: ``audit NEAR_NULL`` (the smoke suite, every round) with
    the base's answers already in the answer cache (another run put them there), wall-clock seconds of the
    command and its generation stage. The near-null adapter is the zoo's ``null-selfdistill-a`` with its LoRA B
    matrices scaled by ``--near-null-scale`` (written to ``benchmarks/out/draft/``); the share of its answers
    identical to the base's is printed beside the times.
(b) the README's two-adapter demo, cold (``audit terse-instruct-r8 math-good --no-cache``) [<= 0.7]: wall
    seconds, generation seconds, and whether every verdict and rule decision is the same.
(c) the zoo's adapter passes [<= 0.5 on their mean]: one engine, the base's answers to the smoke suite's generated
    items cached, then each zoo adapter's answers to them generated with ``--draft auto``, ``base`` and ``off``
    (seconds each), the share of its answers identical between ``base`` and ``off`` (exactness) and the share of
    its plain answers identical to the base's.

Every timing is wall-clock seconds (``time.perf_counter``) on this process's machine; ``--dtype`` is the audit's
(``auto``: bf16 where the CPU has native bf16).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))
OUT = ROOT / "benchmarks" / "out" / "draft"
ZOO = ("instruct-as-math", "json-break", "math-good", "mc-collapse", "null-selfdistill-a", "null-selfdistill-b",
       "null-selfdistill-c", "terse")
AUDIT = [sys.executable, "-m", "auditor.cli"]


def near_null(scale: float) -> Path:
    """``null-selfdistill-a`` with its LoRA B matrices times ``scale`` (its function moved ``scale`` as far)."""
    from zoo import scaled_copy

    return scaled_copy(ROOT / "examples" / "zoo" / "null-selfdistill-a", scale, OUT / f"near-null-x{scale:g}")


def audit(args: list[str], out: Path, env: dict[str, str] | None = None) -> tuple[float, list[dict]]:
    """Run ``audit`` (its wall seconds) and read back each adapter's results.json."""
    if out.exists():
        shutil.rmtree(out)
    t0 = time.perf_counter()
    proc = subprocess.run([*AUDIT, *args, "--out", str(out), "--quiet"], cwd=ROOT, capture_output=True, text=True,
                          env={**os.environ, **(env or {})})
    wall = time.perf_counter() - t0
    if proc.returncode not in (0, 1):
        sys.exit(f"audit failed ({proc.returncode}): {proc.stderr[-2000:]}")
    found = sorted(out.glob("*/results.json")) or [out / "results.json"]
    return wall, [json.loads(p.read_text()) for p in found]


def strip_adapters(cache: Path) -> int:
    """Remove every adapter answer from an answer cache folder, keeping the base's; returns the entries left."""
    left = 0
    for p in cache.rglob("*.json"):
        try:
            about = json.loads(p.read_text()).get("about") or {}
        except (ValueError, OSError):
            continue
        if about.get("adapter") is not None:
            p.unlink()
        else:
            left += 1
    return left


def decisions(results: list[dict]) -> list[tuple]:
    return [(Path(r["adapter"]["path"]).name, r["verdict"]["verdict"],
             tuple((x["rule"], x["outcome"]) for x in r["verdict"]["rules"])) for r in results]


def same_answers(a: dict, b: dict) -> tuple[int, int]:
    """Generated items whose adapter answer is the same in two results.json files, and how many there are."""
    ours = {x["id"]: x for x in a["items"] if x.get("output_type") != "multiple_choice"}
    theirs = {x["id"]: x for x in b["items"] if x.get("output_type") != "multiple_choice"}
    common = [k for k in ours if k in theirs and "text" in ours[k].get("adapter", {})]
    return sum(ours[k]["adapter"]["text"] == theirs[k]["adapter"]["text"] for k in common), len(common)


def part_a(dtype: str, scale: float) -> list[str]:
    adapter = near_null(scale)
    lines = [f"(a) warm-base audit of a near-null adapter ({adapter.name}, --dtype {dtype})"]
    with tempfile.TemporaryDirectory(prefix="draft-bench-") as tmp:
        seed = Path(tmp) / "seed"
        audit([str(adapter), "--dtype", dtype, "--draft", "off", "--cache-dir", seed.as_uri()], Path(tmp) / "r0")
        kept = strip_adapters(seed)
        got = {}
        for mode in ("base", "off"):
            cache = Path(tmp) / mode
            shutil.copytree(seed, cache)
            wall, [r] = audit([str(adapter), "--dtype", dtype, "--draft", mode, "--cache-dir", cache.as_uri()],
                              Path(tmp) / f"r-{mode}")
            got[mode] = (wall, r)
        (wb, rb), (wo, ro) = got["base"], got["off"]
        same, n = same_answers(rb, ro)
        agree = ro.get("agreement_with_base", {}).get("overall", {})  # (plain decoding's answers)
        lines += [f"    base answers cached: {kept}; the adapter's answers identical to the base's: "
                  f"{agree.get('identical', float('nan')):.1%} of {agree.get('n_items')}",
                  f"    wall: draft {wb:.1f} s, plain {wo:.1f} s, ratio {wb / wo:.2f} [goal <= 0.35]",
                  f"    generation stage: draft {rb['run']['timings']['generate_s']:.1f} s, plain "
                  f"{ro['run']['timings']['generate_s']:.1f} s, ratio "
                  f"{rb['run']['timings']['generate_s'] / ro['run']['timings']['generate_s']:.2f}",
                  f"    drafts: {rb['run']['hf']['drafts']}",
                  f"    answers identical to plain decoding: {same}/{n}; verdicts and rule decisions "
                  f"{'the same' if decisions([rb]) == decisions([ro]) else 'DIFFER'}"]
    return lines


def part_b(dtype: str) -> list[str]:
    demo = [str(ROOT / "examples" / "adapters" / "terse-instruct-r8"), str(ROOT / "examples" / "zoo" / "math-good")]
    lines = [f"(b) the two-adapter demo, cold (--no-cache, --dtype {dtype})"]
    got = {}
    with tempfile.TemporaryDirectory(prefix="draft-bench-") as tmp:
        for mode in ("base", "off"):
            got[mode] = audit([*demo, "--dtype", dtype, "--draft", mode, "--no-cache"], Path(tmp) / mode)
    (wb, rb), (wo, ro) = got["base"], got["off"]
    gb, go = rb[0]["run"]["timings"]["generate_s"], ro[0]["run"]["timings"]["generate_s"]
    same = [same_answers(x, y) for x, y in zip(rb, ro)]
    lines += [f"    wall: draft {wb:.1f} s, plain {wo:.1f} s, ratio {wb / wo:.2f} [goal <= 0.7]",
              f"    generation stage: draft {gb:.1f} s, plain {go:.1f} s, ratio {gb / go:.2f}",
              "    answers identical to plain decoding: " + ", ".join(
                  f"{Path(r['adapter']['path']).name} {s}/{n}" for r, (s, n) in zip(rb, same)),
              f"    verdicts and rule decisions {'the same' if decisions(rb) == decisions(ro) else 'DIFFER'}: "
              + ", ".join(f"{a} {v}" for a, v, _ in decisions(rb))]
    for (a, _, rules_b), (_, _, rules_o) in zip(decisions(rb), decisions(ro)):
        for (rule, x), (_, y) in zip(rules_b, rules_o):
            if x != y:
                lines.append(f"      {a}: {rule}: draft {x}, plain {y}")
    return lines


def part_c(dtype: str, zoo: list[str], batch_size: int | str, scale: float) -> list[str]:
    from auditor.backends.hardware import choose_dtype
    from auditor.backends.hf.backend import HFBackend
    from auditor.cache import GenerationCache
    from auditor.inspect.base_model import resolve_base
    from auditor.records import Variant
    from auditor.scorers import SCORERS
    from auditor.suite import load_suite, plan_requests

    if dtype == "auto":
        dtype = choose_dtype("auto", "hf", False)[0]
    base = resolve_base(None)
    suite = load_suite("smoke", scorers=SCORERS)
    items = [it for it in suite.items if it.output_type != "multiple_choice"]
    adapters = [Variant.of_folder(name, near_null(scale) if name == "near-null" else ROOT / "examples" / "zoo" / name,
                                  name) for name in zoo]
    lines = [f"(c) the zoo's adapter passes: {len(items)} generated smoke items each, base answers cached, "
             f"--dtype {dtype}, --batch-size {batch_size}"]
    with tempfile.TemporaryDirectory(prefix="draft-bench-") as tmp:
        b = HFBackend(base.path, adapters, dtype=dtype, cache=GenerationCache(Path(tmp) / "seed"),
                      base_digest="bench-base", draft="off", batch_size=batch_size)
        b.show_progress = False
        generated = dataclasses.replace(suite, items=tuple(items))
        b.generate(plan_requests(generated, ("base",)))
        ratios: dict[str, list[float]] = {"auto": [], "base": []}
        for name in zoo:
            got = {}
            for mode in ("auto", "base", "off"):
                cache = Path(tmp) / f"{name}-{mode}"
                shutil.copytree(Path(tmp) / "seed", cache)
                b.cache, b.draft, b.draft_auto = GenerationCache(cache), "off" if mode == "off" else "base", mode == "auto"
                requests = plan_requests(generated, ("base", name))
                t0 = time.perf_counter()
                gens = b.generate(requests)
                got[mode] = (time.perf_counter() - t0, [g for g in gens if g.variant == name],
                             [g for g in gens if g.variant == "base"])
            (ta, _, _), (tb, gb, base_g), (to, go, _) = got["auto"], got["base"], got["off"]
            same = sum(x.text == y.text for x, y in zip(gb, go))
            like_base = sum(x.text == y.text for x, y in zip(go, base_g))
            ratios["auto"].append(ta / to)
            ratios["base"].append(tb / to)
            lines.append(f"    {name:20s} auto {ta:5.1f} s  base {tb:5.1f} s  off {to:5.1f} s  ratios {ta / to:.2f} "
                         f"{tb / to:.2f}  drafted = plain {same}/{len(go)}  plain = the base's {like_base}/{len(go)}")
        lines.append("    mean ratio: --draft auto " + f"{sum(ratios['auto']) / len(zoo):.2f}, --draft base "
                     f"{sum(ratios['base']) / len(zoo):.2f} [goal <= 0.5]")
    return lines


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dtype", default="auto")
    ap.add_argument("--parts", default="abc")
    ap.add_argument("--near-null-scale", type=float, default=0.1)
    ap.add_argument("--zoo", default=",".join(ZOO), help="(c): the adapters, comma-separated (near-null: (a)'s)")
    ap.add_argument("--batch-size", default="auto", help="(c): slots of each stream (auto: measured)")
    args = ap.parse_args()
    cpu = next((line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo") if line.startswith("model name")),
               platform.processor())
    print(f"machine: {cpu}, {os.cpu_count()} cores, Python {platform.python_version()}")
    for part in args.parts:
        lines = {"a": lambda: part_a(args.dtype, args.near_null_scale), "b": lambda: part_b(args.dtype),
                 "c": lambda: part_c(args.dtype, args.zoo.split(","),
                                                  int(args.batch_size) if args.batch_size.isdigit() else "auto",
                                                  args.near_null_scale)}[part]()
        print("\n".join(lines), flush=True)


if __name__ == "__main__":
    main()
