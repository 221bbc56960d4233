"""Stage 3a — the generation cache: content-addressed answers, reused across audits.

Every generation is stored under a key that is the sha256 of everything that
can change the answer (:func:`generation_key`):

* the **base model's content**: a digest of every file of the base folder
  (weights, config, generation config, tokenizer), see :func:`folder_digest`;
* the **adapter's content** for the adapter variant (sha256 of the weights
  and of ``adapter_config.json``); ``None`` for the base variant, so a base
  pass computed while auditing one adapter is reused for the next;
* the **item's content** that reaches the model: its chat messages and its
  generation budget (``max_new_tokens``). Gold answers and metadata are not in
  the key: fixing a gold answer re-scores, it does not re-generate;
* the **rendered prompt** (the chat template applied), so a changed template
  never returns a stale answer;
* the **generation settings** (decoding, dtype, batch size) and the **backend
  with its package versions**.

lm-eval's request cache is keyed by request only, not by model
(lm-evaluation-harness#4063); this one cannot return another model's answer.

Entries are single JSON files ``<root>/generations/<k[:2]>/<k>.json`` written
to a temporary file and renamed into place, so a killed run leaves either a
whole entry or none, and every finished batch is kept. An unreadable entry is
treated as a miss and rewritten.

What the key cannot see: which *other* prompts shared the batch. On a backend
that is not batch-invariant (transformers#25921) a cached answer may differ
from a fresh one in the same way a replay with another batch does;
``--noise-floor`` measures that and never reads or writes the cache.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from filelock import FileLock

from ..util.files import atomic_write, cache_dir
from ..util.hashing import canonical_json

#: bump when the entry layout or the key material changes (old entries are then never hit)
CACHE_FORMAT = 1
GENERATIONS = "generations"
_FILEHASHES = "filehashes"  # auditor.util.hashing.file_sha256's memos


def generation_key(*, base: str, adapter: str | None, messages: Any, max_new_tokens: int, rendered: str,
                   settings: dict[str, Any]) -> str:
    """The cache key (hex sha256) of one generation request.

    Args:
        base: :func:`auditor.util.hashing.folder_digest` of the base model folder.
        adapter: :func:`auditor.util.hashing.adapter_digest` for the adapter variant, ``None`` for the base variant.
        messages: the item's chat messages (what the template renders).
        max_new_tokens: the item's generation budget (tokens).
        rendered: the exact prompt string after the chat template.
        settings: decoding, dtype, batch size, backend name and package versions.
    """
    return hashlib.sha256(canonical_json({
        "format": CACHE_FORMAT, "base": base, "adapter": adapter, "messages": list(messages),
        "max_new_tokens": int(max_new_tokens), "rendered": rendered, "settings": settings,
    })).hexdigest()


@dataclass
class CacheStats:
    """Hits and misses per variant during one audit (counts of requests)."""

    enabled: bool
    hits: dict[str, int] = field(default_factory=dict)
    misses: dict[str, int] = field(default_factory=dict)
    writes: int = 0
    unreadable: int = 0

    def as_dict(self) -> dict[str, Any]:
        return {"enabled": self.enabled, "hits": dict(sorted(self.hits.items())),
                "misses": dict(sorted(self.misses.items())), "writes": self.writes, "unreadable": self.unreadable}


class GenerationCache:
    """Read and write generation entries under ``root`` (default ``<cache>/generations``).

    ``GenerationCache(None)`` is a disabled cache (``--no-cache``): every
    lookup misses and nothing is written.
    """

    def __init__(self, root: Path | None) -> None:
        self.root = Path(root) if root is not None else None
        self.stats = CacheStats(enabled=root is not None)

    @classmethod
    def default(cls, enabled: bool = True) -> GenerationCache:
        return cls(cache_dir() / GENERATIONS if enabled else None)

    def _path(self, key: str) -> Path:
        assert self.root is not None
        return self.root / key[:2] / f"{key}.json"

    def get(self, key: str, variant: str) -> tuple[str, int] | None:
        """The cached (text, n_tokens) for ``key``, or None (counted as a miss)."""
        entry = None
        if self.root is not None:
            path = self._path(key)
            try:
                raw = json.loads(path.read_bytes().decode("utf-8", "surrogatepass"))
                if (raw.get("format") == CACHE_FORMAT and raw.get("key") == key and isinstance(raw.get("text"), str)
                        and isinstance(raw.get("n_tokens"), int) and not isinstance(raw["n_tokens"], bool)):
                    entry = (raw["text"], raw["n_tokens"])
                else:
                    self.stats.unreadable += 1
            except FileNotFoundError:
                pass
            except (OSError, ValueError, AttributeError):
                self.stats.unreadable += 1
        counter = self.stats.hits if entry is not None else self.stats.misses
        counter[variant] = counter.get(variant, 0) + 1
        return entry

    def put(self, key: str, text: str, n_tokens: int, about: dict[str, Any]) -> None:
        """Store one generation atomically. ``about`` (base/adapter digests, backend) is kept for ``cache info``."""
        if self.root is None:
            return
        atomic_write(self._path(key), canonical_json({"format": CACHE_FORMAT, "key": key, "text": text,
                                                  "n_tokens": int(n_tokens), "about": about}))
        self.stats.writes += 1


def _tree_size(path: Path) -> tuple[int, int]:
    files = [p for p in path.rglob("*") if p.is_file()] if path.is_dir() else []
    return len(files), sum(p.stat().st_size for p in files)


def cache_info(root: Path | None = None) -> dict[str, Any]:
    """What the cache holds: generation entries (count, bytes, per base and adapter), converted models, other files.

    Sizes are in bytes. Entries that cannot be read are counted as ``unreadable``.
    """
    root = Path(root) if root is not None else cache_dir()
    gen = root / GENERATIONS
    entries, size, unreadable = 0, 0, 0
    by_base: dict[str, int] = {}
    by_adapter: dict[str, int] = {}
    variants = {"base": 0, "adapter": 0}
    for p in sorted(gen.glob("*/*.json")) if gen.is_dir() else []:
        entries += 1
        size += p.stat().st_size
        try:
            about = json.loads(p.read_bytes()).get("about") or {}
            b, a = str(about.get("base", "?"))[:12], about.get("adapter")
        except (OSError, ValueError, AttributeError):
            unreadable += 1
            continue
        by_base[b] = by_base.get(b, 0) + 1
        if a:
            variants["adapter"] += 1
            by_adapter[str(a)[:12]] = by_adapter.get(str(a)[:12], 0) + 1
        else:
            variants["base"] += 1
    models = root / "models"
    model_rows = []
    for m in sorted(models.iterdir()) if models.is_dir() else []:
        if m.is_dir():
            model_rows.append({"name": m.name, "bytes": _tree_size(m)[1]})
    _, total = _tree_size(root)
    return {"root": str(root), "total_bytes": total,
            "generations": {"entries": entries, "bytes": size, "unreadable": unreadable, "by_variant": variants,
                            "by_base": by_base, "by_adapter": by_adapter},
            "models": model_rows}


def clear_cache(root: Path | None = None, everything: bool = False) -> dict[str, int]:
    """Delete the generation entries and weight-space pre-screens (and with ``everything`` the whole cache:
    converted base models, file-hash memos, NLTK data). Returns removed counts and bytes."""
    root = Path(root) if root is not None else cache_dir()
    if not everything:
        targets = [root / GENERATIONS, root / _FILEHASHES, root / "weight_space"]  # + the pre-screens
    else:
        targets = [p for p in root.iterdir() if not p.name.endswith(".lock")] if root.is_dir() else []
    removed_files, removed_bytes = 0, 0
    with FileLock(str(root / ".clear.lock")):
        for t in targets:
            if t.is_symlink():
                n, b = 1, 0
                t.unlink()
            elif t.is_dir():
                n, b = _tree_size(t)
                shutil.rmtree(t, ignore_errors=True)
            elif t.exists():
                n, b = 1, t.stat().st_size
                t.unlink(missing_ok=True)
            else:
                continue
            removed_files += n
            removed_bytes += b
    return {"files": removed_files, "bytes": removed_bytes}
