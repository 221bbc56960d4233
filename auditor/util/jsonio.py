"""Strict readers for JSON, JSONL and text files we did not write.

Every fault is an :class:`~auditor.errors.AuditInputError` naming the file (and line):
non-UTF-8 text, invalid JSON, NaN/Infinity literals, out-of-range numbers, absurd nesting.
"""

from __future__ import annotations

import json
import math
import os
import stat
from pathlib import Path
from typing import Any

from ..errors import AuditInputError

#: the largest JSON file read (bytes): a results.json of the full suite is a few MB; a file past this is refused
#: before it is parsed (a symlink to /dev/zero, a runaway file) rather than filling the memory
MAX_JSON_BYTES = 256 * 1024 * 1024


def read_regular_file(path: Path, max_bytes: int | None = None) -> bytes:
    """The bytes of ``path``, a regular file (a symlink to one will do) of at most ``max_bytes`` bytes (None:
    :data:`MAX_JSON_BYTES`).

    A FIFO, a device (``/dev/zero``), a socket or a folder is refused before it is opened for reading (a FIFO
    would block the read until a writer came; a device never ends), and a file that grows past ``max_bytes``
    while it is read is refused when it does.

    Raises:
        AuditInputError: not a regular file, larger than ``max_bytes``, or unreadable (naming ``path``).
    """
    max_bytes = MAX_JSON_BYTES if max_bytes is None else max_bytes
    try:
        st = os.stat(path)
        if not stat.S_ISREG(st.st_mode):
            m = st.st_mode
            kind = ("a folder" if stat.S_ISDIR(m) else "a FIFO (named pipe)" if stat.S_ISFIFO(m) else "a device"
                    if stat.S_ISCHR(m) or stat.S_ISBLK(m) else "a socket" if stat.S_ISSOCK(m) else "a special file")
            raise AuditInputError(path, f"is {kind}, not a regular file")
        if st.st_size > max_bytes:
            raise AuditInputError(path, f"is {st.st_size:,} bytes, over the {max_bytes:,}-byte limit of a JSON file")
        # O_NONBLOCK: a regular file swapped for a FIFO after the stat cannot block the open
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
        with os.fdopen(fd, "rb") as f:
            now = os.fstat(f.fileno())
            if not stat.S_ISREG(now.st_mode):
                raise AuditInputError(path, "is not a regular file")
            # read(n) allocates n bytes first: ask for the size the file has (plus one, to see it grow), not the limit
            data = f.read(min(max_bytes, now.st_size + 65536) + 1)
    except OSError as e:
        raise AuditInputError(path, f"cannot read: {e.strerror or e}") from None
    if len(data) > max_bytes:
        raise AuditInputError(path, f"grew over the {max_bytes:,}-byte limit of a JSON file while it was read")
    return data


def _decode_fault(e: json.JSONDecodeError) -> str:
    """``e`` as one clause: ``<message> at line L column C`` (the message of an unterminated string ends in
    "at" already: "Unterminated string starting at")."""
    return f"invalid JSON: {e.msg.removesuffix(' at')} at line {e.lineno} column {e.colno}"


def read_text(path: Path) -> str:
    """The file as text (UTF-8, a byte-order mark dropped).

    Raises:
        AuditInputError: not UTF-8, or unreadable.
    """
    try:
        return path.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError:
        raise AuditInputError(path, "not UTF-8 text") from None
    except OSError as e:
        raise AuditInputError(path, f"cannot be read ({e.strerror or e})") from None


def read_json_strict(path: Path) -> Any:
    """Parse a JSON file (:func:`read_regular_file`: a regular file of at most :data:`MAX_JSON_BYTES`); NaN/Infinity
    literals, non-UTF-8 and absurd nesting are input faults.

    Raises:
        AuditInputError: naming the file and the fault.
    """
    def no_constants(name: str) -> Any:
        raise ValueError(f"non-standard JSON constant {name}")

    data = read_regular_file(path)
    try:
        return json.loads(data.decode("utf-8"), parse_constant=no_constants)
    except UnicodeDecodeError:
        raise AuditInputError(path, "not UTF-8 text") from None
    except json.JSONDecodeError as e:
        raise AuditInputError(path, _decode_fault(e)) from None
    except ValueError as e:
        raise AuditInputError(path, f"invalid JSON: {e}") from None
    except RecursionError:
        raise AuditInputError(path, "JSON nested too deeply") from None


def read_json_finite(path: Path) -> Any:
    """Parse a JSON file written by this tool (results.json, read by ``audit report`` and ``audit merge``; a regular
    file of at most :data:`MAX_JSON_BYTES`: :func:`read_regular_file`): NaN/Infinity literals, numbers out of the
    float range and lone UTF-16 surrogates (which cannot be written back) are faults.

    Raises:
        AuditInputError: naming the file and the fault.
    """
    def _no_constant(name: str) -> None:
        raise ValueError(f"non-standard JSON number {name}")

    def _finite(text: str) -> float:
        value = float(text)
        if not math.isfinite(value):
            raise ValueError(f"number {text[:40]} is out of range")
        return value

    raw = read_regular_file(Path(path))
    try:
        data = json.loads(raw.decode("utf-8"), parse_constant=_no_constant, parse_float=_finite)
        json.dumps(data, ensure_ascii=False).encode("utf-8")  # lone surrogates cannot be written back
    except UnicodeDecodeError:
        raise AuditInputError(path, "not UTF-8 text") from None
    except json.JSONDecodeError as e:
        raise AuditInputError(path, _decode_fault(e)) from None
    except UnicodeEncodeError:
        raise AuditInputError(path, "text with lone UTF-16 surrogates (\\ud800-\\udfff) cannot be reported") from None
    except ValueError as e:
        raise AuditInputError(path, f"invalid JSON: {str(e)[:120]}") from None
    except RecursionError:
        raise AuditInputError(path, "JSON nested too deeply") from None
    return data


def read_jsonl(path: Path, objects_only: bool = True) -> list[tuple[int, Any]]:
    """(line number, parsed value) for every non-blank line of a JSONL file.

    Raises:
        AuditInputError: not UTF-8, a line that is not JSON (names the line),
            or, with ``objects_only``, a line that is not a JSON object.
    """
    out: list[tuple[int, Any]] = []
    for lineno, line in enumerate(read_text(path).splitlines(), 1):
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
        except json.JSONDecodeError as e:
            raise AuditInputError(path, f"line {lineno}: invalid JSON ({e.msg})") from None
        except RecursionError:
            raise AuditInputError(path, f"line {lineno}: JSON nested too deeply") from None
        except ValueError as e:  # int() refuses over sys.get_int_max_str_digits() digits
            raise AuditInputError(path, f"line {lineno}: {str(e).split(';')[0]}") from None
        if objects_only and not isinstance(rec, dict):
            raise AuditInputError(path, f"line {lineno}: a record must be a JSON object")
        out.append((lineno, rec))
    return out
