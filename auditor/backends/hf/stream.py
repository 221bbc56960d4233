"""Continuous batching for the hf backend: transformers' own scheduler and paged KV cache.

One *stream* is every request of one variant a look needs, handed to one ``ContinuousBatchingManager``
(``model.init_continuous_batching``, then ``warmup``, ``start``, ``add_request``, ``get_result`` and
``stop``: the manager's documented interface): up to ``slots`` requests decode together, each with its own
``max_new_tokens``, and a request that ends frees its slot and its cache pages at once, so no step is spent
on padding or on rows that already finished (static ``generate`` runs every batch until its longest row
ends). Nothing here schedules: the library does.

What this module adds around the library, each measured on a 2-core CPU (SmolLM2-135M, see
benchmarks/RESULTS.md):

* the cache is sized from the requests (:func:`stream_config`): on the CPU the library sizes it from the
  machine's whole memory unless told otherwise (10 GiB of KV cache and a 7.6 GiB mask there);
* attention per request (:mod:`auditor.backends.hf.attention`, registered through transformers'
  ``AttentionInterface``) instead of the library's ``sdpa`` over a dense block-diagonal mask of every
  request in the step (cost ∝ concurrency² × length);
* the calling thread's OpenMP workers are released before the library's thread starts
  (:func:`auditor.backends.hf.openmp.release_thread_pool`), so that thread has the cores to itself.

Greedy fp32 answers are token-identical to static ``generate``. A ``PeftModel`` streams with one adapter
active, the base inside ``disable_adapter()``; each variant is a stream of its own (the library's prefix
pages are keyed by token ids, so two variants' requests must not share them).
"""

from __future__ import annotations

import contextlib
import math
import time
from collections.abc import Callable, Sequence
from typing import Any

from ...util.logs import logger_quiet
from .attention import per_request_attention
from .openmp import release_thread_pool

#: tokens per KV-cache page: small pages waste little of a short answer's last page and let the chat
#: template's common start (the system prompt: 21 tokens on SmolLM2) be shared page by page
PAGE_SIZE = 16
#: query tokens per forward: prompts are prefilled in chunks of this many tokens beside the decoding rows
MAX_BATCH_TOKENS = 1024
#: seconds a stream may go without a forward pass and without an answer before it is given up as stalled (a
#: forward of the largest model this backend serves on a CPU takes seconds; the library's loop could otherwise
#: wait forever on a request it never schedules)
STALL_S = 600.0


def stream_config(slots: int, longest: int, page_size: int = PAGE_SIZE, share_prefix: bool = True,
                  max_batch_tokens: int = MAX_BATCH_TOKENS) -> Any:
    """The ``ContinuousBatchingConfig`` of one stream: ``slots`` requests at once, a paged cache that
    holds them all at ``longest`` tokens (prompt + budget) with a quarter to spare, prefix sharing (the
    pages of the template's common start are computed once), no switch to a flash kernel."""
    from transformers import ContinuousBatchingConfig

    pages = math.ceil(longest / page_size)
    return ContinuousBatchingConfig(page_size=page_size, num_blocks=slots * pages * 5 // 4 + 2,
                                    max_batch_tokens=max_batch_tokens, max_requests_per_batch=slots,
                                    allow_block_sharing=share_prefix, auto_switch_to_flash=False)


def called_module(model: Any) -> Any:
    """The module continuous batching runs a forward of: a ``PeftModel``'s base model, else ``model``
    (where a forward hook sees every step of a stream)."""
    return model.get_base_model() if callable(getattr(model, "get_base_model", None)) else model


class StreamError(RuntimeError):
    """The library's generation loop failed a request (its own message)."""


