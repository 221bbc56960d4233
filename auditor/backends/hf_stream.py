"""Continuous batching for the hf backend: transformers' own scheduler and paged KV cache.

One *stream* is every request of one variant a look needs, handed to one
``ContinuousBatchingManager`` (``model.init_continuous_batching``, transformers ≥ 5): up to ``slots``
requests decode together, each with its own ``max_new_tokens``, and a request that ends frees its slot
and its cache pages at once, so no step is spent on padding or on rows that already finished (static
``generate`` runs every batch until its longest row ends). Nothing here schedules: the library does.

What was found on transformers 5.19 (2-core CPU, SmolLM2-135M, 96 chat prompts; benchmarks/RESULTS.md):

* greedy fp32 answers are token-identical to static ``generate`` (288 of 288 over base, two adapters);
* a ``PeftModel`` works with one adapter active, and the base with ``disable_adapter()`` around the
  stream; peft's mixed-adapter rows (``adapter_names``) do not (every request of a step is packed into
  one row), so a mixed stream (``variants``) masks each LoRA update per token instead
  (:func:`auditor.backends.hf_peft.token_masked_adapters`: fp32 answers identical to one stream per variant),
  and shares prompt pages between requests of one variant only (:func:`_share_prefix_per_variant`: 2.0-2.4x
  the speed of no sharing on 5-shot GSM8K prompts, 1.02x on the zero-shot smoke suite);
* on the CPU the cache is sized from the machine's whole memory unless told otherwise (10 GiB of KV cache
  and a 7.6 GiB mask here), so :func:`stream_config` always sizes it from the requests;
* attention: the library's ``sdpa`` runs over a dense block-diagonal mask of every request in the step
  (cost ∝ concurrency² × length, 41% of the loop's time at 32 slots here); a stream computes it per
  request instead (:mod:`auditor.backends.hf_attention`: fp32 answers token-identical to the library's,
  1.25× the tokens/s in bf16 on 96 demo prompts), and ``--batch-size auto`` measures where more slots
  stop paying off (:mod:`auditor.backends.throughput`);
* the library runs its generation loop in a thread of its own (``manager.start()``); on a CPU that thread
  shares the cores with the calling thread's OpenMP team and runs at about half speed, so the loop runs
  in the calling thread instead (:func:`loop_runs_here`: 2.2x the tokens/s at 64 slots, 1.6x at 256, the
  same answers), the library's thread being the fallback for a version that moves the loop.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable, Sequence
from typing import Any

from .hf_attention import per_request_attention

#: tokens per KV-cache page: small pages waste little of a short answer's last page and let the chat
#: template's common start (the system prompt: 21 tokens on SmolLM2) be shared page by page
PAGE_SIZE = 16
#: query tokens per forward: prompts are prefilled in chunks of this many tokens beside the decoding rows
MAX_BATCH_TOKENS = 1024


def stream_config(slots: int, longest: int, page_size: int = PAGE_SIZE, share_prefix: bool = True,
                  max_batch_tokens: int = MAX_BATCH_TOKENS) -> Any:
    """The ``ContinuousBatchingConfig`` of one stream: ``slots`` requests at once, a paged cache that
    holds them all at ``longest`` tokens (prompt + budget) with a quarter to spare, prefix sharing (the
    pages of the template's common start are computed once: fp32 answers stay identical, prefill 10-25%
    faster here), no switch to a flash kernel."""
    from transformers import ContinuousBatchingConfig

    pages = math.ceil(longest / page_size)
    return ContinuousBatchingConfig(page_size=page_size, num_blocks=slots * pages * 5 // 4 + 2,
                                    max_batch_tokens=max_batch_tokens, max_requests_per_batch=slots,
                                    allow_block_sharing=share_prefix, auto_switch_to_flash=False)


class StreamError(RuntimeError):
    """The library's generation loop failed a request (its own message)."""


class MixedStreamUnsupported(RuntimeError):
    """A mixed stream cannot run here: this transformers version does not say which requests a step packs,
    or keeps its page hashes where they cannot be keyed by variant, or the variants or the vocabulary are
    too many for that key: stream the variants one after another."""


