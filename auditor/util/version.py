"""The auditor's version: the one place it is written (``pyproject.toml`` reads it, ``[tool.hatch.version]``;
:mod:`auditor` re-exports it; the GitHub Action reads it without importing, :func:`auditor.ci.gha.auditor_version`).

A leaf: it imports nothing.
"""

__version__ = "0.1.0"
