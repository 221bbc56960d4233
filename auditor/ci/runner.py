"""The runner side of the GitHub Action: inputs (``GATE_*``), outputs, the job summary, annotations.
Stdlib only (the ``prepare`` step runs before the package is installed)."""

from __future__ import annotations

import os
import shlex
import sys
from pathlib import Path


class GateError(Exception):
    """An input the action cannot work with: one line, exit code 2."""


def env(name: str, default: str = "") -> str:
    return os.environ.get(name, default).strip()


def workspace() -> Path:
    return Path(env("GITHUB_WORKSPACE") or os.getcwd()).resolve()


def report_dir() -> Path:
    """The ``output-dir`` input, resolved against the workspace."""
    return (workspace() / (env("GATE_OUTPUT_DIR") or "audit-report")).resolve()


def set_outputs(**values: str) -> None:
    """Append ``name=value`` lines to ``$GITHUB_OUTPUT`` (printed when it is unset, e.g. locally)."""
    lines = []
    for name, value in values.items():
        if "\n" in value:
            raise ValueError(f"output {name} must be one line")
        lines.append(f"{name.replace('_', '-')}={value}\n")
    path = env("GITHUB_OUTPUT")
    if path:
        with open(path, "a", encoding="utf-8") as f:
            f.writelines(lines)
    else:
        sys.stdout.writelines(lines)


def append_summary(markdown: str) -> None:
    """Append Markdown to ``$GITHUB_STEP_SUMMARY`` (the job's summary page)."""
    path = env("GITHUB_STEP_SUMMARY")
    if path:
        with open(path, "a", encoding="utf-8") as f:
            f.write(markdown if markdown.endswith("\n") else markdown + "\n")


def annotate(level: str, message: str) -> None:
    """A workflow command (``::error::`` / ``::warning::`` / ``::notice::``): shown on the run page."""
    message = message.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
    print(f"::{level} title=adapter-auditor::{message}", flush=True)


def split_words(name: str) -> list[str]:
    """An input holding shell-like words (``args``, ``pip-args``), split as a shell would.

    Raises:
        GateError: unbalanced quotes.
    """
    try:
        return shlex.split(env(name))
    except ValueError as e:
        raise GateError(f"input {name.removeprefix('GATE_').lower().replace('_', '-')}: {e}") from None
