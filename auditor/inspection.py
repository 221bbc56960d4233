"""Stage 1 — inspect: read an adapter without loading any model weights.

Reads ``adapter_config.json`` and the safetensors header (names, shapes,
dtypes), checks them against the base model's module shapes (taken from a
meta-device instance of the base config, so no weights are read), and
refuses what is broken before anything expensive happens.

Tensor naming follows PEFT: ``base_model.model.<module>.lora_A.weight`` with
shape ``(r, in_features)`` and ``...lora_B.weight`` with ``(out_features, r)``.
The real rank of a module is read from its ``lora_A`` tensor (``rank_pattern``
can make it differ from ``r``).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import jsonschema
import yaml

from .errors import AuditInputError
from .models import sha256_file
from .records import AdapterInfo, AdapterTensor

WEIGHTS_NAME = "adapter_model.safetensors"
CONFIG_NAME = "adapter_config.json"
PEFT_PREFIX = "base_model.model."
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
        "base_model_name_or_path": {"type": ["null", "string"]},
    },
}
_LORA_RE = re.compile(r"^(?P<module>.+)\.(?P<kind>lora_A|lora_B)(?:\.[^.]+)?\.weight$")


def resolve_adapter_path(arg: str | Path) -> tuple[Path, Path]:
    """Return ``(folder, weights_file)`` for a folder or weights-file argument.

    Raises:
        AuditInputError: path missing, no safetensors weights, or only a
            pickle ``.bin`` checkpoint (never loaded).
    """
    p = Path(arg).expanduser()
    if not p.exists():
        raise AuditInputError(p, "no such file or folder")
    if p.is_file():
        if p.suffix != ".safetensors":
            raise AuditInputError(p, "adapter weights must be a .safetensors file (pickle checkpoints are refused)")
        return p.parent, p
    weights = p / WEIGHTS_NAME
    if weights.is_file():
        return p, weights
    if (p / "adapter_model.bin").exists():
        raise AuditInputError(p / "adapter_model.bin", "pickle .bin adapter refused; convert it to safetensors")
    raise AuditInputError(p, f"no {WEIGHTS_NAME} in this folder")


def _read_config(folder: Path) -> dict[str, Any]:
    cfg_path = folder / CONFIG_NAME
    if not cfg_path.is_file():
        raise AuditInputError(cfg_path, "missing; a PEFT adapter folder needs adapter_config.json next to the weights")
    cfg = read_json_strict(cfg_path)
    if not isinstance(cfg, dict):
        raise AuditInputError(cfg_path, "must be a JSON object")
    if "peft_type" not in cfg:
        raise AuditInputError(cfg_path, "not a PEFT config (no peft_type key)")
    if cfg["peft_type"] != "LORA":
        raise AuditInputError(cfg_path, f"peft_type is {cfg['peft_type']!r}; only LORA adapters can be audited")
    for key in ("r", "target_modules"):
        if key not in cfg:
            raise AuditInputError(cfg_path, f"missing required key {key!r}")
    errors = sorted(jsonschema.Draft202012Validator(LORA_CONFIG_SCHEMA).iter_errors(cfg), key=lambda e: str(e.path))
    if errors:
        listed = "; ".join(f"{'.'.join(map(str, e.absolute_path)) or '(top)'}: {e.message}" for e in errors[:5])
        raise AuditInputError(cfg_path, f"invalid LoRA config: {listed}")
    if isinstance(cfg["target_modules"], str) and cfg["target_modules"] != "all-linear":
        try:
            re.compile(cfg["target_modules"])
        except re.error as e:
            raise AuditInputError(cfg_path, f"target_modules is not a valid regex: {e}") from None
    if cfg.get("use_dora"):
        raise AuditInputError(cfg_path, "use_dora: DoRA adapters are not supported yet")
    return cfg


def read_json_strict(path: Path) -> Any:
    """Parse a JSON file; NaN/Infinity literals, non-UTF-8 and absurd nesting are input faults.

    Raises:
        AuditInputError: naming the file and the fault.
    """
    def no_constants(name: str) -> Any:
        raise ValueError(f"non-standard JSON constant {name}")

    try:
        return json.loads(path.read_text(encoding="utf-8"), parse_constant=no_constants)
    except UnicodeDecodeError:
        raise AuditInputError(path, "not UTF-8 text") from None
    except json.JSONDecodeError as e:
        raise AuditInputError(path, f"invalid JSON: {e.msg} at line {e.lineno} column {e.colno}") from None
    except ValueError as e:
        raise AuditInputError(path, f"invalid JSON: {e}") from None
    except RecursionError:
        raise AuditInputError(path, "JSON nested too deeply") from None
    except OSError as e:
        raise AuditInputError(path, f"cannot read: {e.strerror or e}") from None


def _check_magic(weights: Path) -> None:
    with open(weights, "rb") as f:
        head = f.read(64)
    if head.startswith(b"PK\x03\x04"):
        raise AuditInputError(weights, "is a zip/pickle PyTorch checkpoint renamed to .safetensors; refused (never unpickled)")
    if head.startswith(b"version https://git-lfs"):
        raise AuditInputError(weights, "is a Git LFS pointer, weights not downloaded (run `git lfs pull`)")
    if len(head) < 8:
        raise AuditInputError(weights, "too short to be a safetensors file")


def _read_tensors(weights: Path) -> list[AdapterTensor]:
    from safetensors import safe_open

    try:
        with safe_open(str(weights), framework="pt") as f:
            out = []
            for name in f.keys():
                sl = f.get_slice(name)
                out.append(AdapterTensor(name, tuple(int(d) for d in sl.get_shape()), str(sl.get_dtype())))
    except Exception as e:  # safetensors raises SafetensorError / OSError for corrupt files
        raise AuditInputError(weights, f"unreadable safetensors file: {' '.join(str(e).split())}") from None
    if not out:
        raise AuditInputError(weights, "contains no tensors")
    return out


def _scan_values(weights: Path) -> bool:
    """Scan every tensor; return True when all ``lora_B`` tensors are zero (the adapter has no effect).

    Raises:
        AuditInputError: a tensor holds NaN or Inf.
    """
    import torch
    from safetensors import safe_open

    all_b_zero = True
    with safe_open(str(weights), framework="pt") as f:
        for name in f.keys():
            t = f.get_tensor(name)
            if t.is_floating_point() and not bool(torch.isfinite(t).all()):
                raise AuditInputError(weights, f"tensor {name} contains NaN or Inf values")
            if ".lora_B" in name and bool(t.any()):
                all_b_zero = False
    return all_b_zero


def base_linear_shapes(base_path: Path) -> dict[str, tuple[int, int]]:
    """Module name → ``(in_features, out_features)`` for every nn.Linear of the base.

    Built on the meta device from ``config.json``: no weights are read.

    Raises:
        AuditInputError: the base config cannot be instantiated.
    """
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM

    try:
        config = AutoConfig.from_pretrained(str(base_path))
        with torch.device("meta"):
            model = AutoModelForCausalLM.from_config(config)
    except Exception as e:
        raise AuditInputError(base_path, f"cannot build the base model from its config: {e}") from None
    return {
        name: (m.in_features, m.out_features)
        for name, m in model.named_modules()
        if isinstance(m, torch.nn.Linear)
    }


def read_model_card_label(folder: Path) -> str | None:
    """``nominal_label`` from the YAML front matter of the adapter's README.md."""
    card = folder / "README.md"
    if not card.is_file():
        return None
    text = card.read_text(encoding="utf-8", errors="replace")
    m = re.match(r"^---\s*\n(.*?)\n---\s*(\n|$)", text, re.S)
    if not m:
        return None
    try:
        meta = yaml.safe_load(m.group(1))
    except yaml.YAMLError:
        return None
    if isinstance(meta, dict) and isinstance(meta.get("nominal_label"), str):
        return meta["nominal_label"].strip() or None
    return None


