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

import functools
import itertools
import json
import os
import re
import warnings
from pathlib import Path
from typing import Any

import jsonschema
import yaml

from .errors import AuditInputError
from .models import sha256_file
from .records import AdapterInfo, AdapterTensor
from .safe_yaml import check_yaml_tokens

WEIGHTS_NAME = "adapter_model.safetensors"
MLX_WEIGHTS_NAME = "adapters.safetensors"  # what mlx_lm.lora writes
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
# DoRA: one magnitude per output feature; peft >= 0.14 saves it without ".weight", older versions with it
_MAGNITUDE_RE = re.compile(r"^(?P<module>.+)\.lora_magnitude_vector(?:\.default)?(?:\.weight)?$")
# vocabulary-sized modules (modules_to_save copies of these carry the tokenizer's size)
_VOCAB_MODULES = ("lm_head", "embed_tokens", "wte", "embed_in", "embed_out")
#: backends that can run a DoRA adapter, and the ones that cannot (named in the report)
DORA_BACKENDS = "runs on the hf backend (transformers + peft); vLLM cannot serve DoRA adapters"


#: default limit on the size of an adapter's weights file (``--max-adapter-size`` /
#: ``$AUDITOR_MAX_ADAPTER_SIZE``); a Llama-70B all-linear LoRA of rank 64 in float32 is about 3.3 GB
DEFAULT_MAX_ADAPTER_BYTES = 4 * 1024 ** 3
MAX_ADAPTER_SIZE_ENV = "AUDITOR_MAX_ADAPTER_SIZE"
_SIZE_UNITS = {"": 1, "b": 1, "k": 1024, "m": 1024 ** 2, "g": 1024 ** 3, "t": 1024 ** 4,
               "kb": 1000, "mb": 1000 ** 2, "gb": 1000 ** 3, "tb": 1000 ** 4,
               "kib": 1024, "mib": 1024 ** 2, "gib": 1024 ** 3, "tib": 1024 ** 4}
#: top-level entries of an adapter folder looked at for symbolic links (an adapter has a handful)
MAX_FOLDER_ENTRIES = 10_000


def parse_size(text: str, what: str) -> int:
    """Bytes from ``"4GiB"``, ``"500MB"``, ``"1.5G"`` or ``"123"`` (K/M/G/T alone are binary).

    Raises:
        AuditInputError: naming ``what`` (the option or variable) when ``text`` is not a positive size.
    """
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]*)\s*", str(text))
    unit = m.group(2).lower() if m else ""
    if not m or unit not in _SIZE_UNITS or float(m.group(1)) * _SIZE_UNITS[unit] < 1:
        raise AuditInputError(what, f"{text!r} is not a size (e.g. 4GiB, 500MB, 1048576)")
    return int(float(m.group(1)) * _SIZE_UNITS[unit])


def max_adapter_bytes(limit: int | None = None) -> int:
    """The adapter size limit: ``limit`` if given, else ``$AUDITOR_MAX_ADAPTER_SIZE``, else the default."""
    if limit is not None:
        return limit
    env = os.environ.get(MAX_ADAPTER_SIZE_ENV)
    return parse_size(env, MAX_ADAPTER_SIZE_ENV) if env else DEFAULT_MAX_ADAPTER_BYTES


def _check_size(weights: Path, limit: int | None) -> None:
    size, cap = weights.stat().st_size, max_adapter_bytes(limit)
    if size > cap:
        raise AuditInputError(weights, f"{size:,} bytes, over the adapter size limit of {cap:,} bytes "
                                       f"(raise it with --max-adapter-size or ${MAX_ADAPTER_SIZE_ENV})")


