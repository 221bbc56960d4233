"""``--noise-floor``: how many base answers change when only the batch composition does.

Greedy decoding in transformers is not always batch-invariant (transformers#25921): the same
prompt can get another answer in another batch. Replaying the base variant with another batch
composition and counting the answers (and scores) that changed says how large a delta this
backend makes out of nothing.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..records import Generation, NoiseFloor, Score, Suite
from ..scorers import score_all
from ..suite import plan_requests

if TYPE_CHECKING:
    from ..backends import Backend


def noise_floor(backend: Backend, suite: Suite, generations: list[Generation], scores: list[Score],
                scorer_of: dict[str, str], log: Callable[[str], Any]) -> NoiseFloor:
    """Replay the base variant with another batch composition (half the batch size; a group that
    fits in one batch is cut in two) and count the items whose answer, or score, changed.

    Args:
        backend: the audit's backend (its cache is neither read nor written by the replay).
        suite: the suite whose base answers are replayed.
        generations, scores: the audit's base answers and their scores.
        scorer_of: capability → scorer name.
        log: where the one progress line goes.

    Returns:
        A :class:`~auditor.records.NoiseFloor` (zero differences on a batch-invariant backend).
    """
    items = {i.id: i for i in suite.items}
    bs = backend.batch_size
    used = int(bs) if bs != "auto" else max(backend.stats.batch_sizes_used.values(), default=2)
    replay_bs = used // 2 if used > 1 else 2
    log(f"noise floor: replaying the base variant with batch size {replay_bs} (was {bs})")
    backend.batch_size = replay_bs
    try:
        replay = backend.generate(plan_requests(suite, ("base",)), split_small=True, use_cache=False)
    finally:
        backend.batch_size = bs
    first = {g.item_id: g for g in generations if g.variant == "base"}
    first_scores = {s.item_id: s.values for s in scores if s.variant == "base"}
    replay_scores = {s.item_id: s.values for s in score_all(items, replay, scorer_of)}
    changed = sorted(g.item_id for g in replay if g.text != first[g.item_id].text)
    score_changed = sorted(i for i in changed if replay_scores[i] != first_scores[i])
    return NoiseFloor(n_items=len(replay), batch_sizes=(bs, replay_bs), n_differ=len(changed),
                      n_score_differ=len(score_changed), items_differ=tuple(changed),
                      items_score_differ=tuple(score_changed))
