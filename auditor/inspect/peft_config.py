"""``adapter_config.json``: read once, checked against the keys the auditor relies on, and
turned into the typed :class:`~auditor.records.AdapterConfig` every later stage takes."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import jsonschema

from ..errors import AuditInputError
from ..records import AdapterConfig
from ..util.jsonio import read_json_strict
from .paths import CONFIG_NAME

# the keys of PEFT's LoraConfig that inspection and the backends rely on; others are ignored
LORA_CONFIG_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "r": {"type": "integer", "minimum": 1},
        "lora_alpha": {"type": "number", "exclusiveMinimum": 0},
        "target_modules": {"anyOf": [{"type": "string", "minLength": 1},
                                     {"type": "array", "minItems": 1, "items": {"type": "string", "minLength": 1}}]},
        "lora_dropout": {"type": "number", "minimum": 0, "maximum": 1},
        "bias": {"enum": ["none", "all", "lora_only"]},
        "task_type": {"enum": [None, "CAUSAL_LM"]},
        "use_dora": {"type": "boolean"},
        "use_rslora": {"type": "boolean"},
        "fan_in_fan_out": {"type": "boolean"},
        "rank_pattern": {"type": ["object", "null"], "additionalProperties": {"type": "integer", "minimum": 1}},
        "alpha_pattern": {"type": ["object", "null"], "additionalProperties": {"type": "number", "exclusiveMinimum": 0}},
        "layers_to_transform": {"type": ["null", "integer", "array"], "items": {"type": "integer", "minimum": 0}},
        "layers_pattern": {"type": ["null", "string", "array"]},
        "modules_to_save": {"type": ["null", "array"]},
        "trainable_token_indices": {"oneOf": [
            {"type": "null"}, {"type": "array", "items": {"type": "integer", "minimum": 0}},
            {"type": "object", "additionalProperties": {"type": "array", "items": {"type": "integer", "minimum": 0}}}]},
        "base_model_name_or_path": {"type": ["null", "string"]},
    },
}


_TASK_KINDS = {"SEQ_CLS": " (sequence classification, with a classifier head)",
               "TOKEN_CLS": " (token classification)", "QUESTION_ANS": " (extractive question answering)",
               "SEQ_2_SEQ_LM": " (an encoder-decoder model)", "FEATURE_EXTRACTION": " (embeddings)"}


def _config_kind_hint(cfg: dict[str, Any]) -> str:
    """What a JSON object without ``peft_type`` looks like instead (``""`` when unknown)."""
    if "lora_parameters" in cfg or "fine_tune_type" in cfg:
        return ("; it looks like an MLX-LM training config (lora_parameters), whose adapters PEFT cannot load: "
                "convert the adapter to PEFT's format (adapter_config.json with peft_type LORA, tensors named "
                "base_model.model.<module>.lora_A/lora_B.weight)")
    if "architectures" in cfg or "model_type" in cfg:
        return "; it looks like a model's config.json, not an adapter's adapter_config.json"
    return ""


def read_config(folder: Path) -> AdapterConfig:
    """The adapter's ``adapter_config.json`` as a typed record.

    Raises:
        AuditInputError: missing, not a JSON object, not a PEFT LoRA config (with a hint at
            what it is instead), not a causal-LM task, a key of the wrong type, or a
            ``target_modules`` / ``rank_pattern`` / ``alpha_pattern`` regex that does not compile.
    """
    cfg_path = folder / CONFIG_NAME
    if not cfg_path.is_file():
        raise AuditInputError(cfg_path, "missing; a PEFT adapter folder needs adapter_config.json next to the weights")
    cfg = read_json_strict(cfg_path)
    if not isinstance(cfg, dict):
        raise AuditInputError(cfg_path, "must be a JSON object")
    if "peft_type" not in cfg:
        raise AuditInputError(cfg_path, f"not a PEFT config (no peft_type key){_config_kind_hint(cfg)}")
    if cfg["peft_type"] != "LORA":
        raise AuditInputError(cfg_path, f"peft_type is {cfg['peft_type']!r}; only LORA adapters can be audited")
    for key in ("r", "target_modules"):
        if key not in cfg:
            raise AuditInputError(cfg_path, f"missing required key {key!r}")
    task = cfg.get("task_type")
    if isinstance(task, str) and task != "CAUSAL_LM":
        raise AuditInputError(cfg_path, f"task_type is {task!r}{_TASK_KINDS.get(task, '')}, not a causal language "
                                        "model (CAUSAL_LM): the auditor compares generated answers, so only causal-LM "
                                        "adapters can be audited")
    errors = sorted(jsonschema.Draft202012Validator(LORA_CONFIG_SCHEMA).iter_errors(cfg), key=lambda e: str(e.path))
    if errors:
        listed = "; ".join(f"{'.'.join(map(str, e.absolute_path)) or '(top)'}: {e.message}" for e in errors[:5])
        raise AuditInputError(cfg_path, f"invalid LoRA config: {listed}")
    if isinstance(cfg["target_modules"], str) and cfg["target_modules"] != "all-linear":
        try:
            re.compile(cfg["target_modules"])
        except re.error as e:
            raise AuditInputError(cfg_path, f"target_modules is not a valid regex: {e}") from None
    for key in ("rank_pattern", "alpha_pattern"):
        for pattern in cfg.get(key) or {}:
            try:
                re.compile(pattern)
            except re.error as e:
                raise AuditInputError(cfg_path, f"{key} key {pattern!r} is not a valid regex: {e}") from None
    return AdapterConfig.from_dict(cfg, cfg_path)