def check_folder_links(folder: Path) -> None:
    """Refuse a symbolic link in the adapter folder that points outside it.

    The auditor, peft and vLLM read the folder's top-level files; a link to
    ``~/.ssh/id_rsa`` or ``/proc/self/environ`` named ``README.md`` or
    ``adapter_model.safetensors`` would have them read (and show, hash or
    cache) a file the adapter's author chose outside the adapter. Links inside
    the folder are fine, and so are a Hugging Face hub snapshot's links into
    its repository's ``blobs/`` folder.

    Raises:
        AuditInputError: naming the link and where it points.
    """
    root = folder.resolve()
    allowed = [root]
    if root.parent.name == "snapshots":  # ~/.cache/huggingface/hub/models--o--n/snapshots/<rev>/f -> ../../blobs/<sha>
        allowed.append(root.parent.parent / "blobs")
    try:
        entries = list(itertools.islice(folder.iterdir(), MAX_FOLDER_ENTRIES))
    except OSError as e:
        raise AuditInputError(folder, f"cannot list the folder: {e.strerror or e}") from None
    for entry in sorted(entries):
        if not entry.is_symlink():
            continue
        try:
            target = entry.resolve()
        except (OSError, RuntimeError):  # a link loop (RuntimeError before Python 3.13)
            raise AuditInputError(entry, "is a symbolic link that loops; refused") from None
        if not any(target == a or a in target.parents for a in allowed):
            raise AuditInputError(entry, f"is a symbolic link to {target}, outside the adapter folder; refused "
                                         "(copy the file into the folder if it belongs to the adapter)")


def resolve_adapter_path(arg: str | Path, max_bytes: int | None = None) -> tuple[Path, Path]:
    """Return ``(folder, weights_file)`` for a folder or weights-file argument.

    Args:
        arg: the adapter folder or its ``adapter_model.safetensors``.
        max_bytes: the largest weights file accepted (None: :func:`max_adapter_bytes`).

    Raises:
        AuditInputError: path missing, a folder without adapter files, no
            safetensors weights, only a pickle ``.bin`` checkpoint (refused
            unless converted with ``--allow-bin``, see :func:`convert_bin_adapter`),
            a symbolic link pointing outside the folder, a weights file over
            the size limit.
    """
    p = Path(arg).expanduser()
    if not p.exists():
        raise AuditInputError(p, "no such file or folder")
    if p.is_file():
        if p.suffix != ".safetensors":
            raise AuditInputError(p, "adapter weights must be a .safetensors file (pickle checkpoints are refused; "
                                     f"{BIN_OPT_IN} for an adapter_model.bin)")
        folder, weights = p.parent, p
    else:
        folder, weights = p, p / WEIGHTS_NAME
    check_folder_links(folder)
    if not weights.is_file():
        if (p / BIN_NAME).exists():
            raise AuditInputError(p / BIN_NAME, f"pickle .bin adapter refused; convert it to safetensors, or "
                                                f"{BIN_OPT_IN}")
        if (p / MLX_WEIGHTS_NAME).is_file():
            raise AuditInputError(p, f"no {WEIGHTS_NAME}, but {MLX_WEIGHTS_NAME}: this looks like an MLX-LM adapter "
                                     "folder, not a PEFT one; convert it to a PEFT LoRA adapter first")
        if not (p / CONFIG_NAME).exists():
            nested = sorted(c.parent.name for c in itertools.islice(p.glob(f"*/{WEIGHTS_NAME}"), 3))
            raise AuditInputError(p, f"no adapter files in this folder (neither {WEIGHTS_NAME} nor {CONFIG_NAME})"
                                     + (f"; its subfolders {', '.join(nested)} hold adapters: give one of them"
                                        if nested else ""))
        raise AuditInputError(p, f"no {WEIGHTS_NAME} in this folder")
    _check_size(weights, max_bytes)
    return folder, weights


BIN_NAME = "adapter_model.bin"
BIN_OPT_IN = "pass --allow-bin to load it with torch.load(weights_only=True) and convert it"


def bin_adapter_file(arg: str | Path) -> Path | None:
    """The ``adapter_model.bin`` that ``arg`` names (the file, or a folder holding it and no
    ``adapter_model.safetensors``); None for anything else."""
    p = Path(arg).expanduser()
    if p.is_file() and p.suffix == ".bin":
        return p
    if p.is_dir() and not (p / WEIGHTS_NAME).exists() and (p / BIN_NAME).is_file():
        return p / BIN_NAME
    return None


