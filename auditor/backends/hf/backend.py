"""The ``hf`` backend: transformers + peft, on the CPU or one GPU.

Loads the base once, attaches the adapter with ``PeftModel.from_pretrained`` and produces the base
variant with the adapter disabled (``disable_adapter()``). Decoding is greedy; prompts are rendered
with each variant's chat template (:mod:`auditor.inspect.chat_template`) and batched with left padding. On the CPU the base and adapter
requests of an item are generated in the same ``generate`` call (peft's mixed-adapter batches), so
the paired comparison is not confounded by padding and the weights are read once per step for both.
"""

from __future__ import annotations

import functools
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...cache import GenerationCache
from ...errors import AuditInputError
from ...records import BaseModel, Generation, Item, Request, Variant
from ...util.versions import versions
from ..answer_end import AnswerEnd
from ..base import CachedBackend, encode_pair, tokens_read
from .adapters import as_the_tensors_say as _as_the_tensors_say
from .adapters import base_vocabulary_only as _base_vocabulary_only
from .adapters import holds_dora as _holds_dora
from .adapters import shared_vocab_resize
from .attention import ATTENTION, attention_path
from .batching import auto_batch_size
from .batching import batches as _batches
from .batching import free_memory_bytes as _free_memory_bytes
from .draft import Verified, accept, greedy_choices, make_draft

if TYPE_CHECKING:
    from ...options import AuditOptions


