"""Where the ``audit`` commands print: progress and summaries on stderr (:data:`console`), JSON for scripts on
stdout (:func:`echo_json`)."""

from __future__ import annotations

import json

import click
from rich.console import Console

console = Console(stderr=True, highlight=False)
if not console.is_terminal:  # CI logs: rich would default to 80 columns, fold the table and break lines mid-interval;
    # a log line is printed whole (soft_wrap: the log viewer wraps it), a table 150 columns wide
    console = Console(stderr=True, highlight=False, width=150, soft_wrap=True)


def echo_json(obj: object) -> None:
    """JSON for scripts on stdout (everything else goes to stderr)."""
    click.echo(json.dumps(obj, indent=2, ensure_ascii=False))
