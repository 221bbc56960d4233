"""The adapter's tensors against the base: LoRA factors, DoRA magnitudes and full module copies,
each matched to a module of the base the way PEFT names it.

Tensor naming follows PEFT: ``base_model.model.<module>.lora_A.weight`` with shape
``(r, in_features)`` and ``...lora_B.weight`` with ``(out_features, r)``. The real rank of a
module is read from its ``lora_A`` tensor (``rank_pattern`` can make it differ from ``r``).
"""

from __future__ import annotations

import re
from pathlib import Path

from ..errors import AuditInputError
from ..records import AdapterTensor
from .vocabulary import TOKENS_RE, module_of

PEFT_PREFIX = "base_model.model."
_LORA_RE = re.compile(r"^(?P<module>.+)\.(?P<kind>lora_A|lora_B)(?:\.[^.]+)?\.weight$")
# DoRA: one magnitude per output feature; peft >= 0.14 saves it without ".weight", older versions with it
_MAGNITUDE_RE = re.compile(r"^(?P<module>.+)\.lora_magnitude_vector(?:\.default)?(?:\.weight)?$")
#: vocabulary-sized modules (embeddings and the output head): a ``modules_to_save`` copy of one carries the
#: tokenizer's size, and vLLM serves no LoRA on them
VOCAB_MODULES = ("embed_tokens", "lm_head", "wte", "wpe", "embed_in", "embed_out", "word_embeddings")
#: backends that can run a DoRA adapter, and the ones that cannot (named in the report)
DORA_BACKENDS = "runs on the hf backend (transformers + peft); vLLM cannot serve DoRA adapters"


#: module names of other architectures' linear layers (named when an adapter targets them on a base without them)
FOREIGN_MODULES = {"c_attn": "GPT-2", "c_proj": "GPT-2", "c_fc": "GPT-2", "query_key_value": "GPT-NeoX/Falcon/BLOOM",
                    "dense_h_to_4h": "GPT-NeoX/Falcon/BLOOM", "dense_4h_to_h": "GPT-NeoX/Falcon/BLOOM",
                    "Wqkv": "MPT/Phi-2", "W_pack": "Baichuan", "qkv_proj": "Phi-3", "query": "BERT",
                    "key": "BERT", "value": "BERT", "fc1": "OPT/Phi", "fc2": "OPT/Phi", "out_proj": "OPT"}


#: output heads of non-causal task models (a ``modules_to_save`` copy of one means another task)
_CLASSIFIER_HEADS = ("score", "classifier", "qa_outputs", "pooler")


def target_present(target: str, modules: list[str]) -> bool:
    return any(m == target or m.endswith("." + target) for m in modules)


def classify_tensors(weights: Path, tensors: list[AdapterTensor]) -> tuple[
        dict[str, dict[str, AdapterTensor]], dict[str, AdapterTensor], dict[str, AdapterTensor],
        dict[str, AdapterTensor]]:
    """Sort the tensors into LoRA factors (module → lora_A/lora_B), DoRA magnitudes
    (module → tensor), full module weights (``modules_to_save`` copies and the resized base rows
    PEFT saves with them: tensor name without ``.weight`` → tensor; :func:`.vocabulary.module_of`
    names the module) and trainable-token deltas (``trainable_token_indices``: module → tensor).

    Raises:
        AuditInputError: a LoRA factor without its partner, or a tensor of a kind
            that is not supported (LoRA biases, embedding LoRA).
    """
    lora: dict[str, dict[str, AdapterTensor]] = {}
    magnitudes: dict[str, AdapterTensor] = {}
    full: dict[str, AdapterTensor] = {}
    tokens: dict[str, AdapterTensor] = {}
    for t in tensors:
        if (m := _LORA_RE.fullmatch(t.name)):
            lora.setdefault(m.group("module"), {})[m.group("kind")] = t
        elif (m := _MAGNITUDE_RE.fullmatch(t.name)):
            magnitudes[m.group("module")] = t
        elif (m := TOKENS_RE.fullmatch(t.name)):
            tokens[m.group("module")] = t
        elif ".lora_" in t.name or not t.name.endswith(".weight"):
            raise AuditInputError(weights, f"tensor {t.name} is neither a LoRA A/B weight, a DoRA magnitude nor a "
                                           "full module weight; not supported")
        else:
            full[t.name[:-len(".weight")]] = t
    for module, parts in sorted(lora.items()):
        if set(parts) != {"lora_A", "lora_B"}:
            raise AuditInputError(weights, f"module {module} has {sorted(parts)} but needs both lora_A and lora_B")
    return lora, magnitudes, full, tokens