def stream_generate(model: Any, prompts: Sequence[Sequence[int]], budgets: Sequence[int], *, slots: int,
                    generation_config: Any, on_done: Callable[[int], None] | None = None,
                    timeout_s: float = 1.0, attention: str = "per_request", variants: Sequence[str] | None = None,
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
        timeout_s: with the library's own thread (:func:`loop_runs_here` False), how long one wait for a
            result lasts before the loop is checked for life.
        attention: ``"per_request"`` (:mod:`auditor.backends.hf_attention`: each request attends over its own
            keys) or ``"library"`` (transformers' ``sdpa`` over the step's dense block-diagonal mask).
        variants: a mixed stream: each prompt's variant (``"base"`` or an adapter's name of the ``PeftModel``):
            every adapter is active and each token gets its own request's LoRA update only
            (:func:`auditor.backends.hf_peft.token_masked_adapters`), the masks set before each forward from
            the requests the library packed into it; prefix pages are shared between requests of one
            variant only (:func:`_share_prefix_per_variant`: two variants' keys of the same prompt differ).
            None: one variant, as the model stands.

    Returns:
        Each prompt's new tokens, in the order given, EOS included where it was generated.

    Raises:
        StreamError: the library failed a request or its loop stopped before every request ended.
        MixedStreamUnsupported: ``variants`` given, and the library does not expose the step's requests
            or its page hashes (:func:`_share_prefix_per_variant`).
    """
    if not prompts:
        return []
    longest = max(len(p) + b for p, b in zip(prompts, budgets))
    adapters = sorted({v for v in variants or () if v != "base"})
    manager = model.init_continuous_batching(generation_config=generation_config,
                                             continuous_batching_config=stream_config(min(slots, len(prompts)),
                                                                                      longest, **config))
    out: dict[str, list[int]] = {}
    with contextlib.ExitStack() as stack:  # on the way out: stop the loop, free the cache, restore attention
        stack.enter_context(_library_log_quiet())
        if attention == "per_request":
            stack.enter_context(per_request_attention(model))
        stack.callback(manager.destroy)
        manager.warmup()
        if variants is not None:  # (its masks go on the stack first: they come off after the loop has stopped)
            _mask_per_request(stack, model, manager, variants, adapters)
            _share_prefix_per_variant(manager, variants)
        here = loop_runs_here(manager)
        if here:  # the loop runs in this thread below, once every request is queued
            manager.background_thread_status.clear()
        else:
            stack.callback(manager.stop, block=True)
            manager.start()
        for k, (ids, budget) in enumerate(zip(prompts, budgets)):
            manager.add_request(list(ids), request_id=str(k), max_new_tokens=int(budget))
        results = _run_here(manager, len(prompts), on_done) if here else _collect(manager, len(prompts), on_done,
                                                                                   timeout_s)
        for r in results:
            if r.error:
                raise StreamError(f"continuous batching failed a request: {' '.join(str(r.error).split())[:200]}")
            out[r.request_id] = list(r.generated_tokens)
    if len(out) < len(prompts):
        raise StreamError(f"the continuous-batching loop stopped with {len(prompts) - len(out)} requests unanswered")
    return [out[str(k)] for k in range(len(prompts))]


@contextlib.contextmanager
def _library_log_quiet() -> Any:
    """Within the block, the continuous-batching logger (``ContinuousBatchingLogger``, a plain ``logging``
    logger) says nothing below CRITICAL: it logs a failed loop's whole traceback at ERROR (and a warning
    for each stream without an EOS id), where the failure already reaches the caller as a
    :class:`StreamError` with the library's message, and the user must see one line, not a traceback."""
    import logging

    log = logging.getLogger("ContinuousBatchingLogger")
    before = log.level
    log.setLevel(logging.CRITICAL)
    try:
        yield
    finally:
        log.setLevel(before)


