"""What every backend shares, and the interface the pipeline talks to.

:class:`Backend` is the protocol of the run's backend: render an item with the base's chat template,
generate a list of requests (reading and writing the generation cache), report the settings that key
the cache and what results.json records of the run; :class:`BackendClass` is the protocol of what
:data:`auditor.backends.BACKENDS` holds, the class whose hooks run before any model loads and whose
``create`` makes the :class:`Backend`. :class:`CachedBackend` implements what all three backends
share (tokenizer and each variant's chat template, so every backend sees the same rendered prompt; the cache
lookup and write; the stats) and the class-level hooks the pipeline calls before any model loads
(:meth:`CachedBackend.check_options`, :meth:`CachedBackend.check_adapter`,
:meth:`CachedBackend.create`). Subclasses load their engine lazily (``model``) and generate.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from ..cache.generations import GenerationCache, generation_key
from ..inspect.chat_template import fold_system, plain_prompt
from ..records import AdapterConfig, AdapterTensor, BaseModel, Generation, Item, PromptTemplate, Request, Variant

if TYPE_CHECKING:
    from ..options import AuditOptions


@dataclass
class GenerationStats:
    """Timings and token counts of one generate stage (seconds, tokens)."""

    backend: str
    load_s: float = 0.0
    generate_s: float = 0.0
    new_tokens: dict[str, int] = field(default_factory=dict)
    batch_size: int | str = 0
    #: with ``batch_size="auto"``: items per call chosen for each generation budget (tokens → items)
    batch_sizes_used: dict[int, int] = field(default_factory=dict)
    #: requests actually generated (cache misses), per variant
    generated: dict[str, int] = field(default_factory=dict)
    #: multiple-choice items scored by log-likelihood (cache misses), per variant
    scored: dict[str, int] = field(default_factory=dict)
    #: tokens whose log-probabilities were read for them (contexts and continuations), per variant
    scored_tokens: dict[str, int] = field(default_factory=dict)
    #: seconds spent scoring them
    score_s: float = 0.0


class Backend(Protocol):
    """A generation backend: what the pipeline, the analysis (``--noise-floor``) and the results'
    assembly use of the backend of a run (made by :meth:`BackendClass.create`).

    Attributes:
        name: ``hf``, ``vllm``, ``openai`` (results.json's ``run.backend``; ``run.<name>`` holds
            :meth:`run_info`).
        stats: timings and token counts of the run.
        cache: the generation cache it reads and writes.
        batch_size: items per call, or ``"auto"`` (the noise floor replays with another one).
        dtype: the torch dtype name the engine computes in (``bfloat16``, ``float32``, ...).
        show_progress: rich progress bars on stderr.
        templates: variant → the chat template its prompts are rendered with (:meth:`set_templates`).
        setup_warnings: lines the engine's setup wants the user to see (the pipeline logs them and
            records them as warnings of every adapter).
    """

    name: str
    stats: GenerationStats
    cache: GenerationCache
    batch_size: int | str
    dtype: str
    show_progress: bool
    templates: dict[str, PromptTemplate]
    setup_warnings: list[str]

    @property
    def device(self) -> str | None:
        """The torch device it generates on (hf: ``cpu``, ``cuda``, ``cuda:1``); None where the backend
        does not run torch itself (vllm's engine, an openai server)."""

    @property
    def batch_invariant(self) -> bool:
        """A greedy answer is the same whatever else the batch holds (the hf backend on a CPU says so; the others
        do not promise it): ``--noise-floor`` then replays the base on the other dtype, not another batch."""

    @property
    def model_loaded(self) -> bool:
        """Whether a model (or engine, or client) was loaded: a fully cached audit loads none."""

    def render(self, item: Item, variant: str = "base") -> str:
        """The exact prompt string the model sees for one variant (its chat template applied)."""

    def set_templates(self, templates: dict[str, PromptTemplate]) -> None:
        """The chat template of each variant (:func:`auditor.inspect.chat_template.choose_templates`).

        Raises:
            AuditInputError: an adapter's own tokenizer cannot be loaded (naming its folder).
        """

    def settings(self) -> dict:
        """Generation settings and backend versions: part of every cache key."""

    def generate(self, requests: list[Request], split_small: bool = False,
                 use_cache: bool = True) -> list[Generation]:
        """One Generation per request, in order (cache hits are not generated again)."""

    def run_info(self, variant: str) -> dict[str, Any] | None:
        """What results.json records under ``run.<name>`` for one adapter variant (None: nothing)."""


class BackendClass(Protocol):
    """A backend class as registered in :data:`auditor.backends.BACKENDS`: the hooks the pipeline calls
    before any model loads, and the factory of the run's :class:`Backend` (classmethods of a
    :class:`CachedBackend` subclass).

    Attributes:
        name: the ``--backend`` name.
    """

    name: str

    def check_options(self, opts: AuditOptions, n_adapters: int) -> None:
        """Refuse options this backend cannot run with, before any adapter is read.

        Raises:
            AuditInputError: naming the option.
        """

    def check_adapter(self, weights: Path, cfg: AdapterConfig, tensors: list[AdapterTensor]) -> None:
        """Refuse, from its config and tensor names, an adapter this backend cannot serve.

        Raises:
            AuditInputError: naming the weights file and what is not served.
        """

    def create(self, opts: AuditOptions, base: BaseModel, variants: Sequence[Variant], cache: GenerationCache,
               base_digest: str) -> Backend:
        """The backend for one run of ``variants`` (each adapter under its variant name, with what inspection
        found of it), reading and writing ``cache``.

        Raises:
            AuditInputError: a setting or a file of the run the backend cannot use.
        """


class CachedBackend:
    """What every backend shares: the base's tokenizer and chat template (so every
    backend sees the same rendered prompt), the generation cache lookup and write,
    and the stats. Subclasses load their engine lazily (``model``) and generate."""

    name = "?"
    #: the torch device it generates on (set by the hf backend; None for the others)
    device: str | None = None
    #: whether decoding stops where an answer ended at its item's stop strings (:meth:`Item.stop_strings`,
    #: :class:`auditor.backends.answer_end.AnswerEnd`); otherwise it runs to the EOS or the budget and the answer
    #: is cut afterwards (the scorer reads the same text either way where answers are batch-invariant;
    #: ``n_tokens`` counts what was generated)
    stops_at_answer_end = False
    #: ``base``: adapter answers drafted from the base's (:mod:`auditor.backends.hf.draft`); ``off``: decoded
    draft = "off"

    def __init__(self, base_path: Path, adapters: Sequence[Variant], dtype: str,
                 cache: GenerationCache | None, base_digest: str, batch_size: int | str = 0):
        from transformers import AutoTokenizer
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()
        t0 = time.perf_counter()
        #: rich progress bar on stderr while generating (the CLI's --quiet turns it off)
        self.show_progress = True
        #: lines the engine's setup wants the user to see (the pipeline logs them and records them as warnings)
        self.setup_warnings: list[str] = []
        self.base_path, self.dtype = Path(base_path), dtype
        #: variant name → the adapter's variant (its folder, digest and inspection record)
        self.adapters: dict[str, Variant] = {v.name: v for v in adapters}
        if "base" in self.adapters:
            raise ValueError("'base' is the name of the base variant, not of an adapter")
        self.tokenizer = AutoTokenizer.from_pretrained(str(base_path))
        self.tokenizer.padding_side = "left"
        if self.tokenizer.pad_token is None:
            self.tokenizer.pad_token = self.tokenizer.eos_token
        self._model = None
        self.stats = GenerationStats(self.name, load_s=time.perf_counter() - t0, batch_size=batch_size)
        self.batch_size = batch_size
        self.cache = cache if cache is not None else GenerationCache(None)
        self.base_digest = base_digest
        #: variant → the chat template its prompts are rendered with (none set: the base tokenizer's own)
        self.templates: dict[str, PromptTemplate] = {}
        #: variant → its own tokenizer (an adapter trained with added tokens); the others use :attr:`tokenizer`
        self.tokenizers: dict[str, Any] = {}
        #: variant → sha256 of its own tokenizer's files (part of its answers' cache keys)
        self._tokenizer_sha: dict[str, str] = {}

    @property
    def batch_invariant(self) -> bool:
        return False

    @property
    def model_loaded(self) -> bool:
        return self._model is not None

    @property
    def model(self):
        """The engine (model, vLLM engine or API client), loaded on first use: a fully cached audit
        never loads it. The time it takes is counted in ``stats.load_s``."""
        if self._model is None:
            t0 = time.perf_counter()
            self._model = self._load()
            self.stats.load_s += time.perf_counter() - t0
        return self._model

    def _load(self) -> Any:
        """Load the engine (called once, by :attr:`model`)."""
        raise NotImplementedError

    def settings(self) -> dict:
        """Generation settings and backend versions: part of every cache key."""
        raise NotImplementedError

    def generate(self, requests: list[Request], split_small: bool = False,
                 use_cache: bool = True) -> list[Generation]:
        """One Generation per request, in order: generated items through :meth:`generate_text`, multiple-choice
        items (``Item.output_type``) through :meth:`loglikelihoods`; cache hits are not computed again. A
        generated answer's text is what the scorer reads (:meth:`Item.answer`: cut at the item's ``until`` where
        its worked examples were shown); its ``n_tokens`` counts every token generated (up to the one that ended
        the answer where the backend stops there, :attr:`stops_at_answer_end`)."""
        scored = [r for r in requests if r.item.output_type == "multiple_choice"]
        texts = [r for r in requests if r.item.output_type != "multiple_choice"]
        answers = self.generate_text(texts, split_small, use_cache) if texts else []
        # (the answer a scorer reads; the cache keeps the text as generated)
        answers = [g if (cut := r.item.answer(g.text, self.plain("base"))) == g.text else
                   dataclasses.replace(g, text=cut) for r, g in zip(texts, answers)]
        if not scored:
            return answers
        got: dict[tuple[str, str], Generation] = dict(zip(((r.item.id, r.variant) for r in texts), answers))
        got.update(zip(((r.item.id, r.variant) for r in scored), self.loglikelihoods(scored, use_cache)))
        return [got[(r.item.id, r.variant)] for r in requests]

    def generate_text(self, requests: list[Request], split_small: bool = False,
                      use_cache: bool = True) -> list[Generation]:
        """One generated answer per request, in order (cache hits are not generated again; :meth:`_lookup`,
        :meth:`_record`)."""
        raise NotImplementedError

    def loglikelihoods(self, requests: list[Request], use_cache: bool = True) -> list[Generation]:
        """Each multiple-choice request's choice log-likelihoods (``Generation.loglikelihoods``), in order.

        No chat template is applied: each choice's continuation is scored after its context as the item
        gives it (lm-evaluation-harness's default). Tokens as that harness encodes a pair
        (:func:`encode_pair`). Cached like answers, keyed by the base, the adapter, the contexts and
        continuations, and :meth:`loglikelihood_settings`; what misses goes to :meth:`score_choices`,
        one variant at a time.

        Raises:
            ValueError: an adapter request was given but no adapter is loaded.
        """
        import json

        variants = self._variants(requests)
        cache = self.cache if use_cache else GenerationCache(None)
        settings = self.loglikelihood_settings()
        first: dict[tuple[str, str], Request] = {}
        for r in requests:
            first.setdefault((r.item.id, r.variant), r)
        keys = {k: generation_key(base=self.base_digest, adapter=self._adapter_key(k[1]), messages=r.item.messages,
                                  max_new_tokens=0, settings=settings,
                                  rendered=json.dumps([r.item.target["contexts"], r.item.target["continuations"]],
                                                      ensure_ascii=False))
                for k, r in first.items()}
        results: dict[tuple[str, str], Generation] = {}
        todo: dict[str, list[Item]] = {v: [] for v in variants}
        for (item_id, variant), r, hit in zip(first, first.values(), cache.get_many([(keys[k], k[1]) for k in first])):
            parsed = _parse_scored(hit[0]) if hit is not None else None
            if parsed is not None and len(parsed[0]) == len(r.item.target["continuations"]):
                results[(item_id, variant)] = self._choice_generation(r.item, variant, *parsed)
            else:
                todo[variant].append(r.item)
        if any(todo.values()):
            t0 = time.perf_counter()
            for variant in variants:
                if not todo[variant]:
                    continue
                for item, (lls, n) in zip(todo[variant], self.score_choices(variant, todo[variant])):
                    results[(item.id, variant)] = self._choice_generation(item, variant, lls, n)
                    self.stats.scored_tokens[variant] = self.stats.scored_tokens.get(variant, 0) + n
                    self.stats.scored[variant] = self.stats.scored.get(variant, 0) + 1
                    cache.put(keys[(item.id, variant)], json.dumps({"loglikelihoods": lls, "scored_tokens": n}), 0,
                              {"base": self.base_digest, "backend": self.name,
                               "adapter": None if variant == "base" else self.adapters[variant].digest})
            self.stats.score_s += time.perf_counter() - t0
        return [results[(r.item.id, r.variant)] for r in requests]

    def loglikelihood_settings(self) -> dict:
        """What decides a choice's log-likelihood besides the model, the adapter and the text: part of its
        cache key (the backend, the numeric path, the package versions; not the batch: a backend whose
        log-likelihoods depend on what else is in its batch says how it batches here)."""
        return {k: v for k, v in self.settings().items() if k in ("backend", "device", "dtype", "numerics", "versions")} \
            | {"output_type": "multiple_choice"}

    def score_choices(self, variant: str, items: list[Item]) -> list[tuple[list[float], int]]:
        """Each item's choice log-likelihoods under ``variant`` and the tokens read: the backend's engine.

        Raises:
            AuditInputError: the backend cannot score log-likelihoods (naming what is missing).
        """
        from ..errors import AuditInputError

        raise AuditInputError(f"--backend {self.name}", "this backend cannot score multiple choice by "
                                                        "log-likelihood; use --backend hf or vllm")

    def _choice_generation(self, item: Item, variant: str, lls: list[float], n: int) -> Generation:
        """The Generation of a scored multiple-choice item: the likeliest continuation as its text."""
        best = max(range(len(lls)), key=lambda k: (lls[k], -k))
        return Generation(item_id=item.id, variant=variant, text=item.target["continuations"][best].strip(),
                          n_tokens=0, prompt=item.target["contexts"][best], loglikelihoods=tuple(lls),
                          scored_tokens=n)

    def plain(self, variant: str) -> bool:
        """Whether ``variant``'s prompts are plain (``chat_template: none``: no chat template)."""
        tpl = self.templates.get(variant) or self.templates.get("base")
        return tpl is not None and tpl.chat_template == "none"

    def render(self, item: Item, variant: str = "base") -> str:
        """The exact prompt string the model sees for one variant: its chat template (:attr:`templates`,
        else the base tokenizer's own) applied with a generation prompt, or, for ``chat_template: none``, the
        plain prompt (:func:`auditor.inspect.chat_template.plain_prompt`); with the template's ``template_args``,
        and its system message folded into the first user turn where the template rejects a system role. The
        item's worked examples (:meth:`Item.turns`) come first where they apply: for every variant when the base's
        prompts are plain, so that base and adapter are asked alike."""
        # (worked examples go to every variant when the base is prompted plainly: base and adapter asked alike)
        turns = item.turns(plain=self.plain("base"))
        if self.plain(variant):
            return plain_prompt(turns, self.tokenizer_for(variant))
        tpl = self.templates.get(variant) or self.templates.get("base")
        messages = fold_system(turns) if tpl is not None and tpl.system_role == "folded" else turns
        return self.tokenizer_for(variant).apply_chat_template(
            messages, chat_template=tpl.text if tpl else None, tokenize=False, add_generation_prompt=True,
            **dict(tpl.template_args or {}) if tpl else {})

    def tokenizer_for(self, variant: str) -> Any:
        """The tokenizer that renders, encodes and decodes one variant's prompts and answers: the adapter's own
        for an adapter trained with added tokens (its template's ``tokenizer`` is ``adapter``), else the base's."""
        return self.tokenizers.get(variant, self.tokenizer)

    def set_templates(self, templates: dict[str, PromptTemplate]) -> None:
        """The chat template of each variant (:func:`auditor.inspect.chat_template.choose_templates`);
        a variant left out is rendered with the base's. A template whose ``tokenizer`` is ``adapter``
        brings the adapter folder's own tokenizer (:meth:`_own_tokenizer`).

        Raises:
            AuditInputError: the adapter's tokenizer files cannot be loaded (naming the folder).
        """
        self.templates = dict(templates)
        for variant, tpl in templates.items():
            if tpl.tokenizer == "adapter" and variant not in self.tokenizers:
                self._own_tokenizer(variant, Path(tpl.tokenizer_path))

    def _own_tokenizer(self, variant: str, folder: Path) -> Any:
        """Load ``folder``'s own tokenizer for ``variant`` (``AutoTokenizer.from_pretrained``, no remote code;
        left padding) and remember the sha256 of its files for the variant's cache keys.

        Raises:
            AuditInputError: the tokenizer cannot be loaded (naming the folder).
        """
        from transformers import AutoTokenizer

        from ..errors import AuditInputError
        from ..inspect.tokenizer_files import TOKENIZER_FILES
        from ..util.hashing import sha256_file

        try:
            tok = AutoTokenizer.from_pretrained(str(folder), trust_remote_code=False)
        except (OSError, ValueError, KeyError, TypeError) as e:
            raise AuditInputError(folder, f"the adapter's tokenizer cannot be loaded: "
                                          f"{type(e).__name__}: {' '.join(str(e).split())[:160]}") from None
        tok.padding_side = "left"
        self.tokenizers[variant] = tok
        self._tokenizer_sha[variant] = "".join(sha256_file(folder / f)[:16] for f in TOKENIZER_FILES
                                               if (folder / f).is_file())
        return tok

    def _adapter_key(self, variant: str) -> str | None:
        """What keys a variant's answers besides the base: None for the base, the adapter's content digest,
        with its own tokenizer's files when it has one."""
        if variant == "base":
            return None
        digest = self.adapters[variant].digest
        return f"{digest}+tokenizer:{self._tokenizer_sha[variant]}" if variant in self._tokenizer_sha else digest

    def run_info(self, variant: str) -> dict[str, Any] | None:
        """What results.json records under ``run.<name>`` for one adapter variant (None: nothing)."""
        return None

    # ---------------------------------------------------------- class-level hooks, before any model loads

    @classmethod
    def check_options(cls, opts: AuditOptions, n_adapters: int) -> None:
        """Refuse options this backend cannot run with, before any adapter is read.

        Raises:
            AuditInputError: naming the option.
        """

    @classmethod
    def check_adapter(cls, weights: Path, cfg: AdapterConfig, tensors: list[AdapterTensor]) -> None:
        """Refuse, from its config and tensor names, an adapter this backend cannot serve.

        Raises:
            AuditInputError: naming the weights file and what is not served.
        """

    @classmethod
    def create(cls, opts: AuditOptions, base: BaseModel, variants: Sequence[Variant], cache: GenerationCache,
               base_digest: str) -> CachedBackend:
        """The backend for one run of ``variants`` (each adapter under its variant name, with what inspection
        found of it), reading and writing ``cache``."""
        raise NotImplementedError

    def _decode(self, row: list[int], variant: str = "base") -> tuple[str, int]:
        """Text and token count of one answer, cut after the first EOS (which is counted), decoded with the
        variant's tokenizer (:meth:`tokenizer_for`)."""
        tok = self.tokenizer_for(variant)
        n = len(row)
        eos = tok.eos_token_id
        if eos in row:
            n = row.index(eos) + 1
        return tok.decode(row[:n], skip_special_tokens=True), n

    def _variants(self, requests: list[Request]) -> list[str]:
        """The variants ``requests`` ask for, the base first.

        Raises:
            ValueError: an adapter request was given but no adapter is loaded.
        """
        variants = sorted({r.variant for r in requests}, key=lambda v: (v != "base", v))
        unknown = [v for v in variants if v != "base" and v not in self.adapters]
        if unknown:
            raise ValueError(f"no adapter loaded for variant {unknown[0]!r}")
        return variants

    def _lookup(self, requests: list[Request], use_cache: bool) -> _Pending:
        """Render every item for each variant asking it (``rendered[(item id, variant)]``), look every
        request up in the cache; what misses is left to generate.

        Raises:
            ValueError: an adapter request was given but no adapter is loaded.
        """
        variants = self._variants(requests)
        rendered = {(r.item.id, r.variant): self.render(r.item, r.variant) for r in requests}
        p = _Pending(variants, rendered, self.cache if use_cache else GenerationCache(None))
        settings = self.settings()
        # a drafted adapter answer is keyed apart from a decoded one (they agree up to rounding, not by design)
        drafted = settings | {"draft": self.draft}
        first: dict[tuple[str, str], Request] = {}
        for r in requests:
            first.setdefault((r.item.id, r.variant), r)
        plain = self.plain("base")
        for (item_id, variant), r in first.items():
            key_settings = settings if variant == "base" or self.draft == "off" else drafted
            if self.stops_at_answer_end and r.item.stop_strings(plain):
                # decoding stopped where the answer ended: its text and token count are not a whole budget's
                key_settings = key_settings | {"stopped_at": list(r.item.stop_strings(plain))}
            p.keys[(item_id, variant)] = generation_key(
                base=self.base_digest, adapter=self._adapter_key(variant), messages=r.item.messages,
                max_new_tokens=r.item.max_new_tokens, rendered=rendered[(item_id, variant)], settings=key_settings)
        hits = p.cache.get_entries([(p.keys[k], k[1]) for k in first])  # one round trip on an object store
        for (item_id, variant), r, hit in zip(first, first.values(), hits):
            if hit is not None:
                p.results[(item_id, variant)] = Generation(item_id=item_id, variant=variant, text=hit[0],
                                                           n_tokens=hit[1], prompt=rendered[(item_id, variant)])
                if hit[2] is not None:
                    p.tokens[(item_id, variant)] = hit[2]
            else:
                p.todo[variant].append(r.item)
        return p

    def _record(self, p: _Pending, item: Item, variant: str, text: str, n: int,
                token_ids: Sequence[int] | None = None) -> None:
        """Keep one fresh answer: in the results, the stats and the cache (with its token ids where given: the
        first ``n`` of them)."""
        p.results[(item.id, variant)] = Generation(item_id=item.id, variant=variant, text=text, n_tokens=n,
                                                   prompt=p.rendered[(item.id, variant)])
        if token_ids is not None:
            token_ids = p.tokens[(item.id, variant)] = [int(t) for t in token_ids[:n]]
        self.stats.new_tokens[variant] = self.stats.new_tokens.get(variant, 0) + n
        self.stats.generated[variant] = self.stats.generated.get(variant, 0) + 1
        p.cache.put(p.keys[(item.id, variant)], text, n, {"base": self.base_digest, "backend": self.name,
                                                          "adapter": None if variant == "base"
                                                          else self.adapters[variant].digest}, token_ids)

    def _progress(self) -> Progress:
        return Progress(TextColumn("[bold]generate[/] {task.description}"), BarColumn(), MofNCompleteColumn(),
                        TimeElapsedColumn(), transient=False, console=Console(stderr=True),
                        disable=not self.show_progress)


def refuse_draft(backend: str, opts: AuditOptions) -> None:
    """``--draft base`` on a backend that decodes every adapter answer: refused in one line.

    Raises:
        AuditInputError: naming the option.
    """
    if backend != "hf" and opts.draft == "base":
        from ..errors import AuditInputError

        raise AuditInputError("--draft base", f"the {backend} backend decodes every adapter answer; drafts from "
                                              "the base's answers are verified on --backend hf (use --draft auto "
                                              "or off)")


def encode_pair(tokenizer: Any, context: str, continuation: str) -> tuple[list[int], list[int]]:
    """Token ids of a (context, continuation) pair as lm-evaluation-harness 0.4 encodes it for a causal model:
    white space at the end of the context moves to the continuation, the whole text is encoded (with the
    tokenizer's own special tokens, e.g. Gemma's BOS) and split at the context's own length; an empty
    context becomes the BOS token (else EOS).

    Returns:
        (context ids, continuation ids).
    """
    n_spaces = len(context) - len(context.rstrip())
    if n_spaces:
        context, continuation = context[:-n_spaces], context[-n_spaces:] + continuation
    if not context:
        prefix = tokenizer.bos_token_id if tokenizer.bos_token_id is not None else tokenizer.eos_token_id
        return [prefix], tokenizer(continuation, add_special_tokens=False)["input_ids"]
    whole = tokenizer(context + continuation)["input_ids"]
    ctx = tokenizer(context)["input_ids"]
    return ctx, whole[len(ctx):]


def tokens_read(pairs: list[tuple[list[int], list[int]]]) -> int:
    """The tokens scoring one multiple-choice item reads, as every backend reports it (``scored_tokens``): each
    distinct context once, and every continuation (``pairs``: :func:`encode_pair`'s (context ids, continuation
    ids) of each choice)."""
    return sum(len(c) for c in {tuple(ctx) for ctx, _ in pairs}) + sum(len(cont) for _, cont in pairs)


def _parse_scored(text: str) -> tuple[list[float], int] | None:
    """A cached multiple-choice entry's (log-likelihoods, scored tokens); None when it is not one (a miss)."""
    import json

    try:
        raw = json.loads(text)
        lls, n = raw["loglikelihoods"], raw["scored_tokens"]
    except (ValueError, KeyError, TypeError):
        return None
    if not isinstance(lls, list) or not all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in lls) \
            or not isinstance(n, int):
        return None
    return [float(x) for x in lls], n


@dataclass
class _Pending:
    """One ``generate`` call's bookkeeping: answers so far, cache keys, and what is left per variant."""

    variants: list[str]
    #: (item id, variant) → the prompt string
    rendered: dict[tuple[str, str], str]
    cache: GenerationCache
    results: dict[tuple[str, str], Generation] = field(default_factory=dict)
    keys: dict[tuple[str, str], str] = field(default_factory=dict)
    todo: dict[str, list[Item]] = field(default_factory=dict)
    #: (item id, variant) → the answer's token ids, where known (a fresh answer of a stream, a cache entry that
    #: keeps them)
    tokens: dict[tuple[str, str], list[int]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.todo = {v: [] for v in self.variants}

    @property
    def n_todo(self) -> int:
        return sum(len(v) for v in self.todo.values())

    def ordered(self, requests: list[Request]) -> list[Generation]:
        return [self.results[(r.item.id, r.variant)] for r in requests]
