"""Attention for continuous batching on the CPU, request by request instead of over one dense mask.

transformers' continuous batching packs every request of a step into one row and, for ``sdpa``, calls
``torch.nn.functional.scaled_dot_product_attention`` once over all of them with a block-diagonal mask
(``continuous_batching.utils.build_attention_mask``): the score matrix is (all query tokens) × (all
key tokens of every request), so a step of B decoding requests of length L costs B × (B·L) where each
request needs only L. On the 2-core CPU (SmolLM2-135M, bf16, 32 slots) that product was 41% of the
generation loop's time (py-spy, benchmarks/RESULTS.md), more than every linear layer together.

:func:`varlen_sdpa_attention` is the same attention computed per request with torch's SDPA, the way
the flash kernels' ``cu_seq_lens`` interface computes it on a GPU: decoding requests (one query token)
in batched calls over their own keys, each padded to its own length rounded up to :data:`WIDTH_QUANTUM`,
and prompt tokens in blocks of :data:`BLOCK` positions aligned on the prompt (positions 0–31, 32–63, …),
each block over the keys up to its own end with the causal mask. Every query row is thus computed by a
call of a shape that depends on its own request and position only, never on the other requests of the
step or on where the library cut a long prompt between steps (chunked prefill, a shared template start
served from the cache): with :mod:`auditor.backends.hf.invariant`'s linear layers, a greedy answer is the
same at any slot count and in any company (``benchmarks/bench_invariance.py``). (A prompt whose last token
alone is left to a step of its own is computed as a decoding row; the library gives no way to tell the two
apart.) It is registered with transformers'
``AttentionInterface`` (the library's extension point for attention functions) and switched on for
one stream by :func:`per_request_attention`; the library's scheduler, paged cache and its index
updates are untouched (``cache.update`` writes each step's keys and reads every request's context back, as
for the library's own ``sdpa_attention_forward``).

A model with sliding-window layers (Gemma 3, Mistral with ``sliding_window``) or attention sinks keeps
the library's attention for the whole stream (:func:`per_request_supported`): transformers builds the
masks of those layers for its own implementation, and under another one they came out wrong (Gemma 3
270M answered "<strong>Answer: ..." where the library path answers "12 apples").
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

#: the name the function is registered under in transformers' ``AttentionInterface``
NAME = "auditor_varlen_sdpa"
#: the attention path of a continuous stream, as cache keys and results.json (``run.hf.attention``) name it
ATTENTION = "per_request_sdpa/2"
#: the library's own path (:func:`attention_path` for a model :func:`per_request_supported` refuses)
LIBRARY = "sdpa"


def per_request_supported(config: Any) -> bool:
    """Whether a model (its transformers config) can run :func:`varlen_sdpa_attention`: no sliding-window
    layers (``sliding_window`` set, or ``sliding_attention`` in ``layer_types``; also in a nested
    ``text_config``) and no attention sinks (``gpt_oss``)."""
    config = getattr(config, "text_config", None) or config
    if getattr(config, "sliding_window", None) or "sliding_attention" in (getattr(config, "layer_types", None) or ()):
        return False
    return getattr(config, "model_type", "") != "gpt_oss"


def attention_path(config: Any) -> str:
    """The attention path a continuous stream of this model takes: :data:`ATTENTION` or :data:`LIBRARY`."""
    return ATTENTION if per_request_supported(config) else LIBRARY


def varlen_sdpa_attention(module: Any, query: Any, key: Any, value: Any, attention_mask: Any,
                          dropout: float = 0.0, scaling: float | None = None, **kwargs: Any) -> tuple[Any, None]:
    """Causal attention of a continuous-batching step, per request.

    Args:
        module: the attention layer (``layer_idx``, ``num_key_value_groups``).
        query: ``[1, heads, q_tokens, head_dim]``, every request's new tokens packed (``cu_seq_lens_q``).
        key, value: ``[1, kv_heads, q_tokens, head_dim]``, the step's new keys and values, written to the paged
            cache here (``cache`` in ``kwargs``, transformers before 5.25), from which every request's whole
            context (``cu_seq_lens_k``) is read; or that context itself, ``[1, kv_heads, k_tokens, head_dim]``,
            where the attention layer has updated the cache (transformers 5.25 and later).
        attention_mask: the library's dense block-diagonal mask, not used here (it is the same
            causal pattern, request by request).
        scaling: the softmax scale.
        kwargs: ``cache`` (``PagedAttentionCache``), ``cu_seq_lens_q``, ``cu_seq_lens_k`` and the
            cache's read/write indices, as continuous batching passes them.

    Returns:
        ``([1, q_tokens, heads, head_dim], None)``, as transformers' ``sdpa_attention_forward``.
    """
    import torch
    from torch.nn.functional import scaled_dot_product_attention as sdpa
    from transformers.integrations.sdpa_attention import sdpa_attention_forward

    if "cu_seq_lens_q" not in kwargs or getattr(module, "sliding_window", None) or hasattr(module, "sinks") or dropout:
        return sdpa_attention_forward(module, query, key, value, attention_mask, dropout=dropout, scaling=scaling,
                                      **kwargs)
    cache = kwargs.pop("cache", None)
    if cache is not None:  # (transformers before 5.25: the attention function writes the cache and reads it back;
        # from 5.25 the attention layer does, and passes every request's context here)
        key, value = cache.update(key_states=key, value_states=value, layer_idx=module.layer_idx, kwargs=kwargs)
    # every request's whole context, packed in ``cu_seq_lens_k``'s order: [1, kv_heads, k_tokens, head_dim]
    ck_end = kwargs.get("cu_seq_lens_k")
    if not isinstance(ck_end, torch.Tensor) or key.shape[-2] != int(ck_end[-1]):
        raise RuntimeError("per-request attention: this transformers version passes the keys of a continuous-"
                           "batching step in a layout it does not know (rerun with --batching static)")
    if module.layer_idx == 0 or not _STEP:  # (the first layer of each forward plans the step for all of them)
        _STEP.clear()
        _STEP.update(_plan(kwargs))
    gqa = getattr(module, "num_key_value_groups", 1) > 1
    out = query.new_zeros(query.shape)
    q0, o0 = query[0], out[0]  # [heads, tokens, head_dim]
    kv_heads, head_dim = key.shape[1], key.shape[-1]
    if _STEP["decoding"] or _STEP["blocks"]:  # token-major rows, [k_tokens, kv_heads · head_dim]: one per key position
        rows_k, rows_v = (t[0].transpose(0, 1).reshape(t.shape[2], -1) for t in (key, value))
    for width, group, keep, rows, at in _STEP["decoding"]:
        # a decoding request's query heads that share a key head are that head's query rows ([requests,
        # kv_heads, groups, head_dim]; Llama's repeat_kv maps head h to key head h // groups): one SDPA call
        # with no repeated keys (torch's bf16 CPU kernel is ~7x slower on one query row per head with GQA)
        q = q0[:, rows].transpose(0, 1).reshape(len(group), kv_heads, -1, q0.shape[-1])
        # each request's keys padded to the group's width, gathered token-major with index_select (5x faster
        # than advanced indexing): [requests, kv_heads, width, head_dim]
        k, v = (t.index_select(0, at).view(len(group), width, kv_heads, head_dim).transpose(1, 2)
                for t in (rows_k, rows_v))
        o = sdpa(q, k, v, attn_mask=keep, scale=scaling)  # [requests, kv_heads, groups, head_dim]
        o0[:, rows] = o.reshape(len(group), -1, o.shape[-1]).transpose(0, 1)  # [heads, requests, head_dim]
    if _STEP["blocks"]:  # token-major rows of every packed query
        rows_q = q0.transpose(0, 1).reshape(q0.shape[1], -1)  # [q_tokens, heads · head_dim]
        rows_o = query.new_zeros(rows_q.shape)
    for start, n, mask, src, dst, at in _STEP["blocks"]:
        # every prompt block starting at position ``start``: [blocks, heads, BLOCK, head_dim] queries (the rows this
        # step does not prefill are zeros), their keys [blocks, kv_heads, start + BLOCK, head_dim] (past the
        # prompt's end: its last key repeated, masked by causality for every real row), the causal mask of the block
        q = rows_q.new_zeros(n * BLOCK, rows_q.shape[1])
        q[dst] = rows_q.index_select(0, src)
        q = q.view(n, BLOCK, -1, head_dim).transpose(1, 2)
        k, v = (t.index_select(0, at).view(n, start + BLOCK, kv_heads, head_dim).transpose(1, 2)
                for t in (rows_k, rows_v))
        o = sdpa(q, k, v, attn_mask=mask, scale=scaling, enable_gqa=gqa)  # [blocks, heads, BLOCK, head_dim]
        rows_o[src] = o.transpose(1, 2).reshape(n * BLOCK, -1).index_select(0, dst)
    if _STEP["blocks"]:
        prefill = _STEP["prefill_rows"]
        o0[:, prefill] = rows_o.index_select(0, prefill).view(len(prefill), -1, head_dim).transpose(0, 1)
    return out.transpose(1, 2).contiguous(), None


#: the plan of the forward under way, made at its first layer (:func:`_plan`) and read by every layer after it
#: (one stream runs at a time in a process: :func:`auditor.backends.hf.stream.stream_generate` returns only
#: once the library's thread has stopped)
_STEP: dict[str, Any] = {}


def _plan(kwargs: dict[str, Any]) -> dict[str, Any]:
    """What every layer of one forward computes alike: the decoding requests by padded width (``decoding``:
    ``(width, requests, keep, rows, at)``, ``keep`` the ``[requests, 1, 1, width]`` mask, ``rows`` the requests'
    query rows, ``at`` the ``[requests · width]`` packed key positions to gather, each request's padding repeating
    the last packed key: finite, and masked out), the prompt blocks by start position (``blocks``: ``(start,
    blocks, mask, src, dst, keys)``, the packed query rows, their rows in the blocks and the packed key positions
    to gather) and every prompt row (``prefill_rows``). The layers of a forward share ``cu_seq_lens``, so this is made once per
    forward instead of once per layer (0.4 ms a layer at 256 decoding requests)."""
    import torch

    cq, ck = kwargs["cu_seq_lens_q"].tolist(), kwargs["cu_seq_lens_k"].tolist()
    decode = [i for i in range(len(cq) - 1) if cq[i + 1] - cq[i] == 1]
    decoding = []
    for width, group in _groups(decode, [ck[i + 1] - ck[i] for i in decode]):
        lens = torch.tensor([ck[i + 1] - ck[i] for i in group])
        starts = torch.tensor([ck[i] for i in group])
        keep = (torch.arange(width) < lens[:, None])[:, None, None, :]
        at = (starts[:, None] + torch.arange(width)).clamp_(max=ck[-1] - 1).view(-1)
        decoding.append((width, group, keep, torch.tensor([cq[i] for i in group]), at))
    # prompt rows (a request with more than one query token this step), in blocks of BLOCK positions aligned on the
    # prompt's own positions: block b holds positions [b · BLOCK, (b + 1) · BLOCK) wherever the step's chunk starts
    by_start: dict[int, list[tuple[int, int, int]]] = {}  # block start -> (request, first, end position present)
    prefill_rows: list[int] = []
    for i in range(len(cq) - 1):
        lq, lk = cq[i + 1] - cq[i], ck[i + 1] - ck[i]
        if lq <= 1:
            continue
        prefill_rows += range(cq[i], cq[i + 1])
        for start in range((lk - lq) // BLOCK * BLOCK, lk, BLOCK):
            by_start.setdefault(start, []).append((i, max(start, lk - lq), min(start + BLOCK, lk)))
    blocks = []
    for start, present in sorted(by_start.items()):
        src: list[int] = []
        dst: list[int] = []
        keys: list[int] = []
        for j, (i, first, end) in enumerate(present):
            past = ck[i + 1] - ck[i] - (cq[i + 1] - cq[i])  # the request's keys before this step's chunk
            src += range(cq[i] + first - past, cq[i] + end - past)  # packed query rows of positions [first, end)
            dst += range(j * BLOCK + first - start, j * BLOCK + end - start)
            keys += [ck[i] + min(t, ck[i + 1] - ck[i] - 1) for t in range(start + BLOCK)]
        mask = torch.ones(BLOCK, start + BLOCK, dtype=torch.bool).tril_(start)
        blocks.append((start, len(present), mask, torch.tensor(src), torch.tensor(dst), torch.tensor(keys)))
    return {"decoding": decoding, "blocks": blocks, "prefill_rows": torch.tensor(prefill_rows)}


#: a decoding request's keys are padded to its own length rounded up to this many (a power of two)
WIDTH_QUANTUM = 64
#: prompt positions per attention block (see :func:`varlen_sdpa_attention`)
BLOCK = 32


def _groups(requests: list[int], lengths: list[int]) -> list[tuple[int, list[int]]]:
    """``requests`` (with their key ``lengths``) grouped by padded width: ``[(width, requests), ...]``,
    widest first, ``width`` the length rounded up to :data:`WIDTH_QUANTUM` (one SDPA call each)."""
    by: dict[int, list[int]] = {}
    for r, n in zip(requests, lengths):
        by.setdefault(-(-n // WIDTH_QUANTUM) * WIDTH_QUANTUM, []).append(r)
    return sorted(by.items(), reverse=True)


def register() -> None:
    """Register :func:`varlen_sdpa_attention` with transformers' ``AttentionInterface`` (idempotent)."""
    from transformers import AttentionInterface

    AttentionInterface.register(NAME, varlen_sdpa_attention)


@contextlib.contextmanager
def per_request_attention(model: Any) -> Iterator[None]:
    """Within the block, ``model`` (loaded with ``attn_implementation="sdpa"``, the library's default, and
    already initialised for continuous batching: the library sizes its cache and builds its inputs for
    ``sdpa``) computes attention with :func:`varlen_sdpa_attention`, and ``sdpa`` again after the block. A
    model with sliding-window layers or sinks (:func:`per_request_supported`) is left as it is."""
    layers = [m for m in model.modules() if getattr(m, "sliding_window", None) or hasattr(m, "sinks")]
    if layers or not per_request_supported(getattr(model, "config", None)):
        yield
        return
    register()
    model.set_attn_implementation(NAME)
    try:
        yield
    finally:
        model.set_attn_implementation("sdpa")
