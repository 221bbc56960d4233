"""Where an adapter's files are, and whether they may be read: the path argument, symbolic
links, the size limit.

PEFT's file names: ``adapter_config.json`` beside ``adapter_model.safetensors``.
"""

from __future__ import annotations

import itertools
import os
import re
from pathlib import Path

from ..errors import AuditInputError

WEIGHTS_NAME = "adapter_model.safetensors"
MLX_WEIGHTS_NAME = "adapters.safetensors"  # what mlx_lm.lora writes
CONFIG_NAME = "adapter_config.json"
BIN_NAME = "adapter_model.bin"
#: a file of these suffixes is a pickle checkpoint (what ``--allow-bin`` is about), any other non-safetensors file no
#: adapter at all
PICKLE_SUFFIXES = (".bin", ".pt", ".pth", ".ckpt", ".pkl")
BIN_OPT_IN = "pass --allow-bin to load it with torch.load(weights_only=True) and convert it"


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


def check_size(weights: Path, limit: int | None) -> None:
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
        if p.suffix in PICKLE_SUFFIXES:
            raise AuditInputError(p, "adapter weights must be a .safetensors file (pickle checkpoints are refused; "
                                     f"{BIN_OPT_IN} for an adapter_model.bin)")
        if p.suffix != ".safetensors":
            raise AuditInputError(p, f"is not an adapter: give a PEFT adapter folder ({CONFIG_NAME} beside "
                                     f"{WEIGHTS_NAME}) or its {WEIGHTS_NAME}")
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
    check_size(weights, max_bytes)
    return folder, weights
