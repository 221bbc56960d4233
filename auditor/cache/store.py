"""Where the answer cache lives: a local folder, or any filesystem fsspec opens (``s3://bucket/prefix``,
``gs://bucket/prefix``, ``file:///mnt/shared/cache``, ...), shared by every process and machine that names it.

The **answer cache** is the part of the auditor's cache that is a pure function of content and worth as much
on one machine as on another: the generation entries (``generations/<k[:2]>/<k>.json``,
:mod:`auditor.cache.generations`) and the weight-space pre-screens (``weight_space/<key>.json``,
:mod:`auditor.inspect.weight_space`). The rest stays in the local cache (:func:`auditor.util.files.cache_dir`):
converted base models (transformers loads a model from a local folder), NLTK data, file-hash memos (keyed by
this machine's paths and inodes) and measured throughput (keyed by this machine's processor).

Where it is, for an audit (:func:`using_cache_dir`): ``--cache-dir DIR`` moves the whole cache to DIR (as
``$AUDITOR_CACHE_DIR`` does); ``--cache-dir URL`` puts the answer cache at URL; without the option, the
answer cache is ``$AUDITOR_GENERATION_CACHE`` (a URL or a folder) when set, so Ray workers and CI jobs
inherit it, else the local cache folder.

Credentials and endpoints come from the filesystem's own sources (``AWS_*`` variables and ``~/.aws`` for s3fs,
``GOOGLE_APPLICATION_CREDENTIALS`` for gcsfs, fsspec's ``FSSPEC_<PROTOCOL>_<OPTION>`` variables), never from
what results.json records: a URL is shown without its user part, query or fragment (:func:`public_url`).

Why several writers at once lose nothing and tear nothing:

* every entry is named by the sha256 of what determines it: two writers of one name write the same bytes,
  whichever lands last; no lock is needed;
* a writer never shows a half entry. On a local or mounted folder (``file://`` URLs too) the bytes go to a
  temporary sibling whose name is unique to the writer (``mkstemp``), are flushed to the disk (``fsync``)
  and renamed into place (``os.replace``, atomic on POSIX): a reader opens the old file or the whole new
  one. On an object store (S3, GCS, Azure, ...) an entry is one object written by one PUT of all its bytes
  (``pipe_file``), which the store makes visible whole or not at all; nothing is appended or sent in parts;
* a reader that meets an entry it cannot parse (no atomic rename nor PUT: sftp, smb; a power loss) takes
  it as a miss, and the next writer of that key replaces it.
"""

from __future__ import annotations

import os
import re
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

from ..errors import AuditInputError
from ..util.env import env_seconds
from ..util.files import atomic_write, cache_dir, check_folder_path, check_writable_folder, using_local_cache

# --- the location's URL rules: what is a URL, how one is shown without its secrets, which local forms name a
# folder, and the bounded check of a remote location