def lora_fits(lora: dict[str, dict[str, AdapterTensor]], base_shapes: dict[str, tuple[int, int]]) -> bool:
    """Whether every LoRA pair (:func:`classify_tensors`' first part, at least one) names a linear module of the base
    the way PEFT names it, with ``lora_A`` ``[r, in]`` and ``lora_B`` ``[out, r]`` of that module's sizes."""
    def fits(module: str, a: tuple[int, ...], b: tuple[int, ...]) -> bool:
        name = _strip_prefix(module)
        if name is None or name not in base_shapes or len(a) != 2 or len(b) != 2:
            return False
        in_f, out_f = base_shapes[name]
        return a[1] == in_f and b[0] == out_f and a[0] == b[1]

    return bool(lora) and all(fits(m, tuple(p["lora_A"].shape), tuple(p["lora_B"].shape)) for m, p in lora.items())


def _strip_prefix(module: str) -> str | None:
    return module[len(PEFT_PREFIX):] if module.startswith(PEFT_PREFIX) else None


def _prefix_fix(unmatched: str, base_modules: list[str]) -> tuple[str, str] | None:
    """``(old, new)``: the prefix rewrite that turns ``unmatched`` into PEFT's name of
    the base module sharing the longest dotted suffix with it (None if none shares two parts)."""
    have = unmatched.split(".")
    best: tuple[int, list[str]] | None = None
    for b in base_modules:
        want = (PEFT_PREFIX + b).split(".")
        n = 0
        while n < min(len(have), len(want)) and have[-1 - n] == want[-1 - n]:
            n += 1
        if n >= 2 and n < len(want) and (best is None or n > best[0]):
            best = (n, want)
    if best is None:
        return None
    n, want = best
    old, new = have[:len(have) - n], want[:len(want) - n]
    # name the prefix up to the first numbered part (the layer index), so the fix reads naturally
    k = len(have) - n
    while k < len(have) - 1 and not have[k].isdigit() and len(old) - (len(have) - n) < 2:
        old, new, k = old + [have[k]], new + [have[k]], k + 1
    return ".".join(old) + "." if old else "", ".".join(new) + "."


def check_names_match(weights: Path, tensors: list[AdapterTensor], lora: dict, magnitudes: dict, full: dict,
                       tokens: dict, base_shapes: dict[str, tuple[int, int]], weight_shapes: dict[str, tuple[int, ...]],
                       base_name: str) -> None:
    """Every tensor must name a module of the base the way PEFT saves it; PEFT would
    silently ignore the ones that do not, so one unmatched tensor refuses the adapter.

    Raises:
        AuditInputError: ``<k> of <n> tensors match a module of the base``, with an
            example and, where one exists, the prefix rewrite that makes them match.
    """
    def matches(module: str, linear: bool) -> bool:
        name = _strip_prefix(module)
        return name is not None and (name in base_shapes if linear else name in weight_shapes)

    owners = ([(p.name, m, True) for m, parts in lora.items() for p in parts.values()]
              + [(t.name, m, True) for m, t in magnitudes.items()]
              + [(t.name, module_of(m), False) for m, t in full.items()] + [(t.name, m, False) for m, t in tokens.items()])
    unmatched = [(n, m, lin) for n, m, lin in owners if not matches(m, lin)]
    if not unmatched:
        return
    ok = len(tensors) - len(unmatched)
    first = unmatched[0][1]
    msg = (f"{ok} of {len(tensors)} tensors match a module of the base ({base_name}), e.g. {unmatched[0][0]} "
           f"names no module of it; PEFT would silently ignore the unmatched ones")
    heads = sorted({m.rsplit(".", 1)[-1] for _, m, lin in unmatched if not lin} & set(_CLASSIFIER_HEADS))
    fix = _prefix_fix(first, list(base_shapes) if unmatched[0][2] else list(weight_shapes))
    if heads:
        msg += (f"; {', '.join(heads)} is a classification head: the adapter is for a sequence-classification "
                "model (task_type SEQ_CLS), not a causal language model, and cannot be audited")
    elif fix:
        old, new = fix
        fixed = sum(matches(new + m[len(old):] if m.startswith(old) else m, lin) for _, m, lin in owners)
        if fixed > ok:
            msg += (f"; rename the prefix {old!r} to {new!r} in the tensor names "
                    f"(then {fixed} of {len(tensors)} match)")
    else:
        msg += f"; PEFT names them {PEFT_PREFIX}<module of the base>, e.g. {PEFT_PREFIX}{next(iter(base_shapes))}"
    raise AuditInputError(weights, msg)


