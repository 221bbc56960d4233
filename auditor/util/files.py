"""Where the auditor keeps its cache (converted base models, NLTK data,
generations), and the atomic writers used for every file the auditor writes.

``$AUDITOR_CACHE_DIR`` if set, else ``$XDG_CACHE_HOME/adapter-auditor``, else
``~/.cache/adapter-auditor``. Every entry is written to a temporary sibling
and renamed into place, so an interrupted write never leaves a half entry
that a later run would take as valid.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from filelock import FileLock

from ..errors import AuditInputError

#: ``--cache-dir DIR`` in effect (:func:`using_local_cache`; innermost last)
_LOCAL_ROOT: list[Path] = []


def cache_dir(create: bool = True) -> Path:
    """Return the cache root (created if missing, unless not ``create``: what a read-only command such as
    ``audit cache info`` asks): ``--cache-dir DIR`` while an audit given it runs (:func:`using_local_cache`), else
    ``$AUDITOR_CACHE_DIR``, else the XDG cache folder.

    Raises:
        AuditInputError: it cannot be created (a file in the way, no permission).
    """
    env = os.environ.get("AUDITOR_CACHE_DIR")
    if _LOCAL_ROOT:
        root = _LOCAL_ROOT[-1]
    elif env:
        root = Path(env).expanduser()
    else:
        xdg = os.environ.get("XDG_CACHE_HOME")
        root = (Path(xdg) if xdg else Path.home() / ".cache") / "adapter-auditor"
    if not create:
        return root
    try:
        root.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        fix = "give --cache-dir a writable folder" if _LOCAL_ROOT else "set AUDITOR_CACHE_DIR to a writable folder"
        raise AuditInputError(root, f"cannot be the auditor's cache folder ({e.strerror or e}); {fix}") from None
    return root


@contextmanager
def using_local_cache(folder: Path) -> Iterator[Path]:
    """Make :func:`cache_dir` return ``folder`` inside the block, for every thread of this process
    (``--cache-dir DIR``: the whole cache moves, as with ``$AUDITOR_CACHE_DIR``)."""
    _LOCAL_ROOT.append(Path(folder))
    try:
        yield Path(folder)
    finally:
        _LOCAL_ROOT.pop()


def atomic_write(path: Path, data: bytes, mode: int | None = None) -> None:
    """Write ``data`` to ``path`` through a temporary sibling renamed into place
    (``os.replace``): a reader sees the old file or the whole new one, never a
    torn one. The sibling's name is unique to the writer (``mkstemp``), so several
    processes writing one path at once each rename a whole file of their own; its
    bytes are flushed to the disk (``fsync``) before the rename, so a power loss
    does not leave the new name on an empty file. ``mode``: file permissions
    (``mkstemp`` creates 0600)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        if mode is not None:
            os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def check_folder_path(folder: Path, option: str) -> None:
    """Refuse a folder that cannot be one because a file stands where it (or a parent) would be. Reads only.

    Raises:
        AuditInputError: naming the file and ``option``.
    """
    for p in (folder, *folder.parents):
        if p.exists() and not p.is_dir():
            raise AuditInputError(p, f"{option} must be a folder, but this is a file")


def check_writable_folder(folder: Path, option: str) -> None:
    """Refuse, before any work is done, a folder that cannot hold the files an option asks for: it (or a
    parent) is a file, or the nearest folder that exists refuses a new file. Creates nothing (a probe file
    is written and removed in that nearest folder, whose access and modification times are then put back),
    so a run refused for bad input leaves no empty folder and no changed time stamp.

    Args:
        folder: the folder the files will go to (created later, when it does not exist yet).
        option: the option that named it (``--out``, ``--eval-results``), for the message.

    Raises:
        AuditInputError: naming the path at fault and ``option``.
    """
    check_folder_path(folder, option)
    here = next((p for p in (folder, *folder.parents) if p.exists()), Path("."))
    try:
        before = here.stat()
        with tempfile.NamedTemporaryFile(dir=here, prefix=".auditor-write-check-"):
            pass
    except OSError as e:
        raise AuditInputError(folder, f"{option} cannot be written in {here} ({e.strerror or type(e).__name__})"
                              ) from None
    try:  # the probe leaves no trace: the folder's times as they were (a folder of someone else's: as it can)
        os.utime(here, ns=(before.st_atime_ns, before.st_mtime_ns))
    except OSError:
        pass


def write_text_file(path: Path, text: str, mode: int = 0o644) -> None:
    """Write ``text`` as UTF-8 to ``path`` through :func:`atomic_write` (its folders created); ``mode``: the
    file's permissions (0644 by default: reports are meant to be shared).

    Raises:
        AuditInputError: the file cannot be written (naming it and the system's reason).
    """
    try:
        atomic_write(path, text.encode("utf-8"), mode=mode)
    except OSError as e:
        raise AuditInputError(path, f"cannot be written ({e.strerror or type(e).__name__})") from None


@contextmanager
def atomic_dir(final: Path) -> Iterator[Path | None]:
    """Build a directory atomically.

    Yields a temporary directory to fill, or ``None`` when ``final`` already
    exists (another run finished it). On normal exit the temporary directory
    is renamed to ``final``; on an exception it is removed. A file lock makes
    concurrent runs on the same cache build it once; temporary directories
    left by a killed run (SIGKILL skips the cleanup) are removed under the
    lock, where no other run can be filling them.
    """
    final.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(str(final) + ".lock"):
        if final.exists():
            yield None
            return
        for stale in final.parent.glob(f".{final.name}.*"):
            if stale.is_dir() and not stale.is_symlink():
                shutil.rmtree(stale, ignore_errors=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{final.name}.", dir=final.parent))
        try:
            yield tmp
            os.replace(tmp, final)
        finally:
            if tmp.exists():
                shutil.rmtree(tmp, ignore_errors=True)
