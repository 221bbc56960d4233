"""Settings read from the environment (``AUDITOR_*`` variables), each checked where it is used: a bad value is
one line naming the variable, exit code 2, never a traceback."""

from __future__ import annotations

import os

from ..errors import AuditInputError
from .text import strip_controls


def env_seconds(name: str, default: float, most: float = 3600.0) -> float:
    """Seconds from the variable ``name`` (e.g. ``AUDITOR_CACHE_CHECK_TIMEOUT``) when it is set and not blank,
    else ``default``.

    Raises:
        AuditInputError: the value is not a number of seconds in (0, ``most``], one line naming the variable.
    """
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    try:
        seconds = float(raw)
    except ValueError:
        seconds = float("nan")
    if not 0 < seconds <= most:
        raise AuditInputError(name, f"{strip_controls(raw)[:40]!r} is not a number of seconds in (0, {most:g}]")
    return seconds