def preflight_adapter(arg: str | Path) -> tuple[Path, Path, dict[str, Any], list[AdapterTensor]]:
    """Checks that need no base model: path, config, weight-file kind and header.

    Returns ``(folder, weights_file, config, tensors)``. Run first, so a broken
    adapter is refused in well under a second.

    Raises:
        AuditInputError: as for :func:`inspect_adapter`.
    """
    folder, weights = resolve_adapter_path(arg)
    cfg = _read_config(folder)
    _check_magic(weights)
    return folder, weights, cfg, _read_tensors(weights)


def _targeted(name: str, targets: Any) -> bool:
    if targets == "all-linear":
        return not name.endswith("lm_head")
    if isinstance(targets, str):
        return re.fullmatch(targets, name) is not None
    return any(name == t or name.endswith("." + t) for t in targets)


def _expected_rank(name: str, cfg: dict[str, Any]) -> int:
    """Rank PEFT gives a module: the first matching ``rank_pattern`` key, else ``r``."""
    for key, rank in (cfg.get("rank_pattern") or {}).items():
        if re.match(rf"(.*\.)?({key})$", name):
            return int(rank)
    return int(cfg["r"])


def _target_present(target: str, modules: list[str]) -> bool:
    return any(m == target or m.endswith("." + target) for m in modules)