def stream_generate(model: Any, prompts: Sequence[Sequence[int]], budgets: Sequence[int], *, slots: int,
                    generation_config: Any, on_done: Callable[[int], None] | None = None,
                    ends: Sequence[Callable[[list[int]], int | None] | None] | None = None,
                    timeout_s: float = 1.0, stall_s: float = STALL_S, attention: str = "per_request",
                    **config: Any) -> list[list[int]]:
    """Greedy answers to ``prompts`` (token ids) through one continuous-batching stream.

    Args:
        model: a transformers model or a ``PeftModel`` (its active adapter, or the base inside
            ``disable_adapter()``).
        prompts: the prompts' token ids (no padding).
        budgets: each prompt's ``max_new_tokens``.
        slots: requests decoded at once (``max_requests_per_batch``).
        generation_config: greedy settings and the EOS ids (``do_sample=False``).
        on_done: called with 1 each time a request ends (a progress bar).
        ends: per prompt, None or a function of its new tokens so far giving the length at which its answer
            ended (:class:`auditor.backends.answer_end.AnswerEnd`), or None while it goes on: such a request is
            streamed token by token (``add_request(streaming=True)``), its answer kept up to that length and the
            request cancelled (``cancel_request``); its kept tokens do not depend on when the cancellation lands
            (where the numerics are not batch-invariant, the other requests' answers may: the stream's company
            changes when it lands).
        timeout_s: how long one wait for a result lasts before the library's thread is checked for life.
        stall_s: seconds without a forward pass of the model and without a result after which the stream is
            given up (:class:`StreamError`).
        attention: ``"per_request"`` (:mod:`auditor.backends.hf.attention`: each request attends over its own
            keys) or ``"library"`` (transformers' ``sdpa`` over the step's dense block-diagonal mask).
        config: passed to :func:`stream_config`.

    Returns:
        Each prompt's new tokens, in the order given, EOS included where it was generated (cut where ``ends``
        found its answer's end).

    Raises:
        StreamError: the library failed a request, its thread stopped before every request ended, or the
            stream made no progress for ``stall_s`` seconds.
    """
    if not prompts:
        return []
    longest = max(len(p) + b for p, b in zip(prompts, budgets))
    manager = model.init_continuous_batching(generation_config=generation_config,
                                             continuous_batching_config=stream_config(min(slots, len(prompts)),
                                                                                      longest, **config))
    with contextlib.ExitStack() as stack:  # on the way out: stop the thread, free the cache, restore attention
        # the continuous-batching logger logs a failed loop's whole traceback at ERROR (and a warning for each
        # stream without an EOS id), where the failure reaches the caller as a StreamError with the library's
        # message: the user sees one line, not a traceback
        stack.enter_context(logger_quiet("ContinuousBatchingLogger"))
        if attention == "per_request":
            stack.enter_context(per_request_attention(model))
        stack.callback(manager.destroy)
        # the stream's sign of life between results: the time of the model's last forward (the module the
        # library calls; a forward hook is torch's public interface)
        last_forward = [time.monotonic()]
        stamp = called_module(model).register_forward_pre_hook(lambda *_: last_forward.__setitem__(0, time.monotonic()))
        stack.callback(stamp.remove)
        manager.warmup()
        release_thread_pool()  # (the warm-up ran the model here: the library's thread gets the cores)
        manager.start()
        stack.callback(manager.stop, block=True)
        ends = ends or [None] * len(prompts)
        for k, (ids, budget) in enumerate(zip(prompts, budgets)):
            manager.add_request(list(ids), request_id=str(k), max_new_tokens=int(budget),
                                streaming=ends[k] is not None)
        out = _collect(manager, {str(k): end for k, end in enumerate(ends) if end is not None}, len(prompts),
                       on_done, timeout_s, stall_s, lambda: last_forward[0])
    if len(out) < len(prompts):
        raise StreamError(f"the continuous-batching loop stopped with {len(prompts) - len(out)} requests unanswered")
    return [out[str(k)] for k in range(len(prompts))]


def _collect(manager: Any, ends: dict[str, Callable[[list[int]], int | None]], n: int,
             on_done: Callable[[int], None] | None, timeout_s: float, stall_s: float,
             last_forward: Callable[[], float]) -> dict[str, list[int]]:
    """The new tokens of ``n`` requests from the library's generation thread (fewer where the thread stopped
    first: :func:`stream_generate` reports the requests left unanswered). A request in ``ends`` streams its
    tokens: it is done, cut and cancelled, at the length its function gives; outputs that reach the queue after
    that are dropped. ``last_forward()`` is the ``time.monotonic()`` of the model's last forward pass.

    Raises:
        StreamError: the library failed a request, or neither a result nor a forward pass came for ``stall_s``
            seconds.
    """
    out: dict[str, list[int]] = {}
    last_result = time.monotonic()
    while len(out) < n:
        r = manager.get_result(timeout=timeout_s)
        if r is None:
            if not manager.is_running():
                break
            quiet = time.monotonic() - max(last_result, last_forward())
            if quiet > stall_s:
                raise StreamError(f"the continuous-batching loop made no progress for {quiet:.0f} s (no forward pass, "
                                  f"no result) with {n - len(out)} requests unanswered")
            continue
        last_result = time.monotonic()
        if r.request_id in out:
            continue
        if r.error:
            raise StreamError(f"continuous batching failed a request: {' '.join(str(r.error).split())[:200]}")
        tokens = list(r.generated_tokens)
        end = ends[r.request_id](tokens) if r.request_id in ends else None
        if end is None and not r.is_finished():
            continue
        out[r.request_id] = tokens if end is None else tokens[:end]
        if end is not None and not r.is_finished():
            manager.cancel_request(r.request_id)
        if on_done is not None:
            on_done(1)
    return out
