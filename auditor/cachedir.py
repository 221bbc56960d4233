"""Where the auditor keeps its cache (converted base models, NLTK data).

``$AUDITOR_CACHE_DIR`` if set, else ``$XDG_CACHE_HOME/adapter-auditor``, else
``~/.cache/adapter-auditor``. Every entry is written to a temporary sibling
and renamed into place, so an interrupted write never leaves a half entry
that a later run would take as valid.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from filelock import FileLock


def cache_dir() -> Path:
    """Return the cache root (created if missing)."""
    env = os.environ.get("AUDITOR_CACHE_DIR")
    if env:
        root = Path(env).expanduser()
    else:
        xdg = os.environ.get("XDG_CACHE_HOME")
        root = (Path(xdg) if xdg else Path.home() / ".cache") / "adapter-auditor"
    root.mkdir(parents=True, exist_ok=True)
    return root


@contextmanager
def atomic_dir(final: Path) -> Iterator[Path | None]:
    """Build a directory atomically.

    Yields a temporary directory to fill, or ``None`` when ``final`` already
    exists (another run finished it). On normal exit the temporary directory
    is renamed to ``final``; on an exception it is removed. A file lock makes
    concurrent runs on the same cache build it once.
    """
    final.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(str(final) + ".lock"):
        if final.exists():
            yield None
            return
        tmp = Path(tempfile.mkdtemp(prefix=f".{final.name}.", dir=final.parent))
        try:
            yield tmp
            os.replace(tmp, final)
        finally:
            if tmp.exists():
                shutil.rmtree(tmp, ignore_errors=True)
