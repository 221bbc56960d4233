"""The public Python API: audit adapters from a notebook or a training script.

>>> from auditor import audit
>>> result = audit("path/to/adapter", suite="smoke", label="math")
>>> result.verdict.verdict, [r.rule for r in result.verdict.failing]
>>> result.comparisons[0].delta, result.drift.drift_score_pts    # points

The keyword arguments are the fields of :class:`~auditor.options.AuditOptions` (the ``audit``
command's options under their Python names: ``base``, ``policy``, ``suite``, ``label``, ``limit``,
``capabilities``, ``batch_size``, ``backend``, ...). Nothing is printed unless ``log`` is given,
and no report file is written unless ``out`` is.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from .options import AuditOptions
from .results import AuditResult


def report_folders(adapters: tuple[str, ...], out: Path) -> list[Path]:
    """The report folder of each adapter (``out`` itself for one, ``out/<folder name>`` for several), each
    checked before any audit starts.

    Raises:
        AuditInputError: a folder that cannot hold the reports.
    """
    from .reports import check_out_dir, report_folder_names

    folders = [out] if len(adapters) == 1 else [out / n for n in report_folder_names(list(adapters))]
    for f in folders:
        check_out_dir(f)
    return folders


def audit_and_report(adapters: tuple[str, ...], opts: AuditOptions, out: Path | None,
                     log: Callable[[str], Any]) -> tuple[list[AuditResult], list[dict[str, Path]], Path | None]:
    """Audit ``adapters`` (one base pass) and, with ``out``, write each one's reports and, for several, the
    index: what :func:`audit_many` and the ``audit`` command share.

    Returns:
        The results in the order given, each one's report files (report name → path; empty without
        ``out``) and the index (None for one adapter or without ``out``).

    Raises:
        AuditInputError: any fault in the inputs, before a verdict.
    """
    from .pipeline import run_audits
    from .reports import write_index, write_reports

    folders = report_folders(adapters, out) if out is not None else []
    results = run_audits(adapters, opts, log=log)
    paths = [write_reports(result, folder) for result, folder in zip(results, folders)]
    index = write_index(results, [f.name for f in folders], out) if out is not None and len(adapters) > 1 else None
    return results, paths, index


def audit_many(adapters: list[str] | tuple[str, ...], *, out: str | Path | None = None,
               log: Callable[[str], Any] | None = None, **options: Any) -> list[AuditResult]:
    """Audit several adapters of one base against one base pass (see :func:`audit`).

    Returns:
        One :class:`~auditor.results.AuditResult` per adapter, in the order given.

    Raises:
        AuditInputError: any fault in the inputs (one line: ``e.one_line()``), before a verdict.
        TypeError: an unknown option name.
    """
    opts = AuditOptions(**{"progress": False, **options})
    results, _, _ = audit_and_report(tuple(str(a) for a in adapters), opts, None if out is None else Path(out),
                                     log or (lambda message: None))
    return results


def audit(adapter: str | Path, *, out: str | Path | None = None, log: Callable[[str], Any] | None = None,
          **options: Any) -> AuditResult:
    """Audit one adapter against its base model and a policy.

    Args:
        adapter: a PEFT adapter folder, its ``adapter_model.safetensors``, or a hub id
            ``owner/name[@revision][:path/in/repo]``.
        out: a folder to write the reports into (report.html, results.json, summary.md, junit.xml,
            results.sarif, checklist.md); None writes nothing.
        log: called with each progress line (rich markup); None prints nothing.
        **options: :class:`~auditor.options.AuditOptions` fields, e.g. ``suite="smoke"``,
            ``policy="policies/default.yaml"``, ``label="math"``, ``capabilities=("math",)``,
            ``limit=10``, ``base="path/to/hf-model"``, ``backend="hf"``.

    Returns:
        The typed :class:`~auditor.results.AuditResult`: ``verdict`` (with every rule's outcome and
        reason), ``comparisons`` (per metric: base and adapter as fractions, Δ in points with its 95%
        interval and p-value), ``drift`` (TargetGain, OffTargetGain, DriftScore in points), ``items``
        (every prompt with both answers and their scores); ``result.passed``; ``result.to_dict()`` is
        results.json's content.

    Raises:
        AuditInputError: any fault in the inputs (one line: ``e.one_line()``), before a verdict.
        TypeError: an unknown option name.
    """
    return audit_many([str(adapter)], out=out, log=log, **options)[0]
