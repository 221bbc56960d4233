"""Agreement with the base: how many of the adapter's generated answers are the base's, word for word, and where
the others part from it.

Per capability and over the whole audit, on the generated items only (``Item.output_type`` ``generate_until``; a
multiple-choice item scored by log-likelihood has no generated answer), each item's adapter answer is paired with
the base's answer to the same item (:attr:`~auditor.records.Generation.text`):

* ``identical``: the share of items whose two answers are the same string;
* ``first_difference_word``: over the items whose answers differ, the mean 1-based position of the first word
  (``str.split()``) that differs (:func:`first_difference_word`).

Descriptive only: no rule acts on it. It tells a small change of what is right from an adapter that rewrote
everything (a few percent of answers changed, late in them, against most answers changed from their first words).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from ..records import Agreement, AgreementWithBase, Generation, Item


def first_difference_word(base: str, adapter: str) -> int:
    """The 1-based position of the first whitespace-separated word where ``adapter`` differs from ``base``; where
    one's words begin the other's (whitespace-only differences included), the position after the shorter one's
    last word."""
    b, a = base.split(), adapter.split()
    for k, (x, y) in enumerate(zip(b, a), 1):
        if x != y:
            return k
    return min(len(b), len(a)) + 1


def agreement(pairs: Sequence[tuple[str, str]]) -> Agreement:
    """The :class:`~auditor.records.Agreement` of ``(base answer, adapter answer)`` pairs."""
    if not pairs:
        return Agreement()
    positions = [first_difference_word(b, a) for b, a in pairs if b != a]
    return Agreement(identical=(len(pairs) - len(positions)) / len(pairs), n_items=len(pairs),
                     first_difference_word=sum(positions) / len(positions) if positions else None)


def agreement_with_base(items: Sequence[Item], generations: Iterable[Generation], candidate: str,
                        reference: str = "base") -> AgreementWithBase:
    """The candidate's generated answers to ``items`` compared with the reference's, per capability (in the order
    the items give them) and over all of them.

    Args:
        items: the items judged (every look's, as the comparisons use them); multiple-choice items are passed over.
        generations: answers of both variants (other variants' and other items' are ignored).
        candidate, reference: the variants compared (:attr:`~auditor.records.Generation.variant`).

    Raises:
        ValueError: a generated item lacks the reference's or the candidate's answer.
    """
    text = {(g.item_id, g.variant): g.text for g in generations}
    by_cap: dict[str, list[tuple[str, str]]] = {}
    for it in items:
        if it.output_type != "generate_until":
            continue
        try:
            pair = (text[(it.id, reference)], text[(it.id, candidate)])
        except KeyError:
            raise ValueError(f"item {it.id}: {reference} and {candidate} answers are not paired") from None
        by_cap.setdefault(it.capability, []).append(pair)
    return AgreementWithBase(overall=agreement([p for pairs in by_cap.values() for p in pairs]),
                             capabilities={cap: agreement(pairs) for cap, pairs in by_cap.items()})