def convert_bin_adapter(arg: str | Path, cache_root: Path, max_bytes: int | None = None) -> Path:
    """``--allow-bin``: turn a pickle ``adapter_model.bin`` adapter into a safetensors one.

    The pickle is read with ``torch.load(weights_only=True)`` (PyTorch's restricted
    unpickler: tensors and plain containers only, no code); anything it refuses is
    an input fault. The tensors are written as ``adapter_model.safetensors`` next to
    copies of ``adapter_config.json`` and ``README.md`` in a new folder under
    ``cache_root/converted-adapters/`` (keyed by the two files' sha256), never in the
    user's folder; that folder is then audited like any safetensors adapter.

    Returns:
        the converted adapter folder.

    Raises:
        AuditInputError: the symbolic-link and size checks of
            :func:`resolve_adapter_path`, a pickle ``weights_only`` refuses, or
            content that is not a flat name → tensor mapping.
    """
    import hashlib

    import torch
    from safetensors.torch import save_file

    from .cachedir import atomic_dir

    src = bin_adapter_file(arg)
    if src is None:
        raise AuditInputError(arg, f"no {BIN_NAME} here to convert")
    folder = src.parent
    check_folder_links(folder)
    _check_size(src, max_bytes)
    cfg_path = folder / CONFIG_NAME
    key = hashlib.sha256(sha256_file(src).encode()
                         + (cfg_path.read_bytes() if cfg_path.is_file() else b"")).hexdigest()[:32]
    final = cache_root / "converted-adapters" / key
    try:
        with warnings.catch_warnings():  # e.g. "Detected pickle protocol 4": stderr carries one line only
            warnings.simplefilter("ignore")
            state = torch.load(src, map_location="cpu", weights_only=True)
    except Exception as e:  # UnpicklingError (a global weights_only does not allow), zip/EOF errors, ...
        # torch's message wraps the reason in boilerplate that suggests weights_only=False; keep the reason
        boiler = ("Weights only load failed", "Please file an issue", "Check the documentation")
        why = next((line.strip() for line in str(e).splitlines() if line.strip() and not line.startswith(boiler)),
                   type(e).__name__)
        raise AuditInputError(src, f"refused by torch.load(weights_only=True), which loads tensors only and runs "
                                   f"no code: {why[:240]}") from None
    if not isinstance(state, dict) or not state or not all(
            isinstance(k, str) and isinstance(v, torch.Tensor) for k, v in state.items()):
        raise AuditInputError(src, "not a flat mapping of tensor names to tensors "
                                   "(what PEFT saves as adapter_model.bin)")
    with atomic_dir(final) as tmp:
        if tmp is not None:
            try:
                save_file({k: v.detach().clone().contiguous() for k, v in state.items()}, str(tmp / WEIGHTS_NAME))
            except Exception as e:  # sparse, quantized or otherwise unusual tensors safetensors cannot hold
                raise AuditInputError(src, f"its tensors cannot be written as safetensors: "
                                           f"{' '.join(str(e).split())[:240]}") from None
            for name in (CONFIG_NAME, "README.md"):
                if (folder / name).is_file():
                    (tmp / name).write_bytes((folder / name).read_bytes())
    return final


def _read_config(folder: Path) -> dict[str, Any]:
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
    return cfg


_TASK_KINDS = {"SEQ_CLS": " (sequence classification, with a classifier head)",
               "TOKEN_CLS": " (token classification)", "QUESTION_ANS": " (extractive question answering)",
               "SEQ_2_SEQ_LM": " (an encoder-decoder model)", "FEATURE_EXTRACTION": " (embeddings)"}
