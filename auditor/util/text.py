"""Untrusted text (model output, names from adapter files) made safe to show."""

from __future__ import annotations

import re

_CONTROLS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def strip_controls(text: str) -> str:
    """Drop C0/C1 control characters except tab and newline (ANSI/OSC escape
    sequences lose their ESC and become inert text; XML 1.0 forbids most of them)."""
    return _CONTROLS.sub("", text)