def inspect_adapter(arg: str | Path, base_path: Path, base_name: str) -> AdapterInfo:
    """Inspect an adapter against a base model.

    Args:
        arg: adapter folder or its ``adapter_model.safetensors``.
        base_path: local folder of the base model (only ``config.json`` is read).
        base_name: the audited base's name, compared with the declared base.

    Returns:
        AdapterInfo with real per-module ranks and warnings.

    Raises:
        AuditInputError: missing/invalid config, non-LoRA adapter, pickle or
            LFS-pointer weights, corrupt safetensors, NaN/Inf values, target
            modules the base lacks, tensors that match no base module, or
            shapes that do not fit the base.
    """
    folder, weights, cfg, tensors = preflight_adapter(arg)
    base_shapes = base_linear_shapes(base_path)
    base_modules = list(base_shapes)

    targets = cfg["target_modules"]
    if targets == "all-linear":  # PEFT shorthand: every linear layer but the output head
        target_list = ["all-linear"]
    elif isinstance(targets, str):
        if not any(re.fullmatch(targets, m) for m in base_modules):
            raise AuditInputError(folder / CONFIG_NAME, f"target_modules regex {targets!r} matches no module of the base")
        target_list = [targets]
    elif isinstance(targets, list) and all(isinstance(t, str) for t in targets) and targets:
        missing = [t for t in targets if not _target_present(t, base_modules)]
        if missing:
            raise AuditInputError(
                folder / CONFIG_NAME,
                f"target modules {missing} do not exist in the base ({base_name}); "
                f"its linear modules end in {sorted({m.rsplit('.', 1)[-1] for m in base_modules})}",
            )
        target_list = list(targets)
    else:
        raise AuditInputError(folder / CONFIG_NAME, "target_modules must be a non-empty list of names or a regex string")

    lora: dict[str, dict[str, tuple[int, ...]]] = {}
    other: list[str] = []
    for t in tensors:
        m = _LORA_RE.match(t.name)
        if not m:
            other.append(t.name)
            continue
        lora.setdefault(m.group("module"), {})[m.group("kind")] = t.shape
    if other:
        raise AuditInputError(
            weights, f"{len(other)} tensors are not LoRA A/B weights (e.g. {other[0]}); not supported yet"
        )

    ranks: dict[str, int] = {}
    unmatched: list[str] = []
    for module, parts in sorted(lora.items()):
        if set(parts) != {"lora_A", "lora_B"}:
            raise AuditInputError(weights, f"module {module} has {sorted(parts)} but needs both lora_A and lora_B")
        if not module.startswith(PEFT_PREFIX):
            raise AuditInputError(weights, f"tensor names must start with {PEFT_PREFIX!r} as PEFT saves them "
                                           f"(found {module}); PEFT would silently load none of them")
        name = module[len(PEFT_PREFIX):]
        if name not in base_shapes:
            unmatched.append(module)
            continue
        in_f, out_f = base_shapes[name]
        a, b = parts["lora_A"], parts["lora_B"]
        if len(a) != 2 or len(b) != 2 or a[1] != in_f or b[0] != out_f or a[0] != b[1]:
            raise AuditInputError(
                weights,
                f"shapes of {name} do not fit the base: lora_A {list(a)}, lora_B {list(b)}, "
                f"base layer in={in_f} out={out_f}",
            )
        if not _targeted(name, targets):
            raise AuditInputError(weights, f"tensors for {name}, which target_modules does not name; "
                                           "PEFT would silently drop them")
        expected = _expected_rank(name, cfg)
        if int(a[0]) != expected:
            raise AuditInputError(weights, f"{name} has rank {a[0]} but the config says {expected} "
                                           "(r / rank_pattern); PEFT cannot load it")
        ranks[name] = int(a[0])
    if unmatched:
        raise AuditInputError(
            weights,
            f"{len(unmatched)} of {len(lora)} adapted modules match no module of the base "
            f"(e.g. {unmatched[0]}); expected names like {PEFT_PREFIX}{base_modules[0]}",
        )

    no_effect = _scan_values(weights)

    warnings: list[str] = []
    if no_effect:
        warnings.append("adapter has no effect: every lora_B tensor is zero (an untrained adapter?)")
    declared = str(cfg.get("base_model_name_or_path") or "")
    if not declared:
        warnings.append("adapter_config.json declares no base_model_name_or_path")
    elif declared.rstrip("/").lower() != base_name.rstrip("/").lower():
        warnings.append(
            f"adapter declares base {declared!r} but is audited on {base_name!r} (tensor shapes are compatible)"
        )

    return AdapterInfo(
        path=str(folder),
        weights_file=str(weights),
        sha256=sha256_file(weights),
        peft_type="LORA",
        r=int(cfg["r"]),
        lora_alpha=float(cfg.get("lora_alpha", cfg["r"])),
        target_modules=target_list,
        ranks=ranks,
        n_tensors=len(tensors),
        size_bytes=weights.stat().st_size,
        declared_base=declared,
        nominal_label=read_model_card_label(folder),
        matched_modules=len(ranks),
        no_effect=no_effect,
        warnings=warnings,
    )