#: module names of other architectures' linear layers (named when an adapter targets them on a base without them)
_FOREIGN_MODULES = {"c_attn": "GPT-2", "c_proj": "GPT-2", "c_fc": "GPT-2", "query_key_value": "GPT-NeoX/Falcon/BLOOM",
                    "dense_h_to_4h": "GPT-NeoX/Falcon/BLOOM", "dense_4h_to_h": "GPT-NeoX/Falcon/BLOOM",
                    "Wqkv": "MPT/Phi-2", "W_pack": "Baichuan", "qkv_proj": "Phi-3", "query": "BERT",
                    "key": "BERT", "value": "BERT", "fc1": "OPT/Phi", "fc2": "OPT/Phi", "out_proj": "OPT"}
#: output heads of non-causal task models (a ``modules_to_save`` copy of one means another task)
_CLASSIFIER_HEADS = ("score", "classifier", "qa_outputs", "pooler")


def _config_kind_hint(cfg: dict[str, Any]) -> str:
    """What a JSON object without ``peft_type`` looks like instead (``""`` when unknown)."""
    if "lora_parameters" in cfg or "fine_tune_type" in cfg:
        return ("; it looks like an MLX-LM training config (lora_parameters), whose adapters PEFT cannot load: "
                "convert the adapter to PEFT's format (adapter_config.json with peft_type LORA, tensors named "
                "base_model.model.<module>.lora_A/lora_B.weight)")
    if "architectures" in cfg or "model_type" in cfg:
        return "; it looks like a model's config.json, not an adapter's adapter_config.json"
    return ""


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
    if head[:1] == b"\x80" and head[1:2] in (b"\x02", b"\x03", b"\x04", b"\x05"):
        raise AuditInputError(weights, "is a pickle file (a legacy torch.save checkpoint?) renamed to .safetensors; "
                                       "refused (never unpickled)")
    if head.startswith(b"version https://git-lfs"):
        raise AuditInputError(weights, "is a Git LFS pointer, weights not downloaded (run `git lfs pull`)")
    if len(head) < 8:
        raise AuditInputError(weights, "too short to be a safetensors file")


#: how much of README.md is read for its front matter
MAX_FRONT_MATTER_BYTES = 64 * 1024
#: the safetensors library refuses headers above 100 MB; an adapter's header is a few hundred KB
MAX_HEADER_BYTES = 100_000_000
#: tensor dtypes an adapter may hold (safetensors names): the floating types torch and peft load
FLOAT_DTYPES = ("F16", "BF16", "F32", "F64")


def check_safetensors_header_length(weights: Path) -> int:
    """Check the 8-byte header length of a safetensors file against the file's size.

    Reads only the first 8 bytes, so a header that declares gigabytes is refused
    without allocating them. Returns the declared header length in bytes.

    Raises:
        AuditInputError: the file is shorter than 8 bytes, or the declared header
            is longer than the rest of the file or than :data:`MAX_HEADER_BYTES`.
    """
    size = weights.stat().st_size
    with open(weights, "rb") as f:
        head = f.read(8)
    if len(head) < 8:
        raise AuditInputError(weights, "too short to be a safetensors file")
    n = int.from_bytes(head, "little")
    if n > size - 8:
        raise AuditInputError(weights, f"corrupt safetensors file: the header declares {n:,} bytes but the file has "
                                       f"{size:,} (truncated, or not a safetensors file)")
    if n > MAX_HEADER_BYTES:
        raise AuditInputError(weights, f"corrupt safetensors file: the header declares {n:,} bytes "
                                       f"(at most {MAX_HEADER_BYTES:,} are read)")
    return n


