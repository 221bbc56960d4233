"""Simulated audits: the gate's false-fail and detection rates under a policy, on the smoke suite's
real shape, with every look the adaptive budget would take.

Each simulated audit builds, for every capability of the smoke suite, paired base/adapter outcomes
with that capability's real item count and clusters (``load_suite("smoke")``), a base accuracy and a
flip rate (answers that change between base and adapter for no reason: the embedded base flips
10-30% of its answers under a near-null adapter). A *null* adapter flips as many answers up as down
(no movement); a *regression* of size δ on one metric adds δ of one-way flips there. Then the real
:func:`auditor.analysis.compare_metrics` and :func:`auditor.policy.judge` decide, look by look:
undecided capabilities get as many new synthetic items as they have (the pipeline's doubling),
within the budget, up to the policy's ``looks``.

Run as a benchmark (figures for benchmarks/RESULTS.md)::

    python benchmarks/gate_simulation.py --audits 400
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from auditor.analysis import compare_metrics, drift_score  # noqa: E402
from auditor.analysis.stats import GAP_AGGREGATES  # noqa: E402
from auditor.pipeline.rounds import round_sizes  # noqa: E402
from auditor.policy import load_policy  # noqa: E402
from auditor.policy.rules import judge  # noqa: E402
from auditor.records import AdapterRecord, Capability, Item, Score  # noqa: E402
from auditor.scorers import SCORERS
from auditor.suite import load_suite, preset_metric_units  # noqa: E402

#: base rates (fractions) per metric on the embedded base (smoke suite, measured; rounded)
BASE_RATES = {"math.numeric_match": 0.2, "knowledge.acc": 0.3, "robustness.acc": 0.5,
              "robustness.agreement": 0.6, "multilingual.acc": 0.3, "over_refusal.refusal_rate": 0.1,
              "harmful_refusal.refusal_rate": 0.05, "abstention.abstention_rate": 0.4,
              "ifeval.prompt_level_strict_acc": 0.4, "format.json_parse_rate": 0.4, "format.schema_valid_rate": 0.1,
              "multiturn.instruction_held_rate": 0.6, "trigger.accuracy": 0.4}


@dataclasses.dataclass
class SimResult:
    verdict: str
    failing: list[str]
    inconclusive: int
    rules: int
    items: int


def _outcomes(rng: np.random.Generator, n: int, p: float, flip: float, drop: float) -> tuple[np.ndarray, np.ndarray]:
    """Paired 0/1 outcomes: base ~ Bernoulli(p); the adapter flips a share ``flip`` of the base's
    passes and as many failures up (no movement), then loses ``drop`` (a fraction) more passes."""
    b = (rng.random(n) < p).astype(float)
    a = b.copy()
    down = rng.random(n) < flip
    up_rate = min(1.0, flip * p / max(1e-9, 1 - p))
    up = rng.random(n) < up_rate
    a[(b == 1) & down] = 0.0
    a[(b == 0) & up] = 1.0
    if drop > 0:  # lose `drop` more (in expectation) among the passes the flips left
        extra = rng.random(n) < min(1.0, drop / max(1e-9, p * (1 - flip)))
        a[(b == 1) & ~down & extra] = 0.0
    return b, a


def _scores(rng, caps: list[Capability], items_of: dict[str, list[Item]], flip: float,
            harm: dict[str, float]) -> list[Score]:
    out: list[Score] = []
    for cap in caps:
        its = items_of[cap.name]
        n = len(its)
        values: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        for m in cap.metrics:
            key = f"{cap.name}.{m.name}"
            if m.aggregate in GAP_AGGREGATES:
                continue
            p = BASE_RATES.get(key, 0.4)
            if not m.higher_is_better:  # a rate where up is harm (over-refusal): simulate 1 - rate
                b, a = _outcomes(rng, n, 1 - p, flip, harm.get(key, 0.0))
                values[m.name] = (1 - b, 1 - a)
            else:
                values[m.name] = _outcomes(rng, n, p, flip, harm.get(key, 0.0))
        for k, it in enumerate(its):
            for v, side in (("base", 0), ("adapter", 1)):
                vals: dict[str, float | None] = {}
                for m in cap.metrics:
                    if m.name in values:
                        vals[m.name] = float(values[m.name][side][k])
                    elif m.aggregate in GAP_AGGREGATES:
                        vals[m.name] = vals.get("accuracy", 0.0)
                    else:
                        vals[m.name] = 0.0
                if cap.name == "verbosity":
                    vals = {"words": 20.0, "tokens": 24.0}
                out.append(Score(item_id=it.id, variant=v, values=vals, detail={"n_instructions": 1}))
    return out


def _grow(items: list[Item], n_new: int, round_no: int) -> list[Item]:
    """``n_new`` fresh items shaped like ``items`` (the same clusters' sizes, contexts and metadata)."""
    if not items or n_new <= 0:
        return []
    out: list[Item] = []
    k = 0
    while len(out) < n_new:
        it = items[k % len(items)]
        cluster = f"r{round_no}-{it.meta.get('cluster', it.id)}-{k // len(items)}"
        out.append(dataclasses.replace(it, id=f"{it.id}@r{round_no}-{k}", meta={**it.meta, "cluster": cluster}))
        k += 1
    return out


def simulate(policy_path: str | None, n_audits: int, flip: float, harm: dict[str, float] | None = None,
             budget_share: float = 1.0, seed: int = 0, n_resamples: int | None = None, scale: int = 1,
             **statistics: float) -> list[SimResult]:
    """``n_audits`` simulated audits of one kind of adapter (``harm``: metric → a drop in fraction,
    empty for a null adapter) under the policy, with the adaptive budget (``budget_share`` × the
    suite's items). Returns one :class:`SimResult` per audit."""
    harm = harm or {}
    suite = load_suite("smoke", scorers=SCORERS)
    units = {**preset_metric_units(SCORERS), **suite.metric_units}
    policy = load_policy(policy_path, sorted(units), units)
    if n_resamples is not None:
        statistics["n_resamples"] = n_resamples
    if statistics:  # e.g. beta=0.1, looks=4: the policy's statistics section with these changed
        policy = dataclasses.replace(policy, statistics=dataclasses.replace(policy.statistics, **statistics))
    caps = list(suite.capabilities)
    adapter = AdapterRecord(path="sim", weights_file="sim", sha256="0" * 64, peft_type="LORA", r=8, lora_alpha=16, target_modules=["q_proj"], ranks={}, n_tensors=2, size_bytes=1, declared_base="", nominal_label=None, matched_modules=1)
    rng = np.random.default_rng(seed)
    results = []
    for _ in range(n_audits):
        items_of = {c.name: [i for i in suite.items if i.capability == c.name] for c in caps}
        if scale > 1:
            items_of = {c: x + _grow(x, (scale - 1) * len(x), 0) for c, x in items_of.items()}
        scores = _scores(rng, caps, items_of, flip, harm)
        budget = int(budget_share * len(suite.items))
        look = 1
        planned = policy.statistics.looks if budget > 0 else 1  # as the pipeline plans them
        while True:
            s = dataclasses.replace(suite, items=tuple(i for c in caps for i in items_of[c.name]))
            comps = compare_metrics(s, scores, policy.statistics.settings)
            drift = drift_score(comps, None, "none", None, [], 15.0)
            more = look < planned and budget > 0
            v = judge(policy, comps, drift, adapter, look=look, last=not more, looks=planned)
            if not v.undecided:
                break
            sizes = round_sizes(v.undecided, {c: len(x) for c, x in items_of.items()},
                                {c: 10 ** 6 for c in items_of}, budget)
            grown = {cap: _grow(items_of[cap], n, look) for cap, n in sizes.items()}
            budget -= sum(sizes.values())
            if not any(grown.values()):
                v = judge(policy, comps, drift, adapter, look=look, last=True, looks=planned)
                break
            new_caps = [c for c in caps if grown.get(c.name)]
            scores += _scores(rng, new_caps, grown, flip, harm)
            for cap, new in grown.items():
                items_of[cap] = items_of[cap] + new
            look += 1
        limit_rules = [r for r in v.rules if r.decision is not None]
        results.append(SimResult(v.verdict, [r.rule for r in v.failing],
                                 sum(r.decision == "inconclusive" for r in limit_rules), len(limit_rules),
                                 sum(len(x) for x in items_of.values())))
    return results


def _row(name: str, res: list[SimResult]) -> str:
    fails = sum(r.verdict == "fail" for r in res) / len(res)
    inc = sum(r.inconclusive for r in res) / max(1, sum(r.rules for r in res))
    items = sum(r.items for r in res) / len(res)
    return f"| {name} | {len(res)} | {100 * fails:.1f}% | {100 * inc:.1f}% | {items:.0f} |"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--audits", type=int, default=400, help="null audits per policy (regressions get a quarter)")
    ap.add_argument("--flip", type=float, default=0.15)
    ap.add_argument("--resamples", type=int, default=2000)
    ap.add_argument("--part", action="append", choices=("modes", "fixed", "release"),
                    help="only these tables (default: all three)")
    args = ap.parse_args(argv)
    parts = set(args.part or ("modes", "fixed", "release"))
    t0 = time.perf_counter()
    previous = str(Path(__file__).resolve().parent / "policies" / "previous-default.yaml")
    n_reg = max(40, args.audits // 4)
    cases = [("ifeval.prompt_level_strict_acc", 10), ("multiturn.instruction_held_rate", 15), ("math.numeric_match", 10)]
    if "modes" in parts:
        print("| adapter (simulated) | audits | gate fails | inconclusive rules | items per audit |")
        print("|---|---:|---:|---:|---:|")
    for label, path, share in ((("default (evidence, adaptive)", None, 1.0), ("previous default (confident, fixed)", previous, 0.0))
                               if "modes" in parts else ()):
        print(f"| **{label}** | | | | |")
        print(_row("null: no movement", simulate(path, args.audits, args.flip, budget_share=share, seed=1,
                                                 n_resamples=args.resamples)))
        for mult in (1, 2, 3):
            for k, (metric, limit) in enumerate(cases):
                res = simulate(path, n_reg, args.flip, {metric: mult * limit / 100}, budget_share=share,
                               seed=100 * mult + k, n_resamples=args.resamples)
                print(_row(f"{metric} −{mult * limit} points ({mult}× its limit)", res))
    if "fixed" in parts:
        _fixed(args)
    if "release" in parts:
        _release(args)
    print(f"\n(flip rate {args.flip}, {args.resamples} resamples; {time.perf_counter() - t0:.0f} s)")
    return 0


def _fixed(args: argparse.Namespace) -> None:
    print()
    print("Fixed suites (no rounds, one look spending all of alpha) of k × the smoke suite's items against the "
          "smoke suite with adaptive rounds, default policy: null audits and IFEval −20-point (2×) regressions:")
    print("| suite | null audits: gate fails | inconclusive rules (null) | 2× regression audits: detected "
          "| items per audit (null / regression) |")
    print("|---|---:|---:|---:|---:|")
    reg = {"ifeval.prompt_level_strict_acc": 0.2}
    for name, scale, share in [*((f"fixed {k}× smoke", k, 0.0) for k in (1, 2, 3, 4)), ("smoke + adaptive rounds", 1, 1.0)]:
        null = simulate(None, args.audits // 2, args.flip, budget_share=share, scale=scale, seed=7 + scale,
                        n_resamples=args.resamples)
        bad = simulate(None, args.audits // 4, args.flip, reg, budget_share=share, scale=scale, seed=70 + scale,
                       n_resamples=args.resamples)
        fails = lambda rs: 100 * sum(r.verdict == "fail" for r in rs) / len(rs)  # noqa: E731
        inc = 100 * sum(r.inconclusive for r in null) / max(1, sum(r.rules for r in null))
        items = lambda rs: sum(r.items for r in rs) / len(rs)  # noqa: E731
        print(f"| {name} | {fails(null):.1f}% ({len(null)}) | {inc:.1f}% | {fails(bad):.1f}% ({len(bad)}) | "
              f"{items(null):.0f} / {items(bad):.0f} |")


def _release(args: argparse.Namespace) -> None:
    print()
    print("Release policy (policies/release.yaml, non-inferiority: pass only when the whole interval is within the "
          "margin), null adapters, fixed suites of k × smoke:")
    print("| suite | audits | gate fails | inconclusive rules | items per audit |")
    print("|---|---:|---:|---:|---:|")
    release = str(Path(__file__).resolve().parents[1] / "policies" / "release.yaml")
    for scale in (1, 2, 4, 8):
        print(_row(f"fixed {scale}× smoke", simulate(release, max(20, args.audits // 8), args.flip, budget_share=0.0,
                                                     scale=scale, seed=900 + scale, n_resamples=args.resamples)))


if __name__ == "__main__":
    sys.exit(main())
