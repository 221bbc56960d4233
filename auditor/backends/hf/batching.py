"""How the hf backend cuts its requests into ``generate`` calls: the batch size that fits in memory, and
the batches themselves (grouped by generation budget, sorted by prompt length)."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from typing import Any

from ...records import Item


def free_memory_bytes(device: str) -> int:
    """Free memory where the KV cache will live: ``torch.cuda.mem_get_info`` on a GPU,
    ``MemAvailable`` from /proc/meminfo on the CPU (bytes)."""
    import torch

    if device.startswith("cuda"):
        return int(torch.cuda.mem_get_info(torch.device(device))[0])
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return int(os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"))


def auto_batch_size(config: Any, max_len: int, rows_per_item: int, free_bytes: int, dtype_bytes: int,
                    cap: int, fraction: float = 0.5) -> int:
    """Items per ``generate`` call whose KV cache fits in ``fraction`` of the free memory.

    Per row (one item under one variant), for a sequence of ``max_len``
    tokens (longest prompt + budget): the KV cache, 2 × layers × kv_heads ×
    head_dim × ``dtype_bytes`` × ``max_len``; one layer's keys and values
    expanded to all query heads (grouped-query attention does this in
    transformers' eager/SDPA path); one row of fp32 logits. Each item takes
    ``rows_per_item`` rows (its variants). The result is clamped to [1, ``cap``].
    """
    layers = int(config.num_hidden_layers)
    heads = int(config.num_attention_heads)
    kv_heads = int(getattr(config, "num_key_value_heads", None) or heads)
    head_dim = int(getattr(config, "head_dim", None) or config.hidden_size // heads)
    per_row = (2 * layers * kv_heads + 2 * heads) * head_dim * dtype_bytes * max_len + 4 * int(config.vocab_size)
    fit = int(fraction * free_bytes) // max(1, per_row * max(1, rows_per_item))
    return max(1, min(cap, fit))


def batches(items: list[Item], batch_size: int | Callable[[int, list[Item]], int], prompt_len: dict[str, int],
             split_small: bool = False) -> Iterable[list[Item]]:
    """Group by generation budget, sort by prompt length (few pads), cut into batches.

    ``batch_size``: items per batch, or a function of (budget, the budget's
    items) giving it per group. ``split_small``: a budget group that fits in
    one batch is cut in two anyway, so a replay (noise floor) really changes
    every batch's composition.
    """
    by_budget: dict[int, list[Item]] = {}
    for it in items:
        by_budget.setdefault(it.max_new_tokens, []).append(it)
    for budget in sorted(by_budget):
        group = sorted(by_budget[budget], key=lambda i: (prompt_len[i.id], i.id))
        size = batch_size(budget, group) if callable(batch_size) else batch_size
        if split_small and 1 < len(group) <= size:
            size = (len(group) + 1) // 2
        for k in range(0, len(group), size):
            yield group[k:k + size]
