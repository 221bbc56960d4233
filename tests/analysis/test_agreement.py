"""Agreement with the base: the share of generated answers the adapter left as the base's and the mean position of
the first differing word, per capability and overall, from hand-made answers (exact values)."""

from __future__ import annotations

import pytest

from auditor.analysis.agreement import agreement, agreement_with_base, first_difference_word
from auditor.records import Agreement, Generation, Item


def _item(item_id: str, output_type: str = "generate_until") -> Item:
    return Item(id=item_id, capability=item_id.split("/")[0], group="CAN", messages=({"role": "user", "content": "q"},),
                max_new_tokens=0 if output_type == "multiple_choice" else 16, target={}, output_type=output_type)


def _answers(variant: str, texts: dict[str, str]) -> list[Generation]:
    return [Generation(item_id=i, variant=variant, text=t, n_tokens=len(t.split())) for i, t in texts.items()]


@pytest.mark.parametrize("base,adapter,position", [
    ("The answer is 42.", "The answer is 41.", 4),
    ("42", "Sure! 42", 1),
    ("The answer is 42", "The answer is 42 because 6 x 7 = 42", 5),  # the base's words begin the adapter's
    ("The answer is 42 because 6 x 7", "The answer", 3),                # and the other way round
    ("", "Anything", 1),
    ("The answer is 42", "The  answer is\n42", 5),                       # whitespace only: after the last word
])
def test_the_first_differing_word(base, adapter, position):
    assert first_difference_word(base, adapter) == position


def test_per_capability_and_overall_on_generated_items_only():
    items = [_item("math/a"), _item("math/b"), _item("math/c"), _item("math/d"),
             _item("ifeval/a"), _item("ifeval/b"),
             _item("knowledge/a", "multiple_choice"), _item("knowledge/b", "multiple_choice")]
    base = {"math/a": "6 x 7 = 42", "math/b": "The answer is 12.", "math/c": "It is 9", "math/d": "5",
            "ifeval/a": "hello world", "ifeval/b": "one two three",
            "knowledge/a": " B", "knowledge/b": " C"}
    adapter = {"math/a": "6 x 7 = 42",                    # the same
               "math/b": "The answer is 13.",              # word 4
               "math/c": "It is 9 of course",              # the base's words begin it: word 4 (3 + 1)
               "math/d": "Five",                           # word 1
               "ifeval/a": "hello world", "ifeval/b": "one two three",   # both the same
               "knowledge/a": " A", "knowledge/b": " D"}   # multiple choice: no generated answer, left out
    baseline = {k: "something else" for k in base}        # another variant's answers: ignored
    gens = [*_answers("base", base), *_answers("adapter0", adapter), *_answers("baseline", baseline)]
    result = agreement_with_base(items, gens, "adapter0")
    assert result.capabilities == {
        "math": Agreement(identical=0.25, n_items=4, first_difference_word=3.0),  # (4 + 4 + 1) / 3
        "ifeval": Agreement(identical=1.0, n_items=2, first_difference_word=None),  # none differs: null
    }
    assert list(result.capabilities) == ["math", "ifeval"]  # in the items' order; knowledge is absent
    assert result.overall == Agreement(identical=0.5, n_items=6, first_difference_word=3.0)


def test_no_generated_item_compares_nothing():
    items = [_item("knowledge/a", "multiple_choice")]
    gens = [*_answers("base", {"knowledge/a": " B"}), *_answers("adapter", {"knowledge/a": " A"})]
    result = agreement_with_base(items, gens, "adapter")
    assert result.capabilities == {}
    assert result.overall == Agreement(identical=None, n_items=0, first_difference_word=None) == agreement([])


def test_an_unpaired_item_is_refused():
    with pytest.raises(ValueError, match="item math/a: base and adapter answers are not paired"):
        agreement_with_base([_item("math/a")], _answers("base", {"math/a": "1"}), "adapter")
