"""``--noise-floor``: how far the base moves against itself when only the arithmetic's path does.

Greedy decoding is not always batch-invariant (transformers#25921): on a GPU, and for a model that keeps the
library's attention, the same prompt can get another answer in another batch. The hf backend on a CPU computes
each row alike whatever the batch holds (:mod:`auditor.backends.hf.invariant`), so there the batch changes
nothing, and what a laptop and a CI runner can still differ by is the dtype ``--dtype auto`` picks from the CPU
(bfloat16 where it is native, float32 elsewhere). The replay is the base against itself on that other path: the
answers that changed, and each metric's shift, are the size of a delta this audit makes out of nothing. The judge
(:func:`auditor.policy.judge`) marks a decided rule whose movement lies that close to its limit.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Literal, Protocol

from ..records import Generation, NoiseFloor, Request, Score, Suite
from ..scorers import score_all
from ..suite import plan_requests
from .compare import StatsSettings, compare_metrics

if TYPE_CHECKING:
    from ..backends import Backend


class Replay(Protocol):
    """The base alone on another dtype (a second engine, or a Ray worker's): what :func:`noise_floor` replays on."""

    dtype: str
    batch_size: int | str

    def generate(self, requests: list[Request]) -> list[Generation]:
        """One Generation per request, in order."""
        ...


def noise_floor(backend: Backend, suite: Suite, generations: list[Generation], scores: list[Score],
                scorer_of: dict[str, str], log: Callable[[str], Any], replay: Replay | None = None) -> NoiseFloor:
    """Replay the base variant on another path and measure what moved.

    Args:
        backend: the audit's backend.
        suite: the suite whose base answers are replayed (the first look's items).
        generations, scores: the audit's base answers and their scores.
        scorer_of: capability → scorer name.
        log: where the one progress line goes.
        replay: the base on the other dtype (a backend whose answers do not depend on the batch:
            :func:`auditor.pipeline.stages`); None: ``backend`` again with half the batch size (a group
            that fits in one batch is cut in two), its cache neither read nor written.

    Returns:
        A :class:`~auditor.records.NoiseFloor`: the answers and scores that changed and each metric's shift
        (replay − base, in the metric's delta unit and in % of the base mean).
    """
    items = {i.id: i for i in suite.items}
    bs = backend.batch_size
    if replay is None:
        used = int(bs) if bs != "auto" else max(backend.stats.batch_sizes_used.values(), default=2)
        replay_bs: Any = used // 2 if used > 1 else 2
        log(f"noise floor: replaying the base variant with batch size {replay_bs} (was {bs})")
        backend.batch_size = replay_bs
        try:
            again = backend.generate(plan_requests(suite, ("base",)), split_small=True, use_cache=False)
        finally:
            backend.batch_size = bs
        varied: Literal["batch_size", "dtype"] = "batch_size"
        dtypes = (backend.dtype, backend.dtype)
    else:
        replay_bs = replay.batch_size
        log(f"noise floor: replaying the base variant in {replay.dtype} (the audit runs in {backend.dtype}; "
            "its answers do not depend on the batch)")
        again = replay.generate(plan_requests(suite, ("base",)))
        varied, dtypes = "dtype", (backend.dtype, replay.dtype)
    first = {g.item_id: g for g in generations if g.variant == "base"}
    first_scores = [s for s in scores if s.variant == "base"]
    again_scores = score_all(items, again, scorer_of)
    by_first = {s.item_id: s.values for s in first_scores}
    changed = sorted(g.item_id for g in again if g.text != first[g.item_id].text)
    score_changed = sorted(s.item_id for s in again_scores if s.item_id in changed and s.values != by_first[s.item_id])
    shifts = compare_metrics(suite, [*first_scores, *(dataclasses.replace(s, variant="adapter") for s in again_scores)],
                             StatsSettings(n_resamples=200))  # (point shifts; the intervals unused)
    return NoiseFloor(n_items=len(again), batch_sizes=(bs, replay_bs), n_differ=len(changed),
                      n_score_differ=len(score_changed), items_differ=tuple(changed),
                      items_score_differ=tuple(score_changed), varied=varied, dtypes=dtypes,
                      metric_shifts={c.metric: float(c.delta) for c in shifts if c.delta is not None},
                      metric_shifts_pct={c.metric: float(c.rel_delta_pct) for c in shifts
                                         if c.rel_delta_pct is not None})
