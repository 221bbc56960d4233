"""adapter-auditor: decide whether a LoRA adapter is safe to ship.

    from auditor import audit
    result = audit("path/to/adapter", suite="smoke")    # an AuditResult
    result.passed, result.verdict.failing

One adapter's walk from ``audit ADAPTER`` to its verdict, the packages in the order to open them:
:mod:`auditor.cli` (the command line: every option read into one record, the audit's settings made of it) →
:mod:`auditor.pipeline` (what runs an audit: report folders checked, then the stages below in order, one
adapter's looks and rounds, its result assembled) → :mod:`auditor.inspect` (the adapter's files and the base,
before any model loads: the adapter becomes its one :class:`~auditor.records.AdapterRecord`) →
:mod:`auditor.suite` (manifests, items, benchmarks, the requests) → :mod:`auditor.backends` (generation:
hf, vllm, openai, on Ray or not) → :mod:`auditor.scorers` (each answer scored) → :mod:`auditor.analysis`
(paired statistics, comparisons, DriftScore) → :mod:`auditor.policy` (the rules, the verdict) →
:mod:`auditor.reports` (results.json, report.html and the rest, written from the
:class:`~auditor.results.AuditResult`); the command prints the verdict and exits with its code.

Beside the walk: :mod:`auditor.records` and :mod:`auditor.results` are the typed records between the
stages (the adapter's record is made once, by inspection, and is results.json's ``adapter`` block),
:mod:`auditor.options` the settings of an audit, :mod:`auditor.cache` the answer cache the backends and the
pre-screen read and write, :mod:`auditor.util` leaf utilities, :mod:`auditor.errors` the input errors and
exit codes; :mod:`auditor.api` is the Python API (``audit``, ``audit_many``: the same pipeline),
:mod:`auditor.ci` the GitHub Action's steps, :mod:`auditor.callback` the trainer callback (an audit of each
checkpoint a transformers ``Trainer`` saves). ``auditor/data/`` holds the shipped data: the suites' presets,
items and pools, and the JSON Schemas of results.json and run.json.

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
