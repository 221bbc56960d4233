"""The cache location's URL rules: what is a URL, how one is shown without its secrets, which local forms name
a folder, and the bounded check of a remote location (:mod:`auditor.util.cache_store` uses them).

Credentials and endpoints come from the filesystem's own sources (``AWS_*`` variables and ``~/.aws`` for s3fs,
``GOOGLE_APPLICATION_CREDENTIALS`` for gcsfs, fsspec's ``FSSPEC_<PROTOCOL>_<OPTION>`` variables), never from
what results.json records: a URL is shown without its user part, query or fragment (:func:`public_url`)."""

from __future__ import annotations

import os
import re
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

from ..errors import AuditInputError

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
