"""Quieting another library's ``logging`` logger for the length of a block."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator


@contextlib.contextmanager
def logger_quiet(name: str, level: int = logging.CRITICAL) -> Iterator[None]:
    """Within the block, the ``logging`` logger ``name`` drops records below ``level`` (its level is restored
    on the way out). For a library that logs what the caller already reports in its own words, or logs text
    that must not reach the terminal (a model's answer is untrusted)."""
    log = logging.getLogger(name)
    before = log.level
    log.setLevel(level)
    try:
        yield
    finally:
        log.setLevel(before)
