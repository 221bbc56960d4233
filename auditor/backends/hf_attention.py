"""Attention for continuous batching on the CPU, request by request instead of over one dense mask.

transformers' continuous batching packs every request of a step into one row and, for ``sdpa``, calls
``torch.nn.functional.scaled_dot_product_attention`` once over all of them with a block-diagonal mask
(``continuous_batching.utils.build_attention_mask``): the score matrix is (all query tokens) × (all
key tokens of every request), so a step of B decoding requests of length L costs B × (B·L) where each
request needs only L. On the 2-core CPU (SmolLM2-135M, bf16, 32 slots) that product was 41% of the
generation loop's time (py-spy, benchmarks/RESULTS.md), more than every linear layer together.

:func:`varlen_sdpa_attention` is the same attention computed per request with torch's SDPA, the way
the flash kernels' ``cu_seq_lens`` interface computes it on a GPU: decoding requests (one query token)
in one batched call over their own keys, padded to the longest of them, and each prefill chunk on its
own with the bottom-right causal mask the library builds. It is registered with transformers'
``AttentionInterface`` (the library's extension point for attention functions) and switched on for
one stream by :func:`per_request_attention`; the library's scheduler, paged cache and its index
updates are untouched (``cache.update`` writes each step's keys as for the library's ``sdpa`` function; the
keys are then read from the cache's pages once, :func:`_write_and_read`, not from its packed read-back).

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
ATTENTION = "per_request_sdpa/1"
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
        key, value: ``[1, kv_heads, q_tokens, head_dim]``, the step's new keys and values: written to the
            paged cache, from which every request's whole context (``cu_seq_lens_k``) is read.
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

    cache = kwargs.get("cache")
    if (cache is None or "cu_seq_lens_q" not in kwargs or getattr(module, "sliding_window", None)
            or hasattr(module, "sinks") or dropout):
        return sdpa_attention_forward(module, query, key, value, attention_mask, dropout=dropout, scaling=scaling,
                                      **kwargs)
    kwargs.pop("cache")
    gather, from_cache, key, value = _write_and_read(cache, key, value, module.layer_idx, kwargs)
    if module.layer_idx == 0 or not _STEP:  # (the first layer of each forward plans the step for all of them)
        _STEP.clear()
        _STEP.update(_plan(kwargs, gather))
    cq, ck = _STEP["cq"], _STEP["ck"]
    gqa = getattr(module, "num_key_value_groups", 1) > 1
    out = query.new_zeros(query.shape)
    q0, o0 = query[0], out[0]  # [heads, tokens, head_dim]
    kv_heads, head_dim = key.shape[1], key.shape[-1]
    for width, group, lens, starts, keep, rows, pages in _STEP["decoding"]:
        # a decoding request's query heads that share a key head are that head's query rows ([requests,
        # kv_heads, groups, head_dim]; Llama's repeat_kv maps head h to key head h // groups): one SDPA call
        # with no repeated keys (torch's bf16 CPU kernel is ~7x slower on one query row per head with GQA)
        q = q0[:, rows].transpose(0, 1).reshape(len(group), kv_heads, -1, q0.shape[-1])
        # the keys are gathered token-major (rows of kv_heads × head_dim, as the paged cache holds them)
        # with index_select: 5x faster than advanced indexing, which was 1.6x faster than head-major
        spans = (gather.take(pages) if pages is not None and getattr(gather, "read", None) is _STEP["read"]
                 else gather.spans(starts, lens, width, ck[-1]))  # (pages: read through the same read index)
        k, v = (t.view(len(group), width, kv_heads, head_dim).transpose(1, 2) for t in spans)
        # k, v: [requests, kv_heads, width, head_dim]
        o = sdpa(q, k, v, attn_mask=keep, scale=scaling)  # [requests, kv_heads, groups, head_dim]
        o0[:, rows] = o.reshape(len(group), -1, o.shape[-1]).transpose(0, 1)  # [heads, requests, head_dim]
    for i in range(len(cq) - 1):
        lq, lk = cq[i + 1] - cq[i], ck[i + 1] - ck[i]
        if lq == 1 or lq == 0:
            continue
        q = q0[None, :, cq[i]:cq[i + 1]]
        if not from_cache:  # a step of whole prompts only: their keys are this step's own
            k, v = key[:, :, ck[i]:ck[i + 1]], value[:, :, ck[i]:ck[i + 1]]
        else:  # [1, kv_heads, lk, head_dim], the layout the library's read-back had
            k, v = (t.view(lk, kv_heads, head_dim).transpose(0, 1)[None]
                    for t in gather(torch.arange(ck[i], ck[i + 1])))
        if lq == lk:
            o = sdpa(q, k, v, is_causal=True, scale=scaling, enable_gqa=gqa)
        else:  # a chunk after cached tokens: query t sees the first lk - lq + t + 1 keys
            mask = torch.ones(lq, lk, dtype=torch.bool).tril_(lk - lq)
            o = sdpa(q, k, v, attn_mask=mask, scale=scaling, enable_gqa=gqa)
        o0[:, cq[i]:cq[i + 1]] = o[0]
    return out.transpose(1, 2).contiguous(), None


#: the plan of the forward under way, made at its first layer (:func:`_plan`) and read by every layer after it
#: (one stream's loop runs at a time in a process: :func:`auditor.backends.hf_stream.stream_generate` returns
#: only once its loop has ended)
_STEP: dict[str, Any] = {}


def _plan(kwargs: dict[str, Any], gather: _Rows) -> dict[str, Any]:
    """What every layer of one forward computes alike: the packed query and key offsets (``cq``, ``ck``,
    lists) and the decoding requests by padded width (``decoding``: ``(width, requests, lens, starts, keep,
    rows, pages)``, ``keep`` the ``[requests, 1, 1, width]`` mask, ``rows`` the requests' query rows,
    ``pages`` :meth:`_PagedRows.page_index`'s or None, valid for layers read through the same ``read``
    index as the first layer's). The layers of a forward share ``cu_seq_lens`` and one
    full-attention allocator's ``read_index``, so this is made once per forward instead of once per layer
    (0.4 ms a layer at 256 decoding requests)."""
    import torch

    cq, ck = kwargs["cu_seq_lens_q"].tolist(), kwargs["cu_seq_lens_k"].tolist()
    decode = [i for i in range(len(cq) - 1) if cq[i + 1] - cq[i] == 1]
    decoding = []
    for width, group in _groups(decode, [ck[i + 1] - ck[i] for i in decode]):
        lens = torch.tensor([ck[i + 1] - ck[i] for i in group])
        starts = torch.tensor([ck[i] for i in group])
        keep = (torch.arange(width) < lens[:, None])[:, None, None, :]
        decoding.append((width, group, lens, starts, keep, torch.tensor([cq[i] for i in group]),
                         gather.page_index(starts, lens, width)))
    return {"cq": cq, "ck": ck, "decoding": decoding, "read": getattr(gather, "read", None)}


def _write_and_read(cache: Any, key: Any, value: Any, layer_idx: int,
                    kwargs: dict[str, Any]) -> tuple[Any, bool, Any, Any]:
    """Write a step's new keys and values into the paged cache, as the library's ``cache.update`` does, and
    say how to read any request's keys back.

    The library's ``update`` reads every request's whole context out of the cache into one packed copy
    (``index_select`` over ``read_index``), which this function used to copy again, padded, per width group:
    two full copies of every request's keys and values per layer and step (py-spy: 7% of a demo's
    generation on the AMX CPU, benchmarks/RESULTS.md). Here the write goes through ``cache.update`` with
    an empty ``read_index`` (the library's own write-only case) and the keys are gathered once, straight
    from the cache's pages (``get_cache_for_block_table``, the view its block-table kernels read), through
    ``read_index``: the same values in the same layout, so the answers are bit for bit those of the read-back.

    Args:
        key, value: ``[1, kv_heads, q_tokens, head_dim]``, the step's new keys and values.
        kwargs: continuous batching's attention kwargs; ``cu_seq_lens_k`` is narrowed to this layer's
            attention type in place, as ``cache.update`` does.

    Returns:
        ``(gather, from_cache, key, value)``: ``gather(positions)`` gives the keys and values at packed key
        positions (a LongTensor of positions in ``cu_seq_lens_k``'s numbering) as two
        ``[n, kv_heads · head_dim]`` tensors, ``gather.spans`` decoding requests' keys padded to a width
        (:class:`_PagedRows`: a page at a time, 1.03x the demo's generation, the same answers bit for bit);
        ``from_cache`` False where no request reads the cache this step
        (whole prompts only, one-token prompts among them: ``key`` and ``value`` are then the new ones,
        ``cu_seq_lens_k`` equal to ``cu_seq_lens_q``, and ``gather`` reads them); ``key``, ``value`` as given,
        or the library's read-back where this transformers version lacks the pieces above or the layer is
        not a full-attention one.
    """
    allocator = (getattr(cache, "layer_to_allocator", None) or {}).get(layer_idx)
    reads = kwargs.get("read_index")
    pages = getattr(allocator, "get_cache_for_block_table", None)
    if (allocator is None or pages is None or not isinstance(reads, list) or kwargs.get("block_table") is not None
            or getattr(allocator, "layer_type", None) != "full_attention"):  # (a sliding window's pages are a ring)
        key, value = cache.update(key_states=key, value_states=value, layer_idx=layer_idx, kwargs=kwargs)
        return _Rows(key, value), True, key, value
    read = reads[allocator.index]
    write_only = dict(kwargs, read_index=[r[:0] for r in reads])
    cache.update(key_states=key, value_states=value, layer_idx=layer_idx, kwargs=write_only)
    kwargs["cu_seq_lens_k"], kwargs["max_length_k"] = write_only["cu_seq_lens_k"], write_only["max_length_k"]
    if read.numel() == 0:
        return _Rows(key, value), False, key, value
    return _PagedRows(read, *pages(layer_idx)), True, key, value


class _Rows:
    """``gather`` over packed ``[1, kv_heads, tokens, head_dim]`` keys and values: token-major rows
    (``[tokens, kv_heads · head_dim]``, copied once, on the first call) picked by position."""

    def __init__(self, key: Any, value: Any) -> None:
        self.packed = (key, value)
        self.rows: tuple[Any, ...] = ()

    def __call__(self, at: Any) -> tuple[Any, Any]:
        """The keys and values at packed positions ``at`` (a LongTensor): two ``[n, kv_heads · head_dim]``."""
        if not self.rows:
            self.rows = tuple(t[0].transpose(0, 1).reshape(t.shape[2], -1) for t in self.packed)
        return self.rows[0].index_select(0, at), self.rows[1].index_select(0, at)

    def spans(self, starts: Any, lens: Any, width: int, end: int) -> tuple[Any, Any]:
        """Requests' keys and values padded to ``width`` each: request r's are the packed positions
        ``starts[r]`` … ``starts[r] + lens[r] - 1``, its padding copies of the last packed key (finite, and
        masked out by the caller); ``end`` is the packed length. Two ``[requests · width, kv_heads · head_dim]``."""
        import torch

        return self((starts[:, None] + torch.arange(width)).clamp_(max=end - 1).view(-1))

    def page_index(self, starts: Any, lens: Any, width: int) -> Any:
        """None: these rows are gathered a token at a time (:class:`_PagedRows` reads whole pages)."""
        return None


class _PagedRows(_Rows):
    """``gather`` straight from a layer's paged cache (``read``: each packed position's row in it): a
    token at a time, or for :meth:`spans` a page at a time (one index per 16 tokens instead of one per
    token: the same values wherever the caller's mask keeps them)."""

    def __init__(self, read: Any, k_pages: Any, v_pages: Any) -> None:  # pages: [pages, page_size, kv_heads, head_dim]
        self.read, self.page = read, k_pages.shape[1]
        self.rows = tuple(t.view(-1, t.shape[-2] * t.shape[-1]) for t in (k_pages, v_pages))
        self.pages = tuple(t.view(t.shape[0], -1) for t in (k_pages, v_pages))

    def __call__(self, at: Any) -> tuple[Any, Any]:
        slots = self.read.index_select(0, at)
        return self.rows[0].index_select(0, slots), self.rows[1].index_select(0, slots)

    def spans(self, starts: Any, lens: Any, width: int, end: int) -> tuple[Any, Any]:
        """As :meth:`_Rows.spans`, whole pages: request r's pages in its block-table order, its last page
        repeated up to ``width`` (which must be a whole number of pages, else a token at a time). The
        padding is what those pages hold past the request's length: rows not yet written (zeros, or a
        freed request's keys, finite either way) and the repeated page's keys, all masked out by the
        caller. A layout whose pages do not hold consecutive positions on consecutive rows (each page's
        first position on a page boundary, each request's last key where its page start says) is
        gathered a token at a time."""
        at = self.page_index(starts, lens, width)
        return super().spans(starts, lens, width, end) if at is None else self.take(at)

    def page_index(self, starts: Any, lens: Any, width: int) -> Any:
        """The pages :meth:`spans` reads, ``[requests · width / page_size]`` (a LongTensor), or None where it
        reads a token at a time (see :meth:`spans`). The same for every layer of one allocator in a forward."""
        import torch

        if width % self.page:
            return None
        pages = width // self.page
        nth = torch.minimum(torch.arange(pages)[None, :], ((lens - 1) // self.page)[:, None])
        first = self.read.index_select(0, (starts[:, None] + nth * self.page).view(-1))
        last = self.read.index_select(0, starts + lens - 1)
        in_last_page = first.view(-1, pages).gather(1, ((lens - 1) // self.page)[:, None])[:, 0]
        if bool((first % self.page).any()) or not bool((last == in_last_page + (lens - 1) % self.page).all()):
            return None
        return first // self.page

    def take(self, at: Any) -> tuple[Any, Any]:
        """The keys and values of pages ``at``: two ``[pages · page_size, kv_heads · head_dim]``."""
        k, v = (t.index_select(0, at).view(-1, self.rows[0].shape[1]) for t in self.pages)
        return k, v


#: a decoding request's keys are padded to its own length rounded up to this many (a power of two)
WIDTH_QUANTUM = 64


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

    if NAME not in AttentionInterface._global_mapping:
        AttentionInterface.register(NAME, varlen_sdpa_attention)


@contextlib.contextmanager
def per_request_attention(model: Any) -> Iterator[None]:
    """Within the block, ``model`` (already initialised for continuous batching with ``sdpa``: the
    library sizes its cache and builds its inputs for that) computes attention with
    :func:`varlen_sdpa_attention`; its own implementation again after the block. A model on another
    implementation (``paged|eager``, flash), or with sliding-window layers or sinks
    (:func:`per_request_supported`), is left as it is."""
    config = getattr(model, "config", None)
    before = getattr(config, "_attn_implementation", None)
    layers = [m for m in model.modules() if getattr(m, "sliding_window", None) or hasattr(m, "sinks")]
    if before != "sdpa" or layers or not per_request_supported(config):
        yield
        return
    register()
    model.set_attn_implementation(NAME)
    try:
        yield
    finally:
        model.set_attn_implementation(before)