#: the protocols of this machine's own folders (``file:///abs``, ``file://localhost/abs``, ``file:/abs``)
LOCAL_PROTOCOLS = ("file", "local")
_URL = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*(::|://)")
_LOCAL_URL = re.compile(r"^(file|local):", re.IGNORECASE)
#: where each ``protocol://`` of a (possibly chained, ``a::b://``) URL starts
_SEGMENT = re.compile(r"(?:^|::)[A-Za-z][A-Za-z0-9+.-]*://")
#: a temporary file of :func:`~auditor.util.files.atomic_write` (``.<name>.<random>.tmp``), and its final name
_TMP = re.compile(r"(^|/)\.([^/]+)\.[A-Za-z0-9_]+\.tmp$")
_CONTROLS = re.compile(r"[\x00-\x1f\x7f-\x9f]")


def is_url(value: str | Path) -> bool:
    """Whether ``value`` is a URL (``protocol://...``, fsspec's chained ``a::b://...``, or ``file:...``) rather
    than a folder."""
    return not isinstance(value, Path) and bool(_URL.match(value) or _LOCAL_URL.match(value))


def _segments(url: str) -> list[tuple[int, int]]:
    """(start, end) of the part after each ``protocol://`` of ``url``: where a user, a password and a path are."""
    starts = [m.end() for m in _SEGMENT.finditer(url)]
    ends = [m.start() for m in _SEGMENT.finditer(url)][1:] + [len(url)]
    return list(zip(starts, ends))


def public_url(url: str) -> str:
    """``url`` without what may carry a secret: everything up to the last ``@`` after each ``protocol://``
    (``user:password@``, a password holding ``/`` included), its query (pre-signed or SAS tokens) and its
    fragment. ``s3://key:se/cret@bucket/p?x=1`` → ``s3://bucket/p``; chained URLs too. When an ``@`` comes after
    the first ``?`` or ``#`` (a query holding one, or a password holding ``?``), nothing after the first
    ``protocol://`` is shown: ``s3://…``."""
    cut = re.search(r"[?#]", url)
    if cut and "@" in url[cut.start():]:
        head = url.find("://")
        return (url[:head + 3] if head >= 0 else "") + "…"
    url = url[:cut.start()] if cut else url
    out, at = [], 0
    for start, end in _segments(url):
        rest = url[start:end]
        out += [url[at:start], rest[rest.rfind("@") + 1:]]
        at = end
    return "".join(out) + url[at:]


def _secrets(url: str) -> list[str]:
    """The parts of ``url`` :func:`public_url` leaves out (users and passwords, query, fragment), longest first."""
    found = [url[m.start():] for m in [re.search(r"[?#]", url)] if m]
    for start, end in _segments(url):
        rest = url[start:end]
        if "@" in rest:
            found.append(rest[:rest.rfind("@")])
            found += [p for p in re.split(r"[:@/]", rest[:rest.rfind("@")]) if len(p) >= 3]
    return sorted(set(found), key=len, reverse=True)


def _scrub(text: str, secrets: tuple[str, ...]) -> str:
    """``text`` (a library's error message) with every secret of the URL replaced by ``***``."""
    for secret in secrets:
        text = text.replace(secret, "***")
    return text


#: how long the up-front check of a remote location may take (seconds; ``$AUDITOR_CACHE_CHECK_TIMEOUT`` overrides):
#: an endpoint that accepts connections but never answers is refused after this, not waited on for its retries
CHECK_TIMEOUT_S = 20.0
#: the variable that overrides it
CHECK_TIMEOUT_ENV = "AUDITOR_CACHE_CHECK_TIMEOUT"


def _bounded(work: Callable[[], Any], seconds: float) -> Any:
    """``work()`` in a daemon thread, waited on for at most ``seconds``: its result, or its exception raised.

    Raises:
        TimeoutError: it did not end in time (the thread is left to the filesystem's own timeouts; being a
            daemon it does not hold up the end of the process).
    """
    box: dict[str, Any] = {}

    def run() -> None:
        try:
            box["result"] = work()
        except BaseException as e:  # noqa: BLE001 - handed to the caller
            box["error"] = e

    thread = threading.Thread(target=run, name="cache-check", daemon=True)
    thread.start()
    thread.join(seconds)
    if thread.is_alive():
        raise TimeoutError(f"no answer within {seconds:.0f} s")
    if "error" in box:
        raise box["error"]
    return box.get("result")


def _os_error(e: BaseException) -> OSError:
    """A filesystem's own exception (botocore's, aiohttp's, ...) as the OSError the cache's callers handle."""
    return e if isinstance(e, OSError) else OSError(f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}")


def _local_url(url: str, option: str) -> str:
    """The absolute folder a ``file:`` / ``local:`` URL names on this machine (``file:///abs``,
    ``file://localhost/abs``, ``file:/abs``; percent-escapes decoded, as ``Path.as_uri`` writes them).

    Raises:
        AuditInputError: it names no folder (``file://``, ``file:``, ``file://.``, a relative path, ``/``), a
            user or password, or another machine's host.
    """
    shown = public_url(url)
    proto, rest = url.split(":", 1)
    host, path = (urlsplit(f"{proto.lower()}:{rest}").netloc, urlsplit(f"{proto.lower()}:{rest}").path) \
        if rest.startswith("//") else ("", rest)
    if "@" in host or (rest.startswith("//") and not rest.startswith("///") and "@" in rest):
        raise AuditInputError(option, f"{shown}: a {proto}:// URL takes no user or password; give "
                                      f"{proto}:///absolute/folder")
    path = unquote(path)
    if host.lower() not in ("", "localhost") or not path.startswith("/") or not path.strip("/"):
        raise AuditInputError(option, f"{shown} names no folder; give an absolute one, e.g. file:///mnt/shared/cache "
                                      "(no host but localhost, no relative path)")
    return os.path.normpath(path)


def check_value(value: str, named: str, *, absolute: bool = False) -> None:
    """Refuse a ``--cache-dir`` / ``$AUDITOR_GENERATION_CACHE`` value that cannot be meant: empty or blank, with
    control characters, or (``absolute``: the variable, read by processes in other folders) a relative folder.

    Raises:
        AuditInputError: one line naming ``named`` (the value's control characters never printed).
    """
    if not value.strip():
        raise AuditInputError(named, "is empty; give a folder or a URL such as s3://bucket/prefix")
    if _CONTROLS.search(value):
        raise AuditInputError(named, "contains control characters; give a folder or a URL such as s3://bucket/prefix")
    if absolute and not is_url(value) and not Path(value).expanduser().is_absolute():
        raise AuditInputError(named, f"{value} is a relative folder; give an absolute folder or a URL such as "
                                     "s3://bucket/prefix (every process that inherits the variable must find the "
                                     "same place)")


#: the answer cache's location (a URL or a folder) when no ``--cache-dir`` is given
ANSWER_CACHE_ENV = "AUDITOR_GENERATION_CACHE"
#: ``--cache-dir``'s help (``audit run``, ``audit cache info|clear``)
CACHE_DIR_HELP = ("Where the cache lives. A folder: the whole cache moves there (as with $AUDITOR_CACHE_DIR). "
                  "An fsspec URL (s3://bucket/prefix, gs://bucket/prefix, file:///mnt/shared/cache, any protocol "
                  "fsspec knows, with its package: pip install s3fs, gcsfs, ...): the answer cache (generated "
                  "answers and weight-space pre-screens) goes there, shared by every process and machine that "
                  "names it, written atomically; converted base models, NLTK data, file-hash memos and measured "
                  "throughput stay in the local cache (transformers loads a model from a local folder). "
                  f"Default: ${ANSWER_CACHE_ENV} (a URL or a folder) for the answer cache when set, else the local cache.")
#: the one object a location's check writes and reads back: fixed bytes, never deleted (no delete permission needed)
PROBE, PROBE_BYTES = ".adapter-auditor", b"adapter-auditor answer cache\n"
@dataclass(frozen=True)
class CacheStore:
    """A folder of the answer cache: a local folder (``fs`` None) or a location on an fsspec filesystem.

    The paths its methods take are relative, ``/``-separated (``generations/ab/ab12….json``).

    Attributes:
        root: the folder: a local path, or the path on ``fs`` (no protocol).
        protocol: ``file`` for a local folder (a ``file://`` URL too), else the URL's (``s3``, ``gs``, ...).
        shown: the location as people see it and results.json records it: a local path, or the URL without
            credentials (:func:`public_url`).
        fs: the fsspec filesystem of a remote location, None for a local folder.
        secrets: the parts of the URL that :attr:`shown` leaves out (a user and password the filesystem took),
            scrubbed from the filesystem's error messages (:meth:`public`).
    """

    root: str
    protocol: str = "file"
    shown: str = ""
    fs: Any = None
    secrets: tuple[str, ...] = field(default=(), repr=False)

    @property
    def local(self) -> bool:
        return self.fs is None

    def child(self, name: str) -> CacheStore:
        """The store of the folder ``name`` inside this one."""
        return CacheStore(f"{self.root.rstrip('/')}/{name}", self.protocol, f"{self.shown.rstrip('/')}/{name}",
                          self.fs, self.secrets)

    def public(self, text: str) -> str:
        """``text`` (an error message of the filesystem's) with the URL's secrets replaced by ``***``."""
        return _scrub(text, self.secrets)

    def where(self) -> dict[str, str]:
        """``{"protocol", "path"}``: the filesystem and the folder on it (host included, credentials not)."""
        return {"protocol": self.protocol, "path": self.shown.split("://", 1)[1] if "://" in self.shown else self.shown}

    def _full(self, rel: str) -> str:
        return f"{self.root.rstrip('/')}/{rel}" if rel else self.root

    def read(self, rel: str) -> bytes:
        """The bytes of one file.

        Raises:
            FileNotFoundError: there is none.
            OSError: it cannot be read (the filesystem's own errors become OSError).
        """
        if self.local:
            return Path(self._full(rel)).read_bytes()
        try:
            return bytes(self.fs.cat_file(self._full(rel)))
        except Exception as e:  # noqa: BLE001 - s3fs, gcsfs, ... raise their own kinds besides OSError
            raise _os_error(e) from e

    def write(self, rel: str, data: bytes) -> None:
        """Write one whole file at once (see the module docstring): temporary sibling + ``fsync`` + rename on a
        local folder, one PUT on an object store.

        Raises:
            OSError: it cannot be written.
        """
        if self.local:
            atomic_write(Path(self._full(rel)), data)
            return
        try:
            self.fs.pipe_file(self._full(rel), data)
        except Exception as e:  # noqa: BLE001
            raise _os_error(e) from e

    def files(self, folder: str) -> list[tuple[str, int]]:
        """Every file under ``folder`` as (path relative to this store, bytes), sorted; none when it is absent.
        Temporary files of writers under way (hidden names) are left out.

        Raises:
            OSError: the location cannot be listed.
        """
        top = self._full(folder)
        out: list[tuple[str, int]] = []
        if self.local:
            for dirpath, _, names in os.walk(top):
                for n in names:
                    if not n.startswith("."):
                        p = Path(dirpath) / n
                        out.append((p.relative_to(self.root).as_posix(), p.lstat().st_size))
            return sorted(out)
        try:
            found = self.fs.find(top, detail=True) if self.fs.exists(top) else {}
        except Exception as e:  # noqa: BLE001
            raise _os_error(e) from e
        base = self.root.rstrip("/") + "/"
        for path, info in found.items():
            path = "/" + path.lstrip("/") if self.root.startswith("/") else path.lstrip("/")
            if info.get("type", "file") == "file" and path.startswith(base) and not path.rsplit("/", 1)[-1].startswith("."):
                out.append((path[len(base):], int(info.get("size") or 0)))
        return sorted(out)

    def read_many(self, rels: list[str]) -> dict[str, bytes | OSError]:
        """The bytes of several files, an object store's in concurrent requests; a file that cannot be read maps
        to its OSError (FileNotFoundError when there is none)."""
        got: dict[str, bytes | OSError] = {}
        if self.local or not rels:
            for rel in rels:
                try:
                    got[rel] = self.read(rel)
                except OSError as e:
                    got[rel] = e
            return got
        try:
            raw = self.fs.cat([self._full(r) for r in rels], on_error="return")
        except Exception as e:  # noqa: BLE001 - the whole batch failed (the store out of reach): each one did
            failed = _os_error(e)
            return {rel: failed for rel in rels}
        for rel in rels:
            v = raw.get(self._full(rel), FileNotFoundError(rel))
            got[rel] = bytes(v) if isinstance(v, (bytes, bytearray)) else _os_error(v)
        return got

    def remove(self, folder: str, entry: re.Pattern[str]) -> tuple[int, int]:
        """Delete the files under ``folder`` whose path relative to it matches ``entry`` (the cache's own names:
        nothing else, whatever else is there), the temporary files writers left behind (``.<name>.*.tmp``), and
        then the folders this leaves empty. A symlink is removed, never followed. Returns (files, bytes) removed.

        Raises:
            OSError: the location cannot be listed or written.
        """
        prefix = folder.rstrip("/") + "/"
        found = self.files(folder)
        if self.local:
            top = Path(self._full(folder))
            if top.is_symlink():  # the link, not what it points to
                top.unlink()
                return 1, 0
            found += [(p.relative_to(self.root).as_posix(), p.lstat().st_size) for p in top.rglob(".*.tmp")
                      if p.is_file()] if top.is_dir() else []
        mine = [(rel, n) for rel, n in found
                if rel.startswith(prefix) and entry.fullmatch(_TMP.sub(r"\1\2", rel[len(prefix):]))]
        if not mine:
            return 0, 0
        if self.local:
            for rel, _ in mine:
                Path(self._full(rel)).unlink(missing_ok=True)
            for d in sorted({Path(self._full(rel)).parent for rel, _ in mine}, key=lambda p: -len(p.parts)):
                for empty in (d, *d.parents):  # the folders left empty, up to the cache's own
                    if not empty.is_relative_to(Path(self._full(folder))):
                        break
                    try:
                        empty.rmdir()
                    except OSError:
                        break
        else:
            try:
                self.fs.rm([self._full(rel) for rel, _ in mine])
            except FileNotFoundError:
                pass  # removed by another process meanwhile
            except Exception as e:  # noqa: BLE001
                raise _os_error(e) from e
        return len(mine), sum(n for _, n in mine)

    def check(self, option: str, write: bool = True) -> None:
        """Refuse, before any model loads, a location this process cannot use: a local folder that cannot be
        created or written (``write``), or where a file stands in the way (always); a remote one where the
        :data:`PROBE` object cannot be written and read back (``write``), or that cannot be listed (not ``write``:
        what ``audit cache info`` needs), or that does not answer in time (:data:`CHECK_TIMEOUT_S`). Creates nothing
        when not ``write``.

        Raises:
            AuditInputError: one line naming ``option``, the location and the filesystem's reason (the URL's
                secrets never in it).
        """
        if self.local:
            (check_writable_folder if write else check_folder_path)(Path(self.root), option)
            return
        seconds = env_seconds(CHECK_TIMEOUT_ENV, CHECK_TIMEOUT_S)

        def probe() -> None:
            if write:
                self.write(PROBE, PROBE_BYTES)
                if self.read(PROBE) != PROBE_BYTES:
                    raise OSError(f"{PROBE} read back other bytes than were written")
            else:
                self.fs.exists(self._full(PROBE))

        try:
            _bounded(probe, seconds)
        except Exception as e:  # noqa: BLE001 - whatever the filesystem raises, one line
            reason = self.public(str(_os_error(e)) or type(e).__name__)
            raise AuditInputError(option, f"{self.shown} cannot be {'written' if write else 'read'} ({reason}); "
                                          "check the location, its credentials and the network") from None


def open_store(where: str | Path, option: str) -> CacheStore:
    """The store at ``where``: a local folder (a path, or a ``file:`` URL), or a URL fsspec opens. Nothing is
    read or written yet (:meth:`CacheStore.check` does that).

    Args:
        where: a folder or a URL (``s3://bucket/prefix``, ``gs://…``, ``file:///…``, any protocol fsspec knows).
        option: what named it (``--cache-dir``, ``AUDITOR_GENERATION_CACHE``), for the message.

    Raises:
        AuditInputError: a protocol fsspec does not know, one whose package is not installed (naming the
            ``pip install`` to run), a URL the filesystem refuses, one with a query string or a fragment, with a
            wildcard (``*``, ``[``, ``]``), with a user or password the filesystem does not take (they would
            become part of the path), or that names no folder (``file://``, ``s3://``). The URL's secrets are
            never in the message.
    """
    if not is_url(where):
        path = Path(where).expanduser().absolute()
        return CacheStore(str(path), "file", str(path))
    url = str(where)
    shown = public_url(url)
    if any(c in url for c in "?#"):
        raise AuditInputError(option, f"{shown} has a query string or a fragment (?… or #…), which the answer cache "
                                      "cannot use (it would become part of every path); drop it and give credentials "
                                      "through the filesystem's own settings (AWS_* variables, ~/.aws, ...)")
    last = url.rsplit("::", 1)[-1]
    protocol = last.split("://", 1)[0] if "://" in last else last.split(":", 1)[0]
    if protocol.lower() in LOCAL_PROTOCOLS:
        folder = _local_url(last, option)
        if "::" not in url:
            return CacheStore(folder, "file", folder)
    elif any(c in url for c in "*[]"):
        raise AuditInputError(option, f"{shown} has a wildcard (* [ ]), which fsspec would expand; name the folder "
                                      "without one")
    try:
        import fsspec
        from fsspec.implementations.local import LocalFileSystem
        from fsspec.registry import known_implementations

        fs, path = fsspec.core.url_to_fs(url)
    except ImportError as e:
        spec = known_implementations.get(protocol, {})
        package = getattr(e.__cause__, "name", None) or str(spec.get("class", protocol)).split(".")[0]
        raise AuditInputError(option, f"{protocol}:// needs the {package} package: pip install {package}") from None
    except ValueError as e:
        if str(e).startswith("Protocol not known"):
            raise AuditInputError(option, f"{protocol}:// is not a filesystem fsspec knows (s3://, gs://, az://, "
                                          "file://, ... with the package that implements it)") from None
        raise AuditInputError(option, f"{shown} is not a location fsspec can open "
                                      f"({_scrub(str(e), tuple(_secrets(url)))})") from None
    except Exception as e:  # noqa: BLE001 - a filesystem's constructor refusing its options
        raise AuditInputError(option, f"{shown} is not a location fsspec can open "
                                      f"({_scrub(str(_os_error(e)), tuple(_secrets(url)))})") from None
    rest = last.split("://", 1)[-1]
    if "@" in rest and rest[:rest.rfind("@") + 1] in path:
        raise AuditInputError(option, f"{shown}: {protocol}:// takes no user or password in the URL (it would become "
                                      "part of the path); give credentials through the filesystem's own settings "
                                      "(AWS_* variables and ~/.aws for s3://, GOOGLE_APPLICATION_CREDENTIALS for gs://, "
                                      f"FSSPEC_{protocol.upper()}_* variables), and no @ in the path")
    if not path.strip("/"):
        raise AuditInputError(option, f"{shown} names no bucket or folder; give one, e.g. s3://bucket/prefix or "
                                      "file:///mnt/shared/cache")
    if isinstance(fs, LocalFileSystem):
        return CacheStore(path.rstrip("/") or "/", "file", path.rstrip("/") or "/")
    return CacheStore(path.rstrip("/"), protocol, shown.rstrip("/"), fs, tuple(_secrets(url)))


def cache_env(value: str | Path | None) -> dict[str, str]:
    """The environment variables that give a child process (a Ray worker's ``runtime_env``, a CI job, an audit
    subprocess) the cache ``--cache-dir value`` gives this one: a folder → ``AUDITOR_CACHE_DIR`` and
    ``AUDITOR_GENERATION_CACHE`` both set to it (an inherited answer-cache variable must not win over it); a URL →
    ``AUDITOR_GENERATION_CACHE``; None → nothing (the child inherits this process's variables)."""
    if value is None:
        return {}
    if is_url(value):
        return {ANSWER_CACHE_ENV: str(value)}
    folder = str(Path(value).expanduser().absolute())
    return {"AUDITOR_CACHE_DIR": folder, ANSWER_CACHE_ENV: folder}


#: the answer store put into effect by :func:`using_cache_dir` (innermost last)
_IN_EFFECT: list[CacheStore] = []


def answer_store(create: bool = True) -> CacheStore:
    """The answer cache in effect: the one :func:`using_cache_dir` set, else ``$AUDITOR_GENERATION_CACHE``, else
    the local cache folder (:func:`~auditor.util.files.cache_dir`, created unless not ``create``). Checks that
    nothing can be reached.

    Raises:
        AuditInputError: ``$AUDITOR_GENERATION_CACHE`` is empty, blank, has control characters, is a relative
            folder, or names a location that cannot be opened here (:func:`open_store`).
    """
    if _IN_EFFECT:
        return _IN_EFFECT[-1]
    env = os.environ.get(ANSWER_CACHE_ENV)
    if env is not None:
        check_value(env, ANSWER_CACHE_ENV, absolute=True)
        return open_store(env, ANSWER_CACHE_ENV)
    return open_store(cache_dir(create=create), "AUDITOR_CACHE_DIR")


@contextmanager
def using_cache_dir(value: str | Path | None, option: str = "--cache-dir", write: bool = True
                    ) -> Iterator[CacheStore]:
    """Put ``--cache-dir`` into effect for what runs inside (process-wide: the threads of an audit see it too),
    after checking it. Yields the answer store.

    Args:
        value: a folder (the whole cache moves there, as with ``$AUDITOR_CACHE_DIR``), a URL (the answer cache
            goes there, the rest stays local), or None (``$AUDITOR_GENERATION_CACHE``, else the local cache).
        option: the option's name for messages.
        write: check that the answer cache can be written (an audit, ``cache clear``); else only that it can be
            read, creating nothing (``cache info``).

    Raises:
        AuditInputError: the value is empty, blank or has control characters; the location cannot be opened,
            reached or written, or a file stands where its folder would be (one line naming the option).
    """
    if value is not None:
        check_value(str(value), option)
    if value is None or is_url(value):
        named = option if value is not None else ANSWER_CACHE_ENV if ANSWER_CACHE_ENV in os.environ else \
            "AUDITOR_CACHE_DIR"
        store = open_store(value, option) if value is not None else answer_store(create=write)
        store.check(named, write)
        _IN_EFFECT.append(store)
        try:
            yield store
        finally:
            _IN_EFFECT.pop()
        return
    folder = Path(value).expanduser().absolute()
    (check_writable_folder if write else check_folder_path)(folder, option)
    store = open_store(folder, option)
    with using_local_cache(folder):
        _IN_EFFECT.append(store)
        try:
            yield store
        finally:
            _IN_EFFECT.pop()
