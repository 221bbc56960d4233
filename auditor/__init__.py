"""adapter-auditor: decide whether a LoRA adapter is safe to ship.

    from auditor import audit
    result = audit("path/to/adapter", suite="smoke")    # an AuditResult
    result.passed, result.verdict.failing

The packages, in data-flow order (DESIGN.md §2): :mod:`auditor.inspect` (the adapter and the base,
before any model loads) → :mod:`auditor.suite` (manifests, items, benchmarks, the plan) →
:mod:`auditor.backends` (generation and its cache) → :mod:`auditor.scorers` → :mod:`auditor.analysis`
(statistics, comparisons, DriftScore) → :mod:`auditor.policy` (the rules, the verdict) →
:mod:`auditor.reports`. :mod:`auditor.pipeline` runs them in order; :mod:`auditor.records` and
:mod:`auditor.results` are the typed records between them; :mod:`auditor.cli` is the command line,
:mod:`auditor.ci` the GitHub Action's steps, :mod:`auditor.callback` the trainer callback (an audit of
each checkpoint a transformers ``Trainer`` saves), :mod:`auditor.util` leaf utilities.

Importing this package imports nothing but its version constant (:mod:`auditor.util.version`, a leaf:
the GitHub Action reads it before installing anything); the API is loaded on first use.
"""

from .util.version import __version__

__all__ = ["audit", "audit_many", "AuditCallback", "AuditInputError", "AuditOptions", "AuditResult", "__version__"]


def __getattr__(name: str):
    if name in ("audit", "audit_many"):
        from . import api

        return getattr(api, name)
    if name == "AuditCallback":  # imports transformers
        from .callback import AuditCallback

        return AuditCallback
    if name == "AuditInputError":
        from .errors import AuditInputError

        return AuditInputError
    if name == "AuditOptions":
        from .options import AuditOptions

        return AuditOptions
    if name == "AuditResult":
        from .results import AuditResult

        return AuditResult
    raise AttributeError(f"module 'auditor' has no attribute {name!r}")
