"""The hf backend's continuous-batching path: which requests go into one stream (every variant together
where the adapters allow, else one stream per variant), how many decode at once, and recording what
came back. The stream itself is :mod:`auditor.backends.hf_stream` (transformers' own scheduler)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .base import CachedBackend


class HFStreams(CachedBackend):
    """The continuous-batching methods of :class:`auditor.backends.hf.HFBackend`, which sets these:"""

    device: str
    #: peft's mixed rows allowed (``HFBackend``'s ``mix_variants``)
    mix_variants: bool
    #: the one vocabulary resize of the run's adapters, or None
    resize: Any
    #: what results.json's ``run.hf.streams`` lists, one record per stream
    streams: list[dict[str, Any]]
    #: how ``--batch-size auto`` chose the slots, once it did
    slots_choice: Any
    #: why the variants cannot share a stream ("" they can; None: not looked at yet)
    stream_mix_refusal: str | None

    def _generate_streams(self, p: Any, advance: Callable[[int], None]) -> None:
        """Every variant's missing requests in one continuous-batching stream where they can share one
        (:meth:`_mixed_stream`), else each variant's as its own stream (the base with the adapters
        disabled, an adapter as the active one), ``batch_size`` requests decoded at once."""
        import contextlib

        config = self._stream_generation_config(max(it.max_new_tokens for v in p.variants for it in p.todo[v]))
        if self._mixed_stream(p, config, advance):
            return
        for variant in p.variants:
            items = p.todo[variant]
            if not items:
                continue
            if variant == "base" and self.adapters:
                scope: Any = self.model.disable_adapter()
            else:
                scope = contextlib.nullcontext()
                if variant != "base":
                    self.model.set_adapter(variant)
            with scope:  # (not inference_mode: the library's loop writes tensors warmup made outside it)
                slots, tokens = self._stream(p, [(it, variant) for it in items], config, advance)
            self.streams.append({"variant": variant, "requests": len(items), "slots": slots,
                                 "new_tokens": tokens})  # (durations are run.timings': results repeat byte for byte)

    def _stream(self, p: Any, rows: list[tuple[Any, str]], config: Any, advance: Callable[[int], None],
                mixed: bool = False) -> tuple[int, int]:
        """Generate and record ``rows`` (item, variant) as one continuous-batching stream
        (:func:`auditor.backends.hf_stream.stream_generate`; ``mixed``: each row's variant masked per token,
        else the model as it stands); returns the slots it used and the new tokens it made.

        Raises:
            StreamError, MixedStreamUnsupported: as ``stream_generate``.
        """
        from .hf_stream import stream_generate

        ids = [self.tokenizer_for(v)(p.rendered[(it.id, v)], add_special_tokens=False)["input_ids"] for it, v in rows]
        slots = self._slots(len(rows))
        out = stream_generate(self.model, ids, [it.max_new_tokens for it, _ in rows], slots=slots,
                              generation_config=config, on_done=advance,
                              variants=[v for _, v in rows] if mixed else None)
        tokens = 0
        for (it, variant), row in zip(rows, out):
            text, n = self._decode(row, variant)
            tokens += n
            self._record(p, it, variant, text, n)
        return min(slots, len(rows)), tokens

    def _mixed_stream(self, p: Any, config: Any, advance: Callable[[int], None]) -> bool:
        """Every variant's missing requests in one stream (:func:`auditor.backends.hf_stream.stream_generate`
        with ``variants``: per-token LoRA masks), where more than one variant has any and the adapters allow
        it (``mix_variants``, one tokenizer for all, :func:`auditor.backends.hf_peft.stream_mix_refusal`);
        False (nothing generated) otherwise, or when the library cannot say which requests a step packs or
        key its page hashes by variant (``MixedStreamUnsupported``), and from then on the variants are
        streamed one after another.

        One stream instead of one per variant: the slots stay full while the first variant's longest
        answers end, and a round's few items per variant decode together (fp32 answers token-identical
        to the per-variant streams', tests/backends/test_cache.py)."""
        from .hf_peft import stream_mix_refusal
        from .hf_stream import MixedStreamUnsupported

        rows = [(it, v) for v in p.variants for it in p.todo[v]]
        if (not self.mix_variants or not self.adapters or self.resize is not None or self.tokenizers
                or len({v for _, v in rows}) < 2):
            return False
        if self.stream_mix_refusal is None:
            self.stream_mix_refusal = stream_mix_refusal(self.model) or ""
        if self.stream_mix_refusal:
            return False
        try:
            slots, tokens = self._stream(p, rows, config, advance, mixed=True)
        except MixedStreamUnsupported as e:
            self.stream_mix_refusal = str(e)
            return False
        self.streams.append({"variants": [v for v in p.variants if p.todo[v]], "requests": len(rows),
                             "slots": slots, "new_tokens": tokens})
        return True

    def _stream_generation_config(self, max_new_tokens: int) -> Any:
        """Greedy decoding with the model's own EOS ids (what static ``generate`` stops on)."""
        from transformers import GenerationConfig

        own = getattr(self.model, "generation_config", None)
        eos = getattr(own, "eos_token_id", None)
        return GenerationConfig(do_sample=False, eos_token_id=eos if eos is not None else self.tokenizer.eos_token_id,
                                pad_token_id=self.tokenizer.pad_token_id, max_new_tokens=max_new_tokens)

    def _slots(self, requests: int) -> int:
        """Requests decoded at once in a stream of ``requests``: ``batch_size``, or with ``auto`` the count
        beyond which this machine's tokens per second stop rising (:func:`auditor.backends.throughput.best_slots`,
        measured once per model shape and machine, then cached); a stream no longer than the sweep's first
        step decodes all its requests at once without measuring (fewer slots could not be faster)."""
        if self.batch_size != "auto":
            return int(self.batch_size)
        from .throughput import SLOT_STEPS, best_slots

        if self.slots_choice is None and requests <= SLOT_STEPS[0]:
            return max(1, requests)
        if self.slots_choice is None:
            self.slots_choice = best_slots(self.model, self.dtype, self.device)
        return self.slots_choice.slots
