"""The hf backend's log-likelihoods on the real embedded base: one padded pass per item gives what one plain
forward pass per (context, continuation) gives; an item's numbers are exactly the same whatever else the call
scores, in fp32 and in bf16; they are cached and served again without the model."""

from __future__ import annotations

import json

import pytest
from conftest import SHARED, needs_shared

from auditor.backends.base import encode_pair
from auditor.backends.hf.backend import HFBackend
from auditor.cache import GenerationCache
from auditor.records import Item, Request
from auditor.scorers.loglikelihood import build_target

pytestmark = [pytest.mark.slow, needs_shared]


def _arc_items(n: int) -> list[Item]:
    lines = (SHARED / "data" / "mc" / "arc_easy" / "ARC-Easy-Test.jsonl").read_text().splitlines()[:n]
    items = []
    for line in lines:
        r = json.loads(line)
        keys = [c["label"] for c in r["question"]["choices"]]
        texts = [c["text"] for c in r["question"]["choices"]]
        ctx = f"Question: {r['question']['stem']}\nAnswer:"
        target = build_target({"choices": texts, "answer": keys.index(r["answerKey"]), "contexts": [ctx] * len(texts)})
        items.append(Item(id=f"arc/{r['id']}", capability="arc", group="CAN", messages=({"role": "user", "content": ctx},),
                          max_new_tokens=0, target=target, output_type="multiple_choice"))
    return items


@pytest.fixture(scope="module")
def backend(base_model, tmp_path_factory):
    b = HFBackend(base_model.path, (), dtype="float32",
                  cache=GenerationCache(tmp_path_factory.mktemp("cache")), base_digest="test-base")
    b.show_progress = False
    return b


def test_one_pass_per_item_equals_one_forward_pass_per_choice(backend):
    import torch

    items = _arc_items(12)
    gens = backend.generate([Request(item=i, variant="base") for i in items], use_cache=False)
    model, tok = backend.model, backend.tokenizer
    with torch.inference_mode():
        for it, g in zip(items, gens):
            ref = []
            for ctx, cont in zip(it.target["contexts"], it.target["continuations"]):
                c, x = encode_pair(tok, ctx, cont)
                logp = model(input_ids=torch.tensor([c + x])).logits[0].float().log_softmax(-1)
                ref.append(float(sum(logp[len(c) - 1 + j, t] for j, t in enumerate(x))))
            assert g.loglikelihoods == pytest.approx(ref, abs=2e-3), it.id
            assert g.n_tokens == 0 and g.scored_tokens > 0
            assert g.text == it.target["continuations"][max(range(len(ref)), key=ref.__getitem__)].strip()


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_an_items_loglikelihoods_do_not_depend_on_the_other_items(backend, base_model, tmp_path, dtype):
    """Exactly equal, bf16 included (where batching items together moved them by up to 0.5 nats): a resumed
    or cached audit scores an item as a fresh one does."""
    b = backend if dtype == "float32" else HFBackend(base_model.path, (), dtype=dtype,
                                                     cache=GenerationCache(tmp_path), base_digest="test-base")
    b.show_progress = False
    items = _arc_items(10)
    together = b.generate([Request(item=i, variant="base") for i in items], use_cache=False)
    alone = b.generate([Request(item=items[7], variant="base")], use_cache=False)
    some = b.generate([Request(item=i, variant="base") for i in items[5:9]], use_cache=False)
    assert alone[0].loglikelihoods == together[7].loglikelihoods == some[2].loglikelihoods


def test_loglikelihoods_are_cached_and_served_without_scoring_again(backend):
    items = _arc_items(4)
    first = backend.generate([Request(item=i, variant="base") for i in items])
    scored = dict(backend.stats.scored)
    again = backend.generate([Request(item=i, variant="base") for i in items])
    assert backend.stats.scored == scored  # nothing scored the second time: every item a cache hit
    assert [g.loglikelihoods for g in again] == [g.loglikelihoods for g in first]
