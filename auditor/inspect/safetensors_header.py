"""The adapter's safetensors file: its kind (a pickle or an LFS pointer renamed is refused), its
header (names, shapes, dtypes, read without the data) and a scan of its values.

The header is read with the safetensors library, which validates the JSON, the dtypes and the
data offsets; the 8-byte length is checked against the file's size first, so a header that
declares gigabytes is refused without allocating them.
"""

from __future__ import annotations

from pathlib import Path

from ..errors import AuditInputError
from ..records import AdapterTensor

#: the safetensors library refuses headers above 100 MB; an adapter's header is a few hundred KB
MAX_HEADER_BYTES = 100_000_000


#: tensor dtypes an adapter may hold (safetensors names): the floating types torch and peft load
FLOAT_DTYPES = ("F16", "BF16", "F32", "F64")


def check_magic(weights: Path) -> None:
    """Refuse a zip or pickle checkpoint renamed to .safetensors, a Git LFS pointer, a file too short.

    Raises:
        AuditInputError: naming what the file really is.
    """
    with open(weights, "rb") as f:
        head = f.read(64)
    if head.startswith(b"PK\x03\x04"):
        raise AuditInputError(weights, "is a zip/pickle PyTorch checkpoint renamed to .safetensors; refused (never unpickled)")
    # a pickle starts with PROTO (0x80, 2..5); so does a safetensors file whose header is 640, 896, ... bytes
    # long (its little-endian length), but then its JSON header opens at byte 8
    if head[:1] == b"\x80" and head[1:2] in (b"\x02", b"\x03", b"\x04", b"\x05") and head[8:9] != b"{":
        raise AuditInputError(weights, "is a pickle file (a legacy torch.save checkpoint?) renamed to .safetensors; "
                                       "refused (never unpickled)")
    if head.startswith(b"version https://git-lfs"):
        raise AuditInputError(weights, "is a Git LFS pointer, weights not downloaded (run `git lfs pull`)")
    if len(head) < 8:
        raise AuditInputError(weights, "too short to be a safetensors file")


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


def read_tensors(weights: Path) -> list[AdapterTensor]:
    """Names, shapes and dtypes from the header; the safetensors library validates
    the JSON, dtypes and data offsets (overlaps, gaps, data past the end)."""
    from safetensors import safe_open

    check_safetensors_header_length(weights)
    try:
        with safe_open(str(weights), framework="pt") as f:
            out = []
            for name in f.keys():
                sl = f.get_slice(name)
                out.append(AdapterTensor(name=name, shape=tuple(int(d) for d in sl.get_shape()), dtype=str(sl.get_dtype())))
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


def scan_values(weights: Path) -> set[str]:
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
