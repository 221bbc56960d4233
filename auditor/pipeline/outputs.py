"""An audit's outputs around its run: each adapter's report folder and Hub files checked before any model
loads, the audit (:func:`~auditor.pipeline.stages.run_audits`), then each adapter's reports, the index of
several and a training run's run.json written (:mod:`auditor.reports`)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..inspect.checkpoints import TrainingRun
from ..options import AuditOptions
from ..records.training_run import RunSummary
from ..reports.hub_files import HubOutputs
from ..results import AuditResult
from .stages import run_audits


def report_folders(adapters: tuple[str, ...], out: Path, nested: bool = False) -> list[Path]:
    """The report folder of each adapter (``out`` itself for one, ``out/<folder name>`` for several or
    with ``nested``: a training run's checkpoints), each checked before any audit starts.

    Raises:
        AuditInputError: a folder that cannot hold the reports.
    """
    from ..reports import check_no_folders, check_out_dir, report_folder_names

    if len(adapters) == 1 and not nested:
        check_out_dir(out)
        return [out]
    folders = [out / n for n in report_folder_names(list(adapters))]
    for f in folders:
        check_out_dir(f)
    check_no_folders(out, ("index.html", "run.json"))  # the index beside them
    return folders


def hub_outputs_for(adapters: tuple[str, ...], opts: AuditOptions, hub: HubOutputs | None, nested: bool
                    ) -> list[tuple[Path | None, Path | None]]:
    """Each adapter's Hub files (:func:`auditor.reports.hub_targets`: evaluation results folder, model card),
    checked before any audit: every file a metric of the suite could write (the metric ids read from its
    manifest, no item loaded). Empty without ``hub`` (or when it asks for none).

    Raises:
        AuditInputError: options that do not go together, or a target that cannot be written (an existing
            file without ``overwrite`` included).
    """
    from ..reports import check_hub_outputs, hub_targets, report_folder_names

    if hub is None:
        return []
    if not hub.wanted:
        hub.check_options()  # --eval-results-dataset or --overwrite alone
        return []
    targets = hub_targets(hub, report_folder_names(list(adapters)), nested)
    metrics: list[str] = []
    if hub.eval_results is not None:
        from ..scorers import SCORERS
        from ..suite.manifest import manifest_metric_ids

        metrics = manifest_metric_ids(opts.suite, opts.capabilities, scorers=SCORERS)
    check_hub_outputs(hub, targets, metrics)
    return targets


def audit_and_report(adapters: tuple[str, ...], opts: AuditOptions, out: Path | None, log: Callable[[str], Any],
                     run: TrainingRun | None = None, hub: HubOutputs | None = None
                     ) -> tuple[list[AuditResult], list[dict[str, Path]], Path | None, RunSummary | None]:
    """Audit ``adapters`` (one base pass) and, with ``out``, write each one's reports and, for several, the
    index: what :func:`audit_many` and the ``audit`` command share. For a training run (``run``: its selected
    checkpoints are ``adapters``, in step order), each report goes to ``out/checkpoint-N/``, and ``out/run.json``
    and ``out/index.html`` (with the trajectory charts) are written too; ``run.stop_at_first_fail`` ends the run
    after the first checkpoint that fails. With ``hub``, each adapter's evaluation results and model card section
    are written too (:func:`hub_outputs_for`: where, checked before the audit starts).

    Returns:
        The results in the order given (for a run stopped early, those audited), each one's report files
        (report name → path; empty without ``out``), the index (None for one adapter or without ``out``) and,
        for a run, its run.json record (:class:`~auditor.records.training_run.RunSummary`; else None).

    Raises:
        AuditInputError: any fault in the inputs, before a verdict.
    """
    from ..reports import run_summary, write_hub_outputs, write_index, write_reports, write_run_json
    from ..reports.hub_files import written_line
    from ..reports.terminal import t

    folders = report_folders(adapters, out, nested=run is not None) if out is not None else []
    targets = hub_outputs_for(adapters, opts, hub, nested=run is not None)
    stop = (lambda r: not r.passed) if run is not None and run.stop_at_first_fail else None
    results = run_audits(adapters, opts, log=log, stop_after=stop)
    paths = [write_reports(result, folder) for result, folder in zip(results, folders)]
    if hub is not None:
        for result, target in zip(results, targets):
            log(t(written_line(write_hub_outputs(result, target, hub))))
    summary = None if run is None else run_summary(run.run_dir, run.selection, run.checkpoints, results,
                                                   [f.name for f in folders] or [None] * len(adapters))
    if summary is not None and out is not None:
        write_run_json(summary, out)
    index = (write_index(results, [f.name for f in folders], out, summary)
             if out is not None and (len(adapters) > 1 or summary is not None) else None)
    return results, paths, index, summary