def loop_runs_here(manager: Any) -> bool:
    """Whether this transformers version lets :func:`stream_generate` run the manager's generation loop in
    the calling thread (the loop method and its stop status are where 5.16-5.19 keep them).

    Why not in the library's own thread (``manager.start()``): torch's CPU kernels run on GNU OpenMP, which
    keeps one team of worker threads per thread that has used it. Once the calling thread has run a model
    (loading, the warm-up) and the loop runs in a second thread, two teams share the cores; with more
    OpenMP threads than CPUs libgomp spins 100 times instead of 300,000 before a waiting thread sleeps
    (libgomp manual, ``GOMP_SPINCOUNT``), so every one of a step's hundreds of small kernels waits for its
    workers to wake. Measured on the
    2-core CPU (SmolLM2-135M, bf16, 64 chat prompts of 64 forced tokens, benchmarks/RESULTS.md): plain
    ``model.generate`` 354 tok/s in the main thread and 222 in a second one; a stream at 64 slots
    202 tok/s with the library's thread and 449 in the calling thread, 354 against 563 at 256 slots,
    the same answers token for token."""
    status = getattr(manager, "background_thread_status", None)
    return (callable(getattr(manager, "_run_generation_loop", None)) and hasattr(status, "request_stop")
            and hasattr(status, "FLUSH_AND_STOP") and hasattr(status, "clear")
            and hasattr(getattr(manager, "distributed_helper", None), "global_rank"))


def _run_here(manager: Any, n: int, on_done: Callable[[int], None] | None) -> list[Any]:
    """Run ``manager``'s generation loop in this thread until its ``n`` queued requests have ended (the
    library's flush-and-stop: the loop ends once nothing is pending) and return their finished results. A
    helper thread collects the results as they come, for ``on_done`` (a progress bar: it should run no
    torch code, or it would bring a second OpenMP team back); the library's own failures come back as
    results with ``error`` set, as from its thread."""
    import threading

    results: list[Any] = []
    finished = threading.Event()
    failed: list[BaseException] = []

    def collect() -> None:
        try:
            while len(results) < n:
                ended = finished.is_set()  # (read before the queue: once the loop has ended, every result is in it)
                r = manager.get_result(timeout=0.5)
                if r is None:  # (with no library thread, an empty queue answers at once)
                    if ended:
                        return
                    finished.wait(0.2)  # (the loop's end wakes it at once)
                elif r.is_finished():
                    results.append(r)
                    if on_done is not None:
                        on_done(1)
        except BaseException as e:  # (a progress bar's own error: raised in the caller's thread below)
            failed.append(e)

    status = manager.background_thread_status
    status.request_stop(status.FLUSH_AND_STOP, manager.distributed_helper.global_rank)
    collector = threading.Thread(target=collect, name="auditor-stream-results", daemon=True)
    collector.start()
    try:
        manager._run_generation_loop()  # the library's loop, as its thread would run it
    finally:
        try:
            finished.set()
            collector.join()
        finally:
            original = getattr(manager, "_original_attn_impl", None)  # what manager.stop() restores
            if original is not None:
                manager.model.set_attn_implementation(original)
                manager._original_attn_impl = None
    if failed:
        raise failed[0]
    return results


def _collect(manager: Any, n: int, on_done: Callable[[int], None] | None, timeout_s: float) -> list[Any]:
    """The finished results of ``n`` requests from the library's own generation thread (``manager.start()``),
    fewer where the loop stopped first (:func:`stream_generate` reports the requests left unanswered)."""
    results: list[Any] = []
    while len(results) < n:
        r = manager.get_result(timeout=timeout_s)
        if r is None:
            if not manager.is_running():
                break
            continue
        if r.is_finished():
            results.append(r)
            if on_done is not None:
                on_done(1)
    return results