class HFBackend(CachedBackend):
    """transformers + peft generation on CPU (or one GPU), fp32 by default.

    One base load serves every variant: the base (adapters disabled) and each
    adapter (``PeftModel.load_adapter`` + ``set_adapter``).

    Args:
        base_path: local HF model folder of the base.
        adapters: the run's adapter variants (:class:`~auditor.records.Variant`: the PEFT folder, the content
            digest that keys its answers, and what inspection found: DoRA, the parsed config, a resized
            vocabulary); empty to run the base only. ``Variant.of_folder(name, folder, digest)`` for a folder
            inspection did not see.
        batch_size: items per ``generate`` call (each with every variant it
            still needs), or ``"auto"``: per generation budget, as many as
            fit in half the free memory (:func:`auto_batch_size`), at most
            64 on the CPU and 256 on a GPU.
        dtype: torch dtype name (``float32`` keeps greedy decoding comparable
            across backends).
        cache: the generation cache (default: disabled).
        base_digest: content digest of the base folder (:func:`auditor.util.hashing.folder_digest`).
        device: ``"auto"`` (the first CUDA GPU when torch sees one, else the
            CPU), or a torch device name such as ``"cpu"`` or ``"cuda:1"``.
        mix_variants: generate the base and adapter rows of a batch in one
            ``generate`` call (peft mixed-adapter batch); a call then holds up
            to ``batch_size`` items × the number of variants. ``"auto"`` (the
            default) mixes on the CPU, where decoding is bound by reading the
            weights and one pass serves every variant, and not on a GPU, where
            eager decoding is bound by kernel launches and peft's per-row
            adapter routing adds launches to every LoRA layer (one H200,
            Llama-8B shape: mixed batches ran at 0.74 of raw ``generate``;
            ``benchmarks/gpu_bench.py``). The items of a batch are the same for
            every variant either way (same padding).
        batching: ``continuous`` (transformers' continuous batching, one stream per variant:
            :mod:`auditor.backends.hf.stream`; ``batch_size`` is then the requests decoded at once),
            ``static`` (``generate`` calls of ``batch_size`` items, every variant of an item in the same
            call), or ``auto``: continuous, static for a resized vocabulary (whose base rows need a
            per-row vocabulary mask).
        draft: ``base`` (an adapter's answer from the base's answer to the same item, verified in one forward
            pass: :mod:`auditor.backends.hf.draft`), ``off``, or ``auto``: ``base`` where it pays
            (:meth:`drafts_pay`), else ``off``.

    Raises:
        AuditInputError: adapters of different resized vocabularies, or an adapter tokenizer that cannot
            be loaded.
    """

    name = "hf"
    stops_at_answer_end = True

    def __init__(self, base_path: Path, adapters: Sequence[Variant] = (), batch_size: int | str = 24,
                 dtype: str = "float32", cache: GenerationCache | None = None, base_digest: str = "",
                 mix_variants: bool | str = "auto", device: str = "auto", batching: str = "auto",
                 draft: str = "off"):
        import torch

        super().__init__(base_path, adapters, dtype, cache, base_digest, batch_size)
        #: variant → the resized vocabulary of an adapter trained with added tokens (its record's
        #: ``vocab_resize``): the model's embeddings are resized to its size before PEFT loads the adapters, that
        #: variant's prompts are encoded and its answers decoded with its own tokenizer, and every other variant
        #: (the base included) keeps the base's vocabulary (ids at and above the base's size never generated)
        self.vocab_resize = {name: v.info.vocab_resize for name, v in self.adapters.items()
                             if v.info.vocab_resize is not None}
        #: the vocabulary the model's embeddings are resized to (None: the base's)
        self.resize = shared_vocab_resize(self.vocab_resize)
        for variant in self.vocab_resize:
            self._own_tokenizer(variant, self.adapters[variant].folder)
        self.torch = torch
        self.device: str = ("cuda" if torch.cuda.is_available() else "cpu") if device == "auto" else device
        #: variant → its weights hold DoRA magnitudes (loaded as DoRA whatever use_dora says): as inspection
        #: found, or read from the weights' header for a variant inspection did not see (no parsed config)
        self.dora = {name: v.info.dora if v.info.config is not None else _holds_dora(v.folder)
                     for name, v in self.adapters.items()}
        #: put rows of several variants in one static generate call (peft mixed-adapter batches; not with DoRA,
        #: which peft refuses there)
        if mix_variants == "auto":
            mix_variants = not self.device.startswith("cuda")
        self.mix_variants = bool(mix_variants) and not any(self.dora.values())
        if batching not in ("auto", "continuous", "static"):
            raise ValueError(f"batching must be auto, continuous or static, not {batching!r}")
        #: ``continuous`` or ``static`` (see the class doc)
        self.batching = ("static" if self.resize is not None else "continuous") if batching == "auto" else batching
        if draft not in ("auto", "base", "off"):
            raise ValueError(f"draft must be auto, base or off, not {draft!r}")
        if draft == "base" and self.batching != "continuous":
            raise AuditInputError("--draft base", "drafts are verified in continuous batching; this run batches "
                                                  "statically (--batching static, or an adapter with a resized "
                                                  "vocabulary): use --draft off or auto")
        #: ``base`` or ``off`` (see the class doc)
        self.draft = draft if draft != "auto" else "base" if self.drafts_pay() else "off"
        #: drafting was chosen by ``auto``: an adapter whose first drafts are mostly rejected decodes the rest
        self.draft_auto = draft == "auto"
        #: each continuous-batching stream of the run: variant, requests, slots (results.json ``run.hf``)
        self.streams: list[dict[str, Any]] = []
        #: each adapter stream's drafts: variant, requests drafted, drafts accepted whole, draft tokens accepted
        #: and given (results.json ``run.hf``)
        self.drafts: list[dict[str, Any]] = []
        #: how ``--batch-size auto`` chose the slots (:mod:`auditor.backends.hf.throughput`), once it did
        self.slots_choice: Any = None

    def drafts_pay(self) -> bool:
        """Whether drafting adapter answers from the base's saves time here: with continuous batching (where drafts
        are verified), on a GPU or in a 16-bit dtype, where a forward pass over known tokens costs a small
        fraction of decoding them; not in fp32 on a CPU, where it costs about half as much (prefill about 870
        tokens/s against about 410 decoded on a 2-core Xeon, SmolLM2-135M) and the drafts an adapter rejects
        cost more than the ones it accepts save (benchmarks/RESULTS.md, "Draft and verify")."""
        return self.batching == "continuous" and (self.device.startswith("cuda") or self.dtype != "float32")

    @classmethod
    def create(cls, opts: AuditOptions, base: BaseModel, variants: Sequence[Variant], cache: GenerationCache,
               base_digest: str) -> HFBackend:
        return cls(base.path, variants, batch_size=opts.batch_size, dtype=opts.dtype, cache=cache,
                   base_digest=base_digest, batching=opts.batching, draft=opts.draft)

    def _load(self):
        """The base model with every adapter attached (each as its own peft adapter, named by its variant)."""
        from transformers import AutoModelForCausalLM

        # (sdpa, the library's default, named: a continuous stream switches to per-request attention and back)
        model = AutoModelForCausalLM.from_pretrained(str(self.base_path), dtype=getattr(self.torch, self.dtype),
                                                     device_map=self.device, attn_implementation="sdpa")
        if self.device == "cpu":
            # weights loaded without a dtype conversion stay views of the memory-mapped safetensors file,
            # whose pages the kernel may evict and read back from disk mid-run (seen here: 1.2 s a step):
            # copy them into the process's own memory (tied weights stay tied: one Parameter)
            for param in model.parameters():
                param.data = param.data.clone()
        if self.resize is not None:
            self._resize_embeddings(model)
        from .invariant import make_batch_invariant  # (imports torch: not at the module's import)

        if self.numerics:  # (before PEFT: it wraps the fixed-rows projections; the LoRA matrices after it)
            make_batch_invariant(model)
        with tempfile.TemporaryDirectory(prefix="auditor-adapter-") as tmp:
            for k, (variant, adapter) in enumerate(self.adapters.items()):
                path = _as_the_tensors_say(adapter.folder, self.dora[variant], Path(tmp) / variant, adapter.info.config)
                if k == 0:
                    from peft import PeftModel

                    model = PeftModel.from_pretrained(model, str(path), adapter_name=variant)
                else:
                    model.load_adapter(str(path), adapter_name=variant)
        if self.numerics:
            make_batch_invariant(model)
        return model.eval()

    def reload(self) -> None:
        """Drop the loaded model; the next use loads it again (its time counted in ``stats.load_s``)."""
        self._model = None

    def _resize_embeddings(self, model: Any) -> None:
        """Resize the base's embeddings to the adapters' tokenizer (``resize_token_embeddings``, as PEFT
        documents for added tokens), before PEFT loads the saved rows onto them. The new rows' initial
        values are seeded (PEFT overwrites those the adapter saves).

        Raises:
            AuditInputError: an adapter's tokenizer has another length than its saved rows.
        """
        for variant, r in self.vocab_resize.items():
            n = len(self.tokenizer_for(variant))
            if n != r.size:
                raise AuditInputError(self.adapters[variant].folder / r.tokenizer_file,
                                      f"the adapter's tokenizer has {n:,} tokens but its saved embeddings have "
                                      f"{r.size:,} rows")
        assert self.resize is not None  # called only for a resized vocabulary
        with self.torch.random.fork_rng(devices=[]):
            self.torch.manual_seed(0)
            model.resize_token_embeddings(self.resize.size)

    def _encode(self, prompts: list[str], variants: list[str]) -> dict:
        """Token ids (left padded with the base's pad id) and attention mask of a batch whose rows may
        belong to variants with their own tokenizer."""
        torch = self.torch
        if not any(v in self.tokenizers for v in variants):
            return self.tokenizer(prompts, return_tensors="pt", padding=True, add_special_tokens=False).to(self.device)
        ids = [self.tokenizer_for(v)(p, add_special_tokens=False)["input_ids"] for p, v in zip(prompts, variants)]
        width = max(map(len, ids))
        pad = self.tokenizer.pad_token_id
        return {"input_ids": torch.tensor([[pad] * (width - len(r)) + r for r in ids], device=self.device),
                "attention_mask": torch.tensor([[0] * (width - len(r)) + [1] * len(r) for r in ids],
                                               device=self.device)}

    @functools.cached_property
    def numerics(self) -> str | None:
        """How the linear layers compute on this device: :data:`~auditor.backends.hf.invariant.NUMERICS` (each row
        alike whatever else is in the batch: :mod:`auditor.backends.hf.invariant`) on the CPU; None (torch's
        own) on a GPU."""
        from .invariant import NUMERICS

        return NUMERICS if self.device == "cpu" else None

    @property
    def batch_invariant(self) -> bool:
        """Whether a greedy answer is the same whatever else the batch holds: on the CPU (fixed-rows linear
        layers), in continuous batching with the per-request attention (a model without sliding-window layers)."""
        return bool(self.numerics) and self.batching == "continuous" and self.attention == ATTENTION

    @functools.cached_property
    def attention(self) -> str:
        """The continuous stream's attention path (:func:`auditor.backends.hf.attention.attention_path`), from
        the base's config: per request, or the library's for a model with sliding-window layers."""
        from transformers import AutoConfig

        return attention_path(AutoConfig.from_pretrained(str(self.base_path)))

    def settings(self) -> dict:
        """Generation settings and backend versions: part of every cache key."""
        out = {"backend": self.name, "device": self.device.split(":")[0], "decoding": "greedy", "dtype": self.dtype,
               "batch_size": self.batch_size, "mixed_variants": self.mix_variants,
               "versions": versions(("torch", "transformers", "peft"))}
        if self.numerics:
            out["numerics"] = self.numerics
        # the engine path keys the answers: a continuous stream's are never mixed with static generate's
        # (and the attention path: per request answers in bf16 differ from the library's dense-mask sdpa)
        if self.batching != "continuous":
            return out
        # (fixed-rows linear layers and per-request attention make an answer the same at any slot count and in any
        # company; the slots stay in the key all the same: on a GPU, under the library's attention over the whole
        # step, and for a prompt whose last token is left alone to a step of its own, they can still matter)
        return out | {"batching": "continuous", "attention": self.attention, "streams": "per_variant"}

    def run_info(self, variant: str) -> dict[str, Any]:
        """What results.json records of the engine (``run.hf``): the batching path, the requests decoded at
        once (continuous: per stream, with its variant; static: items per call), how the slots were chosen, and
        whether adapter answers were drafted from the base's (``draft``; ``drafts``: per adapter stream, the
        requests drafted, the drafts accepted whole, the draft tokens accepted and given, and with ``--draft auto``
        why the rest were decoded where the adapter rejected its first drafts: ``stopped``), and whether its greedy
        answers do not depend on the batch (``batch_invariant``: :attr:`batch_invariant`)."""
        return {"batching": self.batching, "streams": list(self.streams), "draft": self.draft,
                "drafts": list(self.drafts),
                "attention": self.attention if self.batching == "continuous" else "sdpa",
                "numerics": self.numerics or "torch", "batch_invariant": self.batch_invariant,
                "slots": None if self.slots_choice is None else self.slots_choice.as_dict()}

    def _generate_batch(self, prompts: list[str], max_new_tokens: int, variants: list[str] | None = None,
                        adapter_names: list[str] | None = None,
                        ends: Sequence[AnswerEnd | None] | None = None) -> list[tuple[str, int]]:
        """One greedy ``generate`` call; ``variants``: the variant of each row (its tokenizer, and
        whether it may generate an adapter's added tokens; default all ``base``); ``ends``: where each row's answer
        ends at its stop strings (the row stops there, :class:`_AnswersEnded`, and is cut there), None for none."""
        torch = self.torch
        from transformers import LogitsProcessorList, StoppingCriteriaList

        variants = variants or ["base"] * len(prompts)
        ends = ends or [None] * len(prompts)
        enc = self._encode(prompts, variants)
        extra: dict[str, Any] = {"adapter_names": adapter_names} if adapter_names is not None else {}
        if any(e is not None for e in ends):
            extra["stopping_criteria"] = StoppingCriteriaList([_AnswersEnded(ends, enc["input_ids"].shape[1])])
        if self.resize is not None:
            rows = [k for k, v in enumerate(variants) if v not in self.vocab_resize]
            if rows:
                extra["logits_processor"] = LogitsProcessorList([_base_vocabulary_only(rows, self.resize.base_size)])
        model = self.model  # a lazy load must not happen inside inference_mode (its tensors could not be switched)
        with torch.inference_mode():
            out = model.generate(
                **enc, max_new_tokens=max_new_tokens, do_sample=False, temperature=None, top_p=None, top_k=None,
                pad_token_id=self.tokenizer.pad_token_id, **extra,
            )
        new = out[:, enc["input_ids"].shape[1]:].tolist()
        cuts = [None if e is None else AnswerEnd(e.decode, e.stops)(row) for row, e in zip(new, ends)]
        return [self._decode(row if n is None else row[:n], v) for row, n, v in zip(new, cuts, variants)]

    def _generate_rows(self, rows: list[tuple[Item, str]], prompts: list[str]) -> list[tuple[str, int]]:
        """Generate one batch whose rows may belong to different variants.

        Rows of several variants go into one ``generate`` call with peft's
        mixed-adapter batches (``adapter_names``, ``"__base__"`` for the base),
        so the weights are read once per decoding step for all of them
        (decoding is memory-bound). DoRA adapters are never mixed (peft refuses
        it; decided at construction); where peft refuses a mixed batch anyway,
        the model is loaded again (peft leaves its ``adapter_names`` hooks on
        the layers after a refusal) and the rows are generated variant by variant.
        """
        budget = rows[0][0].max_new_tokens
        variants = sorted({v for _, v in rows})
        row_variants = [v for _, v in rows]
        ends = [self._answer_end(it, v) for it, v in rows]
        if not self.adapters:
            return self._generate_batch(prompts, budget, row_variants, ends=ends)
        if len(variants) > 1 and self.mix_variants:
            try:
                return self._generate_batch(prompts, budget, row_variants,
                                            ["__base__" if v == "base" else v for v in row_variants], ends)
            except (ValueError, TypeError, NotImplementedError):
                self.mix_variants = False
                self.reload()
        out: dict[int, tuple[str, int]] = {}
        for variant in variants:
            idx = [k for k, (_, v) in enumerate(rows) if v == variant]
            sub = [prompts[k] for k in idx]
            sub_ends = [ends[k] for k in idx]
            if variant == "base":
                with self.model.disable_adapter():
                    res = self._generate_batch(sub, budget, [variant] * len(sub), ends=sub_ends)
            else:
                self.model.set_adapter(variant)
                res = self._generate_batch(sub, budget, [variant] * len(sub), ends=sub_ends)
            out.update(zip(idx, res))
        return [out[k] for k in range(len(rows))]

    def _batch_size_for(self, plen: dict[str, int], n_variants: int) -> int | Callable[[int, list[Item]], int]:
        """``batch_size`` for :func:`_batches`: the fixed number, or with ``"auto"`` a
        function choosing it per budget group (:func:`auto_batch_size`), recorded in the stats."""
        if self.batch_size != "auto":
            return int(self.batch_size)
        cap = 256 if self.device.startswith("cuda") else 64
        dtype_bytes = self.torch.finfo(getattr(self.torch, self.dtype)).bits // 8
        free = _free_memory_bytes(self.device)

        def size(budget: int, group: list[Item]) -> int:
            n = auto_batch_size(self.model.config, max(plen[i.id] for i in group) + budget, n_variants, free,
                                dtype_bytes, cap)
            self.stats.batch_sizes_used[budget] = n
            return n

        return size

    def generate_text(self, requests: list[Request], split_small: bool = False,
                      use_cache: bool = True) -> list[Generation]:
        """Generate all requests; returns one Generation per request (same order).

        Requests found in the cache are not generated. With continuous batching the rest go to the
        engine as one stream per variant (:meth:`_generate_streams`); with static batching the items
        with any miss are batched by :func:`_batches` (budget group, prompt length) and each batch
        carries every variant its items still need, in one ``generate`` call where peft allows
        (:meth:`_generate_rows`). ``split_small`` cuts budget groups that fit in one batch in two (see
        :func:`_batches`); ``use_cache=False`` neither reads nor writes the cache (the noise-floor replay).

        Raises:
            ValueError: an ``adapter`` request was given but no adapter is loaded.
            StreamError: the continuous-batching loop failed.
        """
        p = self._lookup(requests, use_cache)
        if p.n_todo == 0:
            return p.ordered(requests)
        _ = self.model  # load before the clock starts: generate_s is generation only
        t0 = time.perf_counter()
        with self._progress() as progress:
            desc = ", ".join(f"{len(p.todo[v])} {v}" for v in p.variants if p.todo[v])
            task = progress.add_task(f"hf · {desc}", total=p.n_todo)
            if self.batching == "continuous":
                self._generate_streams(p, lambda n: progress.advance(task, n))
            else:
                self._generate_static(p, split_small, lambda n: progress.advance(task, n))
        self.stats.generate_s += time.perf_counter() - t0
        return p.ordered(requests)

    def loglikelihood_settings(self) -> dict:
        """The base class's, and that each item is scored alone (:meth:`score_choices`): entries scored in
        batches of items are not taken for these."""
        return super().loglikelihood_settings() | {"scoring": "one item per pass"}

    def score_choices(self, variant: str, items: list[Item]) -> list[tuple[list[float], int]]:
        """Each item's choice log-likelihoods under ``variant`` (the base with the adapters disabled, an adapter
        as the active one) and the tokens read: one forward pass per item, one row per choice (context +
        continuation, right padded), the logits of the continuation's positions only (``logits_to_keep`` as
        a tensor of positions). The base variant of a resized vocabulary reads the base's vocabulary only.

        An item is never batched with other items: a 16-bit matrix product's rounding depends on the
        batch's shape, and batched scoring moved bf16 log-likelihoods by up to 0.5 nats on the embedded
        base, so a cached, resumed or extended audit would score the same item differently from a fresh
        one. One item per pass makes an item's log-likelihoods a function of the model, the adapter and
        the item alone."""
        import contextlib

        model = self.model
        if variant == "base" and self.adapters:
            scope: Any = model.disable_adapter()
        else:
            scope = contextlib.nullcontext()
            if variant != "base":
                model.set_adapter(variant)
        vocab = self.resize.base_size if self.resize is not None and variant not in self.vocab_resize else None
        tok = self.tokenizer_for(variant)
        out: list[tuple[list[float], int]] = []
        with scope, self.torch.inference_mode(), self._progress() as progress:
            task = progress.add_task(f"hf · {len(items)} {variant} · multiple choice", total=len(items))
            for item in items:
                t = item.target
                pairs = [encode_pair(tok, c, x) for c, x in zip(t["contexts"], t["continuations"])]
                out.append((self._item_loglikelihoods(model, pairs, vocab), tokens_read(pairs)))
                progress.advance(task, 1)
        return out

    def _item_loglikelihoods(self, model: Any, pairs: list[tuple[list[int], list[int]]],
                             vocab: int | None) -> list[float]:
        """The summed log-likelihood of each (context ids, continuation ids) pair's continuation after its
        context, in one forward pass of one row per pair (a row's last continuation token is read, not fed)."""
        torch, dev = self.torch, self.device
        pad = self.tokenizer.pad_token_id
        rows = [ctx + cont[:-1] for ctx, cont in pairs]
        width = max(len(r) for r in rows)
        # no attention mask: the pads follow every row's real tokens, which the causal mask keeps them from
        ids = torch.tensor([r + [pad] * (width - len(r)) for r in rows], device=dev)
        keep = sorted({len(ctx) - 1 + i for ctx, cont in pairs for i in range(len(cont))})
        if not keep:
            return [0.0] * len(pairs)
        at = {pos: k for k, pos in enumerate(keep)}
        logits = model(input_ids=ids, logits_to_keep=torch.tensor(keep, device=dev)).logits[..., :vocab]
        lls = []
        for r, (ctx, cont) in enumerate(pairs):
            if not cont:
                lls.append(0.0)
                continue
            # log p(token) = its logit − logsumexp over the vocabulary, in fp32
            row = logits[r, [at[len(ctx) - 1 + i] for i in range(len(cont))]].float()
            target = torch.tensor(cont, device=dev)
            lls.append(float((row.gather(-1, target[:, None])[:, 0] - row.logsumexp(-1)).sum()))
        return lls

    def _generate_static(self, p: Any, split_small: bool, advance: Callable[[int], None]) -> None:
        """The static path: ``generate`` calls of ``batch_size`` items, every missing variant of an item in the
        same call, so base and adapter answers of an item come from the same call (same padding)."""
        variants, todo, rendered = p.variants, p.todo, p.rendered
        todo_items = list({it.id: it for v in variants for it in todo[v]}.values())
        missing = {v: {it.id for it in todo[v]} for v in variants}
        # an item's length for batching: its longest prompt (variants may have their own chat template)
        plen = {it.id: max(len(self.tokenizer_for(v)(rendered[(it.id, v)], add_special_tokens=False)["input_ids"])
                           for v in variants if it.id in missing[v]) for it in todo_items}
        size = self._batch_size_for(plen, sum(1 for v in variants if missing[v]))
        for batch in _batches(todo_items, size, plen, split_small):
            rows = [(it, v) for v in variants for it in batch if it.id in missing[v]]
            outs = self._generate_rows(rows, [rendered[(it.id, v)] for it, v in rows])
            for (it, variant), (text, n) in zip(rows, outs):
                self._record(p, it, variant, text, n)
            advance(len(rows))

    def _generate_streams(self, p: Any, advance: Callable[[int], None]) -> None:
        """Each variant's missing requests as one continuous-batching stream (the base with the adapters
        disabled, an adapter as the active one), ``batch_size`` requests decoded at once."""
        import contextlib

        config = self._stream_generation_config(max(it.max_new_tokens for v in p.variants for it in p.todo[v]))
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
                slots, tokens = self._stream(p, items, variant, config, advance)
            self.streams.append({"variant": variant, "requests": len(items), "slots": slots,
                                 "new_tokens": tokens})  # (durations are run.timings': results repeat byte for byte)

    def _stream(self, p: Any, items: list[Item], variant: str, config: Any,
                advance: Callable[[int], None]) -> tuple[int, int]:
        """Generate and record one variant's ``items`` as one continuous-batching stream
        (:func:`auditor.backends.hf.stream.stream_generate`, the model as it stands); returns the slots it used
        and the new tokens it made.

        Raises:
            StreamError: as ``stream_generate``.
        """
        from .stream import stream_generate

        encode = self.tokenizer_for(variant)
        # the longest budgets first: a long answer started last would decode alone at the stream's end
        items = sorted(items, key=lambda it: -it.max_new_tokens)
        ids = [encode(p.rendered[(it.id, variant)], add_special_tokens=False)["input_ids"] for it in items]
        verified: list[Verified | None] = [None] * len(items)
        if variant != "base" and self.draft == "base":
            waves = -(-len(items) // self._slots(len(items)))
            if self.draft_auto and waves < self.DRAFT_WAVES:
                # (one or two waves: the stream lasts as long as its longest answer, which few drafts shorten)
                self.drafts.append({"variant": variant, "drafted": 0, "accepted_whole": 0, "accepted_tokens": 0,
                                    "draft_tokens": 0, "stopped": f"{len(items)} requests decode in {waves} "
                                                                  f"wave{'s' * (waves > 1)} of slots: not drafted"})
            else:
                verified = self._verify_drafts(p, items, ids, variant, config)
        prefix = [[] if v is None else v.row for v in verified]
        # an item shown worked examples: its answer ends at a stop string, and decoding stops there
        ends = [self._answer_end(it, variant) for it in items]
        rows: list[list[int] | None] = [None] * len(items)
        todo = []
        for k, v in enumerate(verified):
            end = ends[k]
            cut = None if v is None or end is None else end(v.row)  # (within the accepted draft)
            if v is not None and (v.done or cut is not None):
                rows[k] = v.row if cut is None else v.row[:cut]
                advance(1)
            else:
                todo.append(k)
        slots = self._slots(len(todo)) if todo else 1
        out = stream_generate(self.model, [ids[k] + prefix[k] for k in todo],
                              [items[k].max_new_tokens - len(prefix[k]) for k in todo], slots=slots,
                              generation_config=config, on_done=advance,
                              ends=[None if (end := ends[k]) is None else _after(prefix[k], end) for k in todo])
        for k, row in zip(todo, out):
            rows[k] = prefix[k] + row
        tokens = 0
        for it, answer in zip(items, rows):
            assert answer is not None
            text, n = self._decode(answer, variant)
            tokens += n
            self._record(p, it, variant, text, n, answer)
        return min(slots, len(todo)), tokens

    def _answer_end(self, item: Item, variant: str) -> AnswerEnd | None:
        """Where ``item``'s answer under ``variant`` ends at its stop strings (:meth:`Item.stop_strings`), or None
        where it runs to its EOS or budget."""
        stops = item.stop_strings(self.plain("base"))
        if not stops:
            return None
        return AnswerEnd(lambda row: self._decode(row, variant)[0], stops)  # (the stored answer's own decoding)

    @staticmethod
    def _eos_ids(config: Any) -> set[int]:
        eos = config.eos_token_id
        return {int(e) for e in (eos if isinstance(eos, (list, tuple)) else [eos]) if e is not None}

    #: with ``--draft auto``: drafts verified first (spread over the stream), and the share of their tokens the
    #: adapter must accept for the rest to be drafted (below it, verifying costs more than it saves)
    DRAFT_SAMPLE = 32
    DRAFT_MIN_ACCEPTED = 0.5
    #: with ``--draft auto``: a stream is drafted when its requests take at least this many waves of slots
    DRAFT_WAVES = 3

    def _verify_drafts(self, p: Any, items: list[Item], ids: list[list[int]], variant: str,
                       config: Any) -> list[Verified | None]:
        """Each item's answer so far under ``variant`` (the active adapter) from the base's answer to it, where this
        call has one (:mod:`auditor.backends.hf.draft`): the verified draft, complete or to be decoded on from;
        None where there is no draft or it was not verified. With ``--draft auto`` a first sample of :attr:`DRAFT_SAMPLE` drafts is
        verified, and the rest only when the adapter accepted :attr:`DRAFT_MIN_ACCEPTED` of its tokens. Counted in
        ``drafts`` (results.json ``run.hf``)."""
        tok, eos_ids = self.tokenizer_for(variant), self._eos_ids(config)
        eos = tok.eos_token_id if tok.eos_token_id in eos_ids else min(eos_ids)
        have = [k for k, it in enumerate(items) if (it.id, "base") in p.results]
        # the base's own tokens where known (a fresh answer, a cache entry that keeps them), else its text encoded
        drafts = {k: p.tokens[(items[k].id, "base")][:items[k].max_new_tokens] if (items[k].id, "base") in p.tokens
                  and variant not in self.tokenizers
                  else make_draft(tok, p.results[(items[k].id, "base")].text, eos, items[k].max_new_tokens)
                  for k in have}
        vocab = self.resize.base_size if self.resize is not None and variant not in self.vocab_resize else None
        out: list[Verified | None] = [None] * len(items)
        info: dict[str, Any] = {"variant": variant, "drafted": 0, "accepted_whole": 0, "accepted_tokens": 0,
                                "draft_tokens": 0}

        def verify(ks: list[int]) -> None:
            chosen = greedy_choices(self.model, [ids[k] for k in ks], [drafts[k] for k in ks],
                                    pad=self.tokenizer.pad_token_id, vocab=vocab)
            for k, c in zip(ks, chosen):
                v = out[k] = accept(drafts[k], c, items[k].max_new_tokens, eos_ids)
                info["drafted"] += 1
                info["accepted_whole"] += v.accepted == len(drafts[k])
                info["accepted_tokens"] += v.accepted
                info["draft_tokens"] += len(drafts[k])

        first = have[::max(1, len(have) // self.DRAFT_SAMPLE)][:self.DRAFT_SAMPLE] if self.draft_auto else have
        verify(first)
        sampled = set(first)
        rest = [k for k in have if k not in sampled]
        if rest and info["accepted_tokens"] < self.DRAFT_MIN_ACCEPTED * info["draft_tokens"]:
            info["stopped"] = (f"the adapter accepted {info['accepted_tokens']} of the first {info['drafted']} "
                               f"drafts' {info['draft_tokens']} tokens: the other {len(rest)} answers decoded")
        elif rest:
            verify(rest)
        self.drafts.append(info)
        return out

    def _stream_generation_config(self, max_new_tokens: int) -> Any:
        """Greedy decoding with the model's own EOS ids (what static ``generate`` stops on)."""
        from transformers import GenerationConfig

        own = getattr(self.model, "generation_config", None)
        eos = getattr(own, "eos_token_id", None)
        return GenerationConfig(do_sample=False, eos_token_id=eos if eos is not None else self.tokenizer.eos_token_id,
                                pad_token_id=self.tokenizer.pad_token_id, max_new_tokens=max_new_tokens)

    def _slots(self, requests: int) -> int:
        """Requests decoded at once in a stream of ``requests``: ``batch_size``, or with ``auto`` the count
        beyond which this machine's tokens per second stop rising (:func:`auditor.backends.hf.throughput.best_slots`,
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


def _after(prefix: list[int], end: AnswerEnd) -> Callable[[list[int]], int | None]:
    """``end`` of an answer decoded on from ``prefix`` (a verified draft), as a function of the new tokens alone
    (the length among them at which the answer ended)."""
    def new_tokens_end(tokens: list[int]) -> int | None:
        n = end(prefix + tokens)
        return None if n is None else n - len(prefix)
    return new_tokens_end


class _AnswersEnded:
    """A ``StoppingCriteria`` for one static ``generate`` call (transformers' documented interface: called with
    the batch's token ids after each step, it returns one bool per row): a row is done once its answer ended at
    its stop strings (its :class:`AnswerEnd`; rows without one never stop here)."""

    def __init__(self, ends: Sequence[AnswerEnd | None], prompt_len: int) -> None:
        self.ends = [None if e is None else AnswerEnd(e.decode, e.stops) for e in ends]
        self.prompt_len = prompt_len
        self.done = [False] * len(ends)

    def __call__(self, input_ids: Any, scores: Any, **kwargs: Any) -> Any:
        import torch

        rows = input_ids[:, self.prompt_len:].tolist()
        for k, (row, end) in enumerate(zip(rows, self.ends)):
            if end is not None and not self.done[k]:
                self.done[k] = end(row) is not None
        return torch.tensor(self.done, dtype=torch.bool, device=input_ids.device)
