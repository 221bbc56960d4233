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

Entries are single JSON files ``<root>/generations/<k[:2]>/<k>.json``. The root is the answer cache
(:mod:`auditor.cache.store`): the local cache folder, a folder every worker mounts, or an object
store (``--cache-dir s3://bucket/prefix``), shared by every process and machine that names it. A writer
never shows a half entry: on a folder it writes a temporary sibling unique to it and renames it into
place; on an object store the entry is one PUT of the whole object. So a killed run leaves either a whole
entry or none, and every finished batch is kept. Several writers at once lose nothing: an entry is named
by the sha256 of what determines its answer, so two writers of one key write the same bytes and whichever
lands last leaves the same entry; no lock is taken. An entry that cannot be read or parsed (a torn file
on a filesystem without atomic writes) is treated as a miss and rewritten.

What the key cannot see: which *other* prompts shared the batch. The hf backend on the CPU is
batch-invariant (:mod:`auditor.backends.hf.invariant`, per-request attention), so there a cached answer
is the one a fresh run gives; on a backend that is not (a GPU, transformers#25921) a cached answer may
differ from a fresh one in the same way a replay with another batch does; ``--noise-floor`` measures that
and never reads or writes the cache.
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import stat
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from filelock import FileLock

from ..errors import AuditInputError
from ..util.files import cache_dir
from ..util.hashing import canonical_json
from .store import CacheStore, answer_store, open_store

#: bump when the entry layout or the key material changes (old entries are then never hit)
CACHE_FORMAT = 1
GENERATIONS = "generations"
_FILEHASHES = "filehashes"  # auditor.util.hashing.file_sha256's memos
_WEIGHT_SPACE = "weight_space"  # auditor.inspect.weight_space's pre-screens (in the answer cache too)
#: the names of the cache's own files in each folder ``audit cache clear`` empties (path relative to the folder):
#: a generation entry ``<key[:2]>/<key>.json``, a pre-screen or a file-hash memo ``<sha256>.json``; nothing else
#: there is ever deleted, so a --cache-dir that names a folder of other files loses none of them
ENTRY_NAMES = {GENERATIONS: re.compile(r"([0-9a-f]{2})/\1[0-9a-f]{62}\.json"),
            _WEIGHT_SPACE: re.compile(r"[0-9a-f]{64}\.json"), _FILEHASHES: re.compile(r"[0-9a-f]{64}\.json")}
#: what ``audit cache clear --all`` removes besides: the folders the local cache's other parts live in
#: (converted base models, the GGUF base, NLTK data, converted .bin adapters, measured throughput)
_LOCAL_FOLDERS = ("models", "gguf", "nltk_data", "converted-adapters", "throughput")


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
    """Hits and misses per variant during one audit (counts of requests), entries written, entries that could
    not be read (taken as misses) or written (the audit goes on without them), and where the cache is."""

    enabled: bool
    hits: dict[str, int] = field(default_factory=dict)
    misses: dict[str, int] = field(default_factory=dict)
    writes: int = 0
    unreadable: int = 0
    failed_writes: int = 0
    #: the generations folder: ``{"protocol": "file"|"s3"|..., "path": ...}`` (no credentials); None when disabled
    location: dict[str, str] | None = None
    #: the first write failure's reason (for the warning the pipeline logs)
    write_error: str = ""

    def as_dict(self) -> dict[str, Any]:
        """results.json's ``run.cache``: ``location`` when enabled, ``failed_writes`` when some failed."""
        return {"enabled": self.enabled, "hits": dict(sorted(self.hits.items())),
                "misses": dict(sorted(self.misses.items())), "writes": self.writes, "unreadable": self.unreadable,
                **({"failed_writes": self.failed_writes} if self.failed_writes else {}),
                **({"location": dict(self.location)} if self.location is not None else {})}


class GenerationCache:
    """Read and write generation entries under ``root``: the generations folder, a local path, a URL fsspec
    opens (:func:`auditor.cache.store.open_store`) or a :class:`~auditor.cache.store.CacheStore`.

    ``GenerationCache(None)`` is a disabled cache (``--no-cache``): every
    lookup misses and nothing is written. Safe to share between processes and machines (module docstring).

    Raises:
        AuditInputError: ``root`` is a URL whose filesystem cannot be opened here.
    """

    def __init__(self, root: Path | str | CacheStore | None) -> None:
        self.store = root if isinstance(root, CacheStore) or root is None else open_store(root, "generation cache")
        self.stats = CacheStats(enabled=root is not None,
                                location=self.store.where() if self.store is not None else None)

    @classmethod
    def default(cls, enabled: bool = True) -> GenerationCache:
        """The generations folder of the answer cache in effect (:func:`auditor.cache.store.answer_store`)."""
        return cls(answer_store().child(GENERATIONS) if enabled else None)

    @staticmethod
    def _rel(key: str) -> str:
        return f"{key[:2]}/{key}.json"

    def get(self, key: str, variant: str) -> tuple[str, int] | None:
        """The cached (text, n_tokens) for ``key``, or None (counted as a miss)."""
        return self.get_many([(key, variant)])[0]

    def get_many(self, asked: Sequence[tuple[str, str]]) -> list[tuple[str, int] | None]:
        """:meth:`get` of each (key, variant), in order; an object store's entries are read in concurrent
        requests (one round trip's latency for the lot, not one per entry)."""
        return [None if e is None else (e[0], e[1]) for e in self.get_entries(asked)]

    def get_entries(self, asked: Sequence[tuple[str, str]]) -> list[tuple[str, int, list[int] | None] | None]:
        """:meth:`get_many` with each entry's answer token ids where it keeps them (``None`` where not: an entry
        written without them, or tokens that are not a list of ints)."""
        got = self.store.read_many([self._rel(k) for k, _ in asked]) if self.store is not None else {}
        out = []
        for key, variant in asked:
            entry = self._parse(key, got.get(self._rel(key), FileNotFoundError()))
            counter = self.stats.hits if entry is not None else self.stats.misses
            counter[variant] = counter.get(variant, 0) + 1
            out.append(entry)
        return out

    def _parse(self, key: str, data: bytes | OSError) -> tuple[str, int, list[int] | None] | None:
        """An entry's (text, n_tokens, token ids or None); None when absent, or unreadable (counted: a torn or
        foreign file)."""
        if isinstance(data, FileNotFoundError):
            return None
        try:
            if isinstance(data, OSError):
                raise data
            raw = json.loads(data.decode("utf-8", "surrogatepass"))
            if (raw.get("format") == CACHE_FORMAT and raw.get("key") == key and isinstance(raw.get("text"), str)
                    and isinstance(raw.get("n_tokens"), int) and not isinstance(raw["n_tokens"], bool)):
                ids = raw.get("token_ids")
                ok = isinstance(ids, list) and all(isinstance(t, int) and not isinstance(t, bool) for t in ids)
                return raw["text"], raw["n_tokens"], ids if ok else None
        except (OSError, ValueError, AttributeError):
            pass
        self.stats.unreadable += 1
        return None

    def put(self, key: str, text: str, n_tokens: int, about: dict[str, Any], token_ids: Sequence[int] | None = None
            ) -> None:
        """Store one generation atomically. ``about`` (base/adapter digests, backend) is kept for ``cache info``;
        ``token_ids``, the answer's tokens where the backend has them (a later adapter pass drafts from them).
        An entry that cannot be written (disk full, the object store unreachable) is counted in
        ``stats.failed_writes``; the answer is not lost for this audit, only for the next."""
        if self.store is None:
            return
        try:
            entry = {"format": CACHE_FORMAT, "key": key, "text": text, "n_tokens": int(n_tokens), "about": about}
            if token_ids is not None:
                entry["token_ids"] = [int(t) for t in token_ids]
            self.store.write(self._rel(key), canonical_json(entry))
        except OSError as e:
            self.stats.failed_writes += 1
            self.stats.write_error = self.stats.write_error or self.store.public(e.strerror or str(e) or type(e).__name__)
            return
        self.stats.writes += 1


def _tree_size(path: Path) -> tuple[int, int]:
    files = [p for p in path.rglob("*") if p.is_file()] if path.is_dir() else []
    return len(files), sum(p.stat().st_size for p in files)


def disk_usage(path: Path) -> dict[str, int]:
    """What ``du`` counts of ``path``: ``bytes``, the blocks allocated to it and everything under it (symbolic
    links not followed, each hard-linked file once), ``file_bytes``, the files' own sizes, and ``files``, their
    count. A folder of many small files (the answer cache) takes several times its files' sizes on disk."""
    seen: set[tuple[int, int]] = set()
    out = {"bytes": 0, "file_bytes": 0, "files": 0}
    stack = [path]
    while stack:
        p = stack.pop()
        try:
            st = p.lstat()
        except OSError:  # removed meanwhile, or unreadable
            continue
        if (st.st_dev, st.st_ino) in seen:
            continue
        seen.add((st.st_dev, st.st_ino))
        out["bytes"] += st.st_blocks * 512
        if stat.S_ISREG(st.st_mode):
            out["file_bytes"] += st.st_size
            out["files"] += 1
        elif stat.S_ISDIR(st.st_mode):
            try:
                stack.extend(p.iterdir())
            except OSError:
                pass
    return out


def _folders(root: Path) -> list[dict[str, Any]]:
    """Every entry of the local cache folder (``generations``, ``models``, ``gguf``, ``nltk_data``,
    ``weight_space``, ``throughput``, ... and any other) with its :func:`disk_usage`; a symbolic link (a folder
    shared with another cache) is named with its target and counted as du counts it: not followed."""
    rows = []
    for entry in sorted(root.iterdir()) if root.is_dir() else []:
        if entry.name.startswith("."):  # the cache's own lock files
            continue
        row: dict[str, Any] = {"name": entry.name, **disk_usage(entry)}
        if entry.is_symlink():
            row["link_to"] = str(entry.readlink())
        rows.append(row)
    return rows


@contextmanager
def _shared(answers: CacheStore, verb: str) -> Iterator[None]:
    """The answer cache's failures (an object store out of reach) as one line naming it."""
    try:
        yield
    except OSError as e:
        raise AuditInputError(answers.shown, f"the answer cache cannot be {verb} "
                                             f"({answers.public(str(e.strerror or e))})") from None


def _under(store: CacheStore, root: Path) -> bool:
    """Whether the answer store is a folder inside the local cache folder (then counted with it)."""
    return store.local and Path(store.root).is_relative_to(root)


def cache_info(root: Path | None = None, answers: CacheStore | None = None) -> dict[str, Any]:
    """What the cache holds: generation entries (count, bytes, per base and adapter), converted models, sizes.

    Args:
        root: the local cache folder (default :func:`~auditor.util.files.cache_dir`).
        answers: the answer cache (default: ``root`` when given, else the one in effect,
            :func:`~auditor.cache.store.answer_store`).

    Returns:
        ``root``, ``answers`` (``{"protocol", "path"}``), ``total_bytes`` (the local folder's disk usage, as
        ``du`` counts it, plus the file sizes of an answer cache outside it), ``generations`` (``entries``,
        ``bytes``: their file sizes, ``unreadable``, ``by_variant``, ``by_base``, ``by_adapter``), ``models``
        (name and file bytes of each converted base) and ``folders``: every entry of the local folder with its
        :func:`disk_usage` (``name``, ``bytes`` on disk, ``file_bytes``, ``files``; ``link_to`` for a symbolic
        link). Sizes in bytes.

    Raises:
        AuditInputError: the answer cache cannot be listed or read.
    """
    answers = answers if answers is not None else open_store(root, "cache") if root is not None else \
        answer_store(create=False)
    root = Path(root) if root is not None else cache_dir(create=False)
    with _shared(answers, "read"):
        listed = [(rel, n) for rel, n in answers.files(GENERATIONS) if rel.endswith(".json") and rel.count("/") == 2]
        contents = answers.read_many([rel for rel, _ in listed]).values()
        outside = 0 if _under(answers, root) else sum(n for d in (GENERATIONS, _WEIGHT_SPACE) for _, n in answers.files(d))
    unreadable = 0
    by_base: dict[str, int] = {}
    by_adapter: dict[str, int] = {}
    variants = {"base": 0, "adapter": 0}
    for raw in contents:
        try:
            about = json.loads(raw if isinstance(raw, bytes) else b"").get("about") or {}
            b, a = str(about.get("base", "?"))[:12], about.get("adapter")
        except (ValueError, AttributeError):
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
    folders = _folders(root)
    return {"root": str(root), "answers": answers.where(),
            "total_bytes": (disk_usage(root)["bytes"] if root.is_dir() else 0) + outside,
            "generations": {"entries": len(listed), "bytes": sum(n for _, n in listed), "unreadable": unreadable,
                            "by_variant": variants, "by_base": by_base, "by_adapter": by_adapter},
            "models": model_rows, "folders": folders}


def clear_cache(root: Path | None = None, everything: bool = False, answers: CacheStore | None = None
                ) -> dict[str, int]:
    """Delete the generation entries and weight-space pre-screens of the answer cache and the local file-hash
    memos (and with ``everything`` the local cache's other folders: converted base models, NLTK data, throughput).
    Only files named as the cache names its entries are removed (``generations/<k[:2]>/<k>.json``,
    ``weight_space/<sha256>.json``, ...), never the rest of a shared prefix or of a folder --cache-dir named.

    Args:
        root: the local cache folder (default :func:`~auditor.util.files.cache_dir`).
        answers: the answer cache (default: ``root`` when given, else the one in effect).

    Returns:
        ``{"files", "bytes"}`` removed.

    Raises:
        AuditInputError: the answer cache cannot be listed or written.
    """
    answers = answers if answers is not None else open_store(root, "cache") if root is not None else answer_store()
    root = Path(root) if root is not None else cache_dir()
    targets = [root / name for name in _LOCAL_FOLDERS] if everything else []
    removed_files, removed_bytes = 0, 0
    with FileLock(str(root / ".clear.lock")):
        for store, folder in ((answers, GENERATIONS), (answers, _WEIGHT_SPACE),  # the answer cache's (inside root or not)
                              (open_store(root, "cache"), _FILEHASHES)):
            with _shared(store, "cleared"):
                n, b = store.remove(folder, ENTRY_NAMES[folder])
            removed_files += n
            removed_bytes += b
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