def _mask_per_request(stack: contextlib.ExitStack, model: Any, manager: Any, variants: Sequence[str],
                      adapters: Sequence[str]) -> None:
    """Make ``model`` (a ``PeftModel``) a mixed stream's: every adapter active with per-token masks, set
    before each forward from the requests the library packed into it (``requests_in_batch``, in packing
    order, each ``query_length`` tokens), until ``stack`` closes.

    Raises:
        MixedStreamUnsupported: the manager's inputs do not list the step's requests.
    """
    import torch

    from .hf_peft import token_masked_adapters

    io = getattr(getattr(manager, "batch_processor", None), "inputs_and_outputs", None)
    if io is None or not isinstance(getattr(io, "requests_in_batch", None), list):
        raise MixedStreamUnsupported("transformers' continuous batching does not list a step's requests here")
    masks = stack.enter_context(token_masked_adapters(model, adapters))
    code = {name: k + 1 for k, name in enumerate(adapters)}  # 0: the base
    of_request = [code.get(v, 0) for v in variants]
    dtype = model.dtype

    def set_masks(_module: Any, args: Any, kwargs: Any) -> None:
        packed = io.requests_in_batch
        which = torch.tensor([of_request[int(f.state.request_id)] for f in packed])
        per_token = which.repeat_interleave(torch.tensor([f.query_length for f in packed]))
        ids = kwargs.get("input_ids", args[0] if args else None)
        if ids is not None and ids.shape[-1] > per_token.numel():  # a padded step: padding gets no update
            per_token = torch.nn.functional.pad(per_token, (0, ids.shape[-1] - per_token.numel()), value=-1)
        for name, k in code.items():
            masks[name] = (per_token == k).to(dtype)[None, :, None]

    stack.callback(model.get_base_model().register_forward_pre_hook(set_masks, with_kwargs=True).remove)


#: how a mixed stream shares prompt pages, as cache keys name it (``mixed_prefix``): per variant
MIXED_PREFIX = "per_variant/1"
#: a mixed stream's page hashes see each token id plus its request's variant number times this (above any
#: vocabulary), so pages of one prompt under two variants never hash alike
_VARIANT_STRIDE = 1 << 24


def _share_prefix_per_variant(manager: Any, variants: Sequence[str]) -> None:
    """Let a mixed stream's requests share prompt pages with requests of their own variant only.

    The library hashes a full page from its token ids and its parent page's hash
    (``compute_block_hash``), so a prompt asked of the base and of an adapter would share pages whose
    keys and values differ. Here the ids the hashes see (``search_prefix_match`` for a new prompt,
    each allocator's ``mark_complete_blocks`` for pages a forward completed) are offset by the
    request's variant number times :data:`_VARIANT_STRIDE`; the model's inputs are not touched.

    Raises:
        MixedStreamUnsupported: this version of the library keeps those methods elsewhere, or the ids
            would not fit the hash's 32-bit packing (a vocabulary of 2**24 ids or more, over 128
            variants): the variants are then streamed one after another, each sharing its own pages.
    """
    cache: Any = getattr(getattr(manager, "batch_processor", None), "cache", None)
    allocators = getattr(cache, "cache_allocators", None)
    if (not callable(getattr(cache, "search_prefix_match", None)) or not isinstance(allocators, dict)
            or not all(callable(getattr(a, "mark_complete_blocks", None)) for a in allocators.values())):
        raise MixedStreamUnsupported("transformers' continuous batching does not keep its page hashes where "
                                     "a mixed stream can key them by variant here")
    number = {v: k for k, v in enumerate(dict.fromkeys(["base", *variants]))}
    vocab = int(getattr(getattr(getattr(manager, "model", None), "config", None), "vocab_size", 0) or 0)
    if vocab >= _VARIANT_STRIDE or len(number) > 2**31 // _VARIANT_STRIDE:  # (array("i") packs the ids)
        raise MixedStreamUnsupported(f"{len(number)} variants over a vocabulary of {vocab} ids do not fit the "
                                     "page hashes' 32-bit ids")
    offset = [number[v] * _VARIANT_STRIDE for v in variants]

    def keyed(request_id: str, ids: Sequence[int]) -> list[int]:
        k = offset[int(request_id)]
        return [t + k for t in ids] if k else list(ids)

    search = cache.search_prefix_match
    cache.search_prefix_match = lambda request_id, ids: search(request_id, keyed(request_id, ids))
    for allocator in allocators.values():
        mark = allocator.mark_complete_blocks
        allocator.mark_complete_blocks = (lambda request_id, ids, n, mark=mark:
                                          mark(request_id, keyed(request_id, ids), n))
