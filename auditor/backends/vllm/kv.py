"""vLLM's CPU KV cache, sized by the model (:func:`cpu_kv_cache_bytes`), for
:func:`auditor.backends.vllm.startup.fit_engine_settings`.

vLLM writes zeros over its whole CPU KV cache as it starts: 14 s of every engine start on one core of this project's
machine with the 4 GiB that a quarter of its memory gave, 0.4 s with 1 GiB (benchmarks/RESULTS.md). The audit's
requests need far less than a machine-sized cache, so the cache is sized from what the model needs per token.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

GiB = 2**30
#: CPU KV cache: at most this share of the memory available on the engine's memory node, in whole GiB, clamped
#: (the maximum only where the model's size per token is unknown)
CPU_KV_SHARE, CPU_KV_MIN_GIB, CPU_KV_MAX_GIB = 0.25, 1, 4
#: CPU KV cache: room for this many tokens (128 requests of 256 tokens: more than two cores keep busy), or the
#: model's whole context where that is longer
CPU_KV_TOKENS = 32768
#: RoPE scalings whose ``factor`` vLLM does not multiply the context by (their context is already the long one)
_UNSCALED_ROPE = ("llama3", "longrope", "su", "default", "linear")


@dataclass(frozen=True)
class KVShape:
    """A model's KV cache per token (:func:`kv_shape`). ``element_bytes``: 4 (float32) or 2; ``context``: the
    model's context in tokens (as vLLM derives it: ``max_position_embeddings`` times a yarn/dynamic RoPE factor)
    or the user's ``max_model_len``."""

    layers: int
    kv_heads: int
    head_dim: int
    element_bytes: int
    context: int

    @property
    def bytes_per_token(self) -> int:
        """Keys and values of every layer for one token, bytes."""
        return self.layers * 2 * self.kv_heads * self.head_dim * self.element_bytes


def _context(cfg: dict[str, Any]) -> int:
    """The model's context in tokens as vLLM takes it by default: ``max_position_embeddings``, times the RoPE
    scaling's ``factor`` for yarn / dynamic scaling (from ``original_max_position_embeddings`` where given)."""
    context = int(cfg.get("max_position_embeddings") or 0)
    rope = cfg.get("rope_scaling") or {}
    kind = str(rope.get("rope_type") or rope.get("type") or "") if isinstance(rope, dict) else ""
    if kind and kind not in _UNSCALED_ROPE and rope.get("factor"):
        context = int(int(rope.get("original_max_position_embeddings") or context) * float(rope["factor"]))
    return context


def kv_shape(base_path: Path, dtype: str, max_model_len: Any = None) -> KVShape | None:
    """The KV cache per token of the model at ``base_path`` in ``dtype`` (its ``config.json``; a multimodal
    config's ``text_config`` over the top level's fields); None where the config lacks what it takes.
    ``max_model_len`` (the user's ``--vllm-arg``) replaces the model's context where it is a whole number."""
    try:
        top = json.loads((Path(base_path) / "config.json").read_text(encoding="utf-8"))
        text = top.get("text_config") if isinstance(top.get("text_config"), dict) else {}
        cfg = {**top, **text}
        heads = int(cfg["num_attention_heads"])
        shape = KVShape(layers=int(cfg["num_hidden_layers"]), kv_heads=int(cfg.get("num_key_value_heads") or heads),
                        head_dim=int(cfg.get("head_dim") or int(cfg["hidden_size"]) // heads),
                        element_bytes=4 if dtype == "float32" else 2, context=_context(cfg))
    except (OSError, ValueError, TypeError, KeyError, AttributeError, ZeroDivisionError):
        return None
    if isinstance(max_model_len, int | str) and not isinstance(max_model_len, bool) and str(max_model_len).isdigit():
        shape = replace(shape, context=int(max_model_len))
    ok = min(shape.layers, shape.kv_heads, shape.head_dim) > 0
    return shape if ok else None


def cpu_kv_cache_bytes(available: int, shape: KVShape | None = None) -> int:
    """The CPU KV cache the auditor chooses, bytes: room for :data:`CPU_KV_TOKENS` tokens or the model's whole
    context, whichever is longer, at ``shape``'s bytes per token, rounded up to whole GiB, at least
    :data:`CPU_KV_MIN_GIB`, at most :data:`CPU_KV_SHARE` of ``available`` bytes; without a ``shape``, that share
    clamped to [:data:`CPU_KV_MIN_GIB`, :data:`CPU_KV_MAX_GIB`] GiB (the rule before the model sized it)."""
    share = max(CPU_KV_MIN_GIB, int(available * CPU_KV_SHARE // GiB))
    if shape is None:
        return min(CPU_KV_MAX_GIB, share) * GiB
    need = -(-shape.bytes_per_token * max(CPU_KV_TOKENS, shape.context) // GiB)
    return max(CPU_KV_MIN_GIB, min(share, need)) * GiB


def kv_why(shape: KVShape | None, where: str) -> str:
    """results.json's reason for the size :func:`cpu_kv_cache_bytes` chose (``where``: the memory it came from)."""
    if shape is None:
        return (f"{CPU_KV_SHARE:.0%} of {where}, in whole GiB, {CPU_KV_MIN_GIB}–{CPU_KV_MAX_GIB} GiB (the model's "
                "KV size per token is not in its config.json)")
    return (f"room for {max(CPU_KV_TOKENS, shape.context)} tokens at {shape.bytes_per_token} bytes each "
            f"({shape.layers} layers × 2 × {shape.kv_heads} KV heads × {shape.head_dim} × {shape.element_bytes} bytes), "
            f"in whole GiB, at least {CPU_KV_MIN_GIB} and at most {CPU_KV_SHARE:.0%} of {where}")
