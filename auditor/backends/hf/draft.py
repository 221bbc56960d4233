"""Draft and verify: an adapter's greedy answer from the base's answer and one forward pass.

A LoRA adapter moves a model a little, and most of its greedy answers repeat the base's token for token. When
the base's answer to an item is known (this run's base pass, or the answer cache), the adapter's answer need
not be decoded one token at a time: one forward pass of the adapter over prompt + the base's answer (the
*draft*) gives the adapter's own greedy choice after every prefix of the draft. Where those choices agree with
the draft, the adapter's greedy answer is the draft; at the first position where they disagree the adapter's
choice is taken, and decoding goes on from there. This is the verification step of speculative decoding
(Leviathan, Kalman and Matias, "Fast Inference from Transformers via Speculative Decoding", arXiv:2211.17192),
with the base model as the draft model and greedy acceptance, which keeps the answer the adapter's own.

The draft is the base's answer as the base produced it (its token ids, EOS included, from this run's stream or
the answer cache), or, where only its text is known, the text encoded again with the adapter's tokenizer and the
EOS token: a draft need not be the token sequence the base produced, since every accepted token is one the
adapter chose itself.
What differs from plain decoding is numeric only: the verification computes a position's logits in a prefill
pass, decoding in a decode step, and two kernels may round a near-tie apart (measured in benchmarks/RESULTS.md).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

#: tokens a verification pass may hold (prompt + draft, padded), and the kept logits' elements it may hold
VERIFY_TOKENS = 8192
VERIFY_LOGITS = 1 << 27


@dataclass(frozen=True)
class Verified:
    """One request's verified draft.

    Attributes:
        row: the adapter's answer so far (token ids): the accepted draft tokens, then the adapter's own
            choice at the first disagreement (or after a wholly accepted draft).
        done: the answer is complete (it ended with an EOS token or filled the budget); otherwise decoding goes
            on from ``prompt + row`` with ``budget - len(row)`` new tokens.
        accepted: draft tokens accepted (the EOS included when the draft's end was accepted).
    """

    row: list[int]
    done: bool
    accepted: int


def make_draft(tokenizer: Any, base_answer: str, eos: int, budget: int) -> list[int]:
    """The draft of an adapter's answer: the base's answer encoded with ``tokenizer`` (no special tokens) and
    ``eos``, cut to ``budget`` tokens."""
    return (tokenizer(base_answer, add_special_tokens=False)["input_ids"] + [eos])[:budget]


def accept(draft: Sequence[int], choices: Sequence[int], budget: int, eos_ids: set[int]) -> Verified:
    """Greedy acceptance of one draft.

    Args:
        draft: the draft's tokens (at most ``budget``).
        choices: the adapter's greedy token after the prompt and each prefix of the draft: ``choices[j]`` follows
            ``draft[:j]``; ``len(draft) + 1`` of them.
        budget: the request's ``max_new_tokens``.
        eos_ids: the tokens that end an answer.
    """
    k = 0
    while k < len(draft) and choices[k] == draft[k]:
        if draft[k] in eos_ids:
            return Verified(list(draft[:k + 1]), True, k + 1)
        k += 1
    row = list(draft[:k])
    if len(row) < budget:
        row.append(int(choices[k]))
    return Verified(row, len(row) >= budget or row[-1] in eos_ids, k)


def greedy_choices(model: Any, prompts: Sequence[Sequence[int]], drafts: Sequence[Sequence[int]], *, pad: int,
                   vocab: int | None = None) -> list[list[int]]:
    """The model's greedy next token after each prompt + each prefix of its draft, ``len(draft) + 1`` per request,
    by forward passes over prompt + draft (the model as it stands: a ``PeftModel``'s active adapter).

    Requests are batched by length, right padded (causal attention keeps each row's real tokens from the pads
    that follow them), at most :data:`VERIFY_TOKENS` padded tokens and :data:`VERIFY_LOGITS` kept logits a pass;
    only the positions that predict a draft token are turned into logits (``logits_to_keep``). ``vocab`` limits
    the choice to the first ``vocab`` ids (a base variant beside a resized vocabulary).
    """
    import torch

    device = next(model.parameters()).device
    n_vocab = int(model.config.get_text_config().vocab_size) if vocab is None else vocab
    seqs = [list(p) + list(d) for p, d in zip(prompts, drafts)]
    out: list[list[int]] = [[] for _ in seqs]
    order = sorted(range(len(seqs)), key=lambda i: (len(seqs[i]), len(prompts[i])))  # (few pads)
    start = 0
    while start < len(order):
        batch = [order[start]]
        while start + len(batch) < len(order):
            nxt = batch + [order[start + len(batch)]]
            width = max(len(seqs[i]) for i in nxt)
            kept = width - min(len(prompts[i]) for i in nxt) + 1
            if width * len(nxt) > VERIFY_TOKENS or kept * len(nxt) * n_vocab > VERIFY_LOGITS:
                break
            batch = nxt
        start += len(batch)
        width = max(len(seqs[i]) for i in batch)
        first = min(len(prompts[i]) for i in batch) - 1  # the first position whose logits are kept
        ids = torch.tensor([seqs[i] + [pad] * (width - len(seqs[i])) for i in batch], device=device)
        with torch.inference_mode():
            logits = model(input_ids=ids, logits_to_keep=torch.arange(first, width, device=device)).logits
            picks = logits[..., :vocab].argmax(-1).tolist()
        for row, i in zip(picks, batch):
            at = len(prompts[i]) - 1 - first
            out[i] = [int(t) for t in row[at:at + len(drafts[i]) + 1]]
    return out