def _read_tensors(weights: Path) -> list[AdapterTensor]:
    """Names, shapes and dtypes from the header; the safetensors library validates
    the JSON, dtypes and data offsets (overlaps, gaps, data past the end)."""
    from safetensors import safe_open

    check_safetensors_header_length(weights)
    try:
        with safe_open(str(weights), framework="pt") as f:
            out = []
            for name in f.keys():
                sl = f.get_slice(name)
                out.append(AdapterTensor(name, tuple(int(d) for d in sl.get_shape()), str(sl.get_dtype())))
    except Exception as e:  # safetensors raises SafetensorError / OSError for corrupt files
        raise AuditInputError(weights, f"corrupt safetensors file: {' '.join(str(e).split())[:300]}") from None
    if not out:
        raise AuditInputError(weights, "contains no tensors")
    for t in out:
        if t.dtype not in FLOAT_DTYPES:
            raise AuditInputError(weights, f"tensor {t.name} has dtype {t.dtype}; adapter weights must be "
                                           f"{', '.join(FLOAT_DTYPES)}")
        if 0 in t.shape:
            raise AuditInputError(weights, f"tensor {t.name} is empty (shape {list(t.shape)})")
    return out


def _scan_values(weights: Path) -> set[str]:
    """Scan every tensor for NaN/Inf; return the names of the tensors that are all zero.

    Raises:
        AuditInputError: a tensor holds NaN or Inf.
    """
    import torch
    from safetensors import safe_open

    zero: set[str] = set()
    with safe_open(str(weights), framework="pt") as f:
        for name in f.keys():
            t = f.get_tensor(name)
            if not bool(torch.isfinite(t).all()):
                raise AuditInputError(weights, f"tensor {name} contains NaN or Inf values")
            if not bool(t.any()):
                zero.add(name)
    return zero


def base_linear_shapes(base_path: Path) -> dict[str, tuple[int, int]]:
    """Module name → ``(in_features, out_features)`` for every nn.Linear of the base.

    Built on the meta device from ``config.json``: no weights are read.

    Raises:
        AuditInputError: the base config cannot be instantiated.
    """
    return dict(_base_shapes(str(base_path))[0])


def base_weight_shapes(base_path: Path) -> dict[str, tuple[int, ...]]:
    """Module name → shape of its ``weight`` for every module of the base that has one
    (linear layers, embeddings, norms), on the meta device like :func:`base_linear_shapes`.

    Raises:
        AuditInputError: the base config cannot be instantiated.
    """
    return dict(_base_shapes(str(base_path))[1])


@functools.lru_cache(maxsize=4)
def _base_shapes(base_path: str) -> tuple[dict[str, tuple[int, int]], dict[str, tuple[int, ...]]]:
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM

    try:
        config = AutoConfig.from_pretrained(base_path)
        with torch.device("meta"):
            model = AutoModelForCausalLM.from_config(config)
    except Exception as e:
        raise AuditInputError(base_path, f"cannot build the base model from its config: {e}") from None
    linear = {name: (m.in_features, m.out_features) for name, m in model.named_modules()
              if isinstance(m, torch.nn.Linear)}
    weights = {name: tuple(m.weight.shape) for name, m in model.named_modules()
               if isinstance(getattr(m, "weight", None), torch.Tensor)}
    return linear, weights


def model_card_label(folder: Path) -> tuple[str | None, str | None]:
    """(``nominal_label``, problem) from the adapter's README.md front matter.

    ``problem`` is None when the card is absent, has no front matter, or has
    a readable one; otherwise one line saying why no label could be taken
    (broken YAML, an alias or token the safe reader refuses, a
    ``nominal_label`` that is not a string). The audit goes on without a
    label and shows the problem as an adapter warning. Aliases, deep nesting and
    broken YAML are never errors: the card is documentation.
    """
    card = folder / "README.md"
    if not card.is_file():
        return None, None
    with open(card, "rb") as f:  # front matter sits at the top; a card may be any size
        text = f.read(MAX_FRONT_MATTER_BYTES).decode("utf-8", errors="replace")
    if not re.match(r"^---\s*\n", text):
        return None, None
    m = re.match(r"^---\s*\n(.*?)\n---\s*(\n|$)", text, re.S)
    why = "model card README.md: front matter ignored, no nominal label taken from it: "
    if not m:
        return None, why + f"no closing '---' within its first {MAX_FRONT_MATTER_BYTES} bytes"
    try:
        check_yaml_tokens(card, m.group(1), "a model card")
        meta = yaml.safe_load(m.group(1))
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f" at line {mark.line + 2}" if mark is not None else ""
        return None, why + f"not valid YAML{where} ({getattr(e, 'problem', None) or type(e).__name__})"
    except AuditInputError as e:
        return None, why + e.fault
    except RecursionError:
        return None, why + "nested too deeply"
    except ValueError as e:  # int() refuses over sys.get_int_max_str_digits() digits
        return None, why + str(e).split(";")[0]
    if not isinstance(meta, dict) or "nominal_label" not in meta:
        return None, None
    label = meta["nominal_label"]
    if not isinstance(label, str):
        return None, why + f"nominal_label is {type(label).__name__}, not a string"
    return label.strip() or None, None


