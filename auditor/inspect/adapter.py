"""Stage 1 — inspect an adapter without loading any model weights.

Reads ``adapter_config.json`` (:mod:`.peft_config`) and the safetensors header
(:mod:`.safetensors_header`), checks the tensors against the base model's module shapes
(:mod:`.base_shapes`, a meta-device instance of the base config, so no weights are read;
:mod:`.tensors`), and refuses what is broken before anything expensive happens.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any, NamedTuple

from ..errors import AuditInputError
from ..records import AdapterConfig, AdapterRecord, AdapterTensor
from ..util.hashing import adapter_digest, sha256_file
from .base_shapes import base_linear_shapes, base_weight_shapes
from .card_label import model_card_label
from .declared_base import declared_base_status, declared_hint
from .paths import CONFIG_NAME, resolve_adapter_path
from .peft_config import read_config
from .safetensors_header import check_magic, read_tensors, scan_values
from .tensors import (
    DORA_BACKENDS,
    FOREIGN_MODULES,
    PEFT_PREFIX,
    check_dora,
    check_full_copies,
    check_names_match,
    classify_tensors,
    is_vocab_module,
    target_present,
)
from .tokenizer_files import inspect_tokenizer_files, named_tokens, tokenizer_warnings
from .vocabulary import module_of, vocab_resize, vocab_rows
from .weight_space import cached_weight_space


class Preflight(NamedTuple):
    """What :func:`preflight_adapter` read of an adapter: its folder, weights file, parsed config and
    the tensors of the safetensors header (no data)."""

    folder: Path
    weights: Path
    config: AdapterConfig
    tensors: list[AdapterTensor]


def preflight_adapter(arg: str | Path, max_bytes: int | None = None) -> Preflight:
    """Checks that need no base model: path, config, weight-file kind and header.

    Returns ``(folder, weights_file, config, tensors)``. Run first, so a broken
    adapter is refused in well under a second; :func:`inspect_adapter` takes the result on.

    Raises:
        AuditInputError: as for :func:`inspect_adapter`.
    """
    folder, weights = resolve_adapter_path(arg, max_bytes)
    cfg = read_config(folder)
    check_magic(weights)
    return Preflight(folder, weights, cfg, read_tensors(weights))


def inspect_adapter(arg: str | Path | Preflight, base_path: Path, base_name: str, max_bytes: int | None = None, *,
                    base_digest: str | None = None, converted_from: Path | None = None,
                    hub: Mapping[str, Any] | None = None) -> AdapterRecord:
    """Inspect an adapter against a base model.

    Args:
        arg: adapter folder or its ``adapter_model.safetensors``, or what :func:`preflight_adapter`
            read of it (not read again).
        base_path: local folder of the base model (only ``config.json`` is read).
        base_name: the audited base's name, compared with the declared base.
        max_bytes: the largest weights file accepted (None: :func:`max_adapter_bytes`).
        base_digest: the base folder's content digest: when given, the weight-space pre-screen is
            computed (:func:`~auditor.inspect.weight_space.cached_weight_space`, cached by content).
        converted_from: the user's pickle file when ``arg`` is its safetensors conversion (``--allow-bin``),
            said in a warning.
        hub: the resolved hub revision of an adapter given as a hub id (:mod:`.hub`), recorded as it is.

    Returns:
        The adapter's record, with real per-module ranks, its content digest and warnings.

    Raises:
        AuditInputError: missing/invalid config (or not a PEFT one), non-LoRA
            adapter, pickle or LFS-pointer weights, corrupt safetensors,
            non-float tensors, NaN/Inf values, target modules the base lacks,
            tensors that match no base module (with matched/total counts and
            the prefix fix), shapes that do not fit the base, embedding rows
            (``modules_to_save`` copies of ``embed_tokens``/``lm_head``, ``trainable_token_indices``)
            of another hidden size, of several vocabulary sizes, or of another vocabulary size than
            the adapter's tokenizer length (:mod:`.vocabulary`), full copies of other modules,
            partial or misshapen DoRA magnitudes, a tokenizer file that cannot be read.
    """
    folder, weights, cfg, tensors = arg if isinstance(arg, Preflight) else preflight_adapter(arg, max_bytes)
    base_shapes = base_linear_shapes(base_path)
    base_modules = list(base_shapes)

    targets = cfg.target_modules
    if targets == "all-linear":  # PEFT shorthand: every linear layer but the output head
        target_list = ["all-linear"]
    elif isinstance(targets, str):
        if not any(re.fullmatch(targets, m) for m in base_modules):
            raise AuditInputError(folder / CONFIG_NAME, f"target_modules regex {targets!r} matches no module of the base")
        target_list = [targets]
    elif isinstance(targets, tuple) and targets:
        missing = [t for t in targets if not target_present(t, base_modules)]
        if missing:
            foreign = sorted({FOREIGN_MODULES[t] for t in missing if t in FOREIGN_MODULES})
            raise AuditInputError(
                folder / CONFIG_NAME,
                f"target modules {missing} do not exist in the base ({base_name}); "
                f"its linear modules end in {sorted({m.rsplit('.', 1)[-1] for m in base_modules})}"
                + (f"; {', '.join(missing)} {'is' if len(missing) == 1 else 'are'} {' or '.join(foreign)} module "
                   "names: the adapter was trained for another architecture" if foreign else "")
                + declared_hint(cfg, base_name),
            )
        target_list = list(targets)
    else:
        raise AuditInputError(folder / CONFIG_NAME, "target_modules must be a non-empty list of names or a regex string")

    weight_shapes = base_weight_shapes(base_path)
    lora, magnitudes, full, tokens = classify_tensors(weights, tensors)
    check_names_match(weights, tensors, lora, magnitudes, full, tokens, base_shapes, weight_shapes, base_name)
    check_full_copies(weights, full, weight_shapes)
    copies = {m: t for m, t in full.items() if is_vocab_module(m)}
    rows = vocab_rows(weights, cfg, copies, tokens, weight_shapes, base_name)

    ranks: dict[str, int] = {}
    for module, parts in sorted(lora.items()):
        name = module[len(PEFT_PREFIX):]
        in_f, out_f = base_shapes[name]
        a, b = parts["lora_A"].shape, parts["lora_B"].shape
        if len(a) != 2 or len(b) != 2 or a[1] != in_f or b[0] != out_f or a[0] != b[1]:
            raise AuditInputError(
                weights,
                f"shapes of {name} do not fit the base: lora_A {list(a)}, lora_B {list(b)}, "
                f"base layer in={in_f} out={out_f}{declared_hint(cfg, base_name)}",
            )
        if not cfg.targets(name):
            raise AuditInputError(weights, f"tensors for {name}, which target_modules does not name; "
                                           "PEFT would silently drop them")
        expected = cfg.expected_rank(name)
        if int(a[0]) != expected:
            raise AuditInputError(weights, f"{name} has rank {a[0]} but the config says {expected} "
                                           "(r / rank_pattern); PEFT cannot load it")
        ranks[name] = int(a[0])
    dora = check_dora(weights, lora, magnitudes, base_shapes)

    zero = scan_values(weights)
    # B·A is zero when either factor is; DoRA magnitudes and full module copies change the model by themselves
    no_effect = not dora and not full and not tokens and all(
        parts["lora_A"].name in zero or parts["lora_B"].name in zero for parts in lora.values())

    warnings: list[str] = []
    if no_effect:
        warnings.append("adapter has no effect: in every module lora_A or lora_B is all zero (an untrained adapter?)")
    if dora:
        warnings.append(f"DoRA adapter (lora_magnitude_vector tensors): {DORA_BACKENDS}")
    if dora != cfg.use_dora:
        warnings.append(
            f"adapter_config.json says use_dora: {str(cfg.use_dora).lower()} but the weights "
            f"{'hold' if dora else 'hold no'} lora_magnitude_vector tensors; audited as "
            f"{'DoRA' if dora else 'plain LoRA'} (the tensors decide)")
    declared = cfg.base_model_name_or_path
    base_status, base_warnings = declared_base_status(declared, base_name, base_path)
    warnings.extend(base_warnings)
    label, card_problem = model_card_label(folder)
    if card_problem:
        warnings.append(card_problem)
    tokenizer_files = inspect_tokenizer_files(folder, base_path)
    resized = None
    if rows is not None:
        vocab_modules = sorted({module_of(m) for m in copies} | set(tokens))
        base_rows = weight_shapes[vocab_modules[0][len(PEFT_PREFIX):]][0]
        if rows != base_rows:
            resized = vocab_resize(folder, weights, rows, base_rows, tokenizer_files,
                                   named_tokens(folder, tokenizer_files.files),
                                   "trainable_token_indices" if tokens else "modules_to_save", vocab_modules)
    warnings.extend(tokenizer_warnings(tokenizer_files, base_path, resized))
    if converted_from is not None:
        warnings.append(f"pickle adapter {converted_from} loaded with torch.load(weights_only=True) "
                        f"(--allow-bin) and audited from its safetensors conversion in {folder}")
    # the weight-space pre-screen: seconds, from the tensors, before any generation; cached by content
    # whatever --no-cache says (that is the generation cache): a pure function of the files
    space = None if base_digest is None else cached_weight_space(weights, cfg, base_path, ranks, base_digest)

    sha256 = sha256_file(weights)
    return AdapterRecord(
        path=str(folder),
        weights_file=str(weights),
        sha256=sha256,
        peft_type="LORA",
        r=cfg.r,
        lora_alpha=cfg.lora_alpha,
        target_modules=tuple(target_list),
        ranks=ranks,
        n_tensors=len(tensors),
        size_bytes=weights.stat().st_size,
        declared_base=declared,
        nominal_label=label,
        matched_modules=len(ranks),
        no_effect=no_effect,
        warnings=tuple(warnings),
        dora=dora,
        max_rank=max(ranks.values()) if ranks else cfg.r,
        content_sha256=adapter_digest(sha256, folder / CONFIG_NAME),
        hub=hub,
        declared_base_status=base_status,
        weight_space=space,
        tokenizer_files=tokenizer_files,
        vocab_resize=resized,
        declared_base_note=base_warnings[0] if base_warnings else "",
        config=cfg,
    )
