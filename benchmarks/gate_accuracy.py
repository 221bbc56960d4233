"""How often is the verdict right? The gate's error rates on an adapter zoo with known effects.

Three steps, each resumable (every adapter's result is saved as it is finished):

``truth``
    Each zoo adapter's real effect per metric, measured on items the audit's own rounds do not
    reach: the last ``--items`` items (whole clusters) of every capability's pool in its draw order
    (:mod:`auditor.suite.pools`), never the smoke suite's. Scaled strengths get their intended
    metrics only. Base and adapters are generated with the auditor's own stages (hf backend, the
    generation cache), in groups of adapters per call. Writes ``benchmarks/out/truth/<adapter>.json``
    and the committed table ``benchmarks/zoo_truth.json``.

``gate``
    Audits every zoo adapter with the smoke suite under each policy of ``--policies``: ``previous``
    (the earlier default policy, a fixed suite: ``benchmarks/policies/previous-default.yaml``)
    and ``default`` (the evidence mode with the adaptive budget). Writes
    ``benchmarks/out/gate/<policy>/<adapter>.json``.

``report``
    Joins the verdicts with the truth: a rule's truth is *harm* when the true movement toward its
    limit is at least the limit (1×, 2×, 3× classes) and *no harm* otherwise. Prints the confusion
    table (adapter × verdict vs truth), the false-fail rate on adapters with no true harm (nulls,
    good adapters), the detection rate of adapters with a true harm by its size, the share of rules
    left inconclusive, and the cost (items, generated tokens, seconds).

    python benchmarks/gate_accuracy.py truth --items 100
    python benchmarks/gate_accuracy.py gate --policies previous,default
    python benchmarks/gate_accuracy.py report

``--base gemma3-270m`` (before the step) runs the same steps on that base's zoo (:func:`zoo.zoo`):
records under ``benchmarks/out/gemma3-270m/``, the table ``benchmarks/zoo_truth-gemma3-270m.json``.
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import json
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from zoo import ROOT, ZooAdapter, zoo  # noqa: E402

OUT = ROOT / "benchmarks" / "out"
TRUTH_DIR = OUT / "truth"
GATE_DIR = OUT / "gate"
TRUTH_TABLE = ROOT / "benchmarks" / "zoo_truth.json"
#: the base of this run (``--base``; None: the embedded default): set by :func:`use_base`
BASE: str | None = None
POLICIES = {"previous": ROOT / "benchmarks" / "policies" / "previous-default.yaml",
            "default": None, "release": ROOT / "policies" / "release.yaml"}


def use_base(word: str | None) -> None:
    """Point the benchmark at ``word``'s zoo: its records and truth table (the default's paths for None)."""
    global BASE, TRUTH_DIR, GATE_DIR, TRUTH_TABLE
    BASE = word
    out = OUT if word is None else OUT / word
    TRUTH_DIR, GATE_DIR = out / "truth", out / "gate"
    TRUTH_TABLE = ROOT / "benchmarks" / ("zoo_truth.json" if word is None else f"zoo_truth-{word}.json")


def _templates(base_path: Path, names: list[str], infos: list) -> dict:
    """Each variant's prompt template as an audit chooses it by default (a base without a chat template:
    plain prompts)."""
    from auditor.inspect.chat_template import choose_templates

    return choose_templates("adapter", base_path, dict(zip(names, infos)))[0]


# --------------------------------------------------------------------------- truth
#: capabilities whose truth items come from a held-out file of the benchmark (``benchmarks/truth_pools.py``)
#: instead of the tail of the product's pool, which is too short for them
TRUTH_POOLS = {"trigger": ROOT / "benchmarks" / "truth_pools" / "trigger.jsonl"}
#: 2: trigger's truth items from :data:`TRUTH_POOLS` (records of version 1 used the pool's last items)
ITEMS_VERSION = 2


def truth_suite(n_items: int, capabilities: list[str] | None = None):
    """The truth items: per capability the last ``n_items`` (whole units) of its pool's draw order,
    or every row of its :data:`TRUTH_POOLS` file."""
    from auditor.scorers import SCORERS
    from auditor.suite import load_suite
    from auditor.suite.manifest import manifest_specs
    from auditor.suite.pools import load_pool
    from auditor.suite.rows import item_from_row

    smoke = load_suite("smoke", scorers=SCORERS)
    specs = {c.name: c for c in manifest_specs(Path(smoke.path))}
    items = []
    caps = [c for c in smoke.capabilities if capabilities is None or c.name in capabilities]
    for cap in caps:
        if cap.name in TRUTH_POOLS:
            src = TRUTH_POOLS[cap.name]
            items += [item_from_row(specs[cap.name], json.loads(line), src, k + 1,
                                    build_target=SCORERS[cap.scorer].build_target)
                      for k, line in enumerate(src.read_text(encoding="utf-8").splitlines())]
            continue
        pool = load_pool(smoke, cap.name)
        chosen: list = []
        for unit in reversed(pool.units):
            if len(chosen) >= n_items:
                break
            chosen = list(unit) + chosen
        items += chosen
    return dataclasses.replace(smoke, name="zoo-truth", capabilities=tuple(caps), items=tuple(items))


#: capabilities measured beside the intended ones when an adapter's truth is restricted (``--intended-only``)
CONTROLS = ("math", "knowledge", "ifeval")


def _truth_caps(a: ZooAdapter, all_caps: list[str], intended_only: bool = False) -> list[str]:
    """The capabilities an adapter's truth is measured on: every one, or (scaled strengths, and the
    adapters named by ``--intended-only``) those its intended effect names plus :data:`CONTROLS`
    for a full-strength adapter."""
    intended = {m.split(".")[0] for m in a.intended} & set(all_caps)
    if a.strength != 1.0:
        return sorted(intended) or all_caps
    if intended_only and intended:
        return sorted(intended | set(CONTROLS))
    return all_caps


def _merge(old: dict[str, Any], new: dict[str, Any]) -> dict[str, Any]:
    """``old`` truth record with the capabilities of ``new`` re-measured (``--caps``): their
    comparisons replaced, the rest kept; ``remeasured`` lists what was measured again and with what."""
    caps = set(new["capabilities"])
    keep = [c for c in old["comparisons"] if c["metric"].split(".")[0] not in caps]
    out = dict(old, items_version=new["items_version"], comparisons=keep + new["comparisons"],
               capabilities=old["capabilities"] + [c for c in new["capabilities"] if c not in old["capabilities"]])
    # the old total less the re-measured capabilities' items, plus the new ones (a metric counts only the items it
    # applies to, so a sum over the metrics would undercount the total)
    gone: dict[str, int] = {}
    for c in old["comparisons"]:
        cap = c["metric"].split(".")[0]
        if cap in caps:
            gone[cap] = max(gone.get(cap, 0), c["n_items"])
    out["n_items"] = old["n_items"] - sum(gone.values()) + new["n_items"]
    out["remeasured"] = old.get("remeasured", []) + [{"capabilities": sorted(caps), "n_items": new["n_items"],
                                                      "tokens": new["tokens"]}]
    return out


def _record_from_table(name: str) -> dict[str, Any] | None:
    """``name``'s truth record rebuilt from the committed table (a checkout without ``benchmarks/out``):
    the fields the table keeps, so that ``--caps`` can re-measure some capabilities and keep the rest."""
    if not TRUTH_TABLE.is_file():
        return None
    row = json.loads(TRUTH_TABLE.read_text())["adapters"].get(name)
    if row is None:
        return None
    comps = [{"metric": m, "n_items": v["n"], "base": v["base"], "adapter": v["adapter"], "delta": v["delta"],
              "ci_low": v["ci"][0], "ci_high": v["ci"][1]} for m, v in row["metrics"].items()]
    return {"adapter": name, "items_version": ITEMS_VERSION, **{k: row[k] for k in (
        "kind", "label", "strength", "parent", "intended", "n_items", "capabilities")}, "comparisons": comps,
        "rebuilt_from_table": True}


def run_truth(n_items: int, group: int, only: list[str], batch_size: int, intended_only: tuple[str, ...] = (),
              only_caps: tuple[str, ...] = (), force: bool = False) -> None:
    """Measure (and save) the truth of every zoo adapter without a record, or with ``only_caps``
    re-measure those capabilities of every adapter (merged into its record, :func:`_merge`, or into its
    row of the committed table where no record is saved; ``force``: even where the record is current,
    e.g. after a new metric of those capabilities)."""
    from auditor.analysis import StatsSettings, compare_metrics
    from auditor.backends import HFBackend
    from auditor.cache import GenerationCache
    from auditor.inspect import inspect_adapter, resolve_base
    from auditor.records import Variant, to_plain
    from auditor.scorers import score_all
    from auditor.suite import plan_requests
    from auditor.util.hashing import adapter_digest, folder_digest, sha256_file

    TRUTH_DIR.mkdir(parents=True, exist_ok=True)
    base = resolve_base(BASE)
    full = truth_suite(n_items)
    all_caps = [c.name for c in full.capabilities]
    def done(a: ZooAdapter) -> bool:
        f = TRUTH_DIR / f"{a.name}.json"
        if not f.is_file():
            return False
        rec = json.loads(f.read_text())  # with --caps: done once re-measured on the held-out items of today
        return not only_caps or (not force and rec.get("items_version", 1) >= ITEMS_VERSION)

    todo = [a for a in zoo(base=BASE) if (not only or a.name in only) and not done(a)]
    print(f"truth: {len(full.items)} items over {len(all_caps)} capabilities; {len(todo)} adapters to measure",
          flush=True)
    # adapters measured on the same capabilities share a generate call (mixed base/adapter batches)
    by_caps: dict[tuple[str, ...], list[ZooAdapter]] = {}
    for a in todo:
        caps = [c for c in _truth_caps(a, all_caps, a.name in intended_only) if not only_caps or c in only_caps]
        if caps:
            by_caps.setdefault(tuple(caps), []).append(a)
    cache = GenerationCache.default()
    digest = folder_digest(base.path)
    for caps, adapters in by_caps.items():
        suite = dataclasses.replace(full, capabilities=tuple(c for c in full.capabilities if c.name in caps),
                                    items=tuple(i for i in full.items if i.capability in caps))
        items = {i.id: i for i in suite.items}
        scorer_of = {c.name: c.scorer for c in suite.capabilities}
        for k in range(0, len(adapters), group):
            part = adapters[k:k + group]
            t0 = time.perf_counter()
            infos = [inspect_adapter(a.path, base.path, base.name) for a in part]
            variants = [f"adapter{j}" for j in range(len(part))]
            digests = [adapter_digest(sha256_file(Path(i.weights_file)), a.path / "adapter_config.json")
                       for a, i in zip(part, infos)]
            backend = HFBackend(base.path, [Variant.of_folder(*vad) for vad in zip(variants, [a.path for a in part],
                                                                                   digests)],
                                batch_size=batch_size, cache=cache, base_digest=digest)
            backend.set_templates(_templates(base.path, list(variants), infos))
            gens = backend.generate(plan_requests(suite, ("base", *variants)))
            base_gens = [g for g in gens if g.variant == "base"]
            base_scores = score_all(items, base_gens, scorer_of)
            for v, a in zip(variants, part):
                mine = [dataclasses.replace(g, variant="adapter") for g in gens if g.variant == v]
                comps = compare_metrics(suite, [*base_scores, *score_all(items, mine, scorer_of)],
                                        StatsSettings(confidence=0.95, n_resamples=4000, seed=0))
                rec = {"adapter": a.name, "items_version": ITEMS_VERSION, "kind": a.kind, "label": a.label,
                       "strength": a.strength, "parent": a.parent, "intended": a.intended, "n_items": len(suite.items),
                       "capabilities": list(caps),
                       "tokens": {"base": sum(g.n_tokens for g in base_gens), "adapter": sum(g.n_tokens for g in mine)},
                       "comparisons": [{k2: v2 for k2, v2 in to_plain(c).items()
                                        if k2 in ("metric", "n_items", "n_clusters", "base", "adapter", "delta",
                                                  "ci_low", "ci_high", "p_value", "p_decrease", "p_increase",
                                                  "unit", "higher_is_better", "floor")} for c in comps]}
                f = TRUTH_DIR / f"{a.name}.json"
                old = (json.loads(f.read_text()) if f.is_file() else _record_from_table(a.name)) if only_caps else None
                if old is not None:
                    rec = _merge(old, rec)
                f.write_text(json.dumps(rec, indent=1))
            print(f"truth: {', '.join(a.name for a in part)} on {len(caps)} capabilities "
                  f"({len(suite.items)} items): {time.perf_counter() - t0:.0f} s", flush=True)
    write_truth_table()


#: the commands that produced the committed table of the second base (``--base gemma3-270m``)
TRUTH_COMMANDS_BY_BASE: dict[str, list[str]] = {"gemma3-270m": [
    "python examples/zoo/train_zoo.py --base gemma3-270m --out examples/gemma3-270m/zoo --only null-selfdistill-a "
    "--only refuse-harmless --only instruct-as-math --only math-good --only null-selfdistill-b  # 1289 s, 2 threads",
    "python benchmarks/gate_accuracy.py --base gemma3-270m truth --items 24 --group 8 --batch-size 256",
    "python benchmarks/gate_accuracy.py --base gemma3-270m truth --items 24 --group 8 --batch-size 256 --caps trigger "
    "--force  # trigger.excess_context_gap measured on the same answers",
    "python benchmarks/gate_accuracy.py --base gemma3-270m truth --items 24 --group 4 --batch-size 64 --caps "
    "knowledge,robustness,multilingual,format,trigger --force  # multiple choice by log-likelihood, worked examples "
    "for format and trigger; 985 s for the first four adapters, 447 s for refuse-harmless (--only); 256 slots ran "
    "out of memory",
]}
#: the commands that produced the committed table (2-core CPU, hf backend; the first four ran beside other jobs,
#: the rest one process at a time)
TRUTH_COMMANDS = [
    "python benchmarks/gate_accuracy.py truth --items 48 --group 7 --batch-size 24 --only json-break,lang-fr,"
    "math-good,mc-collapse,no-abstain,null-selfdistill-a,null-selfdistill-b",
    "python benchmarks/gate_accuracy.py truth --items 48 --group 1 --batch-size 16 --only refuse-harmless "
    "--intended-only refuse-harmless",
    "python benchmarks/gate_accuracy.py truth --items 24 --group 1 --batch-size 16 --only terse-instruct-r8",
    "python benchmarks/gate_accuracy.py truth --items 24 --group 1 --batch-size 16 --only medical-flashcards-ckpt500",
    "python benchmarks/truth_pools.py  # the held-out trigger items (40 clusters)",
    "python benchmarks/gate_accuracy.py truth --items 48 --group 7 --batch-size 24 --only null-selfdistill-c,terse,"
    "verbose,ifeval-ignore,trigger-backdoor,instruct-as-math,math-arith-r8  # 3908 s",
    "python benchmarks/gate_accuracy.py truth --items 48 --group 10 --batch-size 24 --caps trigger --only json-break,"
    "lang-fr,math-good,mc-collapse,no-abstain,null-selfdistill-a,null-selfdistill-b,terse-instruct-r8,"
    "medical-flashcards-ckpt500  # trigger re-measured on the held-out items, 668 s",
    "python benchmarks/gate_accuracy.py truth --items 48 --group 18 --batch-size 24 --caps trigger --force --only "
    "null-selfdistill-a,null-selfdistill-b,null-selfdistill-c,instruct-as-math,math-good,terse-instruct-r8,json-break,"
    "mc-collapse,trigger-backdoor,ifeval-ignore,lang-fr,math-arith-r8,medical-flashcards-ckpt500,no-abstain,terse,"
    "verbose,trigger-backdoor-x0.5,trigger-backdoor-x0.25  # trigger.excess_context_gap measured",
    "python benchmarks/gate_accuracy.py truth --items 48 --group 5 --batch-size 24 --only refuse-harmless-x0.5,"
    "refuse-harmless-x0.25,trigger-backdoor-x0.5,trigger-backdoor-x0.25,lang-fr-x0.5  # intended capabilities, 338 s",
]


def write_truth_table() -> None:
    """The committed ground-truth table: per adapter, per metric, Δ (points or the unit) with its CI."""
    # an adapter without a saved record keeps its committed row (a re-measure of some adapters' capabilities
    # on a checkout that has no benchmarks/out/truth)
    committed = json.loads(TRUTH_TABLE.read_text())["adapters"] if TRUTH_TABLE.is_file() else {}
    names = {a.name for a in zoo(base=BASE)}  # a removed or renamed adapter's row goes
    rows = {k: v for k, v in committed.items() if k in names}
    records = sorted(TRUTH_DIR.glob("*.json"))
    for f in records:
        rec = json.loads(f.read_text())
        rows[rec["adapter"]] = {k: rec[k] for k in ("kind", "label", "strength", "parent", "intended", "n_items",
                                                    "capabilities")} | {
            "metrics": {c["metric"]: {"n": c["n_items"], "base": round(c["base"], 4), "adapter": round(c["adapter"], 4),
                                      "delta": round(c["delta"], 2),
                                      "ci": [None if c["ci_low"] is None else round(c["ci_low"], 2),
                                             None if c["ci_high"] is None else round(c["ci_high"], 2)]}
                        for c in rec["comparisons"]}}
    if not records:  # a checkout without benchmarks/out/truth (it is not committed): keep the committed table
        sys.exit(f"no truth records under {TRUTH_DIR}: {TRUTH_TABLE.name} left as it is")
    TRUTH_TABLE.write_text(json.dumps({
        "about": ("Ground truth of the adapter zoo: each adapter's effect per metric on held-out pool "
                  "items (the last --items of each capability's pool draw order, never the smoke suite's or an "
                  "audit round's; trigger: the 240 items of benchmarks/truth_pools/trigger.jsonl), delta = "
                  "adapter - base in points (fractions x100) or the metric's unit, with "
                  "its 95% paired bootstrap interval; n_items is the adapter's total over its capabilities. "
                  "Produced by `python benchmarks/gate_accuracy.py truth` (the commands below)."),
        "commands": TRUTH_COMMANDS if BASE is None else TRUTH_COMMANDS_BY_BASE[BASE],
        "base": ("HuggingFaceTB/SmolLM2-135M-Instruct (embedded GGUF, fp32), hf backend, greedy" if BASE is None else
                 f"--base {BASE} (embedded GGUF, fp32), plain prompts, hf backend, greedy"),
        "adapters": dict(sorted(rows.items()))}, indent=1) + "\n")


# --------------------------------------------------------------------------- gate
def gate_folder(policy: str, dtype: str = "auto", batch_size: str = "auto") -> Path:
    """Where the gate's results of one policy (and a numeric path other than the default's) are kept."""
    return GATE_DIR / (policy + (f"-{dtype}" if dtype != "auto" else "") + (f"-slots{batch_size}"
                                                                          if batch_size != "auto" else ""))


def run_gate(policies: list[str], only: list[str], group: int, budget: str, dtype: str = "auto",
             batch_size: str = "auto") -> None:
    from auditor import audit_many

    adapters = [a for a in zoo(base=BASE) if not only or a.name in only]
    if only:  # in the order asked for, so that a run cut short has the most wanted adapters
        adapters.sort(key=lambda a: only.index(a.name))
    # groups outer, policies inner: a run cut short has every policy's verdict on the adapters it reached
    # (the previous policy's fixed suite is the first round of the default's, so it is served by the cache)
    for k in range(0, len(adapters), group):
        for pol in policies:
            folder = gate_folder(pol, dtype, batch_size)
            folder.mkdir(parents=True, exist_ok=True)
            part = [a for a in adapters[k:k + group] if not (folder / f"{a.name}.json").is_file()]
            if not part:
                continue
            t0 = time.perf_counter()
            opts: dict[str, Any] = {"policy": None if POLICIES[pol] is None else str(POLICIES[pol]), "base": BASE}
            if dtype != "auto":
                opts["dtype"] = dtype
            if batch_size != "auto":
                opts["batch_size"] = int(batch_size)
            if pol == "previous":
                opts["budget_items"] = 0
            elif budget != "auto":
                opts["budget_items"] = int(budget)
            results = audit_many([str(a.path) for a in part], **opts)
            for a, r in zip(part, results):
                d = r.to_dict()
                for it in d["items"]:  # keep the record small: texts are in the cache
                    for side in ("base", "adapter"):
                        it[side].pop("text", None)
                        it[side].pop("detail", None)
                    it.pop("rendered_prompt", None)
                (folder / f"{a.name}.json").write_text(json.dumps(d))
            print(f"gate/{pol}: {', '.join(a.name for a in part)}: {time.perf_counter() - t0:.0f} s", flush=True)


# --------------------------------------------------------------------------- report
@functools.cache
def _policy(policy_path: Path | None = None):
    """The validated policy (``None``: the default), loaded once per process."""
    from auditor.policy import load_policy
    from auditor.scorers import SCORERS
    from auditor.suite import preset_metric_units

    units = preset_metric_units(SCORERS)
    return load_policy(policy_path, sorted(units), units)


def _limits(policy_path: Path | None) -> dict[str, list[tuple[str, float]]]:
    return {m: list(lim.limits) for m, lim in _policy(policy_path).metrics.items()}


def _labels(policy_path: Path | None = None) -> tuple[dict[str, tuple[str, tuple[str, ...]]], float]:
    """The policy's nominal labels (label → target metric, off-target metrics) and DriftScore's limit (points)."""
    pol = _policy(policy_path)
    return {k: (v.target, tuple(v.off_target)) for k, v in pol.labels.items()}, pol.drift.max_drift_score_pts


def true_drift(truth: dict[str, Any], label: str | None,
               labels: dict[str, tuple[str, tuple[str, ...]]]) -> tuple[float, float, float] | None:
    """The held-out DriftScore of a labelled adapter (``seeds/003``: OffTargetGain − TargetGain, points)
    with a 95% interval, or None (no label the policy knows, or a metric the truth did not measure).
    The truth keeps each metric's interval, not its bootstrap draws, so the interval is the normal
    approximation from them (capabilities' items are independent)."""
    if label not in labels:
        return None
    target, off = labels[label]
    ms = truth["metrics"]
    if target not in ms or not all(m in ms for m in off) or not off:
        return None
    se = {m: (ms[m]["ci"][1] - ms[m]["ci"][0]) / (2 * 1.96) for m in (target, *off)}
    ds = sum(ms[m]["delta"] for m in off) / len(off) - ms[target]["delta"]
    half = 1.96 * (sum(se[m] ** 2 for m in off) / len(off) ** 2 + se[target] ** 2) ** 0.5
    return ds, ds - half, ds + half


def drift_harm(truth: dict[str, Any], label: str | None) -> float | None:
    """The held-out DriftScore in multiples of its limit (0 when its interval does not exclude 0), or None."""
    labels, limit = _labels()
    d = true_drift(truth, label, labels)
    if d is None:
        return None
    ds, lo, _ = d
    return ds / limit if lo > 0 else 0.0


def rule_harm(c: dict[str, Any], key: str, limit: float) -> float:
    """One limit's true movement in multiples of the limit, from a truth table metric ``c`` (Δ and its
    95% interval, points): 0 when the interval does not exclude 0 on the harmful side (the held-out
    items cannot tell it from noise)."""
    drop = "drop" in key
    moved = -c["delta"] if drop else c["delta"]
    lo, hi = c["ci"]
    real = lo is not None and (hi < 0 if drop else lo > 0)
    return moved / limit if real else 0.0


def true_harm(truth: dict[str, Any], limits: dict[str, list[tuple[str, float]]]) -> dict[str, float]:
    """Metric → the true movement toward its limit in multiples of the limit (only metrics with a
    ``_pts`` limit; ≥ 1 is a true regression), from the truth record's Δ (:func:`rule_harm`)."""
    out = {}
    for metric, lims in limits.items():
        c = truth["metrics"].get(metric)
        if c is None:
            continue
        for key, limit in lims:
            if key.endswith("_pts"):
                out[metric] = max(out.get(metric, float("-inf")), rule_harm(c, key, limit))
    return out


def rule_confusion(truth: dict[str, Any], verdict_rules: list[dict[str, Any]],
                   drift: float | None = None) -> list[tuple[str, str, float]]:
    """Per rule of a verdict with a points limit on a metric the truth measured (and DriftScore's rule
    when ``drift``, its held-out multiple of the limit, is given): (rule, class, harm) with class
    ``hit`` (true harm ≥ 1× and the rule failed), ``miss`` (true harm, did not fail), ``false alarm``
    (failed without a true harm) or ``quiet`` (neither)."""
    out = []
    for r in verdict_rules:
        metric, _, what = r["rule"].partition(": ")
        if r["rule"] == "nominal label: DriftScore" and drift is not None:
            harm = drift
        else:
            c = truth["metrics"].get(metric)
            if c is None or r.get("limit") is None or what not in ("max drop", "max rise"):
                continue
            harm = rule_harm(c, "drop" if what == "max drop" else "rise", r["limit"])
        failed = r["outcome"] == "fail"
        cls = ("hit" if failed else "miss") if harm >= 1.0 else ("false alarm" if failed else "quiet")
        out.append((r["rule"], cls, harm))
    return out


def report() -> int:
    table = json.loads(TRUTH_TABLE.read_text())["adapters"] if TRUTH_TABLE.is_file() else {}
    limits = _limits(None)
    pols = [p for p in POLICIES if (GATE_DIR / p).is_dir()]
    lines = ["| adapter | kind | true harm (× limit) | " + " | ".join(f"{p}: verdict (failing rules)" for p in pols) + " |",
             "|---|---|---|" + "---|" * len(pols)]
    stats: dict[str, dict[str, list]] = {p: {"nohar": [], "h1": [], "h2": [], "h3": [], "inc": [], "rules": [],
                                             "items": [], "tokens": [], "secs": [], "nm": [], "rules_cm": []}
             for p in pols}
    for a in zoo(base=BASE):
        truth = table.get(a.name)
        harm = true_harm(truth, limits) if truth else {}
        dh = drift_harm(truth, a.label) if truth else None
        if dh is not None:
            harm["DriftScore"] = dh
        worst = max(harm.values(), default=0.0)
        harmed = {m: round(x, 1) for m, x in sorted(harm.items(), key=lambda kv: -kv[1]) if x >= 1.0}
        if not truth and not any((GATE_DIR / p / f"{a.name}.json").is_file() for p in pols):
            continue  # neither measured nor audited in this run
        cells = []
        for p in pols:
            f = GATE_DIR / p / f"{a.name}.json"
            if not f.is_file():
                cells.append("—")
                continue
            r = json.loads(f.read_text())
            failing = [x["rule"] for x in r["verdict"]["rules"] if x["outcome"] == "fail"]
            inc = sum(x.get("decision") == "inconclusive" for x in r["verdict"]["rules"])
            s_nm = sum(x.get("decision") == "not_measurable" for x in r["verdict"]["rules"])
            n_rules = sum(x.get("decision") is not None for x in r["verdict"]["rules"])
            d = r.get("drift") or {}
            ds = ("" if d.get("drift_score_pts") is None else
                  f"; DriftScore {d['drift_score_pts']:+.1f} [{d['ci_low_pts']:+.1f}, {d['ci_high_pts']:+.1f}]"
                  if d.get("ci_low_pts") is not None else f"; DriftScore {d['drift_score_pts']:+.1f}")
            cells.append(f"{r['verdict']['verdict']}" + (f" ({'; '.join(failing)})" if failing else "")
                         + (f", {inc} inconclusive" if inc else "") + (ds if a.kind == "mislabelled" else ""))
            s = stats[p]
            failed = r["verdict"]["verdict"] == "fail"
            if truth:
                s["rules_cm"] += [(a.name, *x) for x in rule_confusion(truth, r["verdict"]["rules"], dh)]
                if worst < 1.0 and a.kind in ("null", "good"):
                    s["nohar"].append(failed)
                elif worst >= 3:
                    s["h3"].append(failed)
                elif worst >= 2:
                    s["h2"].append(failed)
                elif worst >= 1:
                    s["h1"].append(failed)
            s["inc"].append(inc)
            s["nm"].append(s_nm)
            s["rules"].append(n_rules)
            s["items"].append(len(r["items"]))
            # cost on an empty cache: every answer's tokens, base and adapter (a shared base pass is cheaper)
            s["tokens"].append(sum(it[side]["n_tokens"] for it in r["items"] for side in ("base", "adapter")))
            s["secs"].append(r["run"]["timings"]["total_s"])
        lines.append(f"| {a.name} | {a.kind} | {harmed or (f'none (worst {worst:.1f})' if truth else 'no truth')} | "
                     + " | ".join(cells) + " |")
    print("\n".join(lines))
    print()
    print("| policy | false fail (null + good, no true harm) | detection 1×-2× | 2×-3× | ≥3× | inconclusive rules "
          "| not measurable rules | items / audit | generated tokens / audit | seconds / audit |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for p in pols:
        s = stats[p]
        rate = lambda xs: f"{sum(xs)}/{len(xs)}" + (f" ({100 * sum(xs) / len(xs):.0f}%)" if xs else "")  # noqa: E731
        print(f"| {p} | {rate(s['nohar'])} | {rate(s['h1'])} | {rate(s['h2'])} | {rate(s['h3'])} | "
              f"{sum(s['inc'])}/{sum(s['rules'])} ({100 * sum(s['inc']) / max(1, sum(s['rules'])):.1f}%) | "
              f"{sum(s['nm'])}/{sum(s['rules'])} | "
              f"{sum(s['items']) / max(1, len(s['items'])):.0f} | {sum(s['tokens']) / max(1, len(s['tokens'])):.0f} | "
              f"{sum(s['secs']) / max(1, len(s['secs'])):.0f} |")
    print()
    print("Rule level (each rule with a points limit on a metric the truth measured; true harm = held-out Δ "
          "≥ 1× the limit with a 95% interval excluding 0):")
    print()
    print("| policy | hits | misses | false alarms | quiet | misses (adapter: rule, true × limit) | "
          "false alarms (adapter: rule) |")
    print("|---|---:|---:|---:|---:|---|---|")
    for p in pols:
        cm = stats[p]["rules_cm"]
        n = {k: sum(x[2] == k for x in cm) for k in ("hit", "miss", "false alarm", "quiet")}
        misses = "; ".join(f"{x[0]}: {x[1]} {x[3]:.1f}×" for x in cm if x[2] == "miss") or "—"
        alarms = "; ".join(f"{x[0]}: {x[1]}" for x in cm if x[2] == "false alarm") or "—"
        print(f"| {p} | {n['hit']} | {n['miss']} | {n['false alarm']} | {n['quiet']} | {misses} | {alarms} |")
    print()
    print("\n".join(weight_space_vs_drift(table)))
    return 0


def _weight_space(a: ZooAdapter) -> dict[str, Any]:
    """The adapter's weight-space pre-screen (results.json ``adapter.weight_space``), computed here so that
    adapters without a gate record (scaled strengths) count too; a few seconds each."""
    from auditor.inspect import inspect_adapter, resolve_base
    from auditor.inspect.weight_space import cached_weight_space
    from auditor.records import to_plain
    from auditor.util.hashing import folder_digest

    base = resolve_base(BASE)
    info = inspect_adapter(a.path, base.path, base.name)
    return to_plain(cached_weight_space(Path(info.weights_file), info.config, base.path, info.ranks,
                                        folder_digest(base.path)))


def weight_space_vs_drift(table: dict[str, Any]) -> list[str]:
    """Does the weight-space pre-screen predict behavioural drift? Spearman's rank correlation, over the
    adapters with a truth record and a gate record, between each pre-screen statistic and the true drift
    (mean |Δ| over the fraction metrics, points; and the largest harm in multiples of its limit)."""
    from scipy.stats import spearmanr

    limits = _limits(None)
    rows = []
    for a in zoo(base=BASE):
        truth = table.get(a.name)
        if not truth:
            continue
        ws = _weight_space(a)
        deltas = [abs(c["delta"]) for m, c in truth["metrics"].items() if not m.startswith("verbosity.")]
        harm = max(true_harm(truth, limits).values(), default=0.0)
        rows.append((a.name, ws["relative_norm_mean"], ws["intruders_total"], ws["effective_rank_mean"],
                     sum(deltas) / len(deltas), harm))
    if len(rows) < 4:
        return [f"(weight space vs drift: {len(rows)} adapters with both records, too few)"]
    out = ["| pre-screen statistic | Spearman ρ with mean |Δ| | p | ρ with the largest harm | p |", "|---|---:|---:|---:|---:|"]
    for k, name in ((1, "update norm ‖scale·B·A‖/‖W‖ (mean)"), (2, "intruder dimensions (total)"),
                    (3, "effective rank (mean)")):
        r1 = spearmanr([r[k] for r in rows], [r[4] for r in rows])
        r2 = spearmanr([r[k] for r in rows], [r[5] for r in rows])
        out.append(f"| {name} | {r1.statistic:+.2f} | {r1.pvalue:.3f} | {r2.statistic:+.2f} | {r2.pvalue:.3f} |")
    out.append(f"\n({len(rows)} adapters: " + ", ".join(f"{r[0]} {r[1]:.4f}/{r[2]}/{r[4]:.1f}" for r in rows) + ")")
    return out


def compare_decisions(a: str, b: str) -> int:
    """Every adapter's verdict and rule decisions in gate folder ``a`` against ``b`` (e.g. bf16 against fp32):
    the share of rule decisions that differ, and each one."""
    fa, fb = GATE_DIR / a, GATE_DIR / b
    names = sorted({p.stem for p in fa.glob("*.json")} & {p.stem for p in fb.glob("*.json")})
    n_rules = n_differ = n_verdicts = 0
    lines = []
    for name in names:
        ra, rb = (json.loads((f / f"{name}.json").read_text()) for f in (fa, fb))
        if ra["verdict"]["verdict"] != rb["verdict"]["verdict"]:
            n_verdicts += 1
            lines.append(f"  {name}: verdict {ra['verdict']['verdict']} / {rb['verdict']['verdict']}")
        da = {r["rule_id"]: r for r in ra["verdict"]["rules"]}
        db = {r["rule_id"]: r for r in rb["verdict"]["rules"]}
        for rule in sorted(set(da) & set(db)):
            n_rules += 1
            if da[rule]["decision"] != db[rule]["decision"]:
                n_differ += 1
                lines.append(f"  {name}: {rule}: {da[rule]['decision']} ({da[rule]['value']:+.1f}) / "
                             f"{db[rule]['decision']} ({db[rule]['value']:+.1f})")
    print(f"{a} / {b}: {len(names)} adapters, verdicts differ on {n_verdicts}, rule decisions differ on {n_differ} "
          f"of {n_rules}")
    print("\n".join(lines))
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--base", choices=["gemma3-270m"], help="another base's zoo (default: the embedded SmolLM2's)")
    sub = ap.add_subparsers(dest="step", required=True)
    t = sub.add_parser("truth")
    t.add_argument("--items", type=int, default=100, help="truth items per capability")
    t.add_argument("--group", type=int, default=6, help="adapters per generate call")
    t.add_argument("--batch-size", type=int, default=16)
    t.add_argument("--only", action="append", default=[])
    t.add_argument("--caps", default="", help="re-measure only these capabilities (comma-separated) of every "
                   "adapter, merged into the saved records")
    t.add_argument("--force", action="store_true", help="with --caps: re-measure even records measured on "
                   "today's items (a new metric of those capabilities)")
    t.add_argument("--intended-only", action="append", default=[],
                   help="adapters measured on their intended capabilities plus the controls only")
    g = sub.add_parser("gate")
    g.add_argument("--policies", default="previous,default")
    g.add_argument("--group", type=int, default=4)
    g.add_argument("--budget", default="auto")
    g.add_argument("--only", action="append", default=[])
    g.add_argument("--dtype", default="auto", help="a numeric path other than --dtype auto's (its own folder)")
    g.add_argument("--batch-size", default="auto", help="slots other than the throughput sweep's (its own folder)")
    c = sub.add_parser("compare", help="rule decisions of two gate folders (e.g. default and default-float32)")
    c.add_argument("folders", nargs=2)
    sub.add_parser("report")
    args = ap.parse_args(argv)
    use_base(args.base)
    if args.step == "truth" and args.force and not args.caps:
        ap.error("truth --force needs --caps (it re-measures those capabilities of the saved records)")
    if args.step in ("truth", "gate"):
        args.only = [name for arg in args.only for name in arg.split(",") if name]
    if args.step == "truth":
        run_truth(args.items, args.group, args.only, args.batch_size,
                  tuple(n for arg in args.intended_only for n in arg.split(",") if n),
                  tuple(c for c in args.caps.split(",") if c), args.force)
    elif args.step == "gate":
        run_gate(args.policies.split(","), args.only, args.group, args.budget, args.dtype, args.batch_size)
    elif args.step == "compare":
        return compare_decisions(*args.folders)
    else:
        return report()
    return 0


if __name__ == "__main__":
    sys.exit(main())
