"""Verbosity (WILL): answer length in words and tokens (CapTrack: *CapTrack: Multifaceted Evaluation of
Forgetting in LLM Post-Training*)."""

from __future__ import annotations

from ..records import Generation, Item, MetricSpec, Score
from .scorer import Scorer, register


# --------------------------------------------------------------------------- verbosity (WILL)
def score_length(item: Item, gen: Generation) -> Score:
    """Response length of one answer, for the ``verbosity`` capability (CapTrack).

    Values (counts, not fractions):
        ``words``: whitespace-separated words of the decoded answer (``len(text.split())``);
        ``tokens``: generated tokens as counted by the backend (``Generation.n_tokens``,
        which includes the end-of-sequence token when the model stopped by itself).

    ``detail["hit_budget"]`` is True when the answer used the whole ``max_new_tokens``
    budget, so its length is a lower bound. Adapter-vs-base ratios are computed by
    ``compare``, not here.
    """
    words = len(gen.text.split())
    return Score(item_id=gen.item_id, variant=gen.variant, values={"words": float(words), "tokens": float(gen.n_tokens)},
                 detail={"words": words, "tokens": gen.n_tokens, "hit_budget": gen.n_tokens >= item.max_new_tokens})


register(Scorer("length", (MetricSpec(name="words", higher_is_better=False, unit="words"),
                           MetricSpec(name="tokens", higher_is_better=False, unit="tokens")), score_length))
