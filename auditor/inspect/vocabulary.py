"""Adapters trained after tokens were added: the embeddings' rows they save, against the base's and
against the adapter's own tokenizer.

A fine-tune that adds tokens (a pad token, chat tokens) resizes the embeddings
(``model.resize_token_embeddings(len(tokenizer))``) and PEFT saves the rows with the adapter, in
one of two shapes:

* ``modules_to_save=["embed_tokens", "lm_head"]``: full copies, ``<module>.modules_to_save.weight``
  (``(rows, hidden)``), and, when PEFT saw the vocabulary resized, the resized base rows too
  (``<module>.original_module.weight``, ``<module>.weight``);
* ``trainable_token_indices``: ``<module>.token_adapter.trainable_tokens_delta`` (``(len(ids), hidden)``)
  and, resized, the base rows (``<module>.token_adapter.base_layer.weight``).

Every such tensor must have the base's hidden size; all of them one row count, which is the
vocabulary the adapter needs: when it differs from the base's, the adapter's tokenizer (its
folder's ``tokenizer.json``, ...) must have exactly that many tokens.
"""

from __future__ import annotations

import re
from pathlib import Path

from ..errors import AuditInputError
from ..records import AdapterConfig, AdapterTensor, TokenizerFiles, VocabResize

PEFT_PREFIX = "base_model.model."
#: the wrappers PEFT saves around a module's own weight (``modules_to_save``, trainable tokens, LoRA's base layer)
_WRAPPERS = re.compile(r"\.(?:modules_to_save(?:\.[^.]+)?|original_module|token_adapter\.base_layer|base_layer)$")
TOKENS_RE = re.compile(r"^(?P<module>.+)\.token_adapter\.trainable_tokens_delta(?:\.[^.]+)?$")
_LISTED = 20


def module_of(stem: str) -> str:
    """The module a full-weight tensor belongs to: ``base_model.model.lm_head.modules_to_save`` →
    ``base_model.model.lm_head`` (the tensor name without ``.weight``)."""
    return _WRAPPERS.sub("", stem)


def token_ids(cfg: AdapterConfig, name: str) -> tuple[int, ...] | None:
    """The ``trainable_token_indices`` of module ``name`` (matched by its last parts, as PEFT matches
    them); an output head tied to the input embeddings shares ``embed_tokens``'s."""
    for key, ids in cfg.trainable_token_indices.items():
        if name == key or name.endswith("." + key):
            return ids
    if name.rsplit(".", 1)[-1] in ("lm_head", "embed_out"):
        return token_ids(cfg, "embed_tokens")
    return None


def vocab_rows(weights: Path, cfg: AdapterConfig, copies: dict[str, AdapterTensor],
               tokens: dict[str, AdapterTensor], weight_shapes: dict[str, tuple[int, ...]], base_name: str
               ) -> int | None:
    """The row count of the vocabulary-sized tensors (``copies``: tensor stem → tensor of an
    embedding or output head; ``tokens``: module → its trainable-tokens delta), or None when there
    are none.

    Raises:
        AuditInputError: a tensor of another hidden size than the base's, copies of different row
            counts, a delta whose row count is not its number of ``trainable_token_indices``, or an
            index beyond the vocabulary (naming the tensor).
    """
    rows: dict[int, str] = {}
    for stem, t in sorted(copies.items()):
        name = module_of(stem)[len(PEFT_PREFIX):]
        want = weight_shapes[name]
        if len(t.shape) != 2 or len(want) != 2 or t.shape[1] != want[1]:
            raise AuditInputError(weights, f"{t.name} has shape {list(t.shape)} but the base's {name}.weight has "
                                           f"{list(want)} (rows: tokens, columns: the hidden size)")
        rows.setdefault(int(t.shape[0]), t.name)
    if len(rows) > 1:
        (a, na), (b, nb) = sorted(rows.items())[:2]
        raise AuditInputError(weights, f"{na} has {a:,} rows but {nb} has {b:,}: the embeddings an adapter saves "
                                       "must all have one vocabulary size")
    size = next(iter(rows), None)
    for module, t in sorted(tokens.items()):
        name = module[len(PEFT_PREFIX):]
        ids = token_ids(cfg, name)
        hidden = weight_shapes[name][1]
        if ids is None:
            raise AuditInputError(weights, f"{t.name} holds trainable token rows but adapter_config.json's "
                                           f"trainable_token_indices names no ids for {name}")
        if tuple(t.shape) != (len(ids), hidden):
            raise AuditInputError(weights, f"{t.name} has shape {list(t.shape)} but trainable_token_indices names "
                                           f"{len(ids)} ids of {hidden} values each for {name}")
        limit = size if size is not None else weight_shapes[name][0]
        if max(ids, default=-1) >= limit:
            raise AuditInputError(weights, f"trainable_token_indices names id {max(ids)} for {name}, beyond its "
                                           f"vocabulary of {limit:,} tokens")
    return size


def vocab_resize(folder: Path, weights: Path, size: int, base_size: int, tok: TokenizerFiles,
                 added: dict[str, int], how: str, modules: list[str]) -> VocabResize:
    """The resized vocabulary of an adapter whose saved rows (``size``) are not the base's (``base_size``),
    checked against its tokenizer files (``tok``; ``added``: token → id of the tokens they add).

    Raises:
        AuditInputError: the folder ships no vocabulary, or its tokenizer has another length than the
            saved rows (naming the tokenizer file, both counts and what to fix).
    """
    file = next((f for f in ("tokenizer.json", "vocab.json", "tokenizer.model", "added_tokens.json",
                             "tokenizer_config.json") if f in tok.files), None)
    if file is None or tok.vocab_size is None:
        raise AuditInputError(weights if file is None else folder / file,
                              f"the adapter saves {size:,} embedding rows (the base has {base_size:,}: it was trained "
                              "with added tokens) but its folder ships no tokenizer that says which tokens they "
                              "are; save the tokenizer with the adapter (tokenizer.save_pretrained)")
    if tok.vocab_size != size:
        shorter = "shorter" if tok.vocab_size < size else "longer"
        raise AuditInputError(folder / file, f"the adapter's tokenizer has {tok.vocab_size:,} tokens, {shorter} than "
                                             f"the {size:,} embedding rows saved in {weights.name}; PEFT loads the adapter on "
                                             "embeddings resized to the tokenizer's length, so they must be equal "
                                             "(resize_token_embeddings(len(tokenizer)) before training)")
    new = [t for t, i in sorted(added.items(), key=lambda x: x[1]) if i >= base_size]
    return VocabResize(base_size=base_size, size=size, added=tuple(new[:_LISTED]), n_added=size - base_size, how=how,
                       modules=tuple(m[len(PEFT_PREFIX):] for m in modules), tokenizer_file=file)
