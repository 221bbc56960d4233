"""Rounds: what one adapter's audit spends on rules its suite left undecided (DESIGN.md §2, issue 19),
and how many items each undecided capability gets in the next look.

The pipeline owns the loop (:func:`auditor.pipeline._one_result`); this module holds its arithmetic:
the budget a run may spend (items, seconds, new tokens), what was spent, the size of each round per
capability (its sample doubles, the cheapest decisions per token first) and the draw from the pools.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from .options import AuditOptions
from .records import Budget, Generation, Item, RuleOutcome, Suite
from .suite.pools import Pool, load_pool

if TYPE_CHECKING:
    from .assembly import Run
    from .backends import Backend


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
    cheapest to decide first.

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
    for r in undecided:
        ratio = (r.value or 0.0) / r.limit if r.limit else 0.0
        for c in r.capabilities:
            urgency[c] = max(urgency.get(c, float("-inf")), ratio)
            more = (r.items_to_decide - have.get(c, 0)) if r.items_to_decide else have.get(c, 0)
            need[c] = max(need.get(c, 0), max(1, more))
    cost = tokens_per_item or {}

    def order(c: str) -> tuple[float, float, str]:
        return (need[c] * cost[c] if c in cost else float("inf"), -urgency[c], c)

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