def preflight_adapter(arg: str | Path, max_bytes: int | None = None
                      ) -> tuple[Path, Path, dict[str, Any], list[AdapterTensor]]:
    """Checks that need no base model: path, config, weight-file kind and header.

    Returns ``(folder, weights_file, config, tensors)``. Run first, so a broken
    adapter is refused in well under a second.

    Raises:
        AuditInputError: as for :func:`inspect_adapter`.
    """
    folder, weights = resolve_adapter_path(arg, max_bytes)
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


def _classify_tensors(weights: Path, tensors: list[AdapterTensor]) -> tuple[
        dict[str, dict[str, AdapterTensor]], dict[str, AdapterTensor], dict[str, AdapterTensor]]:
    """Sort the tensors into LoRA factors (module → lora_A/lora_B), DoRA magnitudes
    (module → tensor) and full module copies (``modules_to_save``: module → weight).

    Raises:
        AuditInputError: a LoRA factor without its partner, or a tensor of a kind
            that is not supported (LoRA biases, embedding LoRA).
    """
    lora: dict[str, dict[str, AdapterTensor]] = {}
    magnitudes: dict[str, AdapterTensor] = {}
    full: dict[str, AdapterTensor] = {}
    for t in tensors:
        if (m := _LORA_RE.fullmatch(t.name)):
            lora.setdefault(m.group("module"), {})[m.group("kind")] = t
        elif (m := _MAGNITUDE_RE.fullmatch(t.name)):
            magnitudes[m.group("module")] = t
        elif ".lora_" in t.name or not t.name.endswith(".weight"):
            raise AuditInputError(weights, f"tensor {t.name} is neither a LoRA A/B weight, a DoRA magnitude nor a "
                                           "full module weight; not supported")
        else:
            full[t.name[:-len(".weight")]] = t
    for module, parts in sorted(lora.items()):
        if set(parts) != {"lora_A", "lora_B"}:
            raise AuditInputError(weights, f"module {module} has {sorted(parts)} but needs both lora_A and lora_B")
    return lora, magnitudes, full


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


def _check_names_match(weights: Path, tensors: list[AdapterTensor], lora: dict, magnitudes: dict, full: dict,
                       base_shapes: dict[str, tuple[int, int]], weight_shapes: dict[str, tuple[int, ...]],
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
              + [(t.name, m, True) for m, t in magnitudes.items()] + [(t.name, m, False) for m, t in full.items()])
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


def _check_full_copies(weights: Path, full: dict[str, AdapterTensor], weight_shapes: dict[str, tuple[int, ...]],
                       base_name: str) -> None:
    """Full module copies (``modules_to_save``) must have the base module's shape; an
    ``lm_head``/``embed_tokens`` copy with another row count means another vocabulary.

    Raises:
        AuditInputError: a vocabulary or shape mismatch, or (shapes fitting) because
            full module copies are not audited yet.
    """
    for module, t in sorted(full.items()):
        name = module[len(PEFT_PREFIX):]
        want = weight_shapes[name]
        if name.rsplit(".", 1)[-1] in _VOCAB_MODULES and len(t.shape) == 2 and len(want) == 2 \
                and t.shape[0] != want[0]:
            raise AuditInputError(
                weights, f"{t.name} (modules_to_save) is a full copy of {name} with a vocabulary of {t.shape[0]:,} "
                         f"tokens, but the base ({base_name}) has {want[0]:,}: the adapter was trained with a resized "
                         "tokenizer (added tokens); audit it on the base and tokenizer it was trained with")
        if tuple(t.shape) != tuple(want):
            raise AuditInputError(weights, f"{t.name} (modules_to_save) has shape {list(t.shape)} but the base's "
                                           f"{name}.weight has {list(want)}")
    if full:
        names = sorted(m[len(PEFT_PREFIX):] for m in full)
        raise AuditInputError(weights, f"full copies of base modules (modules_to_save: {', '.join(names)}) "
                                       "are not supported yet; only LoRA A/B (and DoRA) tensors are audited")


