"""Content hashes: files, model folders, adapters, canonical JSON.

* :func:`sha256_file` hashes a file's bytes (remembered per process by device, inode, size
  and mtime, so an adapter hashed for the duplicate check is not read again);
* :func:`file_sha256` remembers the hash across processes in ``<cache>/filehashes/``
  (git-index style: an unchanged file is only ``stat``-ed);
* :func:`folder_digest` is a model folder's content identity (the base's in cache keys and reports);
* :func:`adapter_digest` an adapter's (weights and config);
* :func:`canonical_json` / :func:`canonical_sha256`: sorted keys, no spaces, UTF-8, so the same
  content gives the same hash whatever its file's layout or comments.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

from .files import atomic_write, cache_dir

_FILEHASHES = "filehashes"
#: sha256 of files already hashed by this process, keyed by what changes when a file is rewritten
_SHA256_SEEN: dict[tuple[int, int, int, int], str] = {}


def canonical_json(obj: Any) -> bytes:
    """``obj`` as canonical JSON bytes: sorted keys, no spaces, UTF-8 (lone surrogates kept);
    values JSON cannot hold are written as their ``str``."""
    return json.dumps(obj, sort_keys=True, ensure_ascii=False, separators=(",", ":"),
                      default=str).encode("utf-8", "surrogatepass")


def canonical_sha256(obj: Any) -> str:
    """Hex sha256 of :func:`canonical_json` of ``obj``."""
    return hashlib.sha256(canonical_json(obj)).hexdigest()


def sha256_file(path: Path, chunk: int = 1 << 20) -> str:
    """Hex sha256 of a file, read in 1 MiB chunks. A file hashed before by this process and
    unchanged since (same device, inode, size and modification time in ns) is not read again:
    an audit hashes an adapter's weights when it checks the arguments and again when it
    inspects the adapter."""
    with open(path, "rb") as f:
        st = os.fstat(f.fileno())
        key = (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)
        if key in _SHA256_SEEN:
            return _SHA256_SEEN[key]
        h = hashlib.sha256()
        while block := f.read(chunk):
            h.update(block)
    _SHA256_SEEN[key] = h.hexdigest()
    return _SHA256_SEEN[key]


def file_sha256(path: Path, root: Path | None = None) -> str:
    """sha256 (hex) of a file's bytes, remembered by (path, size, mtime, inode).

    The first call reads the file (about 1 s per GB); later calls on an
    unchanged file only ``stat`` it, like git's index. The memo lives in
    ``<cache>/filehashes/``; a changed size, mtime or inode recomputes it.
    """
    path = Path(path).resolve()
    st = path.stat()
    sig = {"path": str(path), "size": st.st_size, "mtime_ns": st.st_mtime_ns, "ino": st.st_ino}
    memo = (root or cache_dir()) / _FILEHASHES / (hashlib.sha256(str(path).encode()).hexdigest() + ".json")
    try:
        saved = json.loads(memo.read_text())
        if {k: saved.get(k) for k in sig} == sig and len(saved.get("sha256", "")) == 64:
            return saved["sha256"]
    except (OSError, ValueError):
        pass
    digest = sha256_file(path)
    try:
        atomic_write(memo, canonical_json({**sig, "sha256": digest}))
    except OSError:
        pass  # a read-only cache only costs the re-hash next time
    return digest


def folder_digest(folder: Path, root: Path | None = None) -> str:
    """sha256 (hex) over the names and contents of every regular file in a model folder.

    Hidden files and ``*.lock`` files are ignored. Used as the base model's
    content identity in cache keys and reports.
    """
    folder = Path(folder)
    h = hashlib.sha256()
    for f in sorted(p for p in folder.rglob("*") if p.is_file()):
        rel = f.relative_to(folder).as_posix()
        if any(part.startswith(".") for part in rel.split("/")) or rel.endswith(".lock"):
            continue
        h.update(f"{rel}\0{file_sha256(f, root)}\n".encode())
    return h.hexdigest()


def adapter_digest(weights_sha256: str, config_file: Path) -> str:
    """Content identity of an adapter: its weights' sha256 and its config's bytes (hex sha256)."""
    cfg = hashlib.sha256(Path(config_file).read_bytes()).hexdigest() if Path(config_file).is_file() else ""
    return hashlib.sha256(f"{weights_sha256}:{cfg}".encode()).hexdigest()
