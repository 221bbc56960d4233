"""One adapter's looks: score, compare and judge its answers, and while rules are undecided and the budget
allows, buy rounds of more items for them (docs/concepts/design.md, the data flow).

:func:`one_result` is the loop; the rest is its arithmetic: the budget a run may spend (items, seconds, new
tokens), what was spent, the size of each round per capability (its sample doubles, the cheapest decisions
per token first) and the draw from the pools.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from typing import Any

from rich.markup import escape

from ..analysis import agreement_with_base, compare_metrics, drift_score
from ..backends import Backend
from ..options import AuditOptions
from ..policy import judge
from ..records import (
    AdapterRecord,
    Budget,
    DriftResult,
    Generation,
    Item,
    MetricComparison,
    Round,
    RuleOutcome,
    Score,
    Suite,
    Variant,
    Verdict,
)
from ..results import AuditResult
from ..scorers import score_all
from ..suite import plan_requests
from ..suite.pools import Pool, load_pool
from . import assembly, progress
from .assembly import Evidence, Run

Log = Callable[[str], Any]


def budget_for(opts: AuditOptions, suite: Suite, backend: Backend) -> Budget:
    """The rounds' budget: ``--budget`` items / seconds / tokens, or with ``auto`` the suite's item count on
    the CPU and twice it on a GPU or a server (where generation is cheap), and none with ``--limit``; a time
    or a token limit given beside ``auto`` (``--budget auto,20m``) applies in every case."""
    if opts.budget_items is not None:
        return Budget(items=opts.budget_items, seconds=opts.budget_seconds, tokens=opts.budget_tokens)
    if opts.limit is not None:  # --limit is a quick look: no rounds unless --budget asks for them
        return Budget(items=0, seconds=opts.budget_seconds, tokens=opts.budget_tokens)
    cheap = backend.name in ("vllm", "openai") or str(getattr(backend, "device", "cpu")).startswith("cuda")
    return Budget(items=int(len(suite.items) * (2.0 if cheap else 1.0)), seconds=opts.budget_seconds,
                  tokens=opts.budget_tokens)


@dataclass
class Spending:
    """What the rounds of one adapter's audit have spent of its :class:`~auditor.records.Budget` so far
    (the pipeline's own bookkeeping, not a record: :meth:`record` is what results.json gets)."""

    budget: Budget
    used_items: int = 0
    used_tokens: int = 0
    started: float = field(default_factory=time.perf_counter)

    def left(self) -> int:
        """Items still to spend (0 once the time or the tokens are up)."""
        if self.budget.seconds is not None and time.perf_counter() - self.started >= self.budget.seconds:
            return 0
        if self.budget.tokens is not None and self.used_tokens >= self.budget.tokens:
            return 0
        return max(0, self.budget.items - self.used_items)

    def tokens_left(self) -> float | None:
        """New tokens still to spend (None: no token limit)."""
        return None if self.budget.tokens is None else max(0.0, float(self.budget.tokens - self.used_tokens))

    def used_s(self) -> float:
        """Seconds since the budget started (results.json ``run.timings.rounds_s``)."""
        return round(time.perf_counter() - self.started, 3)

    def record(self, looks: int) -> Budget:
        return replace(self.budget, looks=looks, used_items=self.used_items,
                       used_tokens=self.used_tokens if self.budget.tokens is not None else None)


def tokens_per_item(suite: Suite, generations: list[Generation]) -> dict[str, float]:
    """Capability → mean new tokens of one item so far, every variant's answers together (what one more
    item of it will likely cost)."""
    cap = {i.id: i.capability for i in suite.items}
    tokens: dict[str, int] = {}
    for g in generations:
        if g.item_id in cap:
            tokens[cap[g.item_id]] = tokens.get(cap[g.item_id], 0) + g.n_tokens
    n = per_capability(suite.items)
    return {c: t / n[c] for c, t in tokens.items() if n.get(c)}


def per_capability(items: Iterable[Item]) -> dict[str, int]:
    """Capability → number of items."""
    out: dict[str, int] = {}
    for i in items:
        out[i.capability] = out.get(i.capability, 0) + 1
    return out


def round_sizes(undecided: list[RuleOutcome], have: dict[str, int], available: dict[str, int],
                budget_left: int, tokens_per_item: dict[str, float] | None = None,
                tokens_left: float | None = None) -> dict[str, int]:
    """How many new items each capability gets in the next round: as many as it has (its sample
    doubles), capped by its pool, until the budget is spent, the capability whose undecided rules are
    cheapest to decide first; capabilities whose undecided rules can all only pass or be called not measurable
    (their base's room short of the limit: ``measurable`` false) after those whose rules can show harm.

    Cheapest: with ``tokens_per_item`` (what one item cost so far: the base's and the adapter's new
    tokens, known after the first look), the tokens the capability would likely need to decide its
    rules, ``(items_to_decide − have) × tokens per item`` (the largest among its rules; ``have`` where
    a rule has no estimate); ties, and every capability without a cost, in order of how likely its
    undecided rules are to fail (the largest movement relative to its limit first).

    Args:
        undecided: the look's undecided rules (each names its capabilities).
        have: capability → items judged so far.
        available: capability → items left in its pool.
        budget_left: items the rounds may still add.
        tokens_per_item: capability → new tokens per item so far (both variants), or None.
        tokens_left: new tokens the rounds may still generate (``--budget Ntok``; None: no token limit):
            a capability gets the items whose expected tokens fit.

    Returns:
        capability → items to draw (capabilities that get none left out).
    """
    urgency: dict[str, float] = {}
    need: dict[str, int] = {}
    can_fail: dict[str, bool] = {}
    for r in undecided:
        ratio = (r.value or 0.0) / r.limit if r.limit else 0.0
        for c in r.capabilities:
            urgency[c] = max(urgency.get(c, float("-inf")), ratio)
            can_fail[c] = can_fail.get(c, False) or r.measurable is not False
            more = (r.items_to_decide - have.get(c, 0)) if r.items_to_decide else have.get(c, 0)
            need[c] = max(need.get(c, 0), max(1, more))
    cost = tokens_per_item or {}

    def order(c: str) -> tuple[bool, float, float, str]:
        return (not can_fail[c], need[c] * cost[c] if c in cost else float("inf"), -urgency[c], c)

    out: dict[str, int] = {}
    for cap in sorted(urgency, key=order):
        n = min(have.get(cap, 0), available.get(cap, 0), budget_left)
        if tokens_left is not None and cost.get(cap):
            n = min(n, int(tokens_left // cost[cap]))
        if n > 0:
            out[cap] = n
            budget_left -= n
            if tokens_left is not None:
                tokens_left -= n * cost.get(cap, 0.0)
    return out


def draw(run: Run, suite: Suite, undecided: list[RuleOutcome], pools: dict[str, Pool], spent: Spending,
          tokens_per_item: dict[str, float]) -> list[Item]:
    """The next round's items (:func:`round_sizes`), drawn from the capabilities' pools."""
    for cap in dict.fromkeys(c for r in undecided for c in r.capabilities):
        if cap not in pools:
            pools[cap] = load_pool(suite, cap, run.opts.data_dir, run.policy.statistics.seed)
    sizes = round_sizes(undecided, per_capability(suite.items), {c: p.remaining for c, p in pools.items()},
                        spent.left(), tokens_per_item, spent.tokens_left())
    out: list[Item] = []
    for cap, n in sizes.items():
        drawn = pools[cap].draw(n)
        spent.used_items += len(drawn)
        out += drawn
    return out


def _label(opts: AuditOptions, adapter: AdapterRecord) -> tuple[str | None, str]:
    """The nominal label and where it came from: ``--label``, the model card, or none."""
    if opts.label:
        return opts.label, "--label"
    if adapter.nominal_label:
        return adapter.nominal_label, "model card"
    return None, "none"


def _analyse(run: Run, suite: Suite, scores: list[Score], prev_scores: list[Score], variant: str, label: str | None,
             label_source: str, mapping: Any) -> tuple[list[MetricComparison], DriftResult, list[MetricComparison] | None]:
    """Compare (analysis stage) base and adapter, DriftScore, and the candidate against ``--baseline``."""
    settings = run.policy.statistics.settings
    comparisons = compare_metrics(suite, scores, settings, candidate=variant)
    drift = drift_score(comparisons, label, label_source, mapping.target if mapping else None,
                        list(mapping.off_target) if mapping else [], float(run.policy.drift.max_drift_score_pts))
    prev = None
    if run.baseline is not None:  # candidate vs previously approved adapter: the previous one on the "base" side
        cand = [x for x in scores if x.variant == variant]
        prev = compare_metrics(suite, [*prev_scores, *cand], settings, reference="baseline", candidate=variant)
    return comparisons, drift, prev


def one_result(run: Run, variant: Variant, adapter_gens: list[Generation], log: Log) -> AuditResult:
    """Score, compare and judge one adapter of a (multi-)audit, look by look: while rules are undecided
    and the budget allows, draw more items for their capabilities from the suite's pools, generate
    base and adapter answers to the new items only, and decide again (docs/concepts/design.md, the data
    flow)."""
    suite, policy, opts = run.suite, run.policy, run.opts
    adapter = variant.info
    label, label_source = _label(opts, adapter)
    mapping = policy.promise(label, suite.metric_names())
    if label in policy.labels and mapping is None:
        missing = policy.missing_for(label, suite.metric_names())
        log(f"[yellow]note:[/] DriftScore for label {escape(repr(label))} needs capabilities left out of this run: "
            f"{escape(', '.join(missing))} (add {escape(' '.join(f'--capability {c}' for c in missing))})")
    items = {i.id: i for i in suite.items}
    generations = [*run.base_gens, *adapter_gens]
    scores = [*run.base_scores, *score_all(items, adapter_gens, run.scorer_of)]
    prev_gens = list(run.baseline.generations) if run.baseline else []
    prev_scores = list(run.baseline.scores) if run.baseline else []
    spent = Spending(budget_for(opts, suite, run.backend))
    pools: dict[str, Pool] = {}
    item_round = {i.id: 1 for i in suite.items}
    rounds: list[Round] = []
    new: list[Item] = []
    look = 1
    # planned before any data: a budget that buys no rounds plans one look, which spends all of alpha
    planned = policy.statistics.looks if spent.left() > 0 else 1
    warnings = (*variant.warnings, *run.warnings)
    fresh_items: list[Item] = []

    def judged(last: bool) -> Verdict:
        return judge(policy, comparisons, drift, adapter, run.noise, baseline_comparisons=prev_comparisons,
                     look=look, last=last, looks=planned, warnings=warnings)

    while True:
        comparisons, drift, prev_comparisons = _analyse(run, suite, scores, prev_scores, variant.name, label,
                                                        label_source, mapping)
        more = look < planned and spent.left() > 0
        verdict = judged(last=not more)
        undecided = verdict.undecided
        if undecided:
            fresh_items = draw(run, suite, undecided, pools, spent, tokens_per_item(suite, generations))
            if not fresh_items:  # the pools are spent: decide on what there is
                verdict = judged(last=True)
        rounds.append(Round(look=look, items=per_capability(suite.items),
                            new_items=per_capability(new) if look > 1 else None,
                            undecided=tuple(r.rule for r in verdict.undecided)))
        if not undecided or not fresh_items:
            break
        new = fresh_items
        look += 1
        log(progress.round_line(look, undecided, {i.capability for i in new}, len(new)))
        names = ("base", variant.name, *(("baseline",) if run.baseline else ()))
        fresh = run.backend.generate(plan_requests(replace(suite, items=tuple(new)), names))
        new_items = {i.id: i for i in new}
        spent.used_tokens += sum(g.n_tokens for g in fresh)
        generations += [g for g in fresh if g.variant in ("base", variant.name)]
        scores += score_all(new_items, [g for g in fresh if g.variant in ("base", variant.name)], run.scorer_of)
        if run.baseline:
            prev_new = [g for g in fresh if g.variant == "baseline"]
            prev_gens += prev_new
            prev_scores += score_all(new_items, prev_new, run.scorer_of)
        suite = replace(suite, items=(*suite.items, *new))
        item_round.update({i.id: look for i in new})
    # "label mismatch" is the DriftScore rule's decision, not the point estimate beside its limit
    drift = replace(drift, mismatch=any(r.kind == "drift" and r.decision == "fail" for r in verdict.rules))
    ev = Evidence(suite=suite, generations=tuple(generations), scores=tuple(scores), comparisons=tuple(comparisons),
                  drift=drift, verdict=verdict, agreement=agreement_with_base(suite.items, generations, variant.name),
                  baseline_comparisons=None if prev_comparisons is None else tuple(prev_comparisons),
                  baseline_generations=tuple(prev_gens), baseline_scores=tuple(prev_scores), rounds=tuple(rounds),
                  item_round=item_round, budget=spent.record(planned), rounds_s=spent.used_s())
    return assembly.result(run, variant, ev)


