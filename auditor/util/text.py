"""Untrusted text (model output, names from adapter files) made safe to show."""

from __future__ import annotations

import re

_CONTROLS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
#: the Unicode bidirectional formatting characters (category Cf): the marks (ALM U+061C, LRM U+200E, RLM U+200F),
#: the embeddings and overrides (U+202A-U+202E) and the isolates (U+2066-U+2069). Shown raw, they reorder the
#: text around them ("Trojan Source", CVE-2021-42574): a right-to-left override makes ``adapters/<RLO>lmth.exe``
#: read as ``adapters/exe.html``
_BIDI = re.compile("[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def strip_controls(text: str) -> str:
    """Drop C0/C1 control characters except tab and newline (ANSI/OSC escape
    sequences lose their ESC and become inert text; XML 1.0 forbids most of them),
    and show each bidirectional formatting character as its code point
    (``<U+202E>``) instead of letting it reorder what is shown: the terminal, the
    Markdown and the HTML reports (jinja2's ``finalize``) all pass through here,
    while results.json keeps the text as it was."""
    return _BIDI.sub(lambda m: f"<U+{ord(m.group()):04X}>", _CONTROLS.sub("", text))


def terminal_text(x: object) -> str:
    """Untrusted text for the terminal: control characters (ANSI escapes, OSC sequences, NUL) dropped, rich
    markup escaped."""
    from rich.markup import escape

    return escape(strip_controls(str(x)))
