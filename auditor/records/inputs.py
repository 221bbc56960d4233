"""Records of the inputs: the adapter config, the base model, the adapter as inspection finds it."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

#: option letters of multiple-choice items (up to ten options)
LETTERS = "ABCDEFGHIJ"


@dataclass(frozen=True, kw_only=True)
class AdapterConfig:
    """``adapter_config.json``, parsed once at the edge (after its schema check) and handed
    to every later stage (inspection, the vLLM compatibility check, the backends, the report)
    as this record, never as the raw mapping (after vLLM's ``PEFTHelper``).

    Attributes:
        path: the config file.
        peft_type: ``LORA`` (the only type audited).
        r: the LoRA rank; ``rank_pattern`` may give modules another one (:meth:`expected_rank`).
        lora_alpha: the scaling numerator (scale = alpha / r, or alpha / √r with ``use_rslora``);
            ``r`` when the config has none.
        target_modules: a list of module names, a regex string, or ``"all-linear"``.
        base_model_name_or_path: the declared base ("" when none).
        use_dora, use_rslora, bias, lora_bias, task_type, modules_to_save, rank_pattern,
        alpha_pattern, fan_in_fan_out: as PEFT's ``LoraConfig`` names them (``fan_in_fan_out``: the base
            layers store their weight ``[in, out]``, transformers' ``Conv1D`` in GPT-2).
    """

    path: str
    peft_type: str
    r: int
    lora_alpha: float
    target_modules: str | tuple[str, ...]
    base_model_name_or_path: str = ""
    use_dora: bool = False
    use_rslora: bool = False
    bias: str | None = "none"
    lora_bias: bool = False
    task_type: str | None = None
    modules_to_save: tuple[str, ...] = ()
    rank_pattern: Mapping[str, int] = field(default_factory=dict)
    alpha_pattern: Mapping[str, float] = field(default_factory=dict)
    fan_in_fan_out: bool = False
    #: PEFT's ``trainable_token_indices``: module name → token ids whose embedding rows are trained
    #: (a plain list in the config means ``embed_tokens``)
    trainable_token_indices: Mapping[str, tuple[int, ...]] = field(default_factory=dict)

    @classmethod
    def from_dict(cls, cfg: dict[str, Any], path: str | Path) -> AdapterConfig:
        """The record of a config mapping that passed ``LORA_CONFIG_SCHEMA`` (auditor.inspect.peft_config)."""
        targets = cfg["target_modules"]
        return cls(
            path=str(path), peft_type=str(cfg["peft_type"]), r=int(cfg["r"]),
            lora_alpha=float(cfg.get("lora_alpha", cfg["r"])),
            target_modules=targets if isinstance(targets, str) else tuple(targets),
            base_model_name_or_path=str(cfg.get("base_model_name_or_path") or ""),
            use_dora=bool(cfg.get("use_dora")), use_rslora=bool(cfg.get("use_rslora")),
            fan_in_fan_out=bool(cfg.get("fan_in_fan_out")),
            bias=cfg.get("bias", "none"), lora_bias=bool(cfg.get("lora_bias")), task_type=cfg.get("task_type"),
            modules_to_save=tuple(map(str, cfg.get("modules_to_save") or ())),
            rank_pattern=dict(cfg.get("rank_pattern") or {}), alpha_pattern=dict(cfg.get("alpha_pattern") or {}),
            trainable_token_indices=_token_indices(cfg.get("trainable_token_indices")),
        )

    @property
    def target_list(self) -> list[str]:
        """``target_modules`` as a list (a regex or ``all-linear`` is one entry)."""
        return [self.target_modules] if isinstance(self.target_modules, str) else list(self.target_modules)

    def targets(self, name: str) -> bool:
        """Whether PEFT adapts module ``name`` (a dotted module path of the base)."""
        t = self.target_modules
        if t == "all-linear":
            return not name.endswith("lm_head")
        if isinstance(t, str):
            return re.fullmatch(t, name) is not None
        return any(name == x or name.endswith("." + x) for x in t)

    def expected_rank(self, name: str) -> int:
        """Rank PEFT gives module ``name``: the first matching ``rank_pattern`` key, else ``r``."""
        key = _pattern_key(self.rank_pattern, name)
        return self.r if key is None else int(self.rank_pattern[key])

    def alpha_of(self, name: str) -> float:
        """``lora_alpha`` PEFT gives module ``name``: the first matching ``alpha_pattern`` key, else
        ``lora_alpha``."""
        key = _pattern_key(self.alpha_pattern, name)
        return self.lora_alpha if key is None else float(self.alpha_pattern[key])

    def scaling(self, name: str, rank: int | None = None) -> float:
        """PEFT's LoRA scale of module ``name``: alpha / rank, or alpha / √rank with ``use_rslora``
        (Kalajdzievski 2023); ``rank`` defaults to :meth:`expected_rank`."""
        r = self.expected_rank(name) if rank is None else rank
        alpha = self.alpha_of(name)
        return alpha / math.sqrt(r) if self.use_rslora else alpha / r


def _pattern_key(patterns: Mapping[str, Any], name: str) -> str | None:
    """The first key of a PEFT ``rank_pattern`` / ``alpha_pattern`` that names module ``name``, as PEFT
    matches them (the key as a regex on the module path's tail: ``(.*\\.)?(key)$``), or None."""
    for key in patterns:
        if re.match(rf"(.*\.)?({key})$", name):
            return key
    return None


@dataclass(frozen=True, kw_only=True)
class BaseModel:
    """A base model ready to load with ``from_pretrained``.

    Attributes:
        name: the name shown in reports (hub id of the original model, or the
            folder path given by the user).
        path: local folder with ``config.json``, safetensors weights and a
            tokenizer with a chat template.
        source: where it came from (``"embedded:<gguf file>"``, ``"local"`` or ``"hub:<id>@<rev>"``).
        content_hash: sha256 (hex) identifying the weights' origin: of the
            GGUF file for the embedded default, over every file's content for
            a local folder (:func:`auditor.util.hashing.folder_digest`).
        hub: for a hub id: repo_id, the revision asked for and the resolved commit.
        reason: why this base was audited: ``--base X`` (given), ``declared: ...`` (the base the
            adapters declare, without ``--base``), ``--base declared: ...`` or ``default: ...`` (the
            embedded default: none declared, or the declared one cannot be had;
            :func:`auditor.inspect.declared_base.choose_base`); "" where nothing chose it (a caller of
            :func:`~auditor.inspect.base_model.resolve_base`).
    """

    name: str
    path: Path
    source: str
    content_hash: str
    hub: Mapping[str, Any] | None = None
    reason: str = ""


@dataclass(frozen=True, kw_only=True)
class AdapterTensor:
    """One tensor from the adapter's safetensors header (no data loaded)."""

    name: str
    shape: tuple[int, ...]
    dtype: str


#: the intruder-dimension check's settings (:mod:`auditor.inspect.weight_space`; Shuttleworth et al. 2024)
INTRUDER_TOP_K = 10
INTRUDER_EPSILON = 0.5
#: the base weight elements whose intruder dimensions one adapter's pre-screen decomposes at most: every module of
#: a small base (SmolLM2-135M: 13M elements adapted on q/v), an even sample of a large one's (Llama-3-8B: 671M on
#: q/v, 7.0B on every linear projection), so that the pre-screen stays in seconds
INTRUDER_BUDGET = 2**28


@dataclass(frozen=True, kw_only=True)
class ModuleWeightSpace:
    """One adapted module: ``relative_norm`` (fraction), ``effective_rank`` (1..rank), ``intruders``
    (count among the top ``TOP_K`` singular directions; None: not in the intruder check's sample)."""

    module: str
    rank: int
    scale: float
    relative_norm: float
    effective_rank: float
    intruders: int | None


@dataclass(frozen=True, kw_only=True)
class WeightSpace:
    """The pre-screen of one adapter (see the module doc).

    Attributes:
        modules: per adapted module, in name order.
        relative_norm_mean, relative_norm_max: over the modules (fractions).
        effective_rank_mean: over the modules.
        intruders_total: intruder dimensions over the modules checked; ``intruders_per_module`` their mean.
        intruders_checked: the modules the intruder check decomposed: all of them, or an even sample of a
            large base's (:data:`INTRUDER_BUDGET`).
        top_k, epsilon: the intruder check's settings.
        skipped: modules not summarised (embeddings, DoRA magnitudes) and why.
    """

    modules: tuple[ModuleWeightSpace, ...] = ()
    relative_norm_mean: float = 0.0
    relative_norm_max: float = 0.0
    effective_rank_mean: float = 0.0
    intruders_total: int = 0
    intruders_per_module: float = 0.0
    intruders_checked: int = 0
    top_k: int = INTRUDER_TOP_K
    epsilon: float = INTRUDER_EPSILON
    skipped: tuple[str, ...] = ()


#: ``TokenizerFiles.chat_template``: ``none`` (the adapter ships no template), ``identical`` (the same text as
#: the base's, surrounding whitespace aside), ``differs``, ``invalid`` (not a template Jinja can compile)
TEMPLATE_STATUSES = ("none", "identical", "differs", "invalid")
#: ``TokenizerFiles.vocabulary``: ``none`` (no vocabulary or added tokens shipped), ``identical`` (every token the
#: adapter's files name has the base's id), ``differs``
VOCABULARY_STATUSES = ("none", "identical", "differs")


@dataclass(frozen=True, kw_only=True)
class TokenizerFiles:
    """The tokenizer files an adapter folder ships, compared with the base's tokenizer
    (:mod:`auditor.inspect.tokenizer_files`; results.json ``adapter.tokenizer_files``).

    Attributes:
        files: the tokenizer files present (``tokenizer_config.json``, ``tokenizer.json``,
            ``special_tokens_map.json``, ``chat_template.jinja``, ...), in name order.
        chat_template: :data:`TEMPLATE_STATUSES`.
        template_file: the file the adapter's template was read from (as transformers reads it:
            ``chat_template.jinja``, else ``chat_template.json``, else ``tokenizer_config.json``), or None.
        template_sha256, base_template_sha256: sha256 (hex) of the adapter's and the base's template text.
        template_error: why an ``invalid`` template does not compile ("" otherwise).
        vocabulary: :data:`VOCABULARY_STATUSES`.
        vocab_size, base_vocab_size: tokens (added tokens included) of the adapter's tokenizer (counted from
            ``tokenizer.json`` / ``vocab.json``, else the ``vocab_size`` its config declares; None when neither)
            and of the base's.
        added_tokens: added tokens the adapter's files list (``added_tokens_decoder``, ``added_tokens.json``,
            ``tokenizer.json``'s ``added_tokens``).
        new_tokens: tokens of the adapter's files that the base lacks or holds at another id (``"<tok>"`` or
            ``"<tok>@<id>"``), at most 20.
        special_tokens: special tokens (bos, eos, pad, unk) the adapter names differently: name → [adapter's, base's].
        template_text: the adapter's template itself (not written to results.json).
    """

    files: tuple[str, ...] = ()
    chat_template: str = "none"
    template_file: str | None = None
    template_sha256: str | None = None
    base_template_sha256: str | None = None
    template_error: str = ""
    vocabulary: str = "none"
    vocab_size: int | None = None
    base_vocab_size: int = 0
    added_tokens: int = 0
    new_tokens: tuple[str, ...] = ()
    special_tokens: Mapping[str, tuple[str | None, ...]] = field(default_factory=dict)
    template_text: str | None = field(default=None, repr=False, compare=False, metadata={"plain": False})


def _token_indices(value: Any) -> dict[str, tuple[int, ...]]:
    """``trainable_token_indices`` as PEFT reads it: a list means ``embed_tokens``'s ids."""
    if isinstance(value, list):
        return {"embed_tokens": tuple(int(i) for i in value)}
    if isinstance(value, dict):
        return {str(k): tuple(int(i) for i in v) for k, v in value.items()}
    return {}


@dataclass(frozen=True, kw_only=True)
class VocabResize:
    """An adapter trained after tokens were added to its tokenizer: the embeddings were resized and the
    rows saved with the adapter (``modules_to_save`` copies of ``embed_tokens`` / ``lm_head``, or
    ``trainable_token_indices`` deltas) (results.json ``adapter.vocab_resize``).

    The hf backend runs the adapter variant with the base's embeddings resized to ``size`` rows
    (``resize_token_embeddings``) and the saved rows loaded by PEFT, its prompts encoded with the
    adapter's tokenizer; the base variant keeps the base's rows and tokenizer.

    Attributes:
        base_size: rows of the base's embeddings (tokens).
        size: rows of the adapter's saved embeddings, equal to its tokenizer's length (tokens).
        added: the tokens at ids ``base_size`` and above, in id order (at most 20 listed).
        n_added: how many tokens the adapter's tokenizer adds (``size - base_size``).
        how: ``modules_to_save`` or ``trainable_token_indices``.
        modules: the base modules whose rows the adapter saves (``model.embed_tokens``, ``lm_head``).
        tokenizer_file: the adapter's file that holds its vocabulary (``tokenizer.json``, ...).
    """

    base_size: int
    size: int
    added: tuple[str, ...] = ()
    n_added: int = 0
    how: str = "modules_to_save"
    modules: tuple[str, ...] = ()
    tokenizer_file: str = ""


@dataclass(frozen=True, kw_only=True)
class PromptTemplate:
    """The chat template and tokenizer that render one variant's prompts (results.json ``run.prompts.<variant>``).

    Attributes:
        chat_template: ``base`` (the base's own), ``adapter`` (the one the adapter ships), ``none`` (plain
            prompts: :func:`auditor.inspect.chat_template.plain_prompt`) or ``file:<path>`` (``--chat-template FILE``).
        template_file: the file the template was read from (empty for ``none``).
        template_sha256: sha256 (hex) of the template text.
        tokenizer: the vocabulary that encodes the prompt: ``base`` (the base's tokenizer), or ``adapter``
            (the adapter's own, for an adapter whose vocabulary was resized: :class:`VocabResize`).
        tokenizer_path: the folder that tokenizer was loaded from.
        text: the template (not written to results.json).
        template_args: keyword arguments the template is rendered with (``--chat-template-arg``, e.g.
            Qwen3's ``enable_thinking: false``), as ``apply_chat_template(**template_args)`` takes them;
            None (omitted) when none were given.
        system_role: ``folded`` when the template rejects a system role (it raises on one, as Mistral's
            older templates do) and each item's system message is put before its first user message
            (a blank line between), as Gemma's template does itself; None (omitted) when the template
            takes a system role or has none to take.
    """

    chat_template: str
    template_file: str
    template_sha256: str
    tokenizer: str = "base"
    tokenizer_path: str = ""
    text: str = field(default="", repr=False, compare=False, metadata={"plain": False})
    template_args: Mapping[str, str | int | float | bool] | None = field(default=None, metadata={"omit_none": True})
    system_role: str | None = field(default=None, metadata={"omit_none": True})


#: ``AdapterRecord.declared_base_status``: ``match`` (the declared base names the audited one),
#: ``none`` (no base_model_name_or_path), ``local_folder`` (a folder on the training machine whose
#: name matches), ``unknown`` (the audited base folder records no name), ``mismatch`` (another model)
DECLARED_BASE_STATUSES = ("match", "none", "local_folder", "unknown", "mismatch")


@dataclass(frozen=True, kw_only=True)
class AdapterRecord:
    """One adapter, as inspection finds it without loading a model, and as results.json's ``adapter`` (and
    ``baseline.adapter``) block records it: the one record of an adapter from inspection to the report. Its
    fields, in order, are that block's keys (``config`` and ``declared_base_note`` are not written).

    Attributes:
        path: the adapter folder.
        weights_file: the ``adapter_model.safetensors`` file.
        sha256: hex sha256 of the weights file.
        peft_type, r, lora_alpha, target_modules: from ``adapter_config.json``.
        ranks: real rank per adapted module, from the lora_A tensor shapes.
        n_tensors, size_bytes: of the weights file.
        declared_base: ``base_model_name_or_path`` from the config ("" if none).
        nominal_label: from the model card front matter (``nominal_label:``), or None.
        matched_modules: number of adapted modules found in the base.
        no_effect: in every module ``lora_A`` or ``lora_B`` is all zero (and there
            are no DoRA magnitudes or full module copies), so the adapter cannot
            change the model.
        warnings: non-fatal findings carried into the report: inspection's, then (in results.json) what the
            run found about it after inspection (its chat template, the engine's setup).
        dora: the weights hold DoRA magnitudes (``lora_magnitude_vector``); decided
            by the tensors, not by ``use_dora`` in the config.
        max_rank: the largest real rank (``r`` when no module has one).
        content_sha256: content digest of its weights and config (:func:`auditor.util.hashing.adapter_digest`):
            what keys its cached answers and tells two adapters apart.
        hub: the resolved hub revision of an adapter given as a hub id, or None.
        declared_base_status: how ``base_model_name_or_path`` compares with the audited base
            (:data:`DECLARED_BASE_STATUSES`; None in results written before it was recorded); the judge's
            ``declared base matches`` rule acts on ``mismatch``.
        weight_space: the weight-space pre-screen (:mod:`auditor.inspect.weight_space`), or None.
        tokenizer_files: the tokenizer files the folder ships against the base's (:class:`TokenizerFiles`).
        vocab_resize: the resized vocabulary the adapter was trained with (:class:`VocabResize`), or None.
        declared_base_note: the warning that goes with the status ("" for ``match``). Not written.
        config: the parsed ``adapter_config.json``. Not written.
    """

    path: str = ""
    weights_file: str = ""
    sha256: str = ""
    peft_type: str = "LORA"
    r: int = 0
    lora_alpha: float = 0.0
    target_modules: tuple[str, ...] = ()
    ranks: Mapping[str, int] = field(default_factory=dict)
    n_tensors: int = 0
    size_bytes: int = 0
    declared_base: str = ""
    nominal_label: str | None = None
    matched_modules: int = 0
    no_effect: bool = False
    warnings: tuple[str, ...] = ()
    dora: bool = False
    max_rank: int = 0
    content_sha256: str | None = field(default=None, metadata={"omit_none": True})
    hub: Mapping[str, Any] | None = None
    declared_base_status: str | None = field(default=None, metadata={"omit_none": True})
    weight_space: WeightSpace | None = None
    tokenizer_files: TokenizerFiles | None = None
    vocab_resize: VocabResize | None = None
    declared_base_note: str = field(default="", compare=False, metadata={"plain": False})
    config: AdapterConfig | None = field(default=None, repr=False, compare=False, metadata={"plain": False})

    def with_warnings(self, more: tuple[str, ...]) -> AdapterRecord:
        """This record with ``more`` warnings after its own (what the run found about the adapter)."""
        return replace(self, warnings=(*self.warnings, *more))
