"""Strict readers for JSON, JSONL and text files we did not write.

Every fault is an :class:`~auditor.errors.AuditInputError` naming the file (and line):
non-UTF-8 text, invalid JSON, NaN/Infinity literals, out-of-range numbers, absurd nesting.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from ..errors import AuditInputError


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
    """Parse a JSON file; NaN/Infinity literals, non-UTF-8 and absurd nesting are input faults.

    Raises:
        AuditInputError: naming the file and the fault.
    """
    def no_constants(name: str) -> Any:
        raise ValueError(f"non-standard JSON constant {name}")

    try:
        return json.loads(path.read_text(encoding="utf-8"), parse_constant=no_constants)
    except UnicodeDecodeError:
        raise AuditInputError(path, "not UTF-8 text") from None
    except json.JSONDecodeError as e:
        raise AuditInputError(path, f"invalid JSON: {e.msg} at line {e.lineno} column {e.colno}") from None
    except ValueError as e:
        raise AuditInputError(path, f"invalid JSON: {e}") from None
    except RecursionError:
        raise AuditInputError(path, "JSON nested too deeply") from None
    except OSError as e:
        raise AuditInputError(path, f"cannot read: {e.strerror or e}") from None


def read_json_finite(path: Path) -> Any:
    """Parse a JSON file written by this tool (results.json): NaN/Infinity literals, numbers
    out of the float range and lone UTF-16 surrogates (which cannot be written back) are faults.

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

    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"), parse_constant=_no_constant, parse_float=_finite)
        json.dumps(data, ensure_ascii=False).encode("utf-8")  # lone surrogates cannot be written back
    except (OSError, UnicodeDecodeError) as e:
        raise AuditInputError(path, f"cannot read: {e}") from None
    except json.JSONDecodeError as e:
        raise AuditInputError(path, f"invalid JSON: {e.msg} at line {e.lineno}") from None
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
