"""``--allow-bin``: a pickle ``adapter_model.bin`` adapter converted to safetensors in the cache
(loaded with ``torch.load(weights_only=True)``, which loads tensors only and runs no code)."""

from __future__ import annotations

import hashlib
import warnings
from pathlib import Path

from ..errors import AuditInputError
from ..util.files import atomic_dir
from ..util.hashing import sha256_file
from .paths import BIN_NAME, CONFIG_NAME, WEIGHTS_NAME, check_folder_links, check_size


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

    import torch
    from safetensors.torch import save_file


    src = bin_adapter_file(arg)
    if src is None:
        raise AuditInputError(arg, f"no {BIN_NAME} here to convert")
    folder = src.parent
    check_folder_links(folder)
    check_size(src, max_bytes)
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
