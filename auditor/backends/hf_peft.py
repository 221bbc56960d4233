"""What the hf backend needs around peft: the adapter folder PEFT should load (the tensors decide DoRA),
the hooks a refused mixed batch leaves behind, the vocabulary of a resized model's base rows, and the
per-token masks that let the base and its adapters share one continuous-batching stream."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from ..errors import AuditInputError
from ..records import AdapterConfig, VocabResize


def drop_adapter_names_hooks(model: Any) -> None:
    """Remove the pre-forward hooks that peft's ``generate(adapter_names=...)`` left on
    the LoRA layers: peft removes them after a normal return only (no ``finally``
    in ``LoraModel._enable_peft_forward_hooks``), so after a refused mixed batch
    every later call would still get the stale ``adapter_names``."""
    for m in model.modules():
        for hook_id, hook in list(m._forward_pre_hooks.items()):
            if getattr(getattr(hook, "func", None), "__name__", "") == "_adapter_names_pre_forward_hook":
                del m._forward_pre_hooks[hook_id]
                m._forward_pre_hooks_with_kwargs.pop(hook_id, None)


def holds_dora(folder: Path) -> bool:
    """Whether the adapter's weights hold DoRA magnitudes (header only; see :mod:`auditor.inspect.tensors`):
    for a backend built without the inspection's answer (``HFBackend(inspected=None)``)."""
    from peft.utils import SAFETENSORS_WEIGHTS_NAME as WEIGHTS_NAME  # the file auditor.inspect.paths.WEIGHTS_NAME names
    from safetensors import safe_open

    with safe_open(str(folder / WEIGHTS_NAME), framework="pt") as f:
        return any("lora_magnitude_vector" in k for k in f.keys())


def as_the_tensors_say(folder: Path, dora: bool, scratch: Path, config: AdapterConfig | None = None) -> Path:
    """The adapter folder PEFT should load: ``folder`` itself, or, when ``use_dora`` in
    its config disagrees with the weights (``dora``: they hold DoRA magnitudes;
    the tensors decide), ``scratch`` holding a corrected copy of the config and a
    link to the weights. ``config``: the inspection's parsed config (the file is then read only to
    copy it, when it disagrees)."""
    from peft.utils import CONFIG_NAME
    from peft.utils import SAFETENSORS_WEIGHTS_NAME as WEIGHTS_NAME

    if config is not None and config.use_dora == dora:
        return folder
    cfg = json.loads((folder / CONFIG_NAME).read_text(encoding="utf-8"))
    if bool(cfg.get("use_dora")) == dora:
        return folder
    scratch.mkdir(parents=True)
    (scratch / CONFIG_NAME).write_text(json.dumps(cfg | {"use_dora": dora}), encoding="utf-8")
    (scratch / WEIGHTS_NAME).symlink_to((folder / WEIGHTS_NAME).resolve())
    return scratch


def base_vocabulary_only(rows: list[int], base_size: int) -> Any:
    """A transformers ``LogitsProcessor`` that gives the tokens at ids ``base_size`` and above a score of
    -inf in the batch rows ``rows`` (the variants run on the base's vocabulary, in a model whose
    embeddings were resized for an adapter's added tokens), so their greedy answers are the base's."""
    import torch
    from transformers import LogitsProcessor

    class BaseVocabularyOnly(LogitsProcessor):
        def __call__(self, input_ids: Any, scores: Any) -> Any:
            scores[torch.tensor(rows, device=scores.device), base_size:] = -float("inf")
            return scores

    return BaseVocabularyOnly()


def shared_vocab_resize(resized: dict[str, VocabResize]) -> VocabResize | None:
    """The one resized vocabulary the adapters of a run need (variant → its :class:`VocabResize`), or None.

    Raises:
        AuditInputError: two adapters need vocabularies of different sizes (one model cannot hold both).
    """
    sizes = {r.size for r in resized.values()}
    if len(sizes) > 1:
        raise AuditInputError("--backend hf", f"the adapters were trained with vocabularies of {sorted(sizes)} tokens; "
                                              "one model's embeddings can be resized to one of them only: audit them "
                                              "in separate runs")
    return next(iter(resized.values()), None)


def stream_mix_refusal(model: Any) -> str | None:
    """Why the adapters of a ``PeftModel`` cannot share one continuous-batching stream with the base
    (:func:`token_masked_adapters`), or None where they can: every LoRA layer a plain ``lora.Linear``
    (no DoRA or other variant, no embedding or convolution LoRA) and no ``modules_to_save`` or trainable
    tokens (whole modules an adapter replaces, which no per-token mask can switch)."""
    from peft.tuners.lora import LoraLayer
    from peft.tuners.lora.layer import Linear
    from peft.utils.other import AuxiliaryTrainingWrapper

    for name, module in model.named_modules():
        if isinstance(module, AuxiliaryTrainingWrapper):
            return f"{name}: {type(module).__name__} (modules_to_save or trainable tokens)"
        if isinstance(module, LoraLayer):
            if type(module) is not Linear:
                return f"{name}: a {type(module).__name__} LoRA layer"
            if module.lora_variant:
                return f"{name}: a LoRA variant ({', '.join(type(v).__name__ for v in module.lora_variant.values())})"
    return None


@contextlib.contextmanager
def token_masked_adapters(model: Any, names: Sequence[str]) -> Iterator[dict[str, Any]]:
    """Within the block every adapter in ``names`` is active at once and each LoRA layer's update of
    adapter ``a`` (the ``lora_B`` output, before peft scales it: ``B(A(x)) · alpha/r``) is multiplied by
    ``masks[a]``, a ``[1, tokens, 1]`` tensor of 1 (the token belongs to a request of adapter ``a``)
    and 0 (another adapter's, or the base's), which the caller sets before each forward. A token of
    the base gets no update at all, one of ``a`` exactly ``a``'s: one packed forward computes the base
    and every adapter, which peft's own mixed batches (``adapter_names``, per batch row) cannot do
    when continuous batching packs every request into one row. Only for models
    :func:`stream_mix_refusal` accepts; the active adapters and the hooks are restored on the way out.

    Yields:
        ``masks``: adapter name → its mask (empty until the caller fills it).
    """
    from peft.tuners.lora.layer import Linear

    masks: dict[str, Any] = {}
    before = list(model.active_adapters)
    hooks = []

    def masked(name: str) -> Callable[[Any, Any, Any], Any]:
        return lambda _module, _inputs, output: output * masks[name]

    try:
        model.base_model.set_adapter(list(names), inference_mode=True)
        for module in model.modules():
            if isinstance(module, Linear):
                hooks += [module.lora_B[n].register_forward_hook(masked(n)) for n in names if n in module.lora_B]
        yield masks
    finally:
        for h in hooks:
            h.remove()
        model.base_model.set_adapter(before, inference_mode=True)
