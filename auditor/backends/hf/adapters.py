"""What the hf backend needs around peft: the adapter folder PEFT should load (the tensors decide DoRA) and
the vocabulary of a resized model's base rows."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ...errors import AuditInputError
from ...records import AdapterConfig, VocabResize


def holds_dora(folder: Path) -> bool:
    """Whether the adapter's weights hold DoRA magnitudes (header only; see :mod:`auditor.inspect.tensors`):
    for a variant inspection did not see (:meth:`auditor.records.Variant.of_folder`)."""
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