def _check_dora(weights: Path, lora: dict, magnitudes: dict[str, AdapterTensor],
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


def _is_local_path(declared: str) -> bool:
    """``base_model_name_or_path`` names a folder (on the machine the adapter was trained on), not a hub id."""
    return declared.startswith(("/", "~", "./", "../", "\\")) or "\\" in declared \
        or re.match(r"^[A-Za-z]:[\\/]", declared) is not None


def _same_model(declared: str, base_name: str) -> bool:
    """The declared base names the audited one (a local folder, declared or audited, counts by its
    folder name: ``/models/SmolLM2-135M-Instruct`` is ``HuggingFaceTB/SmolLM2-135M-Instruct``)."""
    d, b = declared.rstrip("/\\").lower(), base_name.rstrip("/\\").lower()
    if _is_local_path(declared) or _is_local_path(base_name):
        return re.split(r"[/\\]", d)[-1] == re.split(r"[/\\]", b)[-1]
    return d == b


def _declared_base_warnings(declared: str, base_name: str) -> list[str]:
    """Warnings about ``base_model_name_or_path`` once the tensor shapes fit the base: none, a folder
    on another machine, or another model. Only another model counts as a base mismatch (the
    policy's ``on_base_mismatch``: its warnings say "declares base")."""
    if not declared:
        return [f"adapter_config.json declares no base_model_name_or_path; audited on {base_name!r} "
                "(tensor shapes are compatible)"]
    local = " (a local folder on the machine it was trained on)" if _is_local_path(declared) else ""
    if _same_model(declared, base_name):
        if local and declared.rstrip("/").lower() != base_name.rstrip("/").lower():
            return [f"adapter_config.json's base_model_name_or_path {declared!r} is a local folder on the machine "
                    f"it was trained on; its name matches the audited base {base_name!r} (tensor shapes are "
                    "compatible)"]
        return []
    if _is_local_path(base_name):
        # a base folder whose config.json records no _name_or_path: its identity is unknown, not different
        return [f"the audited base folder {base_name!r} records no model name (config.json has no _name_or_path), "
                f"so the adapter's base_model_name_or_path {declared!r} cannot be checked against it "
                "(tensor shapes are compatible)"]
    return [f"adapter declares base {declared!r}{local} but is audited on {base_name!r} "
            "(tensor shapes are compatible)"]


def _declared_hint(cfg: dict[str, Any], base_name: str) -> str:
    """For an error about a base that does not fit: the base the adapter declares, if another."""
    declared = str(cfg.get("base_model_name_or_path") or "")
    if not declared or _same_model(declared, base_name):
        return ""
    return f"; the adapter declares base {declared!r}: audit it on that base (--base)"


def inspect_adapter(arg: str | Path, base_path: Path, base_name: str, max_bytes: int | None = None) -> AdapterInfo:
    """Inspect an adapter against a base model.

    Args:
        arg: adapter folder or its ``adapter_model.safetensors``.
        base_path: local folder of the base model (only ``config.json`` is read).
        base_name: the audited base's name, compared with the declared base.
        max_bytes: the largest weights file accepted (None: :func:`max_adapter_bytes`).

    Returns:
        AdapterInfo with real per-module ranks and warnings.

    Raises:
        AuditInputError: missing/invalid config (or not a PEFT one), non-LoRA
            adapter, pickle or LFS-pointer weights, corrupt safetensors,
            non-float tensors, NaN/Inf values, target modules the base lacks,
            tensors that match no base module (with matched/total counts and
            the prefix fix), shapes that do not fit the base, a full
            ``lm_head``/``embed_tokens`` copy of another vocabulary size,
            partial or misshapen DoRA magnitudes.
    """
    folder, weights, cfg, tensors = preflight_adapter(arg, max_bytes)
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
            foreign = sorted({_FOREIGN_MODULES[t] for t in missing if t in _FOREIGN_MODULES})
            raise AuditInputError(
                folder / CONFIG_NAME,
                f"target modules {missing} do not exist in the base ({base_name}); "
                f"its linear modules end in {sorted({m.rsplit('.', 1)[-1] for m in base_modules})}"
                + (f"; {', '.join(missing)} {'is' if len(missing) == 1 else 'are'} {' or '.join(foreign)} module "
                   "names: the adapter was trained for another architecture" if foreign else "")
                + _declared_hint(cfg, base_name),
            )
        target_list = list(targets)
    else:
        raise AuditInputError(folder / CONFIG_NAME, "target_modules must be a non-empty list of names or a regex string")

    weight_shapes = base_weight_shapes(base_path)
    lora, magnitudes, full = _classify_tensors(weights, tensors)
    _check_names_match(weights, tensors, lora, magnitudes, full, base_shapes, weight_shapes, base_name)
    _check_full_copies(weights, full, weight_shapes, base_name)

    ranks: dict[str, int] = {}
    for module, parts in sorted(lora.items()):
        name = module[len(PEFT_PREFIX):]
        in_f, out_f = base_shapes[name]
        a, b = parts["lora_A"].shape, parts["lora_B"].shape
        if len(a) != 2 or len(b) != 2 or a[1] != in_f or b[0] != out_f or a[0] != b[1]:
            raise AuditInputError(
                weights,
                f"shapes of {name} do not fit the base: lora_A {list(a)}, lora_B {list(b)}, "
                f"base layer in={in_f} out={out_f}{_declared_hint(cfg, base_name)}",
            )
        if not _targeted(name, targets):
            raise AuditInputError(weights, f"tensors for {name}, which target_modules does not name; "
                                           "PEFT would silently drop them")
        expected = _expected_rank(name, cfg)
        if int(a[0]) != expected:
            raise AuditInputError(weights, f"{name} has rank {a[0]} but the config says {expected} "
                                           "(r / rank_pattern); PEFT cannot load it")
        ranks[name] = int(a[0])
    dora = _check_dora(weights, lora, magnitudes, base_shapes)

    zero = _scan_values(weights)
    # B·A is zero when either factor is; DoRA magnitudes and full module copies change the model by themselves
    no_effect = not dora and not full and all(
        parts["lora_A"].name in zero or parts["lora_B"].name in zero for parts in lora.values())

    warnings: list[str] = []
    if no_effect:
        warnings.append("adapter has no effect: in every module lora_A or lora_B is all zero (an untrained adapter?)")
    if dora:
        warnings.append(f"DoRA adapter (lora_magnitude_vector tensors): {DORA_BACKENDS}")
    if dora != bool(cfg.get("use_dora")):
        warnings.append(
            f"adapter_config.json says use_dora: {str(bool(cfg.get('use_dora'))).lower()} but the weights "
            f"{'hold' if dora else 'hold no'} lora_magnitude_vector tensors; audited as "
            f"{'DoRA' if dora else 'plain LoRA'} (the tensors decide)")
    declared = str(cfg.get("base_model_name_or_path") or "")
    warnings.extend(_declared_base_warnings(declared, base_name))
    label, card_problem = model_card_label(folder)
    if card_problem:
        warnings.append(card_problem)

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
        nominal_label=label,
        matched_modules=len(ranks),
        no_effect=no_effect,
        warnings=warnings,
        dora=dora,
    )