def is_vocab_module(module: str) -> bool:
    """Whether ``module`` (any PEFT name of it) is an embedding or output head (:data:`VOCAB_MODULES`)."""
    return module_of(module).rsplit(".", 1)[-1] in VOCAB_MODULES


def check_full_copies(weights: Path, full: dict[str, AdapterTensor], weight_shapes: dict[str, tuple[int, ...]]
                      ) -> None:
    """Full copies of modules other than the embeddings and the output head (``modules_to_save`` of a
    linear layer or a norm) must have the base module's shape, and are not audited yet; the
    vocabulary-sized ones are :func:`auditor.inspect.vocabulary.vocab_rows`'s.

    Raises:
        AuditInputError: a shape mismatch, or (shapes fitting) because such copies are not audited yet.
    """
    others = {m: t for m, t in full.items() if not is_vocab_module(m)}
    for module, t in sorted(others.items()):
        name = module_of(module)[len(PEFT_PREFIX):]
        want = weight_shapes[name]
        if tuple(t.shape) != tuple(want):
            raise AuditInputError(weights, f"{t.name} (modules_to_save) has shape {list(t.shape)} but the base's "
                                           f"{name}.weight has {list(want)}")
    if others:
        names = sorted({module_of(m)[len(PEFT_PREFIX):] for m in others})
        raise AuditInputError(weights, f"full copies of base modules (modules_to_save: {', '.join(names)}) "
                                       "are not supported yet; only LoRA A/B (and DoRA) tensors, and the rows of "
                                       "the embeddings and output head, are audited")


def check_dora(weights: Path, lora: dict, magnitudes: dict[str, AdapterTensor],
                base_shapes: dict[str, tuple[int, int]]) -> bool:
    """True when the adapter is DoRA: it holds ``lora_magnitude_vector`` tensors
    (whatever ``use_dora`` says), one of ``out_features`` values per LoRA module.

    Raises:
        AuditInputError: magnitudes for only some modules, or of the wrong shape.
    """
    if not magnitudes:
        return False
    missing = sorted(set(lora) - set(magnitudes))
    orphan = sorted(set(magnitudes) - set(lora))
    if missing or orphan:
        which = missing[0] if missing else orphan[0]
        raise AuditInputError(weights, f"DoRA magnitudes for {len(set(lora) & set(magnitudes))} of {len(lora)} LoRA "
                                       f"modules (e.g. {which} {'has none' if missing else 'has no lora_A/lora_B'}); "
                                       "PEFT cannot load a partial DoRA adapter")
    for module, t in sorted(magnitudes.items()):
        out_f = base_shapes[module[len(PEFT_PREFIX):]][1]
        if tuple(t.shape) not in ((out_f,), (1, out_f)):
            raise AuditInputError(weights, f"{t.name} has shape {list(t.shape)}; a DoRA magnitude of this module "
                                           f"has {out_f} values")
    return True
